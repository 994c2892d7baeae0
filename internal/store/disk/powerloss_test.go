package disk

import (
	"bytes"
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"triad/internal/id"
	"triad/internal/store"
	"triad/internal/store/storetest"
	"triad/internal/vfs"
	"triad/internal/vfs/powercut"
)

// Power loss. SIGKILL (TestCrashRecovery) keeps everything the kernel was
// handed; a power cut keeps only what was synced. These tests put the
// segments on a vfs.MemFS, which remembers what a power cut would leave,
// and reopen the engine from it.
//
// The bbolt index stays on the OS (bbolt does its own I/O), and bbolt's
// own fsync discipline is trusted: a crash leaves its last committed
// transaction. So a crash point pairs the segments as synced with the
// index as last committed, read through a read transaction. Each point is
// also reopened with no index at all, rebuilt from the segments alone.

// ack is a put or a delete the engine acknowledged: once Put returned,
// the object must survive any crash until it expires, unless a delete of
// its key follows; once Delete returned, the key must stay deleted until a
// put follows.
type ack struct {
	key     id.ID
	data    []byte
	expiry  time.Time
	deleted bool
}

// crashState is what a crash point keeps beside the segments as synced.
type crashState struct {
	index []byte // the index as last committed; nil if none was made yet
	acked int    // how many acks were in before this sync
	now   time.Time
}

// powerCut runs the engine on a MemFS and records a crash point at every
// sync of a workload.
type powerCut struct {
	t    *testing.T
	dir  string
	now  atomic.Int64 // the engine's clock, Unix ns
	live atomic.Pointer[Disk]
	rec  *powercut.Recorder[crashState]

	mu   sync.Mutex
	acks []ack

	deletesChecked int
}

func newPowerCut(t *testing.T) *powerCut {
	p := &powerCut{t: t, dir: t.TempDir()}
	p.now.Store(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	p.rec = powercut.New(p.state)
	return p
}

func (p *powerCut) clock() time.Time { return time.Unix(0, p.now.Load()) }

func (p *powerCut) advance(d time.Duration) { p.now.Add(int64(d)) }

func (p *powerCut) options() store.Options {
	return store.Options{
		Dir:                p.dir,
		Now:                p.clock,
		Window:             time.Minute,
		SyncInterval:       -1,
		CheckpointInterval: time.Hour, // checkpoints come from CheckpointEntries and the test
		CheckpointEntries:  8,
		MaxSegment:         6 << 10,
		Capacity:           1 << 20,
		HighWater:          0.05,
	}
}

func (p *powerCut) acked(a ack) {
	p.mu.Lock()
	p.acks = append(p.acks, a)
	p.mu.Unlock()
}

// state is what a crash point keeps now beside the segments. It runs
// with the MemFS locked, so it reads only the OS.
func (p *powerCut) state() crashState {
	p.mu.Lock()
	n := len(p.acks)
	p.mu.Unlock()
	return crashState{index: p.index(), acked: n, now: p.clock()}
}

// index returns the index as last committed.
func (p *powerCut) index() []byte {
	var db *bolt.DB
	if d := p.live.Load(); d != nil {
		db = d.db
	}
	b, err := powercut.Committed(db, filepath.Join(p.dir, indexFile))
	if err != nil {
		p.t.Errorf("copying the index: %v", err)
	}
	return b
}

func (p *powerCut) open(segs vfs.FS) *Disk {
	p.t.Helper()
	d, err := OpenFS(segs, p.options())
	if err != nil {
		p.t.Fatal(err)
	}
	p.live.Store(d)
	return d
}

func (p *powerCut) close(d *Disk) {
	p.t.Helper()
	if err := d.Close(); err != nil {
		p.t.Fatal(err)
	}
	p.live.Store(nil)
}

// put stores n objects from each of four writers at once, so syncs cover
// several segments and writers share them. Expiries spread over three
// windows, plus short-lived objects (ttl 10 min, outside the tree) for
// reclamation; every fifth put does not wait, and every seventh puts its
// object again with a later expiry. With deletes, every fourth key is
// deleted (among them keys put again into a later window), and every
// other one of those put again, as an opaque object of other bytes that
// lives less long.
func (p *powerCut) put(d *Disk, round, n int) { p.putDelete(d, round, n, false) }

func (p *powerCut) putDelete(d *Disk, round, n int, deletes bool) {
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(round), uint64(w)))
			for i := range n {
				data, key := storetest.Blob(r, 100+r.IntN(1500))
				ttl := time.Hour + time.Duration(r.IntN(3))*time.Minute
				if i%3 == 2 {
					ttl = 10 * time.Minute
				}
				expiry := p.clock().Add(ttl)
				noWait := i%5 == 4
				if err := d.Put(key, data, expiry, store.PutOptions{NoWait: noWait}); err != nil {
					p.t.Errorf("put: %v", err)
					return
				}
				if !noWait {
					p.acked(ack{key, data, expiry, false})
				}
				if i%7 == 6 {
					expiry = expiry.Add(time.Minute)
					if err := d.Put(key, data, expiry, store.PutOptions{}); err != nil {
						p.t.Errorf("re-put: %v", err)
						return
					}
					p.acked(ack{key, data, expiry, false})
				}
				if deletes && i%4 == 2 && !p.deleteAndPut(d, r, key, i%8 == 6) {
					return
				}
			}
		})
	}
	wg.Wait()
}

// deleteAndPut deletes key and, if again, puts other bytes under it.
func (p *powerCut) deleteAndPut(d *Disk, r *rand.Rand, key id.ID, again bool) bool {
	if err := d.Delete(key); err != nil {
		p.t.Errorf("delete: %v", err)
		return false
	}
	p.acked(ack{key: key, deleted: true})
	if !again {
		return true
	}
	data, _ := storetest.Blob(r, 50+r.IntN(500))
	expiry := p.clock().Add(20 * time.Minute)
	if err := d.Put(key, data, expiry, store.PutOptions{Opaque: true}); err != nil {
		p.t.Errorf("put after delete: %v", err)
		return false
	}
	p.acked(ack{key, data, expiry, false})
	return true
}

// restoreIndex puts index (nil: none) where the engine opens it.
func (p *powerCut) restoreIndex(index []byte) {
	p.t.Helper()
	if err := powercut.Restore(filepath.Join(p.dir, indexFile), index); err != nil {
		p.t.Fatal(err)
	}
}

// check reopens the engine from one crash point, with the index given
// (nil: none), and checks that every object acknowledged before it and not
// expired by then is there, intact, and that the tree matches the index.
// It returns how many objects it checked and how many were missing or
// wrong.
func (p *powerCut) check(i int, cp powercut.Point[crashState], index []byte) (checked, missing int) {
	t := p.t
	t.Helper()
	p.restoreIndex(index)
	now := cp.State.now
	p.now.Store(now.UnixNano())
	d, err := OpenFS(cp.FS.CrashClone(), p.options())
	if err != nil {
		t.Fatalf("crash point %d (index kept: %v): reopening: %v", i, index != nil, err)
	}
	defer d.Close()
	for j, a := range p.acks[:cp.State.acked] {
		last, next := p.lastOp(a.key, cp.State.acked)
		if last != j || a.deleted || next != nil && next.deleted || !a.expiry.After(now) {
			// A later op decides, or a delete in flight may have landed,
			// or it expired and its window may be reclaimed.
			continue
		}
		checked++
		data, m, err := d.Get(a.key)
		switch {
		case err != nil:
			t.Errorf("crash point %d (index kept: %v): acknowledged %v lost: %v", i, index != nil, a.key, err)
		case !bytes.Equal(data, a.data):
			t.Errorf("crash point %d (index kept: %v): %v reads back different bytes", i, index != nil, a.key)
		case m.Expiry.Before(a.expiry):
			t.Errorf("crash point %d (index kept: %v): %v expires %v, acknowledged until %v", i, index != nil, a.key, m.Expiry, a.expiry)
		default:
			continue
		}
		missing++
	}
	p.checkDeleted(d, i, cp.State.acked, index != nil)
	if err := d.CheckTree(); err != nil {
		t.Errorf("crash point %d (index kept: %v): %v", i, index != nil, err)
	}
	return checked, missing
}

// lastOp returns the index of the last of the first n acks on key (-1 if
// none), and the ack on key after it, nil if none: an op that may have
// been in flight at the crash.
func (p *powerCut) lastOp(key id.ID, n int) (last int, next *ack) {
	last = -1
	for i, a := range p.acks {
		if a.key != key {
			continue
		}
		if i >= n {
			return last, &p.acks[i]
		}
		last = i
	}
	return last, nil
}

// checkDeleted checks, in d reopened from a crash point with n acks in,
// that every key whose last acknowledged op was a delete is still deleted,
// unless a put after it was in flight and landed.
func (p *powerCut) checkDeleted(d *Disk, i, n int, withIndex bool) {
	p.t.Helper()
	for j, a := range p.acks[:n] {
		if !a.deleted {
			continue
		}
		if last, next := p.lastOp(a.key, n); last == j {
			p.checkGone(d, i, a.key, next, withIndex)
		}
	}
}

// checkGone checks that deleted key is not found, or holds what next, a
// put in flight at the crash, brought.
func (p *powerCut) checkGone(d *Disk, i int, key id.ID, next *ack, withIndex bool) {
	p.t.Helper()
	p.deletesChecked++
	data, _, err := d.Get(key)
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err == nil && next != nil && bytes.Equal(data, next.data):
	default:
		p.t.Errorf("crash point %d (index kept: %v): deleted %v came back: %d bytes, %v", i, withIndex, key, len(data), err)
	}
}

// TestPowerLossAtEverySync runs a workload on a MemFS that records, before
// every sync of a segment or of the directory, what a power cut would
// leave; then reopens the engine from each of those states, with the index
// as last committed and with no index, and checks that nothing
// acknowledged is missing and the tree matches the index. The workload
// writes and checkpoints; loses power and recovers (replaying and syncing
// records the index had not caught up with); closes and reopens; reclaims
// an expired window; and closes.
func TestPowerLossAtEverySync(t *testing.T) {
	p := newPowerCut(t)
	mem := vfs.NewMem()
	p.rec.Record(mem)
	n := 12
	if testing.Short() {
		n = 6
	}

	d := p.open(mem)
	p.put(d, 1, n)
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	p.put(d, 2, n)
	// A power cut with no writer running: the NoWait puts of the last
	// group and whatever the index has not caught up with are left to
	// recovery.
	cut := p.rec.Cut(mem)
	mem = cut.FS
	p.close(d)
	p.restoreIndex(cut.State.index)
	p.rec.Record(mem)

	d = p.open(mem)
	p.put(d, 3, n)
	p.close(d)

	d = p.open(mem)
	p.put(d, 4, n)
	p.advance(30 * time.Minute) // the short-lived objects expire
	if err := d.Maintain(); err != nil {
		t.Fatal(err)
	}
	if d.Stats().Reclaimed == 0 {
		t.Fatal("the workload reclaimed nothing")
	}
	p.put(d, 5, n)
	p.close(d)
	p.rec.Last(mem)
	if t.Failed() {
		t.FailNow()
	}
	p.checkPoints()
}

// checkPoints reopens the engine from every crash point recorded, with
// the index as last committed and with none, and checks it (check).
func (p *powerCut) checkPoints() {
	t := p.t
	t.Helper()
	points := p.rec.Points()
	checked, missing, reopened := 0, 0, 0
	for i, cp := range points {
		indexes := [][]byte{nil}
		if cp.State.index != nil {
			indexes = append(indexes, cp.State.index)
		}
		for _, index := range indexes {
			c, m := p.check(i, cp, index)
			checked, missing, reopened = checked+c, missing+m, reopened+1
		}
		if t.Failed() {
			break
		}
	}
	t.Logf("power loss, store: %d crash points (one before each sync, one after the last), %d reopens, %d acknowledged objects checked, %d missing (%d puts and deletes acknowledged); %d deleted keys checked",
		len(points), reopened, checked, missing, len(p.acks), p.deletesChecked)
	if min := 40; len(points) < min {
		t.Errorf("only %d crash points; the workload should sync at least %d times", len(points), min)
	}
}

// TestPowerLossWithDeletes is TestPowerLossAtEverySync's workload with
// deletes among the puts (a quarter of the keys, half of those put again
// with other bytes), and a Maintain that rewrites the segments left less
// than half live. At every crash point, no key whose delete was
// acknowledged comes back, and no acknowledged put is lost.
func TestPowerLossWithDeletes(t *testing.T) {
	p := newPowerCut(t)
	mem := vfs.NewMem()
	p.rec.Record(mem)
	n := 12
	if testing.Short() {
		n = 6
	}
	d := p.open(mem)
	p.putDelete(d, 1, n, true)
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	p.putDelete(d, 2, n, true)
	cut := p.rec.Cut(mem)
	mem = cut.FS
	p.close(d)
	p.restoreIndex(cut.State.index)
	p.rec.Record(mem)

	d = p.open(mem)
	p.putDelete(d, 3, n, true)
	p.close(d)

	d = p.open(mem)
	p.putDelete(d, 4, n, true)
	if err := d.Maintain(); err != nil {
		t.Fatal(err)
	}
	p.advance(30 * time.Minute)
	p.putDelete(d, 5, n, true)
	if err := d.Maintain(); err != nil {
		t.Fatal(err)
	}
	if st := d.Stats(); st.Compacted == 0 {
		t.Fatal("the workload rewrote no segment")
	} else {
		t.Logf("%d segments rewritten, %d bytes given back", st.Compacted, st.CompactedBytes)
	}
	p.close(d)
	p.rec.Last(mem)
	if t.Failed() {
		t.FailNow()
	}
	p.checkPoints()
	if p.deletesChecked == 0 {
		t.Fatal("no deleted key was checked")
	}
}

// TestSegmentCreationSyncsTheDirectory: the group commit syncs the
// directory when a put created a segment, so the acknowledged object is
// not lost with the file's name. Fails if syncOnce skips SyncDir.
func TestSegmentCreationSyncsTheDirectory(t *testing.T) {
	p := newPowerCut(t)
	mem := vfs.NewMem()
	d := p.open(mem)
	data, key := storetest.Blob(rand.New(rand.NewPCG(1, 2)), 1000)
	expiry := p.clock().Add(time.Hour)
	if err := d.Put(key, data, expiry, store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	p.acked(ack{key, data, expiry, false})
	cp := p.rec.Now(mem)
	p.close(d)
	for _, index := range [][]byte{cp.State.index, nil} {
		if checked, _ := p.check(0, cp, index); checked != 1 {
			t.Fatal("the object was not checked")
		}
	}
}

// TestFailedSegmentSyncIsNotAcknowledged: a put whose fdatasync fails is
// refused, so is every later put (the kernel may have dropped the pages),
// and what was acknowledged before survives a power cut.
func TestFailedSegmentSyncIsNotAcknowledged(t *testing.T) {
	p := newPowerCut(t)
	mem := vfs.NewMem()
	var failing atomic.Bool
	d := p.open(vfs.Inject(mem, func(op vfs.Op, _ string) error {
		if op == vfs.OpSync && failing.Load() {
			return syscall.EIO
		}
		return nil
	}))
	r := rand.New(rand.NewPCG(3, 4))
	for range 5 {
		data, key := storetest.Blob(r, 500)
		expiry := p.clock().Add(time.Hour)
		if err := d.Put(key, data, expiry, store.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		p.acked(ack{key, data, expiry, false})
	}
	failing.Store(true)
	data, key := storetest.Blob(r, 500)
	if err := d.Put(key, data, p.clock().Add(time.Hour), store.PutOptions{}); !errors.Is(err, syscall.EIO) {
		t.Fatalf("put with a failing fdatasync: %v, want EIO", err)
	}
	failing.Store(false)
	data, key = storetest.Blob(r, 500)
	if err := d.Put(key, data, p.clock().Add(time.Hour), store.PutOptions{}); !errors.Is(err, syscall.EIO) {
		t.Fatalf("put after a failed fdatasync: %v, want the failure again", err)
	}
	cp := p.rec.Now(mem)
	d.Close() // fails with the stuck error
	p.live.Store(nil)
	p.check(0, cp, cp.State.index)
	p.check(0, cp, nil)
}

// periodicPoint is what a crash point of TestPowerLossWithPeriodicSync
// keeps beside the segments as synced: how many puts were acknowledged
// before the sync, and when.
type periodicPoint struct {
	acked int
	at    time.Time
}

// TestPowerLossWithPeriodicSync is periodic durability (a node's
// --sync-period, dhash AckWritten): puts acknowledged before their group
// commit (NoWait), with the commit every 20 ms. A power cut may lose what
// was acknowledged since the last sync began, and nothing before it: at
// each crash point (one before every sync), every put acknowledged before
// the previous point is there after a reopen. The test logs the loss
// window it saw: how long before the cut the oldest put it lost was
// acknowledged.
func TestPowerLossWithPeriodicSync(t *testing.T) {
	const interval = 20 * time.Millisecond
	mem := vfs.NewMem()
	var mu sync.Mutex
	var acks []ack
	var ackedAt []time.Time
	rec := powercut.New(func() periodicPoint {
		mu.Lock()
		defer mu.Unlock()
		return periodicPoint{acked: len(acks), at: time.Now()}
	})
	rec.Record(mem)
	opts := store.Options{Dir: t.TempDir(), SyncInterval: interval, MaxSegment: 16 << 20, CheckpointInterval: time.Hour}
	d, err := OpenFS(mem, opts)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(7, 7))
	expiry := time.Now().Add(time.Hour)
	for range 1500 {
		data, key := storetest.Blob(r, 100+r.IntN(900))
		if err := d.Put(key, data, expiry, store.PutOptions{NoWait: true}); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		acks, ackedAt = append(acks, ack{key, data, expiry, false}), append(ackedAt, time.Now())
		mu.Unlock()
		time.Sleep(200 * time.Microsecond) // a steady stream over many intervals
	}
	rec.Cut(mem)
	d.Close()

	points := rec.Points()
	if len(points) < 5 {
		t.Fatalf("only %d syncs in the workload, want several intervals", len(points))
	}
	var window time.Duration
	lost := 0
	for i, cp := range points {
		// No index: rebuilt from the segments as synced.
		if err := os.Remove(filepath.Join(opts.Dir, indexFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
		re, err := OpenFS(cp.FS.CrashClone(), opts)
		if err != nil {
			t.Fatalf("crash point %d: reopen: %v", i, err)
		}
		safe := 0 // acknowledged before the group commit before this one began
		if i > 1 {
			safe = points[i-2].State.acked
		}
		for j, a := range acks[:cp.State.acked] {
			data, _, err := re.Get(a.key)
			if err == nil && bytes.Equal(data, a.data) {
				continue
			}
			if j < safe {
				t.Fatalf("crash point %d: put %d, acknowledged before the last sync began, is lost: %v", i, j, err)
			}
			lost++
			window = max(window, cp.State.at.Sub(ackedAt[j]))
		}
		re.Close()
	}
	t.Logf("periodic sync every %v: %d crash points, %d puts acknowledged, %d losses over all points; the oldest lost put was acknowledged %v before its cut", interval, len(points), len(acks), lost, window.Round(100*time.Microsecond))
	if lost == 0 {
		t.Error("no crash point lost a put acknowledged before its sync: the puts waited for durability")
	}
}
