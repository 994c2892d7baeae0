package disk

import (
	"bytes"
	"errors"
	"fmt"
	"runtime/debug"

	"golang.org/x/sys/unix"

	"triad/internal/id"
	"triad/internal/store"
	"triad/internal/vfs"
)

// Reading in place. A large object read with GetInto is copied from the
// page cache into the caller's buffer, checked, and copied again into a
// socket; View checks it where it lies, in a read-only memory map of its
// segment, and lends those bytes to the caller. Serving a 240 KB article
// this way skips the copy that cost a third of the server's time.
//
// A segment is mapped at its first View, over its largest possible size:
// records appended later fall inside the map without remapping. Only bytes
// of records already written are ever touched. A segment that is
// reclaimed or closed while views of it run is unmapped by the last of
// them, so reclamation never waits for a slow reader.

// mapping is a segment's memory map and the views using it. Guarded by
// Disk.mu.
type mapping struct {
	data    []byte
	views   int
	retired bool // the segment is gone: unmap when views drops to 0
}

// View calls fn with key's bytes, checked as GetInto checks them. The
// bytes are the segment's own memory: they are valid only while fn runs,
// and fn must not modify or keep them. fn's error is returned as is.
func (d *Disk) View(key id.ID, fn func(data []byte, m store.Meta) error) error {
	e, _, err := d.find(key)
	if err != nil {
		return err
	}
	n := e.recordLen(key.Width())
	s, data, err := d.acquire(e.seg, e.off, n)
	if err != nil {
		return err
	}
	if s == nil {
		// Not mappable (reclaimed since find, or past the map): read it.
		buf, m, err := d.GetInto(key, nil)
		if err != nil {
			return err
		}
		return fn(buf, m)
	}
	defer d.release(s)
	var fnErr error
	if err := noFault(func() error {
		r, _, err := decodeRecord(data, formatMaxData)
		switch {
		case err != nil:
			return err
		case !bytes.Equal(r.key, key.Bytes()) || r.expiry != e.expiry || len(r.data) != e.size:
			return errors.New("the record there is another object's")
		}
		m := e.meta()
		m.Key = key
		fnErr = fn(r.data, m)
		return nil
	}); err != nil {
		return d.quarantine(key, e, err.Error())
	}
	return fnErr
}

// acquire returns the segment sid's mapped bytes off..off+n, counting a
// view of it; a nil segment means the bytes cannot be mapped.
func (d *Disk) acquire(sid uint64, off int64, n int) (*segment, []byte, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, nil, store.ErrClosed
	}
	s := d.segs[sid]
	if s == nil || off+int64(n) > s.size {
		return nil, nil, nil
	}
	if s.mapped == nil {
		if s.f.Fd() == vfs.InvalidFd {
			return nil, nil, nil // not a file of the OS: GetInto reads it
		}
		// The largest a segment grows: it rolls over past MaxSegment, so
		// by at most one record. Recovered segments may be larger still.
		size := max(d.opt.MaxSegment+int64(recordLen(maxKeyBytes, d.opt.MaxObject)), s.size)
		data, err := unix.Mmap(int(s.f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
		if err != nil {
			return nil, nil, nil // GetInto still works
		}
		s.mapped = &mapping{data: data}
	}
	if off+int64(n) > int64(len(s.mapped.data)) {
		return nil, nil, nil
	}
	s.mapped.views++
	return s, s.mapped.data[off : off+int64(n)], nil
}

// release ends a view of s.
func (d *Disk) release(s *segment) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s.mapped.views--
	if s.mapped.views == 0 && s.mapped.retired {
		unix.Munmap(s.mapped.data)
		s.mapped = nil
	}
}

// unmap retires s's map: now, or when its last view ends. d.mu is held.
func (s *segment) unmap() {
	switch {
	case s.mapped == nil:
	case s.mapped.views == 0:
		unix.Munmap(s.mapped.data)
		s.mapped = nil
	default:
		s.mapped.retired = true
	}
}

// noFault runs fn, turning a fault on mapped memory (the disk failed to
// read a page: SIGBUS) into an error, as a failed pread would be.
func noFault(fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			if f, ok := r.(interface{ Addr() uintptr }); ok {
				err = fmt.Errorf("reading mapped segment at %#x: %v", f.Addr(), r)
				return
			}
			panic(r)
		}
	}()
	return fn()
}
