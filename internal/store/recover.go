package store

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"sort"
	"strings"

	bolt "go.etcd.io/bbolt"

	"triad/internal/id"
)

// recover opens every segment, replays the records past each one's
// watermark into the index, and cuts torn tails. Segments the index knows
// but the directory lacks lose their index entries.
func (d *Disk) recover() error {
	known := map[uint64][2]int64{} // id → window, watermark
	err := d.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bSegs).ForEach(func(k, v []byte) error {
			if len(k) == 8 && len(v) == 16 {
				known[bigEndian(k)] = [2]int64{int64(bigEndian(v[:8])), int64(bigEndian(v[8:]))}
			}
			return nil
		})
	})
	if err != nil {
		return fmt.Errorf("store: reading index: %w", err)
	}
	names, err := filepath.Glob(filepath.Join(d.opt.Dir, "*.seg"))
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	sort.Strings(names)
	replay := make(map[id.ID]entry)
	for _, name := range names {
		var w int64
		var sid uint64
		if _, err := fmt.Sscanf(filepath.Base(name), "%d-%d.seg", &w, &sid); err != nil || sid == 0 {
			log.Printf("store: ignoring %s: not a segment name", name)
			continue
		}
		f, err := os.OpenFile(name, os.O_RDWR, 0)
		if err != nil {
			return fmt.Errorf("store: %w", err)
		}
		s := &segment{id: sid, window: w, path: name, f: f}
		d.segs[sid] = s
		from := known[sid][1]
		end, err := d.replaySegment(s, from, replay)
		if err != nil {
			return err
		}
		s.size = end
		d.usage += end
		if cur := d.open[w]; cur == nil || sid > cur.id {
			d.open[w] = s
		}
		d.nextSeg = max(d.nextSeg, sid+1)
		delete(known, sid)
	}
	now := d.opt.Now().UnixNano()
	return d.db.Update(func(tx *bolt.Tx) error {
		for sid, m := range known {
			log.Printf("store: segment %d of window %d is missing; dropping its index entries", sid, m[0])
			if err := unindexWindow(tx, &d.opt, m[0], map[uint64]bool{sid: true}); err != nil {
				return err
			}
			if err := tx.Bucket(bSegs).Delete(segKey(sid)); err != nil {
				return err
			}
		}
		if err := applyEntries(tx, replay); err != nil {
			return err
		}
		for _, s := range d.segs {
			if err := tx.Bucket(bSegs).Put(segKey(s.id), segValue(s.window, s.size)); err != nil {
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
func (d *Disk) replaySegment(s *segment, from int64, replay map[id.ID]entry) (int64, error) {
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
		if err != nil {
			next := d.nextRecord(s.f, pos+1, size)
			if next < 0 {
				if err := s.f.Truncate(pos); err != nil {
					return 0, fmt.Errorf("store: cutting torn tail of %s: %w", s.path, err)
				}
				if err := s.f.Sync(); err != nil {
					return 0, fmt.Errorf("store: %w", err)
				}
				if size-pos > 0 {
					log.Printf("store: cut %d bytes of torn tail from %s", size-pos, s.path)
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
			if r.flags&flagOpaque != 0 {
				e.flags |= entryOpaque
			}
			if d.opt.entersTree(timeUnix(r.expiry), now) {
				e.flags |= entryInTree
			}
			if old, ok := replay[key]; !ok || old.expiry <= e.expiry {
				replay[key] = e
			}
		}
		pos += int64(n)
	}
	return pos, nil
}

// readRecord reads and checks the record at pos.
func (d *Disk) readRecord(f *os.File, pos, size int64) (record, int, error) {
	var hdr [headerBytes]byte
	if size-pos < headerBytes {
		return record{}, 0, fmt.Errorf("%w: %d bytes left", errBadRecord, size-pos)
	}
	if _, err := f.ReadAt(hdr[:], pos); err != nil {
		return record{}, 0, err
	}
	n, err := peekLen(hdr[:], d.opt.MaxObject)
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
	return decodeRecord(buf, d.opt.MaxObject)
}

// nextRecord returns the offset of the first intact record at or after pos,
// or -1.
func (d *Disk) nextRecord(f *os.File, pos, size int64) int64 {
	const chunk = 1 << 20
	buf := make([]byte, chunk+len(recordMagic))
	for pos < size {
		n, _ := f.ReadAt(buf, pos)
		if n < len(recordMagic) {
			return -1
		}
		for i := 0; i+len(recordMagic) <= n; {
			j := bytes.Index(buf[i:n], []byte(recordMagic))
			if j < 0 {
				break
			}
			at := pos + int64(i+j)
			if _, _, err := d.readRecord(f, at, size); err == nil {
				return at
			}
			i += j + 1
		}
		pos += chunk
	}
	return -1
}

// segmentFiles lists the segment files in dir, for tools and tests.
func segmentFiles(dir string) []string {
	names, _ := filepath.Glob(filepath.Join(dir, "*.seg"))
	sort.Slice(names, func(i, j int) bool { return strings.Compare(names[i], names[j]) < 0 })
	return names
}
