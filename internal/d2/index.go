package d2

import (
	"slices"
	"time"

	"triad/internal/id"
	"triad/internal/wire"
)

// entry is one key a node holds: its block's bytes in the engine, or a
// block pointer to the node that holds them (§6).
type entry struct {
	key    id.ID
	size   uint32
	holder wire.NodeRef // zero: the bytes are in this node's engine
	since  time.Time    // when the pointer came
}

func (e entry) pointer() bool { return !e.holder.IsZero() }

// index is the keys a node holds, in key order: what ranges, loads,
// medians and the greatest key of a prefix are read from, without a trip
// to the engine.
type index struct {
	items    []entry
	pointers int
}

func cmpEntry(e entry, k id.ID) int { return e.key.Cmp(k) }

// find returns where k is, or would go.
func (x *index) find(k id.ID) (int, bool) {
	return slices.BinarySearchFunc(x.items, k, cmpEntry)
}

func (x *index) get(k id.ID) (entry, bool) {
	i, ok := x.find(k)
	if !ok {
		return entry{}, false
	}
	return x.items[i], true
}

// put adds e or replaces the entry of its key.
func (x *index) put(e entry) {
	i, ok := x.find(e.key)
	if ok {
		if x.items[i].pointer() {
			x.pointers--
		}
		x.items[i] = e
	} else {
		x.items = slices.Insert(x.items, i, e)
	}
	if e.pointer() {
		x.pointers++
	}
}

// remove drops k and reports whether it was there.
func (x *index) remove(k id.ID) bool {
	i, ok := x.find(k)
	if !ok {
		return false
	}
	if x.items[i].pointer() {
		x.pointers--
	}
	x.items = slices.Delete(x.items, i, i+1)
	return true
}

// bounds returns the index spans of the arc (lo, hi]: items[a:b] then, if
// it wraps past the greatest key, items[c:d]. lo == hi is the whole ring,
// starting after lo.
func (x *index) bounds(lo, hi id.ID) (a, b, c, d int) {
	after := func(k id.ID) int {
		i, ok := x.find(k)
		if ok {
			i++
		}
		return i
	}
	i, j := after(lo), after(hi)
	if lo.Cmp(hi) < 0 {
		return i, j, 0, 0
	}
	return i, len(x.items), 0, j
}

// arc returns the entries in (lo, hi], in ring order from lo.
func (x *index) arc(lo, hi id.ID) []entry {
	a, b, c, d := x.bounds(lo, hi)
	out := make([]entry, 0, b-a+d-c)
	out = append(out, x.items[a:b]...)
	return append(out, x.items[c:d]...)
}

// count is the number of entries in (lo, hi].
func (x *index) count(lo, hi id.ID) int {
	if len(x.items) == 0 {
		return 0
	}
	a, b, c, d := x.bounds(lo, hi)
	return b - a + d - c
}

// at is the i-th entry of (lo, hi] in ring order.
func (x *index) at(lo, hi id.ID, i int) entry {
	a, b, c, _ := x.bounds(lo, hi)
	if i < b-a {
		return x.items[a+i]
	}
	return x.items[c+i-(b-a)]
}

// median is the key that splits (lo, hi] in two: a node placed there takes
// the lower half. ok is false for fewer than two keys.
func (x *index) median(lo, hi id.ID) (id.ID, bool) {
	n := x.count(lo, hi)
	if n < 2 {
		return id.ID{}, false
	}
	return x.at(lo, hi, n/2-1).key, true
}

// last is the greatest key in (lo, hi] in ring order: the one nearest
// before hi.
func (x *index) last(lo, hi id.ID) (id.ID, bool) {
	n := x.count(lo, hi)
	if n == 0 {
		return id.ID{}, false
	}
	return x.at(lo, hi, n-1).key, true
}
