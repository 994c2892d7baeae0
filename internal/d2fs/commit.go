package d2fs

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"triad/internal/d2/key"
)

// A commit (§3) writes, in order: the changed data blocks, the records
// of the files and directories above them (new versions, bottom up), and
// last a new superblock, with PutIf so that it lands only if no other
// mount committed that number. Until the superblock is stored the old
// commit is the volume's state, so a reader (or a remount after a crash
// mid-commit) sees the old tree or the new one, never a mix. Every block
// of commit g is written at key version g, and no block of an older
// commit is overwritten; the blocks the new commit no longer points at
// are deleted KeepOld later, for readers still walking the old tree.
//
// The in-memory tree changes only once the superblock is stored: the
// first phase collects the updates, the second applies them, so a
// commit that fails leaves every change dirty and the next one retries,
// at a number of its own when the failed one's superblock may have been
// stored (FS.burnt): its blocks are the state a reader may see then.
type commitPlan struct {
	gen     uint32
	inline  bool  // small files go in their entries (InlineBytes)
	puts    []put // every block of the commit but the superblock, stored before it
	apply   []func()
	garbage []key.Key
}

// put is one block to store.
type put struct {
	k    key.Key
	data []byte
}

// commitLocked commits every change; f.mu is held. It is a small
// commit (delta.go) when the deltas fit in the superblock, else a full
// one.
func (f *FS) commitLocked(ctx context.Context) error {
	return f.commitAs(ctx, false)
}

// commitAs commits every change, a full commit if full; f.mu is held.
func (f *FS) commitAs(ctx context.Context, full bool) error {
	if f.closed {
		return fmt.Errorf("%w: closed", errIO)
	}
	// After a small commit the changed directories stay changed (their
	// records are not written) until a full one: only a full commit has
	// work then.
	if f.ro || !f.root.changed && len(f.unlinked) == 0 || !full && f.dirtySince.IsZero() && len(f.unlinked) == 0 {
		f.dirtySince = time.Time{}
		return nil
	}
	now := f.cfg.Now()
	if err := f.holdLease(ctx, now); err != nil {
		return err
	}
	gen := max(f.gen, f.burnt) + 1
	if gen == 0 {
		return fmt.Errorf("%w: volume has used every commit number", errFileTooBig)
	}
	var p *commitPlan
	s := &super{Gen: gen, Time: now.UnixNano(), DataBytes: uint32(f.dataBytes)}
	if !full {
		var err error
		if p, err = f.planSmall(ctx, s); err != nil {
			return err
		}
	}
	if p == nil {
		if err := f.foldAll(ctx); err != nil {
			return err
		}
		p = &commitPlan{gen: gen, inline: true}
		root, err := f.storeNode(ctx, p, f.root)
		if err != nil {
			return err
		}
		s.Root, s.Full, s.Prev, s.Deltas = root, gen, Ptr{}, nil
	}
	if err := f.planUnlinked(ctx, p); err != nil {
		return err
	}
	if err := f.putAll(ctx, p.puts); err != nil {
		return err
	}
	s.NextIno, s.Used = f.nextIno, f.used
	signSuper(s, f.vol, f.cfg.Writer)
	sb := encodeSuper(s)
	if len(sb) != superBytes(&s.Root, s.Deltas) || len(sb) > BlockBytes {
		return fmt.Errorf("%w: superblock %d of %d bytes (%d planned)", errIO, p.gen, len(sb), superBytes(&s.Root, s.Deltas))
	}
	if err := f.blocks.PutIf(ctx, superKey(f.vol, p.gen), [32]byte{}, sb); err != nil {
		if errors.Is(err, ErrConflict) {
			f.lease.lost = true
			return fmt.Errorf("%w: commit %d exists: %w", ErrLeaseLost, p.gen, err)
		}
		// It may have been stored all the same (a node killed before its
		// reply): commit p.gen may be the volume's state for a reader,
		// and its blocks must stay as they are.
		f.burnt = p.gen
		return fmt.Errorf("%w: superblock %d: %w", errIO, p.gen, err)
	}
	for _, a := range p.apply {
		a()
	}
	f.root.e = s.Root
	p.garbage = append(p.garbage, f.supersReplaced(s)...)
	f.gen, f.full = p.gen, s.Full
	f.unlinked = nil
	f.dirtyBytes = 0
	f.dirtySince = time.Time{}
	f.stats.Commits++
	if s.Full != s.Gen {
		f.stats.SmallCommits++
		f.chain = append(f.chain, s.Gen)
		f.prev = Ptr{Version: s.Gen, Sum: sha256.Sum256(sb)}
	} else {
		f.chain, f.prev = nil, Ptr{}
	}
	f.garbage = append(f.garbage, garbage{at: now.Add(f.cfg.KeepOld), keys: p.garbage})
	return nil
}

// supersReplaced is the superblocks commit s makes garbage: after a
// small commit, the full commit's before it (small ones stay: readers
// follow Prev through them); after a full one, the small commits' since
// the last full one and the commit before.
func (f *FS) supersReplaced(s *super) []key.Key {
	if s.Full != s.Gen {
		if len(f.chain) > 0 {
			return nil
		}
		return []key.Key{superKey(f.vol, f.gen)}
	}
	ks := []key.Key{superKey(f.vol, f.gen)}
	for _, g := range f.chain {
		if g != f.gen {
			ks = append(ks, superKey(f.vol, g))
		}
	}
	return ks
}

// planUnlinked adds the blocks of the files unlinked since the last
// commit to p's garbage, or pins them while the files are open.
func (f *FS) planUnlinked(ctx context.Context, p *commitPlan) error {
	for _, n := range f.unlinked {
		ks, err := f.blocksOfUnlinked(ctx, n)
		if err != nil {
			return err
		}
		if n.opens == 0 || len(ks) == 0 {
			p.garbage = append(p.garbage, ks...)
			continue
		}
		p.apply = append(p.apply, func() {
			n.pinned = ks
			f.pinned = append(f.pinned, n)
		})
	}
	return nil
}

// planSmall plans a small commit (delta.go) into s: the changed files'
// blocks and records, and the deltas of the directories changed since
// the last commit. Small files go in their entries unless that makes
// the deltas outgrow the superblock; then in blocks. It returns nil when
// the commit must be a full one: maxChain small commits since the last,
// or deltas that do not fit in a superblock even so.
func (f *FS) planSmall(ctx context.Context, s *super) (*commitPlan, error) {
	if len(f.chain) >= maxChain {
		return nil, nil
	}
	for _, inline := range []bool{true, false} {
		p := &commitPlan{gen: s.Gen, inline: inline}
		stored := map[*Inode]Entry{}
		if err := f.storeFiles(ctx, p, f.root, stored); err != nil {
			return nil, err
		}
		deltas := f.deltasOf(f.root, stored)
		if superBytes(&f.root.e, deltas) > BlockBytes {
			continue
		}
		s.Root, s.Full, s.Prev, s.Deltas = f.root.e, f.full, f.prev, deltas
		p.apply = append(p.apply, func() { clearDeltas(f.root) })
		return p, nil
	}
	return nil, nil
}

// clearDeltas forgets the changes a small commit stored, in the changed
// directory d and below.
func clearDeltas(d *Inode) {
	d.delta = nil
	for _, c := range d.children {
		if c.changed && c.e.Type == TypeDir {
			clearDeltas(c)
		}
	}
}

// storeFiles plans the blocks and records of the changed files under the
// changed directory d, their new entries into stored; directories'
// records are not written.
func (f *FS) storeFiles(ctx context.Context, p *commitPlan, d *Inode, stored map[*Inode]Entry) error {
	for _, c := range d.children {
		if !c.changed {
			continue
		}
		if c.e.Type == TypeDir {
			if err := f.storeFiles(ctx, p, c, stored); err != nil {
				return err
			}
			continue
		}
		e, err := f.storeNode(ctx, p, c)
		if err != nil {
			return err
		}
		stored[c] = e
	}
	return nil
}

// storeNode writes n's changed blocks and record (and those below it)
// at version p.gen and returns n's entry as the new commit has it; the
// updates to n wait in p.apply.
func (f *FS) storeNode(ctx context.Context, p *commitPlan, n *Inode) (Entry, error) {
	e := n.e
	if !n.changed {
		return e, nil
	}
	var record []byte
	var ptrs []Ptr
	switch n.e.Type {
	case TypeDir:
		if err := f.loadDir(ctx, n); err != nil {
			return e, err
		}
		kids := entriesOf(n)
		entries := make([]Entry, len(kids))
		for i, c := range kids {
			ce, err := f.storeNode(ctx, p, c)
			if err != nil {
				return e, err
			}
			entries[i] = ce
		}
		if len(entries) > 0 {
			record = EncodeDir(entries)
		}
	case TypeFile:
		if data, ok := f.inlineData(p, n); ok {
			e.Target = string(data)
			p.garbage = append(p.garbage, n.cut...)
			for i, q := range n.ptrs {
				if !q.IsZero() {
					p.garbage = append(p.garbage, n.e.Base.WithBlock(uint32(i)+1, q.Version))
				}
			}
			break
		}
		e.Target = ""
		var err error
		if ptrs, err = f.storeData(ctx, p, n); err != nil {
			return e, err
		}
		if slices.ContainsFunc(ptrs, func(q Ptr) bool { return !q.IsZero() }) {
			record = encodeFile(ptrs)
		}
	}
	var meta Ptr
	if record != nil {
		var err error
		if meta, err = f.storeBlob(p, n.e.Base, record); err != nil {
			return e, err
		}
	}
	if !n.e.Meta.IsZero() {
		p.garbage = append(p.garbage, blobKeys(n.e.Base, n.e.Meta, n.metaLen)...)
	}
	e.Meta = meta
	p.apply = append(p.apply, func() {
		n.e.Meta, n.metaLen, n.changed = meta, uint64(len(record)), false
		n.delta = nil // a directory's record now holds every change
		if n.e.Type == TypeFile {
			n.e.Target = e.Target
			if e.Target != "" {
				f.stats.Inlined++
			}
			for blk, data := range n.dirty {
				if int(blk) < len(ptrs) {
					f.remember(n.e.Base.WithBlock(blk+1, ptrs[blk].Version), data)
				}
			}
			n.ptrs, n.dirty, n.cut = ptrs, nil, nil
		}
	})
	return e, nil
}

// storeData plans a file's changed blocks and returns its new block
// pointers; the blocks replaced or cut off by a truncate are garbage.
func (f *FS) storeData(ctx context.Context, p *commitPlan, n *Inode) ([]Ptr, error) {
	nb := f.blocksOf(n.e.Size)
	ptrs := make([]Ptr, nb)
	copy(ptrs, n.ptrs)
	p.garbage = append(p.garbage, n.cut...)
	dirty := n.dirty
	if _, ok := dirty[0]; !ok && n.e.Target != "" && nb > 0 {
		// Held in its entry until now: its bytes become block 0.
		dirty = maps.Clone(dirty)
		if dirty == nil {
			dirty = map[uint32][]byte{}
		}
		dirty[0] = []byte(n.e.Target)
	}
	blks := make([]uint32, 0, len(dirty))
	for blk := range dirty {
		if uint64(blk) < nb {
			blks = append(blks, blk)
		}
	}
	slices.Sort(blks)
	for _, blk := range blks {
		data := dirty[blk]
		p.puts = append(p.puts, put{n.e.Base.WithBlock(blk+1, p.gen), data})
		if int(blk) < len(n.ptrs) && !n.ptrs[blk].IsZero() {
			p.garbage = append(p.garbage, n.e.Base.WithBlock(blk+1, n.ptrs[blk].Version))
		}
		ptrs[blk] = Ptr{Version: p.gen, Sum: sha256.Sum256(data)}
	}
	return ptrs, nil
}

// inlineData is the bytes of file n to keep in its entry, if the plan
// allows it, n is at most InlineBytes and its bytes are at hand: changed
// since the last commit, or in its entry already. A small file committed
// in a block stays there until it changes.
func (f *FS) inlineData(p *commitPlan, n *Inode) ([]byte, bool) {
	if !p.inline || n.e.Size == 0 || n.e.Size > InlineBytes {
		return nil, false
	}
	data, ok := n.dirty[0]
	if !ok {
		if n.e.Target == "" {
			return nil, false
		}
		data = []byte(n.e.Target)
	}
	// A short block reads as zeros past its bytes; the entry holds all.
	out := make([]byte, n.e.Size)
	copy(out, data)
	return out, true
}

// storeBlob plans the blocks of a record at block 0 of base (and its
// parts), version p.gen, and returns the pointer to it.
func (f *FS) storeBlob(p *commitPlan, base key.Key, record []byte) (Ptr, error) {
	blocks, err := encodeBlob(record)
	if err != nil {
		return Ptr{}, err
	}
	var ptr Ptr
	for _, b := range blocks {
		p.puts = append(p.puts, put{base.WithBlock(b.block, p.gen), b.data})
		if b.block == 0 {
			ptr = Ptr{Version: p.gen, Sum: sha256.Sum256(b.data)}
		}
	}
	return ptr, nil
}

// blocksOfUnlinked lists the committed blocks of an unlinked inode,
// with those a truncate cut before it was unlinked.
func (f *FS) blocksOfUnlinked(ctx context.Context, n *Inode) ([]key.Key, error) {
	ks, err := f.committedKeys(ctx, n)
	if err != nil {
		return nil, err
	}
	return append(ks, n.cut...), nil
}

// putAll stores blocks, MaxPuts at a time; it returns nil only if every
// one was stored, else the first error (after the Puts in flight return).
func (f *FS) putAll(ctx context.Context, puts []put) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sem := make(chan struct{}, f.cfg.MaxPuts)
	errs := make(chan error, len(puts))
	var wg sync.WaitGroup
	for _, pt := range puts {
		sem <- struct{}{}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := f.blocks.Put(ctx, pt.k, pt.data); err != nil {
				errs <- fmt.Errorf("%w: block %v: %w", errIO, pt.k, err)
				cancel()
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	if err := ctx.Err(); err != nil { // the caller's: some blocks were not stored
		return fmt.Errorf("%w: commit: %w", errIO, err)
	}
	return nil
}
