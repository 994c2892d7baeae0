package d2fs

import (
	"context"
	"fmt"
	"slices"

	"triad/internal/d2/key"
)

// Report is what Check found in a volume's newest commit.
type Report struct {
	Gen      uint32
	Dirs     int
	Files    int
	Symlinks int
	Blocks   int    // blocks read and matched against their pointers
	Bytes    uint64 // bytes of all files
	Hashed   int    // entries whose key is placed by hash (deep path or full directory)
	Bad      []string

	keys map[key.Key]bool // with Reachable: every key the commit needs
	// deltas are the commit's directory deltas (delta.go), applied to
	// each directory's record as the walk reads it.
	deltas map[key.Key][]deltaOp
}

// maxBad bounds the problems a Report lists.
const maxBad = 100

func (r *Report) bad(path string, err error) {
	if len(r.Bad) < maxBad {
		r.Bad = append(r.Bad, fmt.Sprintf("%s: %v", path, err))
	}
}

// Check reads every block of the volume's newest commit from the store
// (not the cache), checks each against its pointer and each record's
// format, and reports what it found (triad fs fsck). A bad block is
// listed in Report.Bad and the walk goes on; the error is for a store
// that answers nothing.
func (f *FS) Check(ctx context.Context) (Report, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.walkNewest(ctx, false)
}

// Reachable is Check, and the keys the newest commit needs: its
// superblock (and those of the small commits before it), the lease, and
// every record, part and data block its tree points at. Any other key of
// the volume is an orphan: a block a commit replaced (deleted KeepOld
// after it, unless its mount died first), or one written by a commit that
// never stored its superblock (triad fs fsck --orphans).
func (f *FS) Reachable(ctx context.Context) (Report, map[key.Key]bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, err := f.walkNewest(ctx, true)
	return r, r.keys, err
}

// walkNewest checks the newest commit (Check), listing the keys it needs
// if withKeys; f.mu is held.
func (f *FS) walkNewest(ctx context.Context, withKeys bool) (Report, error) {
	s, err := f.newestSuper(ctx)
	if err != nil {
		return Report{}, err
	}
	c, err := f.readChain(ctx, s)
	if err != nil {
		return Report{}, err
	}
	r := Report{Gen: s.Gen, deltas: c.deltas}
	supers := append([]uint32{s.Gen}, c.gens...) // c.gens holds s.Gen when s is a small commit's
	slices.Sort(supers)
	supers = slices.Compact(supers)
	r.Blocks += len(supers)
	if withKeys {
		r.keys = map[key.Key]bool{leaseKey(f.vol): true}
		for _, g := range supers {
			r.keys[superKey(f.vol, g)] = true
		}
	}
	f.check(ctx, &r, "", s.Root)
	return r, nil
}

func (f *FS) check(ctx context.Context, r *Report, path string, e Entry) {
	switch e.Type {
	case TypeSymlink:
		r.Symlinks++
		return
	case TypeDir:
		r.Dirs++
	case TypeFile:
		r.Files++
		r.Bytes += e.Size
	}
	ops := r.deltas[e.Base]
	if e.Meta.IsZero() && (e.Type != TypeDir || len(ops) == 0) {
		return
	}
	var rec []byte
	if !e.Meta.IsZero() {
		var err error
		if rec, err = f.readBlob(ctx, e.Base, e.Meta, false); err != nil {
			r.bad(path+"/", err)
			return
		}
		bk := blobKeys(e.Base, e.Meta, uint64(len(rec)))
		r.Blocks += len(bk)
		if r.keys != nil {
			for _, k := range bk {
				r.keys[k] = true
			}
		}
	}
	if e.Type == TypeFile {
		f.checkFile(ctx, r, path, e, rec)
		return
	}
	var entries []Entry
	if rec != nil {
		var err error
		if entries, err = DecodeDir(rec, e.Base); err != nil {
			r.bad(path+"/", err)
			return
		}
	}
	if len(ops) > 0 {
		entries = applyDelta(entries, ops)
		if err := checkApplied(entries, e.Base); err != nil {
			r.bad(path+"/", err)
			return
		}
	}
	for _, ce := range entries {
		if ce.Base.Hashed() {
			r.Hashed++
		}
		f.check(ctx, r, path+"/"+ce.Name, ce)
	}
}

func (f *FS) checkFile(ctx context.Context, r *Report, path string, e Entry, rec []byte) {
	ptrs, err := decodeFile(rec)
	if err == nil && uint64(len(ptrs)) != f.blocksOf(e.Size) {
		err = fmt.Errorf("%w: %d blocks for %d bytes", ErrFormat, len(ptrs), e.Size)
	}
	if err != nil {
		r.bad(path, err)
		return
	}
	for i, q := range ptrs {
		if q.IsZero() {
			continue
		}
		k := e.Base.WithBlock(uint32(i)+1, q.Version)
		if r.keys != nil {
			r.keys[k] = true
		}
		if _, err := f.fetch(ctx, k, q.Sum, false); err != nil {
			r.bad(path, err)
			continue
		}
		r.Blocks++
	}
}

// BlockKeys lists the keys of n's committed blocks: its record (and its
// parts) and, for a file, its data blocks in order (triad fs stat). A
// truncate not yet committed already hides the blocks it cuts.
func (f *FS) BlockKeys(ctx context.Context, n *Inode) ([]key.Key, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.committedKeys(ctx, n)
}

// BlockRef is one of an inode's committed blocks: its key and the
// SHA-256 its pointer carries.
type BlockRef struct {
	Key key.Key
	Sum [32]byte
}

// BlockRefs is BlockKeys with each block's SHA-256, so that triad fs stat
// can ask the nodes which of them hold those bytes: the record's blocks
// (block 0, then the parts its levels name, read through the cache), then
// the data blocks in order.
func (f *FS) BlockRefs(ctx context.Context, n *Inode) ([]BlockRef, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, err := f.committedKeys(ctx, n); err != nil || n.e.Meta.IsZero() {
		return nil, err // committedKeys loaded n's pointers
	}
	refs, err := f.blobRefs(ctx, n.e.Base, n.e.Meta)
	if err != nil {
		return nil, err
	}
	for i, q := range n.ptrs {
		if !q.IsZero() {
			refs = append(refs, BlockRef{n.e.Base.WithBlock(uint32(i)+1, q.Version), q.Sum})
		}
	}
	return refs, nil
}

// blobRefs lists the blocks of the blob at block 0 of base with their
// sums: block 0, then each level's parts, from the top level down.
func (f *FS) blobRefs(ctx context.Context, base key.Key, p Ptr) ([]BlockRef, error) {
	refs := []BlockRef{{base.WithBlock(0, p.Version), p.Sum}}
	b0, err := f.fetch(ctx, refs[0].Key, p.Sum, true)
	if err != nil {
		return nil, err
	}
	lens, payload, err := blobParts(b0)
	if err != nil {
		return nil, fmt.Errorf("%w: %v: %w", errIO, base, err)
	}
	for l := len(lens) - 1; l >= 1; l-- {
		var next []byte
		for i := 0; i < len(payload)/32; i++ {
			r := BlockRef{base.WithBlock(partBlock(l, i), p.Version), [32]byte(payload[32*i:])}
			refs = append(refs, r)
			if l > 1 { // the parts of level l hold the sums of level l-1's
				part, err := f.fetch(ctx, r.Key, r.Sum, true)
				if err != nil {
					return nil, err
				}
				next = append(next, part...)
			}
		}
		payload = next
	}
	return refs, nil
}

// committedKeys is BlockKeys with f.mu held.
func (f *FS) committedKeys(ctx context.Context, n *Inode) ([]key.Key, error) {
	if n.e.Meta.IsZero() {
		return nil, nil
	}
	var err error
	switch n.e.Type {
	case TypeFile:
		err = f.loadFile(ctx, n)
	case TypeDir:
		err = f.loadDir(ctx, n)
	}
	if err != nil {
		return nil, err
	}
	ks := blobKeys(n.e.Base, n.e.Meta, n.metaLen)
	for i, q := range n.ptrs {
		if !q.IsZero() {
			ks = append(ks, n.e.Base.WithBlock(uint32(i)+1, q.Version))
		}
	}
	return ks, nil
}
