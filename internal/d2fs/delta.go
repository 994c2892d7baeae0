package d2fs

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"maps"
	"slices"

	"triad/internal/d2/key"
)

// Small commits (issue 46). A full commit rewrites the record of every
// changed directory and of each directory above it, up to the root: under
// close-to-open, one close in a directory of 1,000 entries rewrote its
// 18 blocks and every ancestor's, and deleted as many 30 s later. A small
// commit writes the changed files' blocks and records, and a superblock
// that carries, for each directory whose entries changed since the
// commit before, those entries (a dirDelta), and points at that commit's
// superblock (Prev): the directories' records stay as the last full
// commit wrote them. A reader follows Prev back to the full commit,
// merges the deltas oldest first (readChain), and applies a directory's
// merged delta to its record when it loads it. Once maxChain small
// commits follow a full one (or one commit's deltas outgrow a
// superblock, or at unmount), the next commit is full and folds them all
// into the records; the chain's superblocks are garbage then.

// maxChain bounds the small commits after a full one: a reader fetches
// at most this many superblocks, and holds their deltas.
const maxChain = 256

// dirDelta is the changes of a directory's entries: the entries to set
// (added or changed) and the names removed, in name order.
type dirDelta struct {
	Dir key.Key // the directory's base key
	Ops []deltaOp
}

// deltaOp sets an entry, or removes a name.
type deltaOp struct {
	Remove bool
	Entry  Entry // only Name when Remove
}

func appendDeltas(b []byte, ds []dirDelta) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(ds)))
	for i := range ds {
		d := &ds[i]
		b = append(b, d.Dir[:]...)
		b = binary.BigEndian.AppendUint16(b, uint16(len(d.Ops)))
		for j := range d.Ops {
			op := &d.Ops[j]
			if op.Remove {
				b = append(b, 2, byte(len(op.Entry.Name)))
				b = append(b, op.Entry.Name...)
				continue
			}
			b = append(b, 1)
			b = appendEntry(b, &op.Entry)
		}
	}
	return b
}

// deltaBytes is the encoded size of ds.
func deltaBytes(ds []dirDelta) int {
	n := 2
	for i := range ds {
		n += key.Size + 2
		for j := range ds[i].Ops {
			e := &ds[i].Ops[j].Entry
			if ds[i].Ops[j].Remove {
				n += 2 + len(e.Name)
			} else {
				n += 1 + entryFixed + len(e.Name) + len(e.Target)
			}
		}
	}
	return n
}

// deltas reads and checks the deltas of a superblock of vol: each
// directory once, of the volume, each op a valid entry of it (or a valid
// name), names strictly increasing.
func (r *reader) deltas(vol key.Volume) ([]dirDelta, error) {
	n := int(r.u16())
	var ds []dirDelta
	seen := map[key.Key]bool{}
	for range n {
		var d dirDelta
		copy(d.Dir[:], r.take(key.Size))
		nops := int(r.u16())
		if r.err != nil {
			return nil, r.err
		}
		if d.Dir.Volume() != vol || d.Dir != d.Dir.Base() || seen[d.Dir] || d.Dir.Inode() < rootInode {
			return nil, fmt.Errorf("%w: a delta of directory %v", ErrFormat, d.Dir)
		}
		seen[d.Dir] = true
		for j := range nops {
			op, err := r.deltaOp(d.Dir)
			if err != nil {
				return nil, err
			}
			if j > 0 && d.Ops[j-1].Entry.Name >= op.Entry.Name {
				return nil, fmt.Errorf("%w: delta of %v: %q after %q", ErrFormat, d.Dir, op.Entry.Name, d.Ops[j-1].Entry.Name)
			}
			d.Ops = append(d.Ops, op)
		}
		ds = append(ds, d)
	}
	return ds, nil
}

// deltaOp reads one op of directory dir's delta.
func (r *reader) deltaOp(dir key.Key) (deltaOp, error) {
	var op deltaOp
	switch r.u8() {
	case 1:
		op.Entry = r.entry()
		if r.err == nil {
			if err := checkEntry(&op.Entry, dir); err != nil {
				return op, err
			}
		}
	case 2:
		op.Remove = true
		op.Entry.Name = string(r.take(int(r.u8())))
		if err := checkName(op.Entry.Name); r.err == nil && err != nil {
			return op, fmt.Errorf("%w: %v", ErrFormat, err)
		}
	default:
		return op, fmt.Errorf("%w: a delta op of kind other than set or remove", ErrFormat)
	}
	return op, r.err
}

// applyDelta applies ops (in name order) to a directory's entries from
// its record (in name order) and returns the entries in name order.
func applyDelta(entries []Entry, ops []deltaOp) []Entry {
	if len(ops) == 0 {
		return entries
	}
	out := make([]Entry, 0, len(entries)+len(ops))
	i := 0
	for _, op := range ops {
		for i < len(entries) && entries[i].Name < op.Entry.Name {
			out = append(out, entries[i])
			i++
		}
		if i < len(entries) && entries[i].Name == op.Entry.Name {
			i++ // replaced or removed
		}
		if !op.Remove {
			out = append(out, op.Entry)
		}
	}
	return append(out, entries[i:]...)
}

// mergeOps merges a later delta of a directory into an earlier one: for
// a name both touch, the later op stands.
func mergeOps(earlier, later []deltaOp) []deltaOp {
	out := make([]deltaOp, 0, len(earlier)+len(later))
	i := 0
	for _, op := range later {
		for i < len(earlier) && earlier[i].Entry.Name < op.Entry.Name {
			out = append(out, earlier[i])
			i++
		}
		if i < len(earlier) && earlier[i].Entry.Name == op.Entry.Name {
			i++
		}
		out = append(out, op)
	}
	return append(out, earlier[i:]...)
}

// checkApplied checks what DecodeDir checks across entries, once a delta
// is applied: slots and base keys unique.
func checkApplied(entries []Entry, dir key.Key) error {
	slots := make(map[key.Slot]bool, len(entries))
	bases := make(map[key.Key]bool, len(entries))
	for i := range entries {
		e := &entries[i]
		if (e.Slot != key.Overflow && slots[e.Slot]) || bases[e.Base] {
			return fmt.Errorf("%w: directory %v with its delta: %q repeats a slot or a key", ErrFormat, dir, e.Name)
		}
		slots[e.Slot], bases[e.Base] = true, true
	}
	return nil
}

// sameOps says whether two deltas of a directory are the same.
func sameOps(a, b []deltaOp) bool {
	return slices.EqualFunc(a, b, func(x, y deltaOp) bool { return x.Remove == y.Remove && x.Entry == y.Entry })
}

// chain is what a reader knows of the small commits since the last full
// one: their deltas merged, and their commit numbers.
type chain struct {
	deltas map[key.Key][]deltaOp
	gens   []uint32
	prev   Ptr // the newest superblock, when it is a small commit's: what the next one names
}

// readChain reads the superblocks Prev leads to from s back to the last
// full commit, checks each (its hash, its signature, the same full
// commit), and merges their deltas and s's, oldest first. Superblocks
// are immutable, so they are read through the cache: a refresh fetches
// only the new ones.
func (f *FS) readChain(ctx context.Context, s *super) (chain, error) {
	if s.Gen == s.Full {
		return chain{}, nil
	}
	supers := []*super{s}
	for p := s.Prev; !p.IsZero(); p = supers[len(supers)-1].Prev {
		if len(supers) > maxChain {
			return chain{}, fmt.Errorf("%w: superblock %d: more than %d small commits since full commit %d", errIO, s.Gen, maxChain, s.Full)
		}
		data, err := f.fetch(ctx, superKey(f.vol, p.Version), p.Sum, true)
		if err != nil {
			return chain{}, err
		}
		ps, err := decodeSuper(data, f.vol, p.Version)
		if err == nil && ps.Full != s.Full {
			err = fmt.Errorf("%w: superblock %d follows full commit %d, %d follows %d", ErrFormat, s.Gen, s.Full, ps.Gen, ps.Full)
		}
		if err != nil {
			f.stats.BadBlocks++
			return chain{}, fmt.Errorf("%w: %w", errIO, err)
		}
		supers = append(supers, ps)
	}
	c := chain{deltas: map[key.Key][]deltaOp{}, prev: Ptr{Version: s.Gen, Sum: sha256.Sum256(encodeSuper(s))}}
	for i := len(supers) - 1; i >= 0; i-- {
		for _, d := range supers[i].Deltas {
			c.deltas[d.Dir] = mergeOps(c.deltas[d.Dir], d.Ops)
		}
		c.gens = append(c.gens, supers[i].Gen)
	}
	return c, nil
}

// foldAll loads, before a full commit, every directory that a delta of
// the chain this writer mounted still changes (a writer that took over
// after a crash has not loaded them all): breadth first from the root,
// until none is left. A delta of a directory the walk does not reach is
// of one removed since.
func (f *FS) foldAll(ctx context.Context) error {
	queue := []*Inode{f.root}
	for len(queue) > 0 && len(f.deltas) > 0 {
		d := queue[0]
		queue = queue[1:]
		if err := f.loadDir(ctx, d); err != nil {
			return err
		}
		for _, c := range d.children {
			if c.e.Type == TypeDir {
				queue = append(queue, c)
			}
		}
	}
	f.deltas = nil
	return nil
}

// deltasOf lists the deltas of the changed directory d and of those
// below it: each name of d.delta (changed since the last commit) set to
// its entry as this commit stores it, or removed.
func (f *FS) deltasOf(d *Inode, stored map[*Inode]Entry) []dirDelta {
	var ds []dirDelta
	if len(d.delta) > 0 {
		dd := dirDelta{Dir: d.e.Base}
		for _, name := range slices.Sorted(maps.Keys(d.delta)) {
			c, ok := d.children[name]
			if !ok {
				dd.Ops = append(dd.Ops, deltaOp{Remove: true, Entry: Entry{Name: name}})
				continue
			}
			e, ok := stored[c]
			if !ok {
				e = c.e
			}
			dd.Ops = append(dd.Ops, deltaOp{Entry: e})
		}
		ds = append(ds, dd)
	}
	for _, c := range d.children {
		if c.changed && c.e.Type == TypeDir {
			ds = append(ds, f.deltasOf(c, stored)...)
		}
	}
	return ds
}
