package d2

import (
	"math/rand/v2"
	"slices"
	"testing"

	"triad/internal/id"
	"triad/internal/wire"
)

// TestIndexAgainstNaive holds the index's arcs, counts, medians and last
// keys to a plain filter of a sorted list by id.In, for random arcs that
// wrap and do not, arcs of the whole ring, and arcs ending on stored keys.
func TestIndexAgainstNaive(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	x := newIndex()
	var keys []id.ID
	for i := 0; i < 300; i++ {
		k := id.Random(r, KeyBytes)
		keys = append(keys, k)
		e := entry{key: k}
		if i%3 == 0 {
			e.holder = wire.NodeRef{ID: id.Random(r, id.Bytes), Addr: "h"}
		}
		x.put(e)
	}
	x.put(entry{key: keys[0]}) // a pointer replaced by a block
	if x.len() != 300 || x.pointers != 99 {
		t.Fatalf("%d keys, %d pointers; want 300, 99", x.len(), x.pointers)
	}
	slices.SortFunc(keys, func(a, b id.ID) int { return a.Cmp(b) })
	for c := 0; c < 400; c++ {
		lo, hi := id.Random(r, KeyBytes), id.Random(r, KeyBytes)
		switch c % 4 {
		case 1:
			hi = lo
		case 2:
			lo, hi = keys[r.IntN(len(keys))], keys[r.IntN(len(keys))]
		}
		var want []id.ID // in ring order from lo
		start, _ := slices.BinarySearchFunc(keys, lo, func(a, b id.ID) int { return a.Cmp(b) })
		for i := range keys {
			k := keys[(start+i)%len(keys)]
			if k.In(lo, hi) && k != lo || k == lo && lo == hi {
				want = append(want, k)
			}
		}
		if lo == hi && slices.Contains(want, lo) { // the arc's own end comes last
			want = append(slices.DeleteFunc(want, func(k id.ID) bool { return k == lo }), lo)
		}
		var got []id.ID
		for _, e := range x.arc(lo, hi) {
			got = append(got, e.key)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("arc (%s, %s]: %d keys, want %d", lo.Short(), hi.Short(), len(got), len(want))
		}
		if n := x.count(lo, hi); n != len(want) {
			t.Fatalf("count %d, want %d", n, len(want))
		}
		if m, ok := x.median(lo, hi); ok != (len(want) >= 2) || ok && m != want[len(want)/2-1] {
			t.Fatalf("median %s %v", m.Short(), ok)
		}
		if l, ok := x.last(lo, hi); ok != (len(want) > 0) || ok && l != want[len(want)-1] {
			t.Fatalf("last %s %v", l.Short(), ok)
		}
	}
	for _, k := range keys[:50] {
		if !x.remove(k) || x.remove(k) {
			t.Fatal("remove")
		}
	}
	if x.len() != 250 {
		t.Fatalf("%d keys after 50 removes", x.len())
	}
}
