package key

import (
	"bytes"
	"errors"
	"sort"
	"testing"
)

var vol = VolumeOf("home", []byte{1})

// A tree of keys built with Child sorts as a depth-first walk of the tree:
// a directory's own blocks, then each entry's subtree in slot order, each
// subtree contiguous. That is the locality the ring's order preserves.
func TestKeysSortAsTheTree(t *testing.T) {
	root := Root(vol)
	var walk []node // depth-first order, the order keys must sort in
	var build func(parent Key, prefix string, depth int, inode *uint32)
	build = func(parent Key, prefix string, depth int, inode *uint32) {
		walk = append(walk, node{prefix, parent})
		if depth == 3 {
			return
		}
		for s := Slot(1); s <= 3; s++ {
			*inode++
			name := prefix + "/" + string(rune('a'+s))
			build(Child(parent, s, name, *inode), name, depth+1, inode)
		}
	}
	var inode uint32
	build(root, "", 0, &inode)
	var blocks []Key
	var want []string
	for _, n := range walk {
		for b := uint32(0); b < 2; b++ {
			blocks = append(blocks, n.key.WithBlock(b, 7))
			want = append(want, n.name)
		}
	}
	sorted := append([]Key(nil), blocks...)
	sort.Slice(sorted, func(i, j int) bool { return bytes.Compare(sorted[i][:], sorted[j][:]) < 0 })
	for i := range sorted {
		if sorted[i] != blocks[i] {
			t.Fatalf("key %d in ring order is %v (of %q), want %v (of %q)", i, sorted[i], nameOf(walk, sorted[i]), blocks[i], want[i])
		}
	}
	// Every subtree's keys fall in its Range, and no other key does.
	for _, n := range walk {
		lo, hi := Range(n.key)
		for _, m := range walk {
			last := m.key.WithBlock(1, 7)
			in := bytes.Compare(m.key[:], lo[:]) >= 0 && bytes.Compare(last[:], hi[:]) <= 0
			under := m.name == n.name || len(m.name) > len(n.name) && m.name[:len(n.name)+1] == n.name+"/"
			if in != under {
				t.Fatalf("%q in Range(%q) = %v, want %v", m.name, n.name, in, under)
			}
		}
	}
}

type node struct {
	name string
	key  Key
}

func nameOf(walk []node, k Key) string {
	for _, n := range walk {
		if SameFile(n.key, k) {
			return n.name
		}
	}
	return "?"
}

func TestFields(t *testing.T) {
	k := Child(Child(Root(vol), 5, "a", 10), 9, "b", 11).WithBlock(3, 4)
	if k.Volume() != vol || k.Depth() != 2 || k.Slot(0) != 5 || k.Slot(1) != 9 || k.Slot(2) != NoSlot {
		t.Fatalf("fields of %v: volume %v depth %d slots %d %d %d", k, k.Volume(), k.Depth(), k.Slot(0), k.Slot(1), k.Slot(2))
	}
	if k.Inode() != 11 || k.Block() != 3 || k.Version() != 4 || k.Hashed() {
		t.Fatalf("fields of %v: inode %d block %d version %d hashed %v", k, k.Inode(), k.Block(), k.Version(), k.Hashed())
	}
	if k.Base().Block() != 0 || k.Base().Version() != 0 || !SameFile(k, k.Base()) {
		t.Fatalf("Base of %v is %v", k, k.Base())
	}
	back, err := FromID(k.ID())
	if err != nil || back != k {
		t.Fatalf("FromID(ID()) = %v, %v; want %v", back, err, k)
	}
	if k.ID().Width() != Size {
		t.Fatalf("ID width %d", k.ID().Width())
	}
}

func TestParseRefusesOtherWidths(t *testing.T) {
	for _, n := range []int{0, 20, 63, 65} {
		if _, err := Parse(make([]byte, n)); !errors.Is(err, ErrWidth) {
			t.Errorf("Parse of %d bytes: %v, want ErrWidth", n, err)
		}
	}
}

// Past 12 levels a path is placed by hash: distinct names stay distinct,
// the key keeps its volume and its first 12 slots, and says it is hashed.
func TestDeepPathsArePlacedByHash(t *testing.T) {
	k := Root(vol)
	for i := 0; i < Levels; i++ {
		k = Child(k, Slot(i+1), "d", uint32(i+1))
	}
	if k.Depth() != Levels || k.Hashed() {
		t.Fatalf("12 levels: depth %d hashed %v", k.Depth(), k.Hashed())
	}
	a := Child(k, 1, "x", 100)
	b := Child(k, 1, "y", 101)
	if !a.Hashed() || !b.Hashed() || a == b {
		t.Fatalf("13th level: %v %v", a, b)
	}
	for i := 0; i < Levels; i++ {
		if a.Slot(i) != k.Slot(i) {
			t.Fatalf("13th level lost slot %d", i)
		}
	}
	if a.Volume() != vol {
		t.Fatal("13th level left its volume")
	}
	// Below a hashed entry, every descendant is hashed too, and distinct.
	c := Child(a, 1, "z", 102)
	d := Child(a, 1, "z", 103)
	if !c.Hashed() || c == d || c == a {
		t.Fatalf("14th level: %v %v %v", a, c, d)
	}
}

// A name in a full directory is placed by hash under the directory's slots.
func TestOverflowIsPlacedByHash(t *testing.T) {
	dir := Child(Root(vol), 4, "big", 2)
	a := Child(dir, Overflow, "n1", 3)
	b := Child(dir, Overflow, "n2", 4)
	if !a.Hashed() || a == b || a.Slot(0) != 4 || a.Slot(1) != Overflow {
		t.Fatalf("overflow keys %v %v", a, b)
	}
	lo, hi := Range(dir)
	if bytes.Compare(a[:], lo[:]) < 0 || bytes.Compare(a[:], hi[:]) > 0 {
		t.Fatalf("overflow entry %v outside its directory's range", a)
	}
}

func TestFreeSlot(t *testing.T) {
	used := map[Slot]bool{1: true, 2: true, 4: true}
	if s := FreeSlot(func(s Slot) bool { return used[s] }, 1); s != 3 {
		t.Fatalf("FreeSlot from 1 = %d, want 3", s)
	}
	if s := FreeSlot(func(s Slot) bool { return used[s] }, 4); s != 5 {
		t.Fatalf("FreeSlot from 4 = %d, want 5", s)
	}
	if s := FreeSlot(func(s Slot) bool { return s != 2 }, MaxSlot); s != 2 {
		t.Fatalf("FreeSlot wrapping = %d, want 2", s)
	}
	if s := FreeSlot(func(Slot) bool { return true }, 1); s != Overflow {
		t.Fatalf("FreeSlot in a full directory = %d, want Overflow", s)
	}
}

// FuzzParse: any 64 bytes is a key whose fields read back into the same
// bytes; anything else is refused.
func FuzzParse(f *testing.F) {
	f.Add(make([]byte, Size))
	k := Child(Root(vol), 3, "f", 9).WithBlock(2, 1)
	f.Add(k[:])
	f.Add([]byte("short"))
	f.Fuzz(func(t *testing.T, b []byte) {
		k, err := Parse(b)
		if len(b) != Size {
			if err == nil {
				t.Fatalf("%d bytes parsed", len(b))
			}
			return
		}
		if err != nil || !bytes.Equal(k[:], b) {
			t.Fatalf("Parse(%x) = %v, %v", b, k, err)
		}
		if d := k.Depth(); d < 0 || d > Levels {
			t.Fatalf("depth %d", d)
		}
		if k.WithBlock(k.Block(), k.Version()) != k {
			t.Fatal("WithBlock of its own fields changed the key")
		}
		lo, hi := Range(k)
		if bytes.Compare(lo[:], hi[:]) > 0 || k.Base() != lo {
			t.Fatalf("Range(%v) = %v..%v", k, lo, hi)
		}
	})
}

// TestPlaceBlockScattersAFile: block placement puts a file's blocks at
// unrelated positions, far from the file's own keys, and keeps each
// block's versions together (Latest's range of versions stays a range).
func TestPlaceBlockScattersAFile(t *testing.T) {
	f := Child(Root(VolumeOf("home", nil)), 1, "big.dat", 7)
	seen := map[[8]byte]bool{}
	for b := range uint32(64) {
		p := PlaceBlock(f.WithBlock(b, 1))
		if p.Volume() == f.Volume() {
			t.Fatalf("block %d placed inside its volume's range", b)
		}
		seen[[8]byte(p[:8])] = true
		v2 := PlaceBlock(f.WithBlock(b, 2))
		if [offVersion]byte(v2[:offVersion]) != [offVersion]byte(p[:offVersion]) || v2.Version() != 2 {
			t.Fatalf("block %d: versions 1 and 2 placed apart: %v, %v", b, p, v2)
		}
	}
	if len(seen) != 64 {
		t.Fatalf("64 blocks at %d distinct positions", len(seen))
	}
	if again := f; PlaceBlock(again) != PlaceBlock(f) {
		t.Fatal("PlaceBlock is not a function of the key")
	}
}
