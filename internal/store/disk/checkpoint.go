package disk

import (
	"bytes"
	"fmt"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"triad/internal/id"
	"triad/internal/merkle"
)

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

// Maintain implements store.Engine: checkpoint, drop expired keys from the
// tree, rewrite segments less than half live, reclaim space past the
// high-water mark.
func (d *Disk) Maintain() error {
	d.maintMu.Lock()
	defer d.maintMu.Unlock()
	if err := d.checkpoint(); err != nil {
		return err
	}
	if err := d.compact(); err != nil {
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
	began := d.opt.Elapsed()
	d.mu.Lock()
	if d.failed != nil {
		d.mu.Unlock()
		return d.failed
	}
	batch := d.active
	d.active = make(map[id.ID]entry)
	d.flushing = batch
	marks := make(map[uint64]segMark, len(d.segs))
	for _, s := range d.segs {
		marks[s.id] = segMark{s.window, s.size, s.dead}
	}
	g := d.group
	d.mu.Unlock()

	var err error
	if len(batch) > 0 {
		// The index must never point at bytes that are not durable: a
		// commit now, not after the rest of a long interval.
		kick(d.syncNow)
		<-g.done
		err = g.err
	}
	now := d.expiryNow().UnixNano()
	var dead map[uint64]int64
	if err == nil && (len(batch) > 0 || d.expiryDue(now)) {
		err = d.db.Update(func(tx *bolt.Tx) error {
			var err error
			if dead, err = applyEntries(tx, batch); err != nil {
				return err
			}
			segs := tx.Bucket(bSegs)
			for sid, m := range marks {
				m.dead += dead[sid]
				if err := segs.Put(segKey(sid), m.encode()); err != nil {
					return err
				}
			}
			return expireTree(tx, now)
		})
	}
	d.mu.Lock()
	if err != nil {
		// Put the batch back under what came since, which is later.
		for k, e := range batch {
			if cur, ok := d.active[k]; ok {
				e, _ = fold(e, cur)
			}
			d.active[k] = e
		}
	} else {
		for sid, n := range dead {
			if s := d.segs[sid]; s != nil {
				s.dead += n
			}
		}
	}
	d.flushing = nil
	d.mu.Unlock()
	if err != nil {
		return diskErr(fmt.Errorf("checkpoint: %w", err))
	}
	d.caughtUp.Store(int64(began))
	return nil
}

// applyEntries writes entries to the index and returns the bytes of
// records that no longer hold a live object, by segment. A key's
// tombstone goes first: an indexed object that expires by its cutoff
// leaves the index and the tree. Then of two objects of a key, the one
// that expires later wins, unless they are of different kinds
// (entry.supersedes). Tree membership is kept across a re-put, not across
// a delete. Keys go in sorted order: bbolt splits pages only at commit, so
// random inserts into a small tree would shift ever-larger nodes.
func applyEntries(tx *bolt.Tx, batch map[id.ID]entry) (map[uint64]int64, error) {
	index := tx.Bucket(bIndex)
	tree := newBoltTree(tx)
	keys := make([]id.ID, 0, len(batch))
	for k := range batch {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, id.ID.Cmp)
	dead := map[uint64]int64{}
	var add, del, expAdd, expDel [][]byte
	for _, k := range keys {
		e, key := batch[k], k.Bytes()
		t, err := applyTomb(tx, key, e.tomb, dead)
		if err != nil {
			return nil, err
		}
		var old entry
		had := false
		if v := index.Get(key); v != nil {
			if old, err = decodeEntry(v); err != nil {
				return nil, err
			}
			if old.at(e) {
				continue // indexed already
			}
			had = true
		}
		killed := had && t.seg != 0 && old.expiry <= t.cutoff
		keep := e.live() && (t.seg == 0 || e.expiry > t.cutoff) && (!had || killed || e.supersedes(old))
		if e.live() && !keep {
			dead[e.seg] += int64(e.recordLen(len(key)))
		}
		if !keep && !killed {
			continue
		}
		inTree := tree.keys.Get(key) != nil
		if had {
			dead[old.seg] += int64(old.recordLen(len(key)))
			expDel = append(expDel, expiryKey(old.expiry, key))
		}
		if !keep {
			if err := index.Delete(key); err != nil {
				return nil, err
			}
			if inTree {
				del = append(del, key)
			}
			continue
		}
		switch {
		case inTree && !killed:
			e.flags |= entryInTree
		case inTree && e.flags&entryInTree == 0:
			del = append(del, key)
		case !inTree && e.flags&entryInTree != 0:
			add = append(add, key)
		}
		if err := index.Put(key, e.encode()); err != nil {
			return nil, err
		}
		expAdd = append(expAdd, expiryKey(e.expiry, key))
	}
	exp := tx.Bucket(bExpiry)
	for _, k := range expDel {
		if err := exp.Delete(k); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(expAdd, bytes.Compare)
	for _, k := range expAdd {
		if err := exp.Put(k, present); err != nil {
			return nil, err
		}
	}
	merkle.Update(tree, add, del)
	return dead, tree.err
}
