package d2fs

import (
	"context"
	"crypto/sha256"
	"sync"

	"triad/internal/d2/key"
)

// Reads ahead (issue 46). A block costs a round trip to its holders, so
// the mount asks for the blocks it is about to need at once, MaxPuts in
// flight, rather than one after another: the rest of a large read
// (prefetch), and, at the first read of a file in a directory, the
// records and first blocks of its other files (warm), as a copy, a diff
// or a build reads them all. The blocks go to the clean cache, where the
// reads find them; D2 keeps a directory's files next to each other on
// the ring (§4), so they come from a few nodes.

// warm asks for the blocks of each file's first warmFileBytes (its first
// block at least), and for warmBytes of blocks in all per directory,
// counted by the bytes the blocks hold (a small file's one block is its
// size, not a data block's).
const (
	warmFileBytes = 32 << 10
	warmBytes     = 8 << 20
)

// block is a block to fetch: its key and the SHA-256 its pointer names.
type block struct {
	k   key.Key
	sum [32]byte
}

// fetchAll fetches blocks, MaxPuts at a time, into the clean cache. One
// that fails or does not match its pointer is left out: the read that
// needs it asks again and reports it.
func (f *FS) fetchAll(ctx context.Context, bs []block) {
	got := make([][]byte, len(bs))
	sem := make(chan struct{}, f.cfg.MaxPuts)
	var wg sync.WaitGroup
	for i, b := range bs {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if data, err := f.blocks.Get(ctx, b.k, b.sum); err == nil && sha256.Sum256(data) == b.sum {
				got[i] = data
			}
		}()
	}
	wg.Wait()
	for i, data := range got {
		if data != nil {
			f.remember(bs[i].k, data)
		}
	}
}

// missing adds block blk of file n to bs unless it is dirty, a hole or
// cached.
func (f *FS) missing(bs []block, n *Inode, blk uint32) []block {
	if int(blk) >= len(n.ptrs) || n.ptrs[blk].IsZero() {
		return bs
	}
	if _, ok := n.dirty[blk]; ok {
		return bs
	}
	k := n.e.Base.WithBlock(blk+1, n.ptrs[blk].Version)
	if _, ok := f.cache[k]; ok {
		return bs
	}
	return append(bs, block{k, n.ptrs[blk].Sum})
}

// prefetch brings blocks first to last of file n into the clean cache,
// so that a large read (the kernel asks for up to 1 MiB, 128 blocks)
// waits for about one round trip, not one per block.
func (f *FS) prefetch(ctx context.Context, n *Inode, first, last uint32) error {
	var bs []block
	for blk := first; blk <= last && int(blk) < len(n.ptrs); blk++ {
		bs = f.missing(bs, n, blk)
	}
	if len(bs) > 1 {
		f.fetchAll(ctx, bs)
	}
	return ctx.Err()
}

// warm fetches, once per loaded directory d, the records of its files not
// yet loaded and then their first blocks.
func (f *FS) warm(ctx context.Context, d *Inode) {
	if d.warmed || d.children == nil {
		return
	}
	d.warmed = true
	var recs []block
	var files []*Inode
	for _, c := range d.children {
		if c.e.Type != TypeFile || c.loaded || c.e.Meta.IsZero() {
			continue
		}
		files = append(files, c)
		k := c.e.Base.WithBlock(0, c.e.Meta.Version)
		if _, ok := f.cache[k]; !ok {
			recs = append(recs, block{k, c.e.Meta.Sum})
		}
	}
	if len(files) < 2 {
		return
	}
	f.fetchAll(ctx, recs)
	var bs []block
	budget := uint64(warmBytes)
	for _, c := range files {
		if _, ok := f.cache[c.e.Base.WithBlock(0, c.e.Meta.Version)]; !ok || f.loadFile(ctx, c) != nil {
			continue
		}
		for pos := uint64(0); pos < c.e.Size && (pos == 0 || pos < warmFileBytes) && budget > 0; pos += f.dataBytes {
			bs = f.missing(bs, c, uint32(pos/f.dataBytes))
			budget -= min(budget, c.e.Size-pos, f.dataBytes)
		}
	}
	f.fetchAll(ctx, bs)
}
