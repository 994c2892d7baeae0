package disk

import (
	"cmp"
	"errors"
	"fmt"
	"log"
	"slices"

	bolt "go.etcd.io/bbolt"

	"triad/internal/id"
)

// Compaction. Deleted objects, and copies a re-put superseded, leave dead
// bytes in their segments until the window expires, which for D2's files
// may be a long time. Each segment counts its dead bytes (segment.dead,
// kept in the segs bucket); Maintain rewrites a segment whose live bytes
// fall under half its size: the records the index points at, and the
// tombstones it keeps, are appended again to a new segment of the same
// window, as puts are, and once a checkpoint has indexed the copies
// (after their group commit), the old file leaves the segs bucket and is
// unlinked.
//
// A crash at any step loses nothing acknowledged and brings back nothing
// deleted. Before the checkpoint, the copies are duplicates the index
// does not know, or are replayed (the same object, the same expiry: the
// index takes the copy). After it, before the unlink, recovery finds a
// segment the index does not know and replays it whole: its objects are
// the same as their copies, and its deleted records meet the tombstones
// that the dead bucket still holds.

// compact rewrites the segments less than half live, in windows that
// still take appends. d.maintMu is held.
func (d *Disk) compact() error {
	d.mu.Lock()
	var victims []*segment
	for _, s := range d.segs {
		if s.size > 0 && 2*s.dead > s.size && s.window > d.retired {
			victims = append(victims, s)
			if d.open[s.window] == s {
				delete(d.open, s.window) // appends go to a new file
			}
		}
	}
	d.mu.Unlock()
	if len(victims) == 0 {
		return nil
	}
	slices.SortFunc(victims, func(a, b *segment) int { return cmp.Compare(a.id, b.id) })
	// Everything written to them is indexed before they are read.
	if err := d.checkpoint(); err != nil {
		return err
	}
	for _, s := range victims {
		if err := d.rewrite(s); err != nil {
			return fmt.Errorf("store: rewriting %s: %w", s.path, err)
		}
	}
	return nil
}

// rewrite copies the live records of s, which takes no appends, into its
// window's current segment, indexes the copies and removes s. d.maintMu
// is held.
func (d *Disk) rewrite(s *segment) error {
	var copied int64
	for pos := int64(0); pos < s.size; {
		r, n, err := d.readRecord(s.f, pos, s.size)
		if err != nil && !errors.Is(err, errBadRecord) {
			return err
		}
		if err != nil {
			// Damage: what the index points at there is quarantined
			// when read, the file being gone.
			next, err := d.resyncPoint(s.f, pos, s.size)
			if err != nil {
				return err
			}
			if next < 0 {
				next = s.size
			}
			log.Printf("store: compaction leaves %d damaged bytes at %s:%d behind", next-pos, s.path, pos)
			pos = next
			continue
		}
		key, err := id.FromBytes(r.key)
		if err == nil && key.Width() == d.opt.KeyWidth {
			at := pos
			pos += int64(n)
			keep, e, err := d.liveRecord(key, s.id, at, r)
			if err != nil {
				return err
			}
			if !keep {
				continue
			}
			if err := d.copyRecord(key, e, r); err != nil {
				return err
			}
			copied += int64(n)
			continue
		}
		pos += int64(n)
	}
	// The copies are durable and indexed before s goes.
	if err := d.checkpoint(); err != nil {
		return err
	}
	err := d.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bSegs).Delete(segKey(s.id)) })
	if err != nil {
		return err
	}
	d.mu.Lock()
	delete(d.segs, s.id)
	delete(d.dirty, s)
	d.usage -= s.size
	d.stats.Compacted++
	d.stats.CompactedBytes += s.size - copied
	s.unmap()
	d.mu.Unlock()
	// A group commit that took s before it left d.dirty is over.
	if err := d.waitGroup(); err != nil {
		return err
	}
	if err := s.f.Close(); err != nil {
		return err
	}
	if err := d.fs.Remove(s.path); err != nil {
		return err
	}
	return d.fs.SyncDir(d.opt.Dir)
}

// liveRecord reports whether r, the record of key at offset off of
// segment sid, is one the index keeps: the object it points at, or the
// tombstone it keeps for key (or any tombstone of a key it keeps none
// for), and returns the entry of its copy.
func (d *Disk) liveRecord(key id.ID, sid uint64, off int64, r record) (bool, entry, error) {
	var keep bool
	var e entry
	err := d.db.View(func(tx *bolt.Tx) error {
		if r.flags&flagTombstone != 0 {
			v := tx.Bucket(bDead).Get(key.Bytes())
			t, err := decodeTomb(v)
			keep = v == nil || err == nil && t.seg == sid && t.off == off
			e = deadEntry(tomb{cutoff: r.expiry})
			return nil
		}
		v := tx.Bucket(bIndex).Get(key.Bytes())
		if v == nil {
			return nil
		}
		var err error
		e, err = decodeEntry(v)
		keep = err == nil && e.seg == sid && e.off == off
		return err
	})
	return keep, e, err
}

// copyRecord appends r again as e, pending like a put, and checkpoints
// when as many entries wait as a checkpoint takes. d.maintMu is held.
func (d *Disk) copyRecord(key id.ID, e entry, r record) error {
	d.mu.Lock()
	_, err := d.append(key, e, recordParts(r), true)
	full := len(d.active) >= d.opt.CheckpointEntries
	d.mu.Unlock()
	if err == nil && full {
		err = d.checkpoint()
	}
	return err
}
