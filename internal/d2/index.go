package d2

import (
	"time"

	"github.com/google/btree"

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
	// version is the block's (blockCopy.version); zero for a pointer.
	version uint64
}

func (e entry) pointer() bool { return !e.holder.IsZero() }

// index is the keys a node holds, in key order (a B-tree): what ranges,
// loads, medians and the greatest key of a prefix are read from, without a
// trip to the engine.
type index struct {
	t        *btree.BTreeG[entry]
	pointers int
	gen      uint64 // bumped by every change: what a count computed earlier may be checked against
}

func newIndex() index {
	return index{t: btree.NewG(32, func(a, b entry) bool { return a.key.Cmp(b.key) < 0 })}
}

// len is the number of keys held.
func (x *index) len() int { return x.t.Len() }

func (x *index) get(k id.ID) (entry, bool) { return x.t.Get(entry{key: k}) }

// put adds e or replaces the entry of its key.
func (x *index) put(e entry) {
	x.gen++
	if old, had := x.t.ReplaceOrInsert(e); had && old.pointer() {
		x.pointers--
	}
	if e.pointer() {
		x.pointers++
	}
}

// remove drops k and reports whether it was there.
func (x *index) remove(k id.ID) bool {
	x.gen++
	old, ok := x.t.Delete(entry{key: k})
	if ok && old.pointer() {
		x.pointers--
	}
	return ok
}

// all calls fn for every entry in key order until it returns false.
func (x *index) all(fn func(e entry) bool) { x.t.Ascend(fn) }

// each calls fn for the entries in the arc (lo, hi], in ring order from
// lo, until it returns false. lo == hi is the whole ring, lo's own key
// last.
func (x *index) each(lo, hi id.ID, fn func(e entry) bool) {
	more, first := true, true
	x.t.AscendGreaterOrEqual(entry{key: lo}, func(e entry) bool {
		if first && e.key == lo { // only the first can be lo
			first = false
			return true
		}
		first = false
		if lo.Cmp(hi) < 0 && e.key.Cmp(hi) > 0 {
			return false
		}
		more = fn(e)
		return more
	})
	if !more || lo.Cmp(hi) < 0 {
		return
	}
	x.t.AscendLessThan(entry{key: hi}, func(e entry) bool {
		more = fn(e)
		return more
	})
	if e, ok := x.t.Get(entry{key: hi}); ok && more {
		fn(e)
	}
}

// arc returns the entries in (lo, hi], in ring order from lo.
func (x *index) arc(lo, hi id.ID) []entry {
	var out []entry
	x.each(lo, hi, func(e entry) bool {
		out = append(out, e)
		return true
	})
	return out
}

// count is the number of entries in (lo, hi].
func (x *index) count(lo, hi id.ID) int {
	n := 0
	x.each(lo, hi, func(entry) bool {
		n++
		return true
	})
	return n
}

// at is the i-th entry of (lo, hi] in ring order.
func (x *index) at(lo, hi id.ID, i int) entry {
	var out entry
	x.each(lo, hi, func(e entry) bool {
		out = e
		i--
		return i >= 0
	})
	return out
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
