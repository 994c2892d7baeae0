package disk

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"triad/internal/id"
	"triad/internal/store"
	"triad/internal/vfs"
)

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
	asked := expiry
	expiry = d.opt.Retain(expiry, now)
	var mu *sync.Mutex
	fresh := opt.Fresh && !opt.Opaque && !d.deleted.Load() // no look-up, no key lock
	if !fresh {
		// What is stored decides the put, so no other put of key may come
		// between the look and the append.
		mu = &d.keyMu[keyLock(key)]
		mu.Lock()
		var done bool
		durable, done, expiry, err = d.reput(key, data, expiry, opt)
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
	g, err := d.append(key, e, rec, false)
	full := len(d.active) >= d.opt.CheckpointEntries
	overfull := len(d.active) >= 4*d.opt.CheckpointEntries
	d.mu.Unlock()
	if mu != nil {
		mu.Unlock()
	}
	if err != nil {
		if fresh && (errors.Is(err, store.ErrFull) || errors.Is(err, store.ErrExpired)) {
			// A Fresh put that found no room (or its window gone) may be
			// of a key stored after all, lasting as long: the look it
			// skipped would need none.
			opt.Fresh = false
			return d.PutAsync(key, data, asked, opt)
		}
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
// append (key is not stored, or this object is and expiry extends it),
// with the expiry to append with: past the cutoff of key's tombstone, if
// it was deleted. A stored opaque object found damaged while comparing is
// quarantined, so the put stores its copy instead. The caller holds key's
// lock.
func (d *Disk) reput(key id.ID, data []byte, expiry time.Time, opt store.PutOptions) (durable func() error, done bool, _ time.Time, err error) {
	e, pending, found, err := d.lookup(key)
	if err != nil || !found {
		if t := e.tomb; err == nil && t.seg != 0 && expiry.UnixNano() <= t.cutoff {
			expiry = time.Unix(0, t.cutoff+1)
		}
		return nil, false, expiry, err
	}
	if opaque := e.flags&entryOpaque != 0; opaque != opt.Opaque {
		return nil, false, expiry, fmt.Errorf("%w: %v holds %s", store.ErrConflict, key, kind(opaque))
	}
	if opt.Opaque {
		stored, _, err := d.GetInto(key, nil)
		switch {
		case errors.Is(err, store.ErrCorrupt), errors.Is(err, store.ErrNotFound):
			return nil, false, expiry, nil // quarantined or reclaimed since the look
		case err != nil:
			return nil, false, expiry, err
		case !bytes.Equal(stored, data):
			return nil, false, expiry, fmt.Errorf("%w: %v holds other opaque bytes", store.ErrConflict, key)
		}
	}
	if e.expiry < expiry.UnixNano() {
		return nil, false, expiry, nil
	}
	if pending {
		return d.waitGroup, true, expiry, nil
	}
	return func() error { return nil }, true, expiry, nil
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

// append writes rec, the record of e (an object, or a tombstone if e is
// dead), to its window's segment and records it as pending. With force it
// is written into a full store: a tombstone (a delete is how room is
// made) or a copy that compaction makes to give room back. d.mu is held.
func (d *Disk) append(key id.ID, e entry, rec [3][]byte, force bool) (*syncGroup, error) {
	switch {
	case d.closed:
		return nil, store.ErrClosed
	case d.failed != nil:
		return nil, d.failed
	}
	if old, ok := d.active[key]; ok && !force && old.live() && e.live() && old.flags&entryOpaque != e.flags&entryOpaque {
		// A Fresh put that was not: the object there stays.
		return nil, fmt.Errorf("%w: %v holds %s", store.ErrConflict, key, kind(old.flags&entryOpaque != 0))
	}
	w := d.opt.WindowOf(time.Unix(0, e.expiry))
	if w <= d.retired {
		return nil, fmt.Errorf("%w: its window has been reclaimed", store.ErrExpired)
	}
	n := int64(len(rec[0]) + len(rec[1]) + len(rec[2]))
	if c := d.opt.Capacity; c > 0 && d.usage+n > c && !force {
		return nil, fmt.Errorf("%w: %d of %d bytes used", store.ErrFull, d.usage, c)
	}
	s, err := d.appendTarget(w, n)
	if err != nil {
		return nil, err
	}
	if err := d.preallocate(s, n); err != nil {
		return nil, err
	}
	if err := vfs.WriteFullAt(s.f, rec[:], s.size); err != nil {
		// Cut the partial record so the next one starts clean; if even that
		// fails, write no more to this file.
		if s.f.Truncate(s.size) != nil {
			delete(d.open, w)
		}
		s.zeroed = s.size
		return nil, diskErr(fmt.Errorf("writing %s: %w", s.path, err))
	}
	if e.live() {
		e.seg, e.off = s.id, s.size
	} else {
		e.tomb.seg, e.tomb.off = s.id, s.size
	}
	if old, ok := d.active[key]; ok {
		var gone [2]entry
		e, gone = fold(old, e)
		d.dropped(key, gone[:]...)
	}
	d.active[key] = e
	s.size += n
	d.usage += n
	d.dirty[s] = struct{}{}
	d.appended++
	return d.group, nil
}

// dropped counts the records of es, which no longer hold key's object, as
// dead bytes of their segments. d.mu is held.
func (d *Disk) dropped(key id.ID, es ...entry) {
	for _, e := range es {
		if s := d.segs[e.seg]; s != nil && e.seg != 0 {
			s.dead += int64(e.recordLen(key.Width()))
		}
	}
}

// appendTarget returns the open segment of window w with room for n more
// bytes, creating a file if needed. d.mu is held.
func (d *Disk) appendTarget(w int64, n int64) (*segment, error) {
	if s := d.open[w]; s != nil && (s.size == 0 || s.size+n <= d.opt.MaxSegment) {
		return s, nil
	}
	if s := d.open[w]; s != nil {
		s.trim() // full: no more records go there
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

// preallocate makes sure s's file already holds the n bytes past its last
// record, written as zeros, before a record goes there. A record written
// over bytes the file has then changes no file metadata, so the group
// commit's fdatasync writes the record's pages and no more; a record that
// grew the file would make it write the inode too, through the file
// system's journal. On this machine that took a small put's fdatasync
// from about 240 to 155 µs (docs/storage.md). Recovery cuts the zeros
// after the last record (replaySegment), as it cuts a torn tail. d.mu is
// held.
//
// Zeros that do not fit (a full file system) are not an error: the
// record is written past the file's end, as it would be without them, so
// a put that fits is never refused for the room ahead of it.
func (d *Disk) preallocate(s *segment, n int64) error {
	// Records written past the zeros (their write failed) end where the
	// zeros must start: zeros never go over a record.
	s.zeroed = max(s.zeroed, s.size)
	for s.size+n > s.zeroed {
		chunk := min(vfs.ZeroChunk, max(d.opt.MaxSegment, s.size+n)-s.zeroed)
		written, err := vfs.WriteZeros(s.f, s.zeroed, chunk)
		if err != nil {
			return diskErr(fmt.Errorf("preallocating %s: %w", s.path, err))
		}
		if !written {
			return nil
		}
		s.zeroed += chunk
	}
	return nil
}

// trim cuts the zeros past s's last record, once no more records will
// be written to s. The cut is not synced: the zeros a crash brings back
// are cut again by recovery.
func (s *segment) trim() {
	if s.zeroed > s.size && s.f.Truncate(s.size) == nil {
		s.zeroed = s.size
	}
}

// syncGroup is the set of puts that one fdatasync makes durable.
type syncGroup struct {
	done chan struct{}
	err  error
}

func newGroup() *syncGroup { return &syncGroup{done: make(chan struct{})} }

// waitGroup waits until everything written so far is durable.
func (d *Disk) waitGroup() error { return d.waitKicking(d.syncKick) }

// waitGroupNow is waitGroup for Sync: the group commit runs now, not
// after the rest of the interval.
func (d *Disk) waitGroupNow() error { return d.waitKicking(d.syncNow) }

// waitKicking waits for the group commit of what is written now, with
// the given kick.
func (d *Disk) waitKicking(c chan struct{}) error {
	d.mu.Lock()
	g := d.group
	d.mu.Unlock()
	kick(c)
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
// durable with one fdatasync per dirty segment, at most once per interval
// for puts; at once for Sync, a checkpoint and Close.
func (d *Disk) syncLoop() {
	defer d.wg.Done()
	var last time.Time
	for {
		now := false
		select {
		case <-d.syncKick:
		case <-d.syncNow:
			now = true
		case <-d.stopSync:
			d.syncOnce()
			d.closeGroups()
			return
		}
		if !now {
			d.gather()
		}
		if wait := d.opt.SyncInterval - time.Since(last); wait > 0 && !now {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-d.syncNow: // Sync: the commit runs now
				t.Stop()
			case <-d.stopSync: // closing: the last commit runs now
				t.Stop()
				d.syncOnce()
				d.closeGroups()
				return
			}
		}
		d.syncOnce()
		last = time.Now()
	}
}

// gather lets the writes already under way in this process join the
// coming group commit: it yields the processor, so that every goroutine
// ready to run (a connection's reader with a frame, the node's loop, a
// worker writing a copy) runs before the fdatasync starts, and yields
// again while a pass added records, at most gatherPasses times. It sets
// no timer and waits for no input that has not arrived.
//
// Without it, the first write's kick started the sync at once: with one
// processor (GOMAXPROCS 1, as nodes sharing cores run) the goroutine a
// channel send readies runs next, ahead of the copies already received
// and queued behind it, so a commit held about one copy and the next ones
// waited a whole sync for theirs.
func (d *Disk) gather() {
	for range gatherPasses {
		d.mu.Lock()
		before := d.appended
		d.mu.Unlock()
		runtime.Gosched()
		d.mu.Lock()
		added := d.appended != before
		d.mu.Unlock()
		if !added {
			return
		}
	}
}

// gatherPasses bounds gather's yields.
const gatherPasses = 4

// closeGroups makes whoever waits for a group commit from now on learn
// that the engine is closed.
func (d *Disk) closeGroups() {
	d.mu.Lock()
	d.group = &syncGroup{done: make(chan struct{}), err: store.ErrClosed}
	close(d.group.done)
	d.mu.Unlock()
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
	syncs := int64(len(segs))
	for _, s := range segs {
		if e := s.f.Sync(); e != nil && err == nil {
			err = fmt.Errorf("store: fdatasync %s: %w", s.path, e)
		}
	}
	if dir {
		syncs++
		if e := d.fs.SyncDir(d.opt.Dir); e != nil && err == nil {
			err = fmt.Errorf("store: syncing directory: %w", e)
		}
	}
	// After a failed fsync the kernel may have dropped the dirty pages, so a
	// later sync could succeed over lost data: the failure sticks, and no
	// later group, write or checkpoint succeeds until the store is reopened.
	d.mu.Lock()
	d.stats.Syncs += syncs
	if err != nil && d.failed == nil {
		d.failed = err
	}
	g.err = d.failed
	d.mu.Unlock()
	close(g.done)
}
