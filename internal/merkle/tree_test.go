package merkle

import (
	"math/rand/v2"
	"slices"
	"testing"

	"triad/internal/id"
)

func randKeys(r *rand.Rand, n, width int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		k := make([]byte, width)
		for j := range k {
			k[j] = byte(r.Uint32())
		}
		out[i] = k
	}
	return out
}

// clustered returns keys sharing their first bytes, so that splits go deep.
func clustered(r *rand.Rand, n, width, shared int) [][]byte {
	keys := randKeys(r, n, width)
	for _, k := range keys {
		for j := 0; j < shared; j++ {
			k[j] = 0xab
		}
	}
	return keys
}

func TestIncrementalMatchesFresh(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	m := NewMem()
	live := map[string][]byte{}
	for round := 0; round < 40; round++ {
		var add, remove [][]byte
		add = append(randKeys(r, r.IntN(300), 20), clustered(r, r.IntN(100), 20, 3)...)
		for k, v := range live {
			if r.IntN(3) == 0 {
				remove = append(remove, v)
				delete(live, k)
			}
		}
		for _, k := range add {
			live[string(k)] = k
		}
		Update(m, add, remove)

		var all [][]byte
		for _, v := range live {
			all = append(all, v)
		}
		want := Recompute(all)
		got := Lookup(m, Root())
		if got.Count != uint64(len(live)) || got.Hash != want.Hash {
			t.Fatalf("round %d: root %d keys %x, fresh tree %d keys %x", round, got.Count, got.Hash[:4], want.Count, want.Hash[:4])
		}
		if bad, ok := Verify(m, Root()); !ok {
			t.Fatalf("round %d: node %v disagrees with its keys", round, bad)
		}
	}
}

func TestSplitAndMergeAtLeafMax(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	keys := clustered(r, LeafMax+1, 20, 5) // all share the first 6 digits
	m := NewMem()
	Update(m, keys[:LeafMax], nil)
	if n := Lookup(m, Root()); !n.Leaf() || len(Children(m, Root())) != 0 {
		t.Fatalf("64 keys: root should be a leaf, got count %d", n.Count)
	}
	leafRoot := Lookup(m, Root()).Hash

	Update(m, keys[LeafMax:], nil)
	root := Lookup(m, Root())
	if root.Leaf() {
		t.Fatal("65 keys: root still a leaf")
	}
	// The shared bytes force a chain of single-child internal nodes.
	p := Root()
	for i := 0; i < 6; i++ {
		kids := Children(m, p)
		if len(kids) != 1 || kids[0].Count != LeafMax+1 {
			t.Fatalf("depth %d: %d children, want one holding all keys", i, len(kids))
		}
		p = kids[0].Prefix
	}
	Update(m, nil, keys[LeafMax:])
	if n := Lookup(m, Root()); !n.Leaf() || n.Hash != leafRoot {
		t.Fatal("back to 64 keys: root should be the same leaf as before")
	}
	if len(m.nodes) != 1 {
		t.Fatalf("after merge %d nodes stored, want only the root", len(m.nodes))
	}
	if bad, ok := Verify(m, Root()); !ok {
		t.Fatalf("node %v wrong after merge", bad)
	}
}

func TestLookupBelowLeafMatchesPeer(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	keys := randKeys(r, 5000, 20)
	big, small := NewMem(), NewMem()
	Update(big, keys, nil)
	// small holds only the keys under one depth-2 prefix, so its tree is a
	// single leaf where big has a stored node.
	p := PrefixOf(keys[0], 2)
	var sub [][]byte
	for _, k := range keys {
		if p.Contains(k) {
			sub = append(sub, k)
		}
	}
	Update(small, sub, nil)
	if a, b := Lookup(big, p), Lookup(small, p); a != b {
		t.Fatalf("node at %v: %+v in the big tree, %+v in a tree of just its keys", p, a, b)
	}
	if n := Lookup(small, Root()); n.Count != uint64(len(sub)) {
		t.Fatalf("root of small tree has %d keys, want %d", n.Count, len(sub))
	}
}

func TestKeysInRangeWraps(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	keys := randKeys(r, 2000, 20)
	m := NewMem()
	Update(m, keys, nil)
	lo, hi := id.Random(rand.New(rand.NewPCG(9, 9)), 20), id.Random(rand.New(rand.NewPCG(10, 10)), 20)
	for _, arc := range [][2]id.ID{{lo, hi}, {hi, lo}, {lo, lo}} {
		got := KeysInRange(m, Root(), arc[0], arc[1], 1<<30)
		var want []id.ID
		for _, k := range keys {
			x, _ := id.FromBytes(k)
			if x.In(arc[0], arc[1]) {
				want = append(want, x)
			}
		}
		slices.SortFunc(want, id.ID.Cmp)
		if !slices.Equal(got, want) {
			t.Fatalf("arc (%v, %v]: %d keys, want %d", arc[0].Short(), arc[1].Short(), len(got), len(want))
		}
	}
	if got := KeysInRange(m, Root(), lo, lo, 7); len(got) != 7 {
		t.Fatalf("limit 7 gave %d keys", len(got))
	}
	// Restricting to a prefix returns only keys under it.
	p := PrefixOf(keys[0], 1)
	for _, k := range KeysInRange(m, p, lo, lo, 1<<30) {
		if !p.Contains(k.Bytes()) {
			t.Fatalf("key %v outside prefix %v", k, p)
		}
	}
}

func TestPrefixEncoding(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, width := range []int{20, 64} {
		key := randKeys(r, 1, width)[0]
		maxDepth := (width*8 + DigitBits - 1) / DigitBits
		for depth := 0; depth <= maxDepth; depth++ {
			p := PrefixOf(key, depth)
			q, err := DecodePrefix(p.Encode())
			if err != nil || q != p {
				t.Fatalf("width %d depth %d: %v round-trips to %v (%v)", width, depth, p, q, err)
			}
			if !p.Contains(key) {
				t.Fatalf("%v does not contain its key", p)
			}
			if (depth+1)*DigitBits <= width*8 && p.Child(Digit(key, depth)) != PrefixOf(key, depth+1) {
				t.Fatalf("width %d depth %d: child by digit differs from prefix of key", width, depth)
			}
		}
	}
	for _, bad := range [][]byte{{}, {1}, {1, 0xff}, {2, 1, 2, 3}, {200, 1}} {
		if _, err := DecodePrefix(bad); err == nil {
			t.Fatalf("DecodePrefix(%x) accepted", bad)
		}
	}
}

func FuzzDecodePrefix(f *testing.F) {
	f.Add([]byte{3, 0xab, 0xcd, 0xc0})
	f.Add([]byte{0})
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := DecodePrefix(b)
		if err != nil {
			return
		}
		if q, err := DecodePrefix(p.Encode()); err != nil || q != p {
			t.Fatalf("%x decodes to %v which does not round-trip", b, p)
		}
	})
}

// A prefix meets an arc exactly when one of its keys lies in it: checked
// against every key of a small width by brute force.
func TestOverlapsArc(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	for range 2000 {
		lo := id.Random(r, 2)
		hi := id.Random(r, 2)
		if r.IntN(8) == 0 {
			hi = lo
		}
		depth := r.IntN(4)
		key := id.Random(r, 2)
		p := PrefixOf(key.Bytes(), depth)
		want := false
		for k := 0; k < 1<<16 && !want; k++ {
			b := []byte{byte(k >> 8), byte(k)}
			x, _ := id.FromBytes(b)
			want = p.Contains(b) && x.In(lo, hi)
		}
		if got := p.OverlapsArc(lo, hi); got != want {
			t.Fatalf("prefix %v, arc (%v, %v]: OverlapsArc = %v, want %v", p, lo, hi, got, want)
		}
	}
}

// TestKeysInRangeMatchesAScan: the descent that skips subtrees outside the
// arc (and starts at lo in an arc that does not wrap) lists exactly what a
// scan of every key finds, in order, for random arcs, narrow and wide,
// wrapping or not, with and without a limit, under every prefix.
func TestKeysInRangeMatchesAScan(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	m := NewMem()
	keys := append(randKeys(r, 3000, 20), clustered(r, 500, 20, 2)...)
	Update(m, keys, keys[:100]) // some removed again
	var all []id.ID
	for _, k := range keys[100:] {
		x, _ := id.FromBytes(k)
		all = append(all, x)
	}
	slices.SortFunc(all, id.ID.Cmp)
	all = slices.Compact(all)
	prefixes := []Prefix{Root()}
	m.Children(Root(), func(n Node) { prefixes = append(prefixes, n.Prefix) })
	for i := range 400 {
		lo := id.Random(r, 20)
		hi := lo.Add(id.Random(r, 20)) // wide
		if i%2 == 0 {
			hi = lo.AddPow2(150 - i%10) // narrow
		}
		if i%7 == 0 {
			hi = lo // the whole ring
		}
		max := 1 << 30
		if i%3 == 0 {
			max = 1 + i%5
		}
		p := prefixes[i%len(prefixes)]
		var want []id.ID
		for _, x := range all {
			if len(want) < max && p.Contains(x.Bytes()) && x.In(lo, hi) {
				want = append(want, x)
			}
		}
		if got := KeysInRange(m, p, lo, hi, max); !slices.Equal(got, want) {
			t.Fatalf("arc (%s, %s] under %v, max %d: %d keys, want %d", lo.Short(), hi.Short(), p, max, len(got), len(want))
		}
	}
}

// countingBackend counts the writes an Update makes to its backend.
type countingBackend struct {
	*Mem
	puts     int
	distinct map[Prefix]bool
}

func (c *countingBackend) PutNode(n Node) {
	c.puts++
	c.distinct[n.Prefix] = true
	c.Mem.PutNode(n)
}

// TestUpdateWritesEachNodeOnce: a batch writes each node it changes at
// most twice (its count, then its hash), however many of the batch's keys
// lie under it. A store's checkpoint of n keys once rewrote the root n
// times.
func TestUpdateWritesEachNodeOnce(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	c := &countingBackend{Mem: NewMem(), distinct: map[Prefix]bool{}}
	keys := append(randKeys(r, 2000, 20), clustered(r, 300, 20, 3)...)
	Update(c, keys, nil)
	if c.puts > 2*len(c.distinct) {
		t.Fatalf("adding %d keys wrote nodes %d times, %d distinct nodes", len(keys), c.puts, len(c.distinct))
	}
	c.puts, c.distinct = 0, map[Prefix]bool{}
	Update(c, randKeys(r, 200, 20), keys[:1500])
	if c.puts > 2*len(c.distinct) {
		t.Fatalf("a mixed batch wrote nodes %d times, %d distinct nodes", c.puts, len(c.distinct))
	}
	if got, want := Lookup(c, Root()), Recompute(append(keys[1500:], nil...)); got.Count != want.Count+200 {
		t.Fatalf("root counts %d keys, want %d", got.Count, want.Count+200)
	}
}
