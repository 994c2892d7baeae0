package store

import (
	"fmt"
	"time"

	"triad/internal/fault"
	"triad/internal/id"
	"triad/internal/merkle"
)

// Errors the caller can act on: internal/fault's sentinels, so that an
// engine's error is already the code a node replies with (and a news
// server's NNTP answer), or refinements of one that this process can tell
// apart. Each is wrapped with detail; test with errors.Is.
var (
	ErrNotFound = fault.ErrNotFound
	ErrCorrupt  = fault.ErrCorrupt // the copy was damaged on disk and is now quarantined
	ErrFull     = fault.ErrFull
	ErrTooLarge = fault.ErrTooLarge
	ErrExpired  = fault.New(fault.ErrBadRequest, "store: expiry is not in the future")
	ErrBadKey   = fault.New(fault.ErrBadRequest, "store: bad key")
	ErrConflict = fault.New(fault.ErrBadRequest, "store: key holds other data")
	ErrClosed   = fault.New(fault.ErrInternal, "store: closed")
)

// Engine is the storage of one physical node, shared by its virtual
// servers. disk.Disk is the real one; mem.Mem stands in for it in the
// simulator. Both pass the same contract tests (storetest.RunContract).
type Engine interface {
	// Put stores data under key until at least expiry. It returns once the
	// object is durable, or at once with NoWait. A put never replaces what
	// is stored: putting a key again with the same object only extends its
	// expiry (never shortens it), and with another object (opaque bytes
	// that differ, or a whole object where an opaque one is, or the
	// reverse) fails with ErrConflict and stores nothing. A stored copy
	// found damaged while comparing is quarantined, and the put stores
	// its object in its place.
	Put(key id.ID, data []byte, expiry time.Time, opt PutOptions) error
	// Get returns the object's bytes, checked against the record checksums
	// (Put checked the content hash before writing them). Damage is reported as
	// ErrCorrupt and the object is quarantined: it leaves the index and the
	// Merkle tree, so that a put of a good copy (dhash's repair after a get,
	// or maintenance) stores it again.
	Get(key id.ID) ([]byte, Meta, error)
	// GetInto is Get reading into buf when it is big enough; the result
	// may alias buf. Servers reuse one buffer per connection this way.
	GetInto(key id.ID, buf []byte) ([]byte, Meta, error)
	// Stat returns what is known about key without reading the object.
	Stat(key id.ID) (Meta, error)
	// Delete removes key's object: it leaves the index and the Merkle tree
	// at once, so a Stat or Get after it returns ErrNotFound and the tree
	// queries no longer count it. It returns once the delete is durable:
	// no crash brings the object back. Deleting a key that holds nothing
	// (never stored, deleted, quarantined or reclaimed) returns
	// ErrNotFound and changes nothing. A put after a delete stores again,
	// any object (the conflict rule is about what is stored now); it may
	// be kept longer than asked (disk.Disk keeps it at least until just
	// past the deleted object's expiry, which is what lets its recovery
	// tell the two apart). The space is reclaimed later: a segment whose
	// live bytes fall under half its size is rewritten by Maintain.
	Delete(key id.ID) error

	// TreeNode returns the Merkle tree node at p (see merkle.Lookup).
	TreeNode(p merkle.Prefix) (merkle.Node, error)
	// TreeChildren returns the non-empty children of the node at p.
	TreeChildren(p merkle.Prefix) ([]merkle.Node, error)
	// TreeKeys returns up to max keys under p in the ring arc (lo, hi].
	TreeKeys(p merkle.Prefix, lo, hi id.ID, max int) ([]id.ID, error)
	// CheckTree recomputes the tree from the index and compares roots.
	CheckTree() error

	// Maintain removes expired keys from the tree, rewrites segments that
	// are less than half live, and reclaims space when usage is past the
	// high-water mark. disk.Disk also runs it in the background.
	Maintain() error
	Stats() Stats
	Close() error
}

// PutOptions modify one put.
type PutOptions struct {
	// NoWait returns before the object is durable.
	NoWait bool
	// Opaque marks a key that is not the content hash of the data (an
	// erasure-coded fragment): the caller has checked that data belongs
	// under key (dhash checks that a fragment's header names key), as Put
	// cannot. A re-put of an opaque key must bring the same bytes.
	Opaque bool
	// KeyChecked says the caller has just checked that key is the content
	// hash of data, so Put need not hash it again.
	KeyChecked bool
	// Fresh says the caller knows key is not stored (a news site's history
	// has never seen the article), so Put may skip its index read. It
	// applies to content-hash keys only; an Opaque put always looks. Were
	// the key stored after all, the stored object still wins: its bytes
	// are the same (the key is their hash), so only the later expiry is
	// kept, and if it is opaque it is kept as it is (Put may then return
	// nil or ErrConflict).
	Fresh bool
}

// Meta describes a stored object.
type Meta struct {
	Key    id.ID
	Size   int
	Expiry time.Time
	InTree bool // counted in the Merkle tree when it was stored
	Opaque bool
}

// Stats are counters for status pages and benchmarks.
type Stats struct {
	Objects   int   // keys in the index
	TreeKeys  int   // keys in the Merkle tree
	Usage     int64 // bytes of segment files
	Capacity  int64
	Segments  int
	Reclaimed int // expiry windows unlinked to make room
	// ReclaimedBytes is the bytes of the segments those windows had.
	ReclaimedBytes int64
	Quarantined    int // damaged objects found by reads
	// Compacted counts segments rewritten because less than half of
	// their bytes were live (deleted or superseded objects); disk.Disk
	// copies the live records and unlinks the old file, mem.Mem drops
	// the dead bytes of a window.
	Compacted int
	// CompactedBytes is the bytes those rewrites gave back.
	CompactedBytes int64
	// ClockSteps counts the forward steps of the wall clock the engine
	// saw (ClockGuard) and expired nothing across.
	ClockSteps int
	// Syncs counts the file syncs of the group commit: an fdatasync per
	// segment written since the last commit, and one of the folder after
	// files were added. mem.Mem makes none.
	Syncs int64
	// ByExpiry is the usage by when it expires: ByExpiry[i] the bytes of
	// the windows that end within ExpiryHorizons[i] of now (and not
	// within the horizon before), the last entry those that end later.
	ByExpiry [len(ExpiryHorizons) + 1]int64
	// ObjectsByExpiry counts the objects of the same windows.
	ObjectsByExpiry [len(ExpiryHorizons) + 1]int
}

// ExpiryHorizons are the bounds of Stats.ByExpiry.
var ExpiryHorizons = [...]time.Duration{time.Hour, 24 * time.Hour, 7 * 24 * time.Hour, 30 * 24 * time.Hour, 90 * 24 * time.Hour, 365 * 24 * time.Hour}

// ExpiryBucket is the index in Stats.ByExpiry of usage whose window ends
// at end, seen at now.
func ExpiryBucket(end, now time.Time) int {
	left := end.Sub(now)
	i := 0
	for i < len(ExpiryHorizons) && left > ExpiryHorizons[i] {
		i++
	}
	return i
}

// Options configure an engine. Zero fields take the defaults below.
type Options struct {
	Dir string // Disk only

	// Now is the clock for expiry. The simulator and tests inject theirs;
	// nil means the wall clock, which the engine supplies.
	Now func() time.Time
	// Elapsed is a monotonic clock (any origin), against which the engine
	// checks Now before it lets time expire anything: see ClockGuard. Nil:
	// ElapsedOf(Now), which is monotonic for the wall clock (Go's time.Now
	// carries a monotonic reading) and follows an injected Now, so that
	// no step of it is ever seen.
	Elapsed func() time.Duration
	// ReclaimMargin is how long past its window's end an object is kept
	// before its space may be reclaimed: a clock a little fast, or a
	// step too small for ClockGuard to see, costs no acknowledged object
	// (10 min).
	ReclaimMargin time.Duration
	// MaxRetention caps how far ahead an expiry may lie: a put asking for
	// more is kept until now plus MaxRetention (400 days). A neighbour's
	// claim of a later expiry (maintenance extends a copy to it) cannot
	// pin an object for good.
	MaxRetention time.Duration
	// Window is the span of expiry times sharing one segment (256 s).
	Window time.Duration
	// TreeBuffer keeps keys that expire sooner than this out of the tree, so
	// neighbours never repair what is about to expire (15 min).
	TreeBuffer time.Duration
	// NoTree keeps no key in the Merkle tree: a store no neighbour
	// compares with (a standalone news site's spool) saves its upkeep.
	NoTree bool
	// Capacity bounds the bytes of segment files; 0 means no bound.
	Capacity int64
	// HighWater is the fraction of Capacity past which expired segments are
	// reclaimed (0.9).
	HighWater float64
	// MaxObject is the largest object accepted (64 MiB).
	MaxObject int
	// KeyWidth is the key size in bytes (20).
	KeyWidth int

	// SyncInterval is the least time between group commits; puts arriving
	// meanwhile share one fdatasync (1 ms). A negative interval starts the
	// next group commit as soon as the previous one ends: puts still share
	// an fdatasync while one runs, and wait no longer than two. Disk only.
	SyncInterval time.Duration
	// CheckpointInterval is how often the index catches up with the
	// segments (1 s). Disk only.
	CheckpointInterval time.Duration
	// CheckpointEntries forces a checkpoint when this many puts wait (65536).
	CheckpointEntries int
	// TreeLag lets the Merkle tree that TreeNode, TreeChildren and TreeKeys
	// read be this far behind the puts: a read catches the index and tree
	// up (a group commit and an index transaction) only when the last
	// checkpoint began longer ago. Zero: every read catches up, so the
	// tree holds every put that returned. A node sets it so that
	// maintenance walking its neighbours' trees during a heavy feed does
	// not force a checkpoint for each tree node it compares. Disk only.
	TreeLag time.Duration
	// MaxSegment rolls a window over to a new file past this size (1 GiB).
	MaxSegment int64

	// DropData makes Mem keep sizes but not bytes, for simulations.
	DropData bool
}

// Defaults.
const (
	DefaultWindow        = 256 * time.Second
	DefaultTreeBuffer    = 15 * time.Minute
	DefaultMaxObject     = 64 << 20
	DefaultReclaimMargin = 10 * time.Minute
	DefaultMaxRetention  = 400 * 24 * time.Hour
)

// WithDefaults returns o with every zero field set to its default. It
// leaves Now alone: this package never reads the wall clock, so each engine
// picks its own clock when the caller gives none.
func (o Options) WithDefaults() Options {
	if o.Window <= 0 {
		o.Window = DefaultWindow
	}
	if o.TreeBuffer <= 0 {
		o.TreeBuffer = DefaultTreeBuffer
	}
	if o.HighWater <= 0 || o.HighWater > 1 {
		o.HighWater = 0.9
	}
	if o.MaxObject <= 0 {
		o.MaxObject = DefaultMaxObject
	}
	if o.KeyWidth <= 0 {
		o.KeyWidth = id.Bytes
	}
	if o.SyncInterval == 0 {
		o.SyncInterval = time.Millisecond
	}
	if o.CheckpointInterval <= 0 {
		o.CheckpointInterval = time.Second
	}
	if o.CheckpointEntries <= 0 {
		o.CheckpointEntries = 65536
	}
	if o.MaxSegment <= 0 {
		o.MaxSegment = 1 << 30
	}
	if o.ReclaimMargin <= 0 {
		o.ReclaimMargin = DefaultReclaimMargin
	}
	if o.MaxRetention <= 0 {
		o.MaxRetention = DefaultMaxRetention
	}
	return o
}

// ElapsedOf is a monotonic clock made of now: the time since its first
// reading. For time.Now it is the process's monotonic clock.
func ElapsedOf(now func() time.Time) func() time.Duration {
	start := now()
	return func() time.Duration { return now().Sub(start) }
}

// Retain returns expiry capped at now plus MaxRetention.
func (o *Options) Retain(expiry, now time.Time) time.Time {
	if limit := now.Add(o.MaxRetention); expiry.After(limit) {
		return limit
	}
	return expiry
}

// Reclaimable reports whether window w may be reclaimed at now (a time a
// ClockGuard gave): ReclaimMargin past its end.
func (o *Options) Reclaimable(w int64, now time.Time) bool {
	return !o.WindowEnd(w).Add(o.ReclaimMargin).After(now)
}

// MaxClockStep is how far the wall clock may run ahead of the monotonic
// one between two readings before a ClockGuard takes it for a step.
// NTP slews a clock by at most 0.05%; a minute is a step.
const MaxClockStep = time.Minute

// A ClockGuard gives the time at which an engine lets things expire
// (Merkle tree expiry, reclamation): the wall clock, unless it has run
// ahead of the monotonic one by more than MaxClockStep since they last
// agreed. Then it is the last agreed wall time plus the monotonic time
// since, until the wall clock comes back in line: a wall clock stepped a
// month ahead expires nothing that a month of real time would not. A
// clock stepped back needs nothing: it expires less. The engine holds its
// lock around Now.
type ClockGuard struct {
	wall  time.Time     // the wall clock when it last agreed
	mono  time.Duration // the monotonic clock then
	set   bool
	ahead bool // the wall clock is ahead now
	// Steps counts the times the wall clock was found ahead of the
	// monotonic one past MaxClockStep (once per step, until it agrees).
	Steps int
}

// Now returns the time to expire things at, given both clocks' readings.
func (g *ClockGuard) Now(wall time.Time, mono time.Duration) time.Time {
	if !g.set {
		g.wall, g.mono, g.set = wall, mono, true
		return wall
	}
	trusted := g.wall.Add(mono - g.mono)
	if wall.Sub(trusted) > MaxClockStep {
		if !g.ahead {
			g.ahead = true
			g.Steps++
		}
		return trusted
	}
	g.wall, g.mono, g.ahead = wall, mono, false
	return wall
}

// CheckPut validates a put's arguments at time now, the same way in every
// engine: key width, size, an expiry in the future, and (unless opt or
// DropData says otherwise) that key is the content hash of data. It returns
// one of the errors above, wrapped with detail.
func (o *Options) CheckPut(key id.ID, data []byte, expiry, now time.Time, opt PutOptions) error {
	if err := o.CheckKey(key); err != nil {
		return err
	}
	if len(data) > o.MaxObject {
		return fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, len(data), o.MaxObject)
	}
	if !expiry.After(now) {
		return fmt.Errorf("%w: %v is not after %v", ErrExpired, expiry.UTC(), now.UTC())
	}
	if !opt.Opaque && !opt.KeyChecked && !o.DropData && id.Key(data) != key {
		return fmt.Errorf("%w: %v is not the hash of the data", ErrBadKey, key)
	}
	return nil
}

// CheckKey returns ErrBadKey, wrapped, unless key is KeyWidth bytes wide.
func (o *Options) CheckKey(key id.ID) error {
	if key.Width() != o.KeyWidth {
		return fmt.Errorf("%w: %d bytes, want %d", ErrBadKey, key.Width(), o.KeyWidth)
	}
	return nil
}

// WindowOf returns the index of the expiry window holding t: objects whose
// expiries share a window share segments, and are reclaimed together.
func (o *Options) WindowOf(t time.Time) int64 {
	w := int64(o.Window)
	n := t.UnixNano()
	if n < 0 {
		return (n - w + 1) / w
	}
	return n / w
}

// WindowEnd returns when every object of window w has expired, after which
// the window may be reclaimed.
func (o *Options) WindowEnd(w int64) time.Time {
	return time.Unix(0, (w+1)*int64(o.Window))
}

// EntersTree reports whether a key put at now and expiring at expiry goes
// into the Merkle tree: only when the store keeps a tree and the key
// outlives TreeBuffer, so neighbours never repair what is about to expire.
func (o *Options) EntersTree(expiry, now time.Time) bool {
	return !o.NoTree && expiry.Sub(now) > o.TreeBuffer
}

// recordOverheadBytes is what a stored object takes beyond its key and
// data: the 20-byte header and 8 bytes of checksums of a record in a
// segment (internal/store/disk checks that its format agrees).
const recordOverheadBytes = 28

// ObjectBytes returns the bytes an object with a key of keyLen bytes and
// dataLen bytes of data counts against Capacity: its whole record. Every
// engine accounts with it, so Mem reclaims when Disk would.
func ObjectBytes(keyLen, dataLen int) int { return recordOverheadBytes + keyLen + dataLen }

// CompareRoots returns an error unless the stored root of a Merkle tree
// matches the root fresh, recomputed from the index; CheckTree reports it.
func CompareRoots(stored, fresh merkle.Node) error {
	if stored.Count != fresh.Count || stored.Hash != fresh.Hash {
		return fmt.Errorf("store: Merkle root holds %d keys (%x…), the index implies %d (%x…)",
			stored.Count, stored.Hash[:6], fresh.Count, fresh.Hash[:6])
	}
	return nil
}
