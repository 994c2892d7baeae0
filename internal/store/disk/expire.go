package disk

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"sort"
	"time"

	bolt "go.etcd.io/bbolt"

	"triad/internal/merkle"
	"triad/internal/store"
)

// expiryNow is the time things expire at: the clock, checked against the
// monotonic one (store.ClockGuard).
func (d *Disk) expiryNow() time.Time {
	wall, mono := d.opt.Now(), d.opt.Elapsed()
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.guard.Now(wall, mono)
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
// segments ids, and the tombstones kept there.
func unindexWindow(tx *bolt.Tx, opt *store.Options, w int64, ids map[uint64]bool) error {
	index, exp := tx.Bucket(bIndex), tx.Bucket(bExpiry)
	lo := sortableTime(w * int64(opt.Window))
	hi := sortableTime(opt.WindowEnd(w).UnixNano())
	if err := untombWindow(tx, lo, hi, ids); err != nil {
		return err
	}
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

// untombWindow forgets the tombstones with cutoffs in [lo, hi) that lie in
// the segments ids: the records they kill lie in those windows or earlier
// ones, gone with them.
func untombWindow(tx *bolt.Tx, lo, hi []byte, ids map[uint64]bool) error {
	dead, dexp := tx.Bucket(bDead), tx.Bucket(bDExp)
	var drop [][]byte
	c := dexp.Cursor()
	for k, _ := c.Seek(lo); k != nil && bytes.Compare(k[:8], hi) < 0; k, _ = c.Next() {
		t, err := decodeTomb(dead.Get(k[8:]))
		if err != nil || ids[t.seg] {
			drop = append(drop, bytes.Clone(k))
		}
	}
	for _, k := range drop {
		if err := dexp.Delete(k); err != nil {
			return err
		}
		if v := dead.Get(k[8:]); v != nil {
			if t, err := decodeTomb(v); err == nil && !ids[t.seg] {
				continue
			}
			if err := dead.Delete(k[8:]); err != nil {
				return err
			}
		}
	}
	return nil
}
