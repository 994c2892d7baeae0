package disk

import (
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"triad/internal/id"
	"triad/internal/store"
)

// Deletes. A delete appends a tombstone record to a segment, as a put
// appends its object, and returns after the group commit that makes it
// durable. The tombstone's cutoff is the latest expiry of anything stored
// under its key, and it kills every record of the key that expires by
// then: the rule needs no order among records, so recovery applies it the
// same wherever it meets them (replay reads segments in name order, not
// in the order they were written), and a rebuild from the segments alone
// honours it. A put after a delete is stored past the cutoff, so that it
// outlives the rule. The tombstone goes into its cutoff's window, so it
// lasts as long as the records it kills; the dead bucket keeps the latest
// cutoff of each key until that window is reclaimed, so that recovery
// also drops a record it replays from a segment the index no longer knows
// (compaction's crash window, below).

// Delete implements store.Engine.
func (d *Disk) Delete(key id.ID) error {
	if err := d.opt.CheckKey(key); err != nil {
		return err
	}
	// A Fresh put does not look at what is stored, so it would miss the
	// cutoff; from the first delete on, every put looks.
	d.deleted.Store(true)
	mu := &d.keyMu[keyLock(key)]
	mu.Lock()
	cutoff, err := d.cutoff(key)
	if err != nil {
		mu.Unlock()
		return err
	}
	d.mu.Lock()
	if w := d.opt.WindowOf(time.Unix(0, cutoff)); w <= d.retired {
		// Its window is being reclaimed and takes no more appends: the
		// tombstone goes into the first window that does.
		cutoff = d.opt.WindowEnd(d.retired).UnixNano()
	}
	rec := recordParts(record{flags: flagTombstone, key: key.Bytes(), expiry: cutoff})
	g, err := d.append(key, deadEntry(tomb{cutoff: cutoff}), rec, true)
	d.mu.Unlock()
	mu.Unlock()
	if err != nil {
		return err
	}
	kick(d.syncKick)
	<-g.done
	return g.err
}

// cutoff returns the latest expiry of any record of key that the engine
// knows of (pending, being indexed, or in the index), or
// store.ErrNotFound if key holds no object. The caller holds key's lock.
func (d *Disk) cutoff(key id.ID) (int64, error) {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return 0, store.ErrClosed
	}
	var es []entry
	for _, m := range []map[id.ID]entry{d.active, d.flushing} {
		if e, ok := m[key]; ok {
			es = append(es, e)
		}
	}
	d.mu.Unlock()
	err := d.db.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bIndex).Get(key.Bytes()); v != nil {
			e, err := decodeEntry(v)
			es = append(es, e)
			return err
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	var t tomb
	for _, e := range es {
		t = t.later(e.tomb)
	}
	found, cutoff := false, int64(0)
	for _, e := range es {
		if e.live() && (t.seg == 0 || e.expiry > t.cutoff) {
			if !found || e.expiry > cutoff {
				cutoff = e.expiry
			}
			found = true
		}
	}
	if !found {
		return 0, fmt.Errorf("%w: %v", store.ErrNotFound, key)
	}
	return cutoff, nil
}

// fold returns what a key holds after its record e, given old, what it
// held before (Disk.active, where records come in the order written): the
// later tombstone of the two, and of the objects that expire after its
// cutoff, the one that supersedes the other (old if neither does). It
// also returns the records that are now dead (zero entries where none),
// whose bytes compaction may reclaim; tombstones never are. Recovery,
// which meets records in no order, uses replayed instead.
func fold(old, e entry) (entry, [2]entry) {
	t := old.tomb.later(e.tomb)
	oldLive := old.live() && (t.seg == 0 || old.expiry > t.cutoff)
	newLive := e.live() && (t.seg == 0 || e.expiry > t.cutoff)
	var r entry
	switch {
	case oldLive && newLive && e.supersedes(old):
		r = e
	case oldLive:
		r = old
	case newLive:
		r = e
	default:
		r = deadEntry(t)
	}
	r.tomb = t
	var gone [2]entry
	if old.live() && !old.at(r) {
		gone[0] = old
	}
	if e.live() && !e.at(r) {
		gone[1] = e
	}
	return r, gone
}

// at reports whether e and r are the same record.
func (e entry) at(r entry) bool { return e.seg == r.seg && e.off == r.off }

// applyTomb records t as key's latest tombstone in the index unless one
// there cuts off later, and returns the latest. On a tie t, a copy
// compaction made or the record recovery found, takes the place. A
// tombstone replaced is dead bytes: the later one kills all it did.
func applyTomb(tx *bolt.Tx, key []byte, t tomb, dead map[uint64]int64) (tomb, error) {
	tombs, dexp := tx.Bucket(bDead), tx.Bucket(bDExp)
	var cur tomb
	if v := tombs.Get(key); v != nil {
		var err error
		if cur, err = decodeTomb(v); err != nil {
			return tomb{}, err
		}
	}
	if t.seg == 0 || cur.seg != 0 && cur.cutoff > t.cutoff || cur == t {
		return cur, nil
	}
	if cur.seg != 0 {
		dead[cur.seg] += int64(recordLen(len(key), 0))
		if err := dexp.Delete(expiryKey(cur.cutoff, key)); err != nil {
			return tomb{}, err
		}
	}
	if err := tombs.Put(key, t.encode()); err != nil {
		return tomb{}, err
	}
	return t, dexp.Put(expiryKey(t.cutoff, key), present)
}
