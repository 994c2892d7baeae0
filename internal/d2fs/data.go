package d2fs

import (
	"context"
	"syscall"
)

// ReadAt reads file n from off into p, from the write-back cache when
// the block changed since the commit, else from the clean cache or the
// store. It returns 0 at or past the end.
func (f *FS) ReadAt(ctx context.Context, n *Inode, p []byte, off int64) (int, error) {
	if err := f.begin(false); err != nil {
		return 0, err
	}
	defer f.mu.Unlock()
	if n.e.Type != TypeFile {
		return 0, syscall.EISDIR
	}
	if off < 0 {
		return 0, errInvalid
	}
	if uint64(off) >= n.e.Size {
		return 0, nil
	}
	if !n.loaded && n.parent != nil {
		f.warm(ctx, n.parent)
	}
	if err := f.loadFile(ctx, n); err != nil {
		return 0, err
	}
	end := min(uint64(off)+uint64(len(p)), n.e.Size)
	if err := f.prefetch(ctx, n, uint32(uint64(off)/f.dataBytes), uint32((end-1)/f.dataBytes)); err != nil {
		return 0, err
	}
	for pos := uint64(off); pos < end; {
		blk := uint32(pos / f.dataBytes)
		data, err := f.block(ctx, n, blk)
		if err != nil {
			return 0, err
		}
		in := pos % f.dataBytes
		next := min(end, (pos/f.dataBytes+1)*f.dataBytes)
		dst := p[pos-uint64(off) : next-uint64(off)]
		c := 0
		if in < uint64(len(data)) {
			c = copy(dst, data[in:])
		}
		clear(dst[c:]) // past a short block, or a hole
		pos = next
	}
	return int(end - uint64(off)), nil
}

// block is the content of block blk of file n as the mount sees it; nil
// is a hole. Blocks are stored only as long as their data, so the end of
// a short block reads as zeros. A file held in its entry is block 0.
func (f *FS) block(ctx context.Context, n *Inode, blk uint32) ([]byte, error) {
	if d, ok := n.dirty[blk]; ok {
		return d, nil
	}
	if blk == 0 && n.e.Target != "" {
		return []byte(n.e.Target), nil
	}
	if int(blk) >= len(n.ptrs) || n.ptrs[blk].IsZero() {
		return nil, nil
	}
	return f.get(ctx, n.e.Base.WithBlock(blk+1, n.ptrs[blk].Version), n.ptrs[blk].Sum)
}

// WriteAt writes p into file n at off. Past MaxDirtyBytes of changes it
// commits before returning (the writer waits for the store).
func (f *FS) WriteAt(ctx context.Context, n *Inode, p []byte, off int64) (int, error) {
	if err := f.begin(true); err != nil {
		return 0, err
	}
	defer f.mu.Unlock()
	if n.e.Type != TypeFile {
		return 0, syscall.EISDIR
	}
	if off < 0 {
		return 0, errInvalid
	}
	end := uint64(off) + uint64(len(p))
	if end > MaxFileBytes {
		return 0, errFileTooBig
	}
	if err := f.loadFile(ctx, n); err != nil {
		return 0, err
	}
	for pos := uint64(off); pos < end; {
		blk := uint32(pos / f.dataBytes)
		old, err := f.block(ctx, n, blk)
		if err != nil {
			return 0, err
		}
		in := pos % f.dataBytes
		next := min(end, (pos/f.dataBytes+1)*f.dataBytes)
		// The block's length: what it held (within the file) or up to
		// the end of this write, whichever is longer.
		blockEnd := min(n.e.Size, (pos/f.dataBytes+1)*f.dataBytes) - pos/f.dataBytes*f.dataBytes
		if n.e.Size <= pos/f.dataBytes*f.dataBytes {
			blockEnd = 0
		}
		size := max(blockEnd, next-pos/f.dataBytes*f.dataBytes)
		data := make([]byte, size)
		copy(data, old[:min(uint64(len(old)), size)])
		copy(data[in:], p[pos-uint64(off):next-uint64(off)])
		f.setDirty(n, blk, data)
		pos = next
	}
	f.setSize(n, max(n.e.Size, end))
	n.e.Mtime = f.cfg.Now().UnixNano()
	f.changed(n)
	if f.dirtyBytes > f.cfg.MaxDirtyBytes {
		if err := f.commitLocked(ctx); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// setDirty keeps a changed block for the next commit.
func (f *FS) setDirty(n *Inode, blk uint32, data []byte) {
	if n.dirty == nil {
		n.dirty = map[uint32][]byte{}
	}
	if _, ok := n.dirty[blk]; !ok && !n.unlinked {
		f.dirtyBytes += int64(f.dataBytes)
	}
	n.dirty[blk] = data
}

// truncate sets file n's size: blocks past it go at the next commit and
// the last one is cut, so that growing the file again reads zeros.
func (f *FS) truncate(ctx context.Context, n *Inode, size uint64) error {
	switch {
	case n.e.Type == TypeDir:
		return syscall.EISDIR
	case n.e.Type != TypeFile:
		return errInvalid
	case size > MaxFileBytes:
		return errFileTooBig
	case size == n.e.Size:
		return nil
	}
	if err := f.loadFile(ctx, n); err != nil {
		return err
	}
	if n.e.Target != "" {
		// Held in its entry: block 0 for the cut below, and zeros past
		// it if the file grows again.
		f.setDirty(n, 0, []byte(n.e.Target))
		n.e.Target = ""
	}
	if size < n.e.Size {
		nb := f.blocksOf(size)
		for i := nb; i < uint64(len(n.ptrs)); i++ {
			if !n.ptrs[i].IsZero() {
				n.cut = append(n.cut, n.e.Base.WithBlock(uint32(i)+1, n.ptrs[i].Version))
			}
		}
		n.ptrs = n.ptrs[:min(nb, uint64(len(n.ptrs)))]
		for blk := range n.dirty {
			if uint64(blk) >= nb {
				delete(n.dirty, blk)
			}
		}
		if in := size % f.dataBytes; in != 0 {
			blk := uint32(size / f.dataBytes)
			old, err := f.block(ctx, n, blk)
			if err != nil {
				return err
			}
			if uint64(len(old)) > in {
				f.setDirty(n, blk, append([]byte(nil), old[:in]...))
			}
		}
	}
	f.setSize(n, size)
	n.e.Mtime = f.cfg.Now().UnixNano()
	f.changed(n)
	return nil
}
