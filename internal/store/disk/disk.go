package disk

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterr "go.etcd.io/bbolt/errors"

	"triad/internal/id"
	"triad/internal/merkle"
	"triad/internal/store"
	"triad/internal/vfs"
)

// Disk is the storage engine on a real disk. Objects are appended to
// segment files, one or more per expiry window; a group commit makes them
// durable with one fdatasync per interval. The segments are the log: the
// bbolt index and Merkle tree catch up at checkpoints, and recovery replays
// the segments past the last checkpoint, so a put costs one sequential write
// and a share of one fdatasync.
type Disk struct {
	opt store.Options
	fs  vfs.FS // the segments'; bbolt's index is on the OS
	db  *bolt.DB

	maintMu sync.Mutex           // serialises checkpoints, reclamation, quarantine
	keyMu   [keyLocks]sync.Mutex // serialise the checked puts of a key (keyLock)

	mu       sync.Mutex
	segs     map[uint64]*segment
	open     map[int64]*segment // the segment each window appends to
	dirty    map[*segment]struct{}
	dirDirty bool
	nextSeg  uint64
	active   map[id.ID]entry // written since the last checkpoint
	flushing map[id.ID]entry // being written to the index now
	group    *syncGroup
	retired  int64 // windows up to this one take no more appends
	usage    int64
	failed   error
	closing  bool
	closed   bool
	stats    store.Stats
	guard    store.ClockGuard // the time things expire at (expiryNow)

	syncKick  chan struct{}
	maintKick chan struct{}
	stopMaint chan struct{}
	stopSync  chan struct{}
	wg        sync.WaitGroup
}

type segment struct {
	id     uint64
	window int64
	path   string
	f      vfs.File
	size   int64
	mapped *mapping // for View, once a view needs it
}

// syncGroup is the set of puts that one fdatasync makes durable.
type syncGroup struct {
	done chan struct{}
	err  error
}

func newGroup() *syncGroup { return &syncGroup{done: make(chan struct{})} }

const indexFile = "index.db"

// Open opens or creates the engine in opt.Dir and recovers it: torn tails
// are cut and records the index missed are indexed. A nil opt.Now is the
// wall clock.
func Open(opt store.Options) (*Disk, error) { return OpenFS(vfs.OS(), opt) }

// OpenFS is Open with the segments on fsys. The bbolt index is always a
// file of the OS in opt.Dir (bbolt does its own I/O), so that directory
// must exist there too. Tests pass a vfs.MemFS to crash the engine.
func OpenFS(fsys vfs.FS, opt store.Options) (*Disk, error) {
	opt = opt.WithDefaults()
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Elapsed == nil {
		opt.Elapsed = store.ElapsedOf(opt.Now)
	}
	if opt.Dir == "" {
		return nil, errors.New("store: no directory given")
	}
	if err := vfs.MkdirAllSynced(fsys, opt.Dir); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	db, err := bolt.Open(filepath.Join(opt.Dir, indexFile), 0o600, &bolt.Options{
		Timeout:         time.Second,
		FreelistType:    bolt.FreelistMapType,
		InitialMmapSize: 256 << 20,
	})
	if errors.Is(err, bolterr.ErrTimeout) {
		return nil, fmt.Errorf("store: %s is in use by another process", opt.Dir)
	}
	if err != nil {
		return nil, fmt.Errorf("store: opening index: %w", err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range allBuckets {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("store: opening index: %w", err)
	}
	d := &Disk{
		opt:       opt,
		fs:        fsys,
		db:        db,
		segs:      make(map[uint64]*segment),
		open:      make(map[int64]*segment),
		dirty:     make(map[*segment]struct{}),
		active:    make(map[id.ID]entry),
		group:     newGroup(),
		retired:   math.MinInt64,
		nextSeg:   1,
		syncKick:  make(chan struct{}, 1),
		maintKick: make(chan struct{}, 1),
		stopMaint: make(chan struct{}),
		stopSync:  make(chan struct{}),
	}
	d.stats.Capacity = opt.Capacity
	if err := d.recover(); err != nil {
		d.closeFiles()
		return nil, err
	}
	d.wg.Add(2)
	go d.syncLoop()
	go d.maintainLoop()
	return d, nil
}

// Put implements store.Engine.
func (d *Disk) Put(key id.ID, data []byte, expiry time.Time, opt store.PutOptions) error {
	durable, err := d.PutAsync(key, data, expiry, opt)
	if err != nil || opt.NoWait {
		return err
	}
	return durable()
}

// PutAsync is Put returning once the object is written, with a function
// that waits until it is durable. A caller can do other work meanwhile: a
// news site commits its overview while the group commit runs.
func (d *Disk) PutAsync(key id.ID, data []byte, expiry time.Time, opt store.PutOptions) (durable func() error, err error) {
	now := d.opt.Now()
	if err := d.opt.CheckPut(key, data, expiry, now, opt); err != nil {
		return nil, err
	}
	expiry = d.opt.Retain(expiry, now)
	var mu *sync.Mutex
	if !opt.Fresh || opt.Opaque {
		// What is stored decides the put, so no other put of key may come
		// between the look and the append.
		mu = &d.keyMu[keyLock(key)]
		mu.Lock()
		durable, done, err := d.reput(key, data, expiry, opt)
		if err != nil || done {
			mu.Unlock()
			return durable, err
		}
	}
	var flags byte
	if opt.Opaque {
		flags |= flagOpaque
	}
	rec := recordParts(record{flags: flags, key: key.Bytes(), expiry: expiry.UnixNano(), data: data})
	e := entry{size: len(data), expiry: expiry.UnixNano()}
	if opt.Opaque {
		e.flags |= entryOpaque
	}
	if d.opt.EntersTree(expiry, now) {
		e.flags |= entryInTree
	}

	d.mu.Lock()
	g, err := d.append(key, e, rec)
	full := len(d.active) >= d.opt.CheckpointEntries
	overfull := len(d.active) >= 4*d.opt.CheckpointEntries
	d.mu.Unlock()
	if mu != nil {
		mu.Unlock()
	}
	if err != nil {
		if errors.Is(err, store.ErrFull) {
			kick(d.maintKick)
		}
		return nil, err
	}
	kick(d.syncKick)
	switch {
	case overfull:
		// The index is far behind: this writer helps it catch up, which
		// bounds the memory pending entries take.
		if err := d.catchUp(); err != nil {
			return nil, err
		}
	case full:
		kick(d.maintKick)
	}
	return func() error {
		<-g.done
		return g.err
	}, nil
}

// reput decides a put of key that may be stored already: done when the
// stored object is this one and lasts until expiry (durable waits for it),
// store.ErrConflict when it is another object, neither when the put must
// append (key is not stored, or this object is and expiry extends it). A
// stored opaque object found damaged while comparing is quarantined, so
// the put stores its copy instead. The caller holds key's lock.
func (d *Disk) reput(key id.ID, data []byte, expiry time.Time, opt store.PutOptions) (durable func() error, done bool, err error) {
	e, pending, found, err := d.lookup(key)
	if err != nil || !found {
		return nil, false, err
	}
	if opaque := e.flags&entryOpaque != 0; opaque != opt.Opaque {
		return nil, false, fmt.Errorf("%w: %v holds %s", store.ErrConflict, key, kind(opaque))
	}
	if opt.Opaque {
		stored, _, err := d.GetInto(key, nil)
		switch {
		case errors.Is(err, store.ErrCorrupt), errors.Is(err, store.ErrNotFound):
			return nil, false, nil // quarantined or reclaimed since the look
		case err != nil:
			return nil, false, err
		case !bytes.Equal(stored, data):
			return nil, false, fmt.Errorf("%w: %v holds other opaque bytes", store.ErrConflict, key)
		}
	}
	if e.expiry < expiry.UnixNano() {
		return nil, false, nil
	}
	if pending {
		return d.waitGroup, true, nil
	}
	return func() error { return nil }, true, nil
}

// keyLocks is how many locks serialise the puts of one key (keyLock).
const keyLocks = 64

func keyLock(key id.ID) int {
	b := key.Bytes()
	return int(b[len(b)-1]) % keyLocks
}

func kind(opaque bool) string {
	if opaque {
		return "an opaque object"
	}
	return "a content-hash object"
}

// supersedes reports whether e, a later record of a key, takes the place
// of old in the index: only a copy of the same object (the same kind; a
// put checked the bytes of an opaque one) that lasts as long or longer.
// Puts check this before they append; the rule holds here too for a Fresh
// put that was not, so that what was stored first stays.
func (e entry) supersedes(old entry) bool {
	return e.flags&entryOpaque == old.flags&entryOpaque && e.expiry >= old.expiry
}

// append writes rec to its window's segment and records it as pending.
// d.mu is held.
func (d *Disk) append(key id.ID, e entry, rec [3][]byte) (*syncGroup, error) {
	switch {
	case d.closed:
		return nil, store.ErrClosed
	case d.failed != nil:
		return nil, d.failed
	}
	if old, ok := d.active[key]; ok && old.flags&entryOpaque != e.flags&entryOpaque {
		// A Fresh put that was not: the object there stays.
		return nil, fmt.Errorf("%w: %v holds %s", store.ErrConflict, key, kind(old.flags&entryOpaque != 0))
	}
	w := d.opt.WindowOf(time.Unix(0, e.expiry))
	if w <= d.retired {
		return nil, fmt.Errorf("%w: its window has been reclaimed", store.ErrExpired)
	}
	n := int64(len(rec[0]) + len(rec[1]) + len(rec[2]))
	if c := d.opt.Capacity; c > 0 && d.usage+n > c {
		return nil, fmt.Errorf("%w: %d of %d bytes used", store.ErrFull, d.usage, c)
	}
	s, err := d.appendTarget(w, n)
	if err != nil {
		return nil, err
	}
	if err := vfs.WriteFullAt(s.f, rec[:], s.size); err != nil {
		// Cut the partial record so the next one starts clean; if even that
		// fails, write no more to this file.
		if s.f.Truncate(s.size) != nil {
			delete(d.open, w)
		}
		return nil, diskErr(fmt.Errorf("writing %s: %w", s.path, err))
	}
	e.seg, e.off = s.id, s.size
	if old, ok := d.active[key]; !ok || e.supersedes(old) {
		d.active[key] = e
	}
	s.size += n
	d.usage += n
	d.dirty[s] = struct{}{}
	return d.group, nil
}

// appendTarget returns the open segment of window w with room for n more
// bytes, creating a file if needed. d.mu is held.
func (d *Disk) appendTarget(w int64, n int64) (*segment, error) {
	if s := d.open[w]; s != nil && (s.size == 0 || s.size+n <= d.opt.MaxSegment) {
		return s, nil
	}
	s := &segment{id: d.nextSeg, window: w}
	s.path = filepath.Join(d.opt.Dir, fmt.Sprintf("%d-%d.seg", w, s.id))
	f, err := d.fs.OpenFile(s.path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("store: creating segment: %w", err)
	}
	d.nextSeg++
	s.f = f
	d.segs[s.id] = s
	d.open[w] = s
	d.dirDirty = true
	return s, nil
}

// waitGroup waits until everything written so far is durable.
func (d *Disk) waitGroup() error {
	d.mu.Lock()
	g := d.group
	d.mu.Unlock()
	kick(d.syncKick)
	<-g.done
	return g.err
}

func kick(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// syncLoop is the group commit: each pass makes every write before it
// durable with one fdatasync per dirty segment, at most once per interval.
func (d *Disk) syncLoop() {
	defer d.wg.Done()
	var last time.Time
	for {
		select {
		case <-d.syncKick:
		case <-d.stopSync:
			d.syncOnce()
			// Whoever waits from now on learns the engine is closed.
			d.mu.Lock()
			d.group = &syncGroup{done: make(chan struct{}), err: store.ErrClosed}
			close(d.group.done)
			d.mu.Unlock()
			return
		}
		if wait := d.opt.SyncInterval - time.Since(last); wait > 0 {
			time.Sleep(wait)
		}
		d.syncOnce()
		last = time.Now()
	}
}

func (d *Disk) syncOnce() {
	d.mu.Lock()
	g := d.group
	d.group = newGroup()
	segs := make([]*segment, 0, len(d.dirty))
	for s := range d.dirty {
		segs = append(segs, s)
	}
	clear(d.dirty)
	dir := d.dirDirty
	d.dirDirty = false
	d.mu.Unlock()

	var err error
	for _, s := range segs {
		if e := s.f.Sync(); e != nil && err == nil {
			err = fmt.Errorf("store: fdatasync %s: %w", s.path, e)
		}
	}
	if dir {
		if e := d.fs.SyncDir(d.opt.Dir); e != nil && err == nil {
			err = fmt.Errorf("store: syncing directory: %w", e)
		}
	}
	// After a failed fsync the kernel may have dropped the dirty pages, so a
	// later sync could succeed over lost data: the failure sticks, and no
	// later group, write or checkpoint succeeds until the store is reopened.
	d.mu.Lock()
	if err != nil && d.failed == nil {
		d.failed = err
	}
	g.err = d.failed
	d.mu.Unlock()
	close(g.done)
}

func (d *Disk) maintainLoop() {
	defer d.wg.Done()
	t := time.NewTicker(d.opt.CheckpointInterval)
	defer t.Stop()
	for {
		select {
		case <-d.stopMaint:
			return
		case <-t.C:
		case <-d.maintKick:
		}
		d.Maintain() // errors reach callers through Put and the tree queries
	}
}

// Maintain implements store.Engine: checkpoint, drop expired keys from the tree,
// reclaim space past the high-water mark.
func (d *Disk) Maintain() error {
	d.maintMu.Lock()
	defer d.maintMu.Unlock()
	if err := d.checkpoint(); err != nil {
		return err
	}
	return d.reclaim()
}

// catchUp brings the index and tree up to date with every write so far.
func (d *Disk) catchUp() error {
	d.maintMu.Lock()
	defer d.maintMu.Unlock()
	return d.checkpoint()
}

// checkpoint writes the pending entries, the segment watermarks and the
// tree changes to the index in one transaction. d.maintMu is held.
func (d *Disk) checkpoint() error {
	d.mu.Lock()
	if d.failed != nil {
		d.mu.Unlock()
		return d.failed
	}
	batch := d.active
	d.active = make(map[id.ID]entry)
	d.flushing = batch
	marks := make(map[uint64][2]int64, len(d.segs))
	for _, s := range d.segs {
		marks[s.id] = [2]int64{s.window, s.size}
	}
	g := d.group
	d.mu.Unlock()

	var err error
	if len(batch) > 0 {
		// The index must never point at bytes that are not durable.
		kick(d.syncKick)
		<-g.done
		err = g.err
	}
	now := d.expiryNow().UnixNano()
	if err == nil && (len(batch) > 0 || d.expiryDue(now)) {
		err = d.db.Update(func(tx *bolt.Tx) error {
			if err := applyEntries(tx, batch); err != nil {
				return err
			}
			segs := tx.Bucket(bSegs)
			for sid, m := range marks {
				if err := segs.Put(segKey(sid), segValue(m[0], m[1])); err != nil {
					return err
				}
			}
			return expireTree(tx, now)
		})
	}
	d.mu.Lock()
	if err != nil {
		for k, e := range batch {
			if _, ok := d.active[k]; !ok {
				d.active[k] = e
			}
		}
	}
	d.flushing = nil
	d.mu.Unlock()
	if err != nil {
		return diskErr(fmt.Errorf("checkpoint: %w", err))
	}
	return nil
}

// expiryNow is the time things expire at: the clock, checked against the
// monotonic one (store.ClockGuard).
func (d *Disk) expiryNow() time.Time {
	wall, mono := d.opt.Now(), d.opt.Elapsed()
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.guard.Now(wall, mono)
}

// diskErr marks errors of a full disk as store.ErrFull.
func diskErr(err error) error {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return fmt.Errorf("%w: %w", store.ErrFull, err)
	}
	return fmt.Errorf("store: %w", err)
}

// applyEntries writes entries to the index; of two copies of a key, the one
// that expires later wins, unless they are of different kinds
// (entry.supersedes). Tree membership is kept across a re-put. Keys go
// in sorted order: bbolt splits pages only at commit, so random inserts into
// a small tree would shift ever-larger nodes.
func applyEntries(tx *bolt.Tx, batch map[id.ID]entry) error {
	index, exp := tx.Bucket(bIndex), tx.Bucket(bExpiry)
	tree := newBoltTree(tx)
	keys := make([]id.ID, 0, len(batch))
	for k := range batch {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, id.ID.Cmp)
	var add, expAdd, expDel [][]byte
	for _, k := range keys {
		e, key := batch[k], k.Bytes()
		if v := index.Get(key); v != nil {
			old, err := decodeEntry(v)
			if err != nil {
				return err
			}
			if !e.supersedes(old) {
				continue
			}
			expDel = append(expDel, expiryKey(old.expiry, key))
		}
		if tree.keys.Get(key) != nil {
			e.flags |= entryInTree
		} else if e.flags&entryInTree != 0 {
			add = append(add, key)
		}
		if err := index.Put(key, e.encode()); err != nil {
			return err
		}
		expAdd = append(expAdd, expiryKey(e.expiry, key))
	}
	for _, k := range expDel {
		if err := exp.Delete(k); err != nil {
			return err
		}
	}
	slices.SortFunc(expAdd, bytes.Compare)
	for _, k := range expAdd {
		if err := exp.Put(k, present); err != nil {
			return err
		}
	}
	merkle.Update(tree, add, nil)
	return tree.err
}

// expiryDue reports whether some key may have to leave the tree by now.
func (d *Disk) expiryDue(now int64) bool {
	due := false
	d.db.View(func(tx *bolt.Tx) error {
		k, _ := tx.Bucket(bExpiry).Cursor().Seek(sortableTime(expiredUpTo(tx)))
		due = k != nil && bytes.Compare(k[:8], sortableTime(now)) <= 0
		return nil
	})
	return due
}

func expiredUpTo(tx *bolt.Tx) int64 {
	v := tx.Bucket(bMeta).Get(metaExpired)
	if len(v) != 8 {
		return math.MinInt64
	}
	return int64(binary.BigEndian.Uint64(v) ^ (1 << 63))
}

// expireTree removes from the tree the keys whose expiry is at or before now.
func expireTree(tx *bolt.Tx, now int64) error {
	from := expiredUpTo(tx)
	if from >= now {
		return nil
	}
	tree := newBoltTree(tx)
	var gone [][]byte
	c := tx.Bucket(bExpiry).Cursor()
	limit := sortableTime(now)
	for k, _ := c.Seek(sortableTime(from)); k != nil && bytes.Compare(k[:8], limit) <= 0; k, _ = c.Next() {
		if tree.keys.Get(k[8:]) != nil {
			gone = append(gone, bytes.Clone(k[8:]))
		}
	}
	merkle.Update(tree, nil, gone)
	if tree.err != nil {
		return tree.err
	}
	return tx.Bucket(bMeta).Put(metaExpired, sortableTime(now))
}

// reclaim unlinks expired windows (ReclaimMargin past their end at
// expiryNow), oldest first, while usage is past the high-water mark.
// Unexpired objects are never reclaimed. d.maintMu is held.
func (d *Disk) reclaim() error {
	if d.opt.Capacity <= 0 {
		return nil
	}
	target := int64(d.opt.HighWater * float64(d.opt.Capacity))
	now := d.expiryNow()
	d.mu.Lock()
	if d.usage <= target {
		d.mu.Unlock()
		return nil
	}
	var windows []int64
	seen := map[int64]bool{}
	for _, s := range d.segs {
		if !seen[s.window] && d.opt.Reclaimable(s.window, now) {
			seen[s.window] = true
			windows = append(windows, s.window)
		}
	}
	sort.Slice(windows, func(i, j int) bool { return windows[i] < windows[j] })
	for _, w := range windows {
		delete(d.open, w)
		d.retired = max(d.retired, w)
	}
	d.mu.Unlock()
	if len(windows) == 0 {
		return nil
	}
	// Index everything written to the retired windows before dropping them.
	if err := d.checkpoint(); err != nil {
		return err
	}
	for _, w := range windows {
		d.mu.Lock()
		done := d.usage <= target
		d.mu.Unlock()
		if done {
			break
		}
		if err := d.dropWindow(w); err != nil {
			return err
		}
		d.mu.Lock()
		d.stats.Reclaimed++
		d.mu.Unlock()
	}
	return nil
}

// dropWindow removes window w's objects from the index and unlinks its
// segment files. The index goes first, so a crash between the two leaves
// only unindexed files, which recovery indexes again.
func (d *Disk) dropWindow(w int64) error {
	d.mu.Lock()
	var segs []*segment
	ids := map[uint64]bool{}
	for _, s := range d.segs {
		if s.window == w {
			segs = append(segs, s)
			ids[s.id] = true
		}
	}
	d.mu.Unlock()
	err := d.db.Update(func(tx *bolt.Tx) error {
		if err := unindexWindow(tx, &d.opt, w, ids); err != nil {
			return err
		}
		for sid := range ids {
			if err := tx.Bucket(bSegs).Delete(segKey(sid)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: reclaiming window %d: %w", w, err)
	}
	d.mu.Lock()
	for _, s := range segs {
		delete(d.segs, s.id)
		d.usage -= s.size
		d.stats.ReclaimedBytes += s.size
		s.unmap()
	}
	d.mu.Unlock()
	for _, s := range segs {
		s.f.Close()
		if err := d.fs.Remove(s.path); err != nil {
			return fmt.Errorf("store: %w", err)
		}
	}
	return d.fs.SyncDir(d.opt.Dir)
}

// unindexWindow deletes the index entries of window w that point into the
// segments ids.
func unindexWindow(tx *bolt.Tx, opt *store.Options, w int64, ids map[uint64]bool) error {
	index, exp := tx.Bucket(bIndex), tx.Bucket(bExpiry)
	lo := sortableTime(w * int64(opt.Window))
	hi := sortableTime(opt.WindowEnd(w).UnixNano())
	var drop [][]byte
	c := exp.Cursor()
	for k, _ := c.Seek(lo); k != nil && bytes.Compare(k[:8], hi) < 0; k, _ = c.Next() {
		e, err := decodeEntry(index.Get(k[8:]))
		if err == nil && ids[e.seg] {
			drop = append(drop, bytes.Clone(k))
		}
	}
	var fromTree [][]byte
	for _, k := range drop {
		if err := exp.Delete(k); err != nil {
			return err
		}
		if err := index.Delete(k[8:]); err != nil {
			return err
		}
		fromTree = append(fromTree, k[8:])
	}
	tree := newBoltTree(tx)
	merkle.Update(tree, nil, fromTree)
	return tree.err
}

// find returns key's entry and whether it is still pending (written, not
// yet in the index), or store.ErrNotFound.
func (d *Disk) find(key id.ID) (entry, bool, error) {
	e, pending, found, err := d.lookup(key)
	if err == nil && !found {
		err = fmt.Errorf("%w: %v", store.ErrNotFound, key)
	}
	return e, pending, err
}

// lookup is find without an error for a missing key: Put asks about every
// new key, and formatting the error cost a small put more than its index
// read.
func (d *Disk) lookup(key id.ID) (e entry, pending, found bool, err error) {
	if err := d.opt.CheckKey(key); err != nil {
		return entry{}, false, false, err
	}
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return entry{}, false, false, store.ErrClosed
	}
	e, ok := d.active[key]
	if !ok {
		e, ok = d.flushing[key]
	}
	d.mu.Unlock()
	if ok {
		return e, true, true, nil
	}
	d.db.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bIndex).Get(key.Bytes()); v != nil {
			found = true
			e, err = decodeEntry(v)
		}
		return nil
	})
	if err != nil {
		return entry{}, false, false, err
	}
	return e, false, found, nil
}

// Stat implements store.Engine.
func (d *Disk) Stat(key id.ID) (store.Meta, error) {
	e, _, err := d.find(key)
	if err != nil {
		return store.Meta{}, err
	}
	m := e.meta()
	m.Key = key
	return m, nil
}

// Get implements store.Engine.
func (d *Disk) Get(key id.ID) ([]byte, store.Meta, error) { return d.GetInto(key, nil) }

// GetInto implements store.Engine.
func (d *Disk) GetInto(key id.ID, buf []byte) ([]byte, store.Meta, error) {
	e, _, err := d.find(key)
	if err != nil {
		return nil, store.Meta{}, err
	}
	d.mu.Lock()
	s := d.segs[e.seg]
	d.mu.Unlock()
	if s == nil {
		// Reclaimed since find, unless the index still points there.
		if now, _, err := d.find(key); err != nil || now != e {
			return nil, store.Meta{}, fmt.Errorf("%w: %v was reclaimed", store.ErrNotFound, key)
		}
		return nil, store.Meta{}, d.quarantine(key, e, "its segment file is missing")
	}
	n := e.recordLen(key.Width())
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := s.f.ReadAt(buf, e.off); err != nil {
		if errors.Is(err, os.ErrClosed) {
			return nil, store.Meta{}, fmt.Errorf("%w: %v was reclaimed", store.ErrNotFound, key)
		}
		return nil, store.Meta{}, d.quarantine(key, e, err.Error())
	}
	r, _, err := decodeRecord(buf, formatMaxData)
	switch {
	case err != nil:
		return nil, store.Meta{}, d.quarantine(key, e, err.Error())
	case !bytes.Equal(r.key, key.Bytes()) || r.expiry != e.expiry || len(r.data) != e.size:
		return nil, store.Meta{}, d.quarantine(key, e, "the record there is another object's")
	}
	m := e.meta()
	m.Key = key
	return r.data, m, nil
}

// quarantine takes a damaged object out of the index and the tree, so that
// nothing serves it and maintenance fetches a good copy, and records why.
func (d *Disk) quarantine(key id.ID, bad entry, why string) error {
	d.maintMu.Lock()
	defer d.maintMu.Unlock()
	d.mu.Lock()
	if e, ok := d.active[key]; ok && e.seg == bad.seg && e.off == bad.off {
		delete(d.active, key)
	}
	d.stats.Quarantined++
	d.mu.Unlock()
	err := d.db.Update(func(tx *bolt.Tx) error {
		index := tx.Bucket(bIndex)
		e, err := decodeEntry(index.Get(key.Bytes()))
		if err == nil && e.seg == bad.seg && e.off == bad.off {
			if err := index.Delete(key.Bytes()); err != nil {
				return err
			}
			if err := tx.Bucket(bExpiry).Delete(expiryKey(e.expiry, key.Bytes())); err != nil {
				return err
			}
			tree := newBoltTree(tx)
			merkle.Update(tree, nil, [][]byte{key.Bytes()})
			if tree.err != nil {
				return tree.err
			}
		}
		note := fmt.Sprintf("%s: segment %d offset %d: %s", d.opt.Now().UTC().Format(time.RFC3339), bad.seg, bad.off, why)
		return tx.Bucket(bQuar).Put(key.Bytes(), []byte(note))
	})
	if err != nil {
		return fmt.Errorf("%w: %v (%s); recording it failed: %v", store.ErrCorrupt, key, why, err)
	}
	return fmt.Errorf("%w: %v: %s", store.ErrCorrupt, key, why)
}

// readTree brings the tree up to date and runs fn on it.
func (d *Disk) readTree(fn func(tx *bolt.Tx, r merkle.Reader, expiredUpTo int64)) error {
	if err := d.catchUp(); err != nil {
		return err
	}
	return d.db.View(func(tx *bolt.Tx) error {
		t := newBoltTree(tx)
		fn(tx, t, expiredUpTo(tx))
		return t.err
	})
}

// TreeNode implements store.Engine.
func (d *Disk) TreeNode(p merkle.Prefix) (n merkle.Node, err error) {
	err = d.readTree(func(_ *bolt.Tx, r merkle.Reader, _ int64) { n = merkle.Lookup(r, p) })
	return n, err
}

// TreeChildren implements store.Engine.
func (d *Disk) TreeChildren(p merkle.Prefix) (kids []merkle.Node, err error) {
	err = d.readTree(func(_ *bolt.Tx, r merkle.Reader, _ int64) { kids = merkle.Children(r, p) })
	return kids, err
}

// TreeKeys implements store.Engine.
func (d *Disk) TreeKeys(p merkle.Prefix, lo, hi id.ID, max int) (keys []id.ID, err error) {
	err = d.readTree(func(_ *bolt.Tx, r merkle.Reader, _ int64) { keys = merkle.KeysInRange(r, p, lo, hi, max) })
	return keys, err
}

// CheckTree implements store.Engine: the stored root against one recomputed from
// the index entries marked for the tree that had not expired at the last
// expiry pass, and every stored node against its children.
func (d *Disk) CheckTree() error {
	var cerr error
	err := d.readTree(func(tx *bolt.Tx, r merkle.Reader, upTo int64) {
		var keys [][]byte
		tx.Bucket(bIndex).ForEach(func(k, v []byte) error {
			e, err := decodeEntry(v)
			if err == nil && e.flags&entryInTree != 0 && e.expiry > upTo {
				keys = append(keys, bytes.Clone(k))
			}
			return nil
		})
		cerr = store.CompareRoots(merkle.Lookup(r, merkle.Root()), merkle.Recompute(keys))
		if bad, ok := merkle.Verify(r, merkle.Root()); cerr == nil && !ok {
			cerr = fmt.Errorf("store: Merkle node %v does not match its children", bad)
		}
	})
	if err != nil {
		return err
	}
	return cerr
}

// expiryBucket is the Stats.ByExpiry index of an object expiring at ns:
// its window's, as for the bytes.
func (d *Disk) expiryBucket(ns int64, now time.Time) int {
	return store.ExpiryBucket(d.opt.WindowEnd(d.opt.WindowOf(time.Unix(0, ns))), now)
}

// Stats implements store.Engine. It checkpoints first, so the counts are exact.
func (d *Disk) Stats() store.Stats {
	d.catchUp()
	d.mu.Lock()
	s := d.stats
	s.ClockSteps = d.guard.Steps
	s.Usage = d.usage
	s.Segments = len(d.segs)
	now := d.opt.Now()
	for _, seg := range d.segs {
		s.ByExpiry[store.ExpiryBucket(d.opt.WindowEnd(seg.window), now)] += seg.size
	}
	pending := len(d.active) + len(d.flushing)
	for _, m := range []map[id.ID]entry{d.active, d.flushing} {
		for _, e := range m {
			s.ObjectsByExpiry[d.expiryBucket(e.expiry, now)]++
		}
	}
	d.mu.Unlock()
	d.db.View(func(tx *bolt.Tx) error {
		s.Objects = tx.Bucket(bIndex).Stats().KeyN + pending
		s.TreeKeys = tx.Bucket(bTKeys).Stats().KeyN
		// The expiry index is in expiry order: one pass counts the
		// objects by the horizon their window ends within.
		c := tx.Bucket(bExpiry).Cursor()
		for k, _ := c.First(); len(k) >= 8; k, _ = c.Next() {
			s.ObjectsByExpiry[d.expiryBucket(int64(binary.BigEndian.Uint64(k)^(1<<63)), now)]++
		}
		return nil
	})
	return s
}

// Keys calls fn for every stored key, in key order, until fn returns false.
// fn runs outside any index transaction, so it may call the engine.
func (d *Disk) Keys(fn func(id.ID) bool) error {
	if err := d.catchUp(); err != nil {
		return err
	}
	var after []byte
	for {
		var batch []id.ID
		err := d.db.View(func(tx *bolt.Tx) error {
			c := tx.Bucket(bIndex).Cursor()
			k, _ := c.First()
			if after != nil {
				if k, _ = c.Seek(after); k != nil && bytes.Equal(k, after) {
					k, _ = c.Next()
				}
			}
			for ; k != nil && len(batch) < 4096; k, _ = c.Next() {
				key, err := id.FromBytes(k)
				if err != nil {
					return err
				}
				batch = append(batch, key)
			}
			return nil
		})
		if err != nil || len(batch) == 0 {
			return err
		}
		for _, k := range batch {
			if !fn(k) {
				return nil
			}
		}
		after = batch[len(batch)-1].Bytes()
	}
}

// Quarantined returns the damaged objects found so far and why.
func (d *Disk) Quarantined() map[string]string {
	out := map[string]string{}
	d.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bQuar).ForEach(func(k, v []byte) error {
			out[fmt.Sprintf("%x", k)] = string(v)
			return nil
		})
	})
	return out
}

// Sync makes every write so far durable and indexed.
func (d *Disk) Sync() error {
	d.maintMu.Lock()
	defer d.maintMu.Unlock()
	if err := d.waitGroup(); err != nil {
		return err
	}
	return d.checkpoint()
}

// Close implements store.Engine: it indexes everything written and closes files.
func (d *Disk) Close() error {
	d.mu.Lock()
	if d.closing {
		d.mu.Unlock()
		return nil
	}
	d.closing = true
	d.mu.Unlock()
	close(d.stopMaint)
	err := d.Sync()
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
	close(d.stopSync)
	// The final sync's group carries any error to the waiters.
	d.wg.Wait()
	if cerr := d.closeFiles(); err == nil {
		err = cerr
	}
	return err
}

func (d *Disk) closeFiles() error {
	d.mu.Lock()
	for _, s := range d.segs {
		s.f.Close()
		s.unmap()
	}
	d.mu.Unlock()
	return d.db.Close()
}
