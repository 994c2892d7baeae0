package workload

import (
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"triad/internal/d2/key"
)

// Op is what an access does to a block.
type Op uint8

// The operations of a trace.
const (
	Read   Op = iota
	Write     // a new block or a new version of one
	Delete    // an old version or a removed file's block
)

var opNames = [...]string{Read: "read", Write: "write", Delete: "delete"}

func (o Op) String() string { return opNames[o] }

// Access is one block access of a trace.
type Access struct {
	At    time.Duration // since the trace's start
	User  int
	Task  int // the user's task and access group that made it, counted from 0
	Group int
	Path  string
	Block uint32
	Op    Op
	Key   key.Key
	Bytes int32 // the block's bytes (the old block's, for Delete)
}

// Config shapes the users of a trace.
type Config struct {
	Seed  uint64
	Users int
	// Duration is how long the trace runs; no access comes at or after it.
	Duration time.Duration
	// WriteBitsPerSec spaces a user's writes: a block of b bytes takes
	// 8b/WriteBitsPerSec (§8.1: users write at 1,500 kbps).
	WriteBitsPerSec int64
	// SessionGap is the mean time between a user's sessions (exponential;
	// default 3 h); SessionLength their mean length (default 1 h, at
	// least 5 min).
	SessionGap, SessionLength time.Duration
	// MaxGrepBlocks bounds the blocks a grep reads (default 1,500), so
	// that every task is under MaxTask.
	MaxGrepBlocks int
}

// MaxTask bounds the span of every task the users make.
const MaxTask = 5 * time.Minute

// Think time between access groups is in [MinThink, MaxThink]; accesses
// within a group are under MaxGap apart.
const (
	MinThink = 2 * time.Second
	MaxThink = 120 * time.Second
	MaxGap   = time.Second
)

// DefaultConfig is 24 users over a week, writing at 1,500 kbps.
func DefaultConfig() Config {
	return Config{Seed: 1, Users: 24, Duration: 7 * 24 * time.Hour, WriteBitsPerSec: 1_500_000,
		SessionGap: 3 * time.Hour, SessionLength: time.Hour, MaxGrepBlocks: 1500}
}

// Validate checks the configuration.
func (c Config) Validate() error {
	switch {
	case c.Users < 1:
		return errors.New("workload: want at least one user")
	case c.Duration <= 0 || c.SessionGap <= 0 || c.SessionLength <= 0:
		return errors.New("workload: durations must be positive")
	case c.WriteBitsPerSec < 70_000:
		return errors.New("workload: writes under 70 kbps would space a group's blocks over a second")
	case c.MaxGrepBlocks < 1 || c.MaxGrepBlocks > 3000:
		return fmt.Errorf("workload: MaxGrepBlocks %d: want 1 to 3,000, so a grep stays under %v", c.MaxGrepBlocks, MaxTask)
	}
	return nil
}

// VolumeFor is user u's volume ID under seed: each user has a copy of the
// tree in a volume of its own.
func VolumeFor(seed uint64, u int) key.Volume {
	var nonce [16]byte
	binary.BigEndian.PutUint64(nonce[:], seed)
	binary.BigEndian.PutUint64(nonce[8:], uint64(u))
	return key.VolumeOf(fmt.Sprintf("user%d", u), nonce[:])
}

// Trace merges the users' accesses in time order (ties by user).
type Trace struct {
	users userHeap
	all   []*User
}

// NewTrace makes cfg.Users users, each with its own copy of m.
func NewTrace(m *Manifest, cfg Config) (*Trace, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	t := &Trace{}
	for u := range cfg.Users {
		us := NewUser(m, cfg, u)
		t.all = append(t.all, us)
		if us.peek() {
			t.users = append(t.users, us)
		}
	}
	heap.Init(&t.users)
	return t, nil
}

// FS is user u's volume as it stands after the accesses returned so far.
func (t *Trace) FS(u int) *FS { return t.all[u].fs }

// Next is the next access of any user, false when the trace is over.
func (t *Trace) Next() (Access, bool) {
	if len(t.users) == 0 {
		return Access{}, false
	}
	us := t.users[0]
	a := us.pending[us.next]
	us.next++
	if us.peek() {
		heap.Fix(&t.users, 0)
	} else {
		heap.Pop(&t.users)
	}
	return a, true
}

type userHeap []*User

func (h userHeap) Len() int { return len(h) }
func (h userHeap) Less(i, j int) bool {
	a, b := h[i].pending[h[i].next], h[j].pending[h[j].next]
	if a.At != b.At {
		return a.At < b.At
	}
	return a.User < b.User
}
func (h userHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *userHeap) Push(x any)   { *h = append(*h, x.(*User)) }
func (h *userHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// User is one user's stream of accesses: sessions of tasks on its volume.
type User struct {
	cfg        Config
	id         int
	fs         *FS
	rng        *rand.Rand
	dirs       []int // directories, in creation order (none is ever removed)
	sizes      []int64
	now        time.Duration
	sessionEnd time.Duration
	task       int
	group      int
	created    int
	pending    []Access
	next       int
}

// NewUser is user u of cfg on a fresh copy of m; its accesses depend only
// on cfg.Seed, u and m.
func NewUser(m *Manifest, cfg Config, u int) *User {
	us := &User{cfg: cfg, id: u, fs: NewFS(VolumeFor(cfg.Seed, u), m), rng: rand.New(rand.NewPCG(cfg.Seed, uint64(u)+1))}
	for i, n := range us.fs.Nodes {
		if n.Dir {
			us.dirs = append(us.dirs, i)
		} else {
			us.sizes = append(us.sizes, n.Size)
		}
	}
	return us
}

// FS is the user's volume as it stands after the accesses returned so far.
func (us *User) FS() *FS { return us.fs }

// Next is the user's next access, false when its trace is over.
func (us *User) Next() (Access, bool) {
	if !us.peek() {
		return Access{}, false
	}
	a := us.pending[us.next]
	us.next++
	return a, true
}

// peek makes sure an access is pending, unless the trace is over.
func (us *User) peek() bool {
	for us.next >= len(us.pending) {
		us.pending, us.next = us.pending[:0], 0
		if us.now >= us.cfg.Duration {
			return false
		}
		us.makeTask()
		for len(us.pending) > 0 && us.pending[len(us.pending)-1].At >= us.cfg.Duration {
			us.pending = us.pending[:len(us.pending)-1]
		}
	}
	return true
}

func (us *User) exp(mean time.Duration) time.Duration {
	return time.Duration(us.rng.ExpFloat64() * float64(mean))
}

// think is a think time, log-uniform in [MinThink, MaxThink].
func (us *User) think() time.Duration {
	lo, hi := math.Log(float64(MinThink)), math.Log(float64(MaxThink))
	return time.Duration(math.Exp(lo + us.rng.Float64()*(hi-lo)))
}

// makeTask starts a session if none is on, then appends one task.
func (us *User) makeTask() {
	if us.now >= us.sessionEnd {
		us.now += us.exp(us.cfg.SessionGap)
		us.sessionEnd = us.now + max(5*time.Minute, us.exp(us.cfg.SessionLength))
	}
	start := len(us.pending)
	switch w := us.rng.IntN(100); {
	case w < 30:
		us.readPackage()
	case w < 40:
		us.grep()
	case w < 60:
		us.edit()
	case w < 85:
		us.browse()
	case w < 95:
		us.create()
	default:
		us.remove()
	}
	if len(us.pending) > start {
		us.task++
		us.now = us.pending[len(us.pending)-1].At
	}
	us.newGroup()
}

// newGroup ends an access group: the next access comes after a think time.
func (us *User) newGroup() {
	us.now += us.think()
	us.group++
}

// emit appends an access of block b of node i, after the one before it in
// the group (a read 1-30 ms later; a write when the last has gone out at
// the write rate).
func (us *User) emit(i int, b uint32, op Op, k key.Key, bytes int32) {
	gap := time.Millisecond + time.Duration(us.rng.Int64N(int64(29*time.Millisecond)))
	if op == Write {
		gap = max(gap, time.Duration(int64(bytes)*8*int64(time.Second)/us.cfg.WriteBitsPerSec))
	}
	if n := len(us.pending); n > 0 && us.pending[n-1].Group == us.group {
		us.now += gap
	}
	us.pending = append(us.pending, Access{At: us.now, User: us.id, Task: us.task, Group: us.group,
		Path: us.fs.Nodes[i].Path, Block: b, Op: op, Key: k, Bytes: bytes})
}

// readAll reads every block of node i.
func (us *User) readAll(i int) {
	for b := range us.fs.Blocks(i) {
		us.emit(i, b, Read, us.fs.BlockKey(i, b), us.fs.BlockBytesOf(i, b))
	}
}

// rewrite writes node i's blocks at a new version after a change of its
// size to size, then deletes the old version's.
func (us *User) rewrite(i int, size int64) {
	n := &us.fs.Nodes[i]
	oldBlocks, oldKey, oldVersion, oldSize := us.fs.Blocks(i), n.Key, n.Version, n.Size
	n.Size, n.Version = size, n.Version+1
	us.writeAll(i)
	us.deleteBlocks(i, oldKey.WithBlock(0, oldVersion), oldBlocks, oldSize)
}

// rewriteDir writes directory d anew after its entries changed from
// oldSize bytes.
func (us *User) rewriteDir(d int, oldSize int64) {
	n := &us.fs.Nodes[d]
	size := n.Size
	n.Size = oldSize
	us.rewrite(d, size)
}

func (us *User) writeAll(i int) {
	for b := range us.fs.Blocks(i) {
		us.emit(i, b, Write, us.fs.BlockKey(i, b), us.fs.BlockBytesOf(i, b))
	}
}

// deleteBlocks deletes blocks 0..n-1 of node i's version whose block-0 key
// is k, which held size bytes.
func (us *User) deleteBlocks(i int, k key.Key, n uint32, size int64) {
	for b := range n {
		rest := size - int64(b)*BlockBytes
		us.emit(i, b, Delete, k.WithBlock(b, k.Version()), int32(min(max(rest, 0), BlockBytes)))
	}
}
