package d2fs

import (
	"encoding/binary"
	"fmt"
	"slices"

	"triad/internal/d2/key"
)

// Small commits (issue 46). A full commit rewrites the record of every
// changed directory and of each directory above it, up to the root: under
// close-to-open, one close in a directory of 1,000 entries rewrote its
// 18 blocks and every ancestor's, and deleted as many 30 s later. A small
// commit writes the changed files' blocks and records, and a superblock
// that carries, for each directory changed since the volume's last full
// commit, the entries it changed (a dirDelta): the directories' records
// stay as the full commit wrote them. A reader that loads a directory
// applies its delta to the record (applyDelta). The deltas are
// cumulative, each superblock holding every change since the full commit,
// so a reader needs one superblock, as before; once they no longer fit in
// one block (about 50 entries), the next commit is a full one, which
// folds them into the records.

// dirDelta is a directory's changes since the last full commit: the
// entries to set (added or changed) and the names removed, in name order.
type dirDelta struct {
	Dir  key.Key  // the directory's base key
	Path []uint32 // inode numbers from a child of the root down to Dir; empty for the root
	Ops  []deltaOp
}

// deltaOp sets an entry, or removes a name.
type deltaOp struct {
	Remove bool
	Entry  Entry // only Name when Remove
}

// maxDeltaPath bounds a delta's path: deeper directories are not
// reachable by a key-bearing walk anyway past a few hundred levels, and a
// superblock is one block.
const maxDeltaPath = 255

func appendDeltas(b []byte, ds []dirDelta) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(ds)))
	for i := range ds {
		d := &ds[i]
		b = append(b, d.Dir[:]...)
		b = append(b, byte(len(d.Path)))
		for _, ino := range d.Path {
			b = binary.BigEndian.AppendUint32(b, ino)
		}
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
		n += key.Size + 1 + 4*len(ds[i].Path) + 2
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

// readDeltas reads and checks the deltas of a superblock of vol: each
// directory once, of the volume, each op a valid entry of it (or a valid
// name), names strictly increasing.
func (r *reader) deltas(vol key.Volume) ([]dirDelta, error) {
	n := int(r.u16())
	var ds []dirDelta
	seen := map[key.Key]bool{}
	for range n {
		var d dirDelta
		copy(d.Dir[:], r.take(key.Size))
		depth := int(r.u8())
		for range depth {
			d.Path = append(d.Path, r.u32())
		}
		nops := int(r.u16())
		if r.err != nil {
			return nil, r.err
		}
		if d.Dir.Volume() != vol || d.Dir != d.Dir.Base() || seen[d.Dir] || (depth == 0) != (d.Dir == rootDir(vol)) ||
			depth > 0 && d.Path[depth-1] != d.Dir.Inode() {
			return nil, fmt.Errorf("%w: a delta of directory %v", ErrFormat, d.Dir)
		}
		seen[d.Dir] = true
		for j := range nops {
			var op deltaOp
			switch r.u8() {
			case 1:
				op.Entry = r.entry()
				if r.err == nil {
					if err := checkEntry(&op.Entry, d.Dir); err != nil {
						return nil, err
					}
				}
			case 2:
				op.Remove = true
				op.Entry.Name = string(r.take(int(r.u8())))
				if err := checkName(op.Entry.Name); r.err == nil && err != nil {
					return nil, fmt.Errorf("%w: %v", ErrFormat, err)
				}
			default:
				return nil, fmt.Errorf("%w: a delta op of kind other than set or remove", ErrFormat)
			}
			if r.err != nil {
				return nil, r.err
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

// deltasByDir indexes a superblock's deltas by directory.
func deltasByDir(ds []dirDelta) map[key.Key][]deltaOp {
	if len(ds) == 0 {
		return nil
	}
	m := make(map[key.Key][]deltaOp, len(ds))
	for _, d := range ds {
		m[d.Dir] = d.Ops
	}
	return m
}

// sameOps says whether two deltas of a directory are the same.
func sameOps(a, b []deltaOp) bool {
	return slices.EqualFunc(a, b, func(x, y deltaOp) bool { return x.Remove == y.Remove && x.Entry == y.Entry })
}
