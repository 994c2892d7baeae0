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
