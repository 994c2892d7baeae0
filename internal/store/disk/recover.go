package disk

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"triad/internal/id"
	"triad/internal/vfs"
)

var errWindow = errors.New("window size differs from the store's")

// recover opens every segment, replays the records past each one's
// watermark into the index, and cuts torn tails. Segments the index knows
// but the directory lacks lose their index entries.
func (d *Disk) recover() error {
	known := map[uint64]segMark{}
	err := d.db.View(func(tx *bolt.Tx) error {
		if k, _ := tx.Bucket(bDead).Cursor().First(); k != nil {
			d.deleted.Store(true)
		}
		// Segment names and reclamation depend on the window size, so a
		// store keeps the one it was made with.
		if v := tx.Bucket(bMeta).Get(metaWindow); len(v) == 8 && int64(binary.BigEndian.Uint64(v)) != int64(d.opt.Window) {
			return fmt.Errorf("%w: made with %v windows, opened with %v", errWindow, time.Duration(binary.BigEndian.Uint64(v)), d.opt.Window)
		}
		return tx.Bucket(bSegs).ForEach(func(k, v []byte) error {
			if m, ok := decodeSegMark(v); ok && len(k) == 8 {
				known[binary.BigEndian.Uint64(k)] = m
			}
			return nil
		})
	})
	if errors.Is(err, errWindow) {
		return fmt.Errorf("store: %s: %w", d.opt.Dir, err)
	}
	if err != nil {
		return fmt.Errorf("store: reading index: %w", err)
	}
	ents, err := d.fs.ReadDir(d.opt.Dir)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	replay := make(map[id.ID]*replayed)
	for _, ent := range ents {
		if !strings.HasSuffix(ent.Name(), ".seg") {
			continue
		}
		name := filepath.Join(d.opt.Dir, ent.Name())
		var w int64
		var sid uint64
		if _, err := fmt.Sscanf(filepath.Base(name), "%d-%d.seg", &w, &sid); err != nil || sid == 0 {
			log.Printf("store: ignoring %s: not a segment name", name)
			continue
		}
		f, err := d.fs.OpenFile(name, os.O_RDWR, 0)
		if err != nil {
			return fmt.Errorf("store: %w", err)
		}
		s := &segment{id: sid, window: w, path: name, f: f, dead: known[sid].dead}
		d.segs[sid] = s
		from := known[sid].watermark
		end, err := d.replaySegment(s, from, replay)
		if err != nil {
			return err
		}
		// Replayed records may sit only in the page cache (the process died
		// before its group commit); make them durable before indexing them.
		if end > from {
			if err := f.Sync(); err != nil {
				return fmt.Errorf("store: syncing %s: %w", name, err)
			}
		}
		s.size, s.zeroed = end, end
		d.usage += end
		if cur := d.open[w]; cur == nil || sid > cur.id {
			d.open[w] = s
		}
		d.nextSeg = max(d.nextSeg, sid+1)
		delete(known, sid)
	}
	if err := d.fs.SyncDir(d.opt.Dir); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	now := d.opt.Now().UnixNano()
	return d.db.Update(func(tx *bolt.Tx) error {
		if err := tx.Bucket(bMeta).Put(metaWindow, binary.BigEndian.AppendUint64(nil, uint64(d.opt.Window))); err != nil {
			return err
		}
		for sid, m := range known {
			log.Printf("store: segment %d of window %d is missing; dropping its index entries", sid, m.window)
			if err := unindexWindow(tx, &d.opt, m.window, map[uint64]bool{sid: true}); err != nil {
				return err
			}
			if err := tx.Bucket(bSegs).Delete(segKey(sid)); err != nil {
				return err
			}
		}
		if err := committedTombs(tx, replay); err != nil {
			return err
		}
		dead, err := applyEntries(tx, d.resolve(replay))
		if err != nil {
			return err
		}
		for _, s := range d.segs {
			s.dead += dead[s.id]
			if err := tx.Bucket(bSegs).Put(segKey(s.id), segMark{s.window, s.size, s.dead}.encode()); err != nil {
				return err
			}
		}
		return expireTree(tx, now)
	})
}

// replaySegment reads the records of s from offset from and adds them to
// replay. A record that fails its checks is skipped if an intact record
// follows it (damage in the middle) and cut off if none does (a torn tail).
// It returns the offset where the valid data ends.
func (d *Disk) replaySegment(s *segment, from int64, replay map[id.ID]*replayed) (int64, error) {
	st, err := s.f.Stat()
	if err != nil {
		return 0, fmt.Errorf("store: %w", err)
	}
	size := st.Size()
	if from > size {
		log.Printf("store: %s is shorter than the index says (%d < %d)", s.path, size, from)
		from = size
	}
	now := d.opt.Now()
	pos := from
	for pos < size {
		r, n, err := d.readRecord(s.f, pos, size)
		if err != nil && !errors.Is(err, errBadRecord) {
			return 0, fmt.Errorf("store: reading %s at %d: %w", s.path, pos, err)
		}
		if err != nil {
			next, ferr := d.resyncPoint(s.f, pos, size)
			if ferr != nil {
				return 0, fmt.Errorf("store: reading %s: %w", s.path, ferr)
			}
			if next < 0 {
				zero, zerr := vfs.AllZero(s.f, pos, size)
				if zerr != nil {
					return 0, fmt.Errorf("store: reading %s: %w", s.path, zerr)
				}
				if err := s.f.Truncate(pos); err != nil {
					return 0, fmt.Errorf("store: cutting torn tail of %s: %w", s.path, err)
				}
				if !zero { // zeros are the room preallocate made, not damage
					log.Printf("store: cut %d bytes of torn tail from %s (%v)", size-pos, s.path, err)
				}
				return pos, nil
			}
			log.Printf("store: skipping %d damaged bytes at %s:%d (%v)", next-pos, s.path, pos, err)
			pos = next
			continue
		}
		key, err := id.FromBytes(r.key)
		if err == nil && key.Width() == d.opt.KeyWidth {
			e := entry{seg: s.id, off: pos, size: len(r.data), expiry: r.expiry}
			switch {
			case r.flags&flagTombstone != 0:
				e = deadEntry(tomb{seg: s.id, off: pos, cutoff: r.expiry})
				d.deleted.Store(true)
			case r.flags&flagOpaque != 0:
				e.flags |= entryOpaque
			}
			if e.live() && d.opt.EntersTree(time.Unix(0, r.expiry), now) {
				e.flags |= entryInTree
			}
			if replay[key] == nil {
				replay[key] = &replayed{}
			}
			d.dropped(key, replay[key].add(e))
		}
		pos += int64(n)
	}
	return pos, nil
}

// readRecord reads and checks the record at pos.
func (d *Disk) readRecord(f vfs.File, pos, size int64) (record, int, error) {
	var hdr [headerBytes]byte
	if size-pos < headerBytes {
		return record{}, 0, fmt.Errorf("%w: %d bytes left", errBadRecord, size-pos)
	}
	if _, err := f.ReadAt(hdr[:], pos); err != nil {
		return record{}, 0, err
	}
	n, err := peekLen(hdr[:], formatMaxData)
	if err != nil {
		return record{}, 0, err
	}
	if int64(n) > size-pos {
		return record{}, 0, fmt.Errorf("%w: record of %d bytes, %d left", errBadRecord, n, size-pos)
	}
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, pos); err != nil && !errors.Is(err, io.EOF) {
		return record{}, 0, err
	}
	return decodeRecord(buf, formatMaxData)
}

// resyncPoint decides where replay goes on after a bad record at pos: -1 to
// cut the file there, or the offset of the next intact record. A header that
// reads well but claims more bytes than the file holds is a torn tail; one
// whose record fits but fails its checksum is damage, and the search starts
// past the span it claims, so a record inside its data is never taken for a
// real one.
func (d *Disk) resyncPoint(f vfs.File, pos, size int64) (int64, error) {
	from := pos + 1
	var hdr [headerBytes]byte
	if size-pos >= headerBytes {
		if _, err := f.ReadAt(hdr[:], pos); err != nil {
			return 0, err
		}
		if n, err := peekLen(hdr[:], formatMaxData); err == nil {
			if pos+int64(n) > size {
				return -1, nil
			}
			from = pos + int64(n)
		}
	}
	return d.nextRecord(f, from, size)
}

// nextRecord returns the offset of the first intact record at or after pos,
// or -1.
func (d *Disk) nextRecord(f vfs.File, pos, size int64) (int64, error) {
	const chunk = 1 << 20
	buf := make([]byte, chunk+len(recordMagic))
	for pos < size {
		n, err := f.ReadAt(buf, pos)
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		for i := 0; i+len(recordMagic) <= n; {
			j := bytes.Index(buf[i:n], []byte(recordMagic))
			if j < 0 {
				break
			}
			at := pos + int64(i+j)
			_, _, err := d.readRecord(f, at, size)
			if err == nil {
				return at, nil
			}
			if !errors.Is(err, errBadRecord) {
				return 0, err
			}
			i += j + 1
		}
		pos += chunk
	}
	return -1, nil
}

// segmentFiles lists the segment files in dir, for tools and tests.
func segmentFiles(dir string) []string {
	names, _ := filepath.Glob(filepath.Join(dir, "*.seg")) // sorted
	return names
}

// replayed is what recovery has read of a key's records, which it meets
// in no particular order (files in name order): the latest tombstone and,
// of each kind, the object that supersedes the other copies. Which kind
// wins is decided once all are read, as the tombstone may kill either.
type replayed struct {
	tomb tomb
	obj  [2]entry // whole, opaque; seg 0 if none
}

// add takes in e and returns a record now dead (a zero entry if none).
func (r *replayed) add(e entry) entry {
	if !e.live() {
		r.tomb = r.tomb.later(e.tomb)
		return entry{}
	}
	i := int(e.flags&entryOpaque) / entryOpaque
	old := r.obj[i]
	switch {
	case old.seg == 0:
		r.obj[i] = e
		return entry{}
	case e.supersedes(old):
		r.obj[i] = e
		return old
	}
	return e
}

// committedTombs adds to each replayed key the tombstone the index keeps
// for it, which replay may not have met: its record sits before a
// segment's watermark. resolve needs it to choose between objects of two
// kinds: a segment whose unlink a crash undid (compaction's crash window)
// brings back a record of a deleted object, which must not win over the
// object put after the delete.
func committedTombs(tx *bolt.Tx, replay map[id.ID]*replayed) error {
	tombs := tx.Bucket(bDead)
	for key, r := range replay {
		v := tombs.Get(key.Bytes())
		if v == nil {
			continue
		}
		t, err := decodeTomb(v)
		if err != nil {
			return err
		}
		r.tomb = r.tomb.later(t)
	}
	return nil
}

// resolve turns what recovery read into pending entries: each key's
// tombstone, and the object of those outliving it; of two kinds (a Fresh
// put over an object of the other kind), the one written first, in the
// older file or earlier in the same one. The others' bytes are dead.
func (d *Disk) resolve(replay map[id.ID]*replayed) map[id.ID]entry {
	out := make(map[id.ID]entry, len(replay))
	for key, r := range replay {
		e := deadEntry(r.tomb)
		for _, o := range r.obj {
			switch {
			case o.seg == 0:
			case r.tomb.seg != 0 && o.expiry <= r.tomb.cutoff:
				d.dropped(key, o)
			case e.live() && (e.seg < o.seg || e.seg == o.seg && e.off < o.off):
				d.dropped(key, o)
			default:
				if e.live() {
					d.dropped(key, e)
				}
				e = o
			}
		}
		e.tomb = r.tomb
		out[key] = e
	}
	return out
}
