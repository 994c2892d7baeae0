package disk

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"time"

	bolt "go.etcd.io/bbolt"

	"triad/internal/id"
	"triad/internal/merkle"
	"triad/internal/store"
)

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
// read. A deleted key is not found, and e is then its dead entry, whose
// tomb a put after the delete must outlive.
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
		return e, true, e.live(), nil
	}
	d.db.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bIndex).Get(key.Bytes()); v != nil {
			found = true
			e, err = decodeEntry(v)
		} else if v := tx.Bucket(bDead).Get(key.Bytes()); v != nil {
			var t tomb
			t, err = decodeTomb(v)
			e = deadEntry(t)
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
	return d.getFrom(key, e, buf)
}

// getFrom is GetInto from e, where find put key. A record compaction
// moved meanwhile is read again where it went; a few moves in a row are
// as many rewrites of its segment while one read waited.
func (d *Disk) getFrom(key id.ID, e entry, buf []byte) ([]byte, store.Meta, error) {
	for range 3 {
		data, m, moved, err := d.readAt(key, e, buf)
		if moved.seg == 0 {
			return data, m, err
		}
		e = moved
	}
	return nil, store.Meta{}, fmt.Errorf("%w: %v keeps moving", store.ErrNotFound, key)
}

// readAt reads key's record where e says it is. If its segment is gone
// meanwhile, it returns where the index now puts the key (moved), or
// store.ErrNotFound if nowhere.
func (d *Disk) readAt(key id.ID, e entry, buf []byte) (_ []byte, _ store.Meta, moved entry, _ error) {
	d.mu.Lock()
	s := d.segs[e.seg]
	d.mu.Unlock()
	var err error
	n := e.recordLen(key.Width())
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if s != nil {
		_, err = s.f.ReadAt(buf, e.off)
	}
	if s == nil || errors.Is(err, os.ErrClosed) {
		// Reclaimed or rewritten since find, unless the index still
		// points there.
		now, _, ferr := d.find(key)
		switch {
		case ferr != nil:
			return nil, store.Meta{}, entry{}, fmt.Errorf("%w: %v was reclaimed", store.ErrNotFound, key)
		case !now.at(e):
			return nil, store.Meta{}, now, nil
		case s == nil:
			return nil, store.Meta{}, entry{}, d.quarantine(key, e, "its segment file is missing")
		}
		return nil, store.Meta{}, entry{}, fmt.Errorf("%w: %v was reclaimed", store.ErrNotFound, key)
	}
	if err != nil {
		return nil, store.Meta{}, entry{}, d.quarantine(key, e, err.Error())
	}
	r, _, err := decodeRecord(buf, formatMaxData)
	switch {
	case err != nil:
		return nil, store.Meta{}, entry{}, d.quarantine(key, e, err.Error())
	case !bytes.Equal(r.key, key.Bytes()) || r.expiry != e.expiry || len(r.data) != e.size:
		return nil, store.Meta{}, entry{}, d.quarantine(key, e, "the record there is another object's")
	}
	m := e.meta()
	m.Key = key
	return r.data, m, entry{}, nil
}

// quarantine takes a damaged object out of the index and the tree, so that
// nothing serves it and maintenance fetches a good copy, and records why.
func (d *Disk) quarantine(key id.ID, bad entry, why string) error {
	d.maintMu.Lock()
	defer d.maintMu.Unlock()
	d.mu.Lock()
	if e, ok := d.active[key]; ok && e.live() && e.at(bad) {
		if e.tomb.seg != 0 {
			d.active[key] = deadEntry(e.tomb) // the delete before it stands
		} else {
			delete(d.active, key)
		}
	}
	d.dropped(key, bad)
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

// readTree brings the tree up to date (within Options.TreeLag) and runs
// fn on it.
func (d *Disk) readTree(fn func(tx *bolt.Tx, r merkle.Reader, expiredUpTo int64)) error {
	if lag := d.opt.TreeLag; lag <= 0 || d.opt.Elapsed()-time.Duration(d.caughtUp.Load()) >= lag {
		if err := d.catchUp(); err != nil {
			return err
		}
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
	pending := 0
	for _, m := range []map[id.ID]entry{d.active, d.flushing} {
		for _, e := range m {
			if e.live() {
				pending++
				s.ObjectsByExpiry[d.expiryBucket(e.expiry, now)]++
			}
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
