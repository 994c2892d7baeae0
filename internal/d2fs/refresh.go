package d2fs

import (
	"context"
	"fmt"

	"triad/internal/d2/key"
)

// A read-only mount follows the writer: Tick looks for a newer commit
// every Config.Refresh and, when there is one, brings the part of the
// tree it has loaded up to date in place, so that open files and the
// kernel's inodes keep their Inode. A record whose pointer did not
// change did not change below either (a changed child changes its
// parent's record), so only the changed paths are read again. Readers
// see a commit whole or not at all; they may lag the writer by Refresh
// plus the kernel's 1 s attribute cache.

// Refresh brings a read-only mount to the newest commit now.
func (f *FS) Refresh(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.refreshed = f.cfg.Now()
	return f.refresh(ctx)
}

func (f *FS) refresh(ctx context.Context) error {
	if !f.ro {
		return fmt.Errorf("%w: refresh of the writer", errInvalid)
	}
	s, err := f.newestSuper(ctx)
	if err != nil {
		return err
	}
	if s.Gen == f.gen {
		return nil
	}
	c, err := f.readChain(ctx, s)
	if err != nil {
		return err
	}
	recs := map[*Inode][]Entry{}
	deltas := c.deltas
	if err := f.readChanged(ctx, f.root, s.Root, deltas, recs); err != nil {
		return err // the old tree stays; the next Tick tries again
	}
	update(f.root, s.Root, recs)
	f.gen, f.nextIno, f.used, f.full, f.deltas = s.Gen, s.NextIno, s.Used, s.Full, deltas
	return nil
}

// readChanged reads the new entries of the loaded directories under n
// whose record or delta changed (n's new entry is e; deltas are the new
// commit's), into recs. It changes nothing, so that a failed read leaves
// the whole tree as it was. A directory whose record and delta are the
// same may still have changes below it, in a delta of its own.
func (f *FS) readChanged(ctx context.Context, n *Inode, e Entry, deltas map[key.Key][]deltaOp, recs map[*Inode][]Entry) error {
	if n.e.Type != TypeDir || e.Type != TypeDir || n.children == nil {
		return nil
	}
	if n.e.Meta == e.Meta && sameOps(f.deltas[e.Base], deltas[e.Base]) {
		if len(f.deltas) == 0 && len(deltas) == 0 {
			return nil // full commits both: nothing changed below
		}
		for _, c := range n.children {
			if err := f.readChanged(ctx, c, c.e, deltas, recs); err != nil {
				return err
			}
		}
		return nil
	}
	var entries []Entry
	if !e.Meta.IsZero() {
		rec, err := f.loadBlob(ctx, e.Base, e.Meta)
		if err != nil {
			return err
		}
		if entries, err = DecodeDir(rec, e.Base); err != nil {
			f.stats.BadBlocks++
			return fmt.Errorf("%w: directory %v: %w", errIO, e.Base, err)
		}
	}
	if ops := deltas[e.Base]; len(ops) > 0 {
		entries = applyDelta(entries, ops)
		if err := checkApplied(entries, e.Base); err != nil {
			f.stats.BadBlocks++
			return fmt.Errorf("%w: %w", errIO, err)
		}
	}
	recs[n] = entries
	byKey := make(map[key.Key]*Inode, len(n.children))
	for _, c := range n.children {
		byKey[c.e.Base] = c
	}
	for _, ce := range entries {
		if c := byKey[ce.Base]; c != nil {
			if err := f.readChanged(ctx, c, ce, deltas, recs); err != nil {
				return err
			}
		}
	}
	return nil
}

// update sets n's entry to e and its loaded children to the records
// readChanged read: a kept child (same key and type) keeps its Inode.
func update(n *Inode, e Entry, recs map[*Inode][]Entry) {
	changed := n.e.Meta != e.Meta
	n.e = e
	entries, ok := recs[n]
	if !ok {
		if changed {
			// Not loaded, or a file: read again on demand.
			n.loaded, n.ptrs, n.children, n.slots = false, nil, nil, nil
			return
		}
		for _, c := range n.children { // a delta below may have changed
			update(c, c.e, recs)
		}
		return
	}
	byKey := make(map[key.Key]*Inode, len(n.children))
	for _, c := range n.children {
		byKey[c.e.Base] = c
	}
	n.children = make(map[string]*Inode, len(entries))
	n.slots = make(map[key.Slot]bool, len(entries))
	n.warmed = false
	for _, ce := range entries {
		c, ok := byKey[ce.Base]
		if ok && c.e.Type == ce.Type {
			delete(byKey, ce.Base)
			update(c, ce, recs)
		} else {
			c = &Inode{e: ce, parent: n}
		}
		n.children[ce.Name] = c
		n.slots[ce.Slot] = true
	}
	for _, gone := range byKey {
		gone.parent, gone.unlinked = nil, true
	}
}
