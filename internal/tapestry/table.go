package tapestry

import (
	"slices"
	"time"

	"triad/internal/id"
	"triad/internal/wire"
)

// Levels and Base are the routing table's shape: 160-bit IDs as 40
// hexadecimal digits.
const (
	Levels = wire.TapLevels
	Base   = wire.TapBase
)

// link is one neighbour in an entry: the node and its measured round
// trip.
type link struct {
	ref wire.NodeRef
	rtt time.Duration
}

// row is one level of the table: per digit, the links nearest first
// (a base-4 table uses the first four).
type row [Base][]link

// table is a node's neighbour map (§III-B1). Row l, entry d holds nodes
// whose IDs share the node's first l digits and have d as digit l; the
// entry of the node's own digit is the node itself and stays empty.
// Rows are made as links arrive: a table of N nodes uses about log16 N.
type table struct {
	self   id.ID
	links  int // c
	bits   int // bits per digit: 4 (base 16) or 2 (base 4)
	levels int // digits per ID
	base   int
	rows   []*row
	size   int // links in all
}

func newTable(self id.ID, links, bits int) table {
	return table{self: self, links: links, bits: bits, levels: 8 * self.Width() / bits, base: 1 << bits}
}

// digit is digit i of x in the table's base.
func (t *table) digit(x id.ID, i int) int { return x.Digit(i, t.bits) }

// place is where ref belongs: its level and digit; ok is false for the
// node itself (or a node with its ID).
func (t *table) place(ref wire.NodeRef) (level, digit int, ok bool) {
	if ref.ID.Width() != t.self.Width() {
		return 0, 0, false
	}
	level = t.self.SharedDigits(ref.ID, t.bits)
	if level >= t.levels {
		return 0, 0, false
	}
	return level, t.digit(ref.ID, level), true
}

// entry returns the links of (level, digit), nearest first; nil when
// empty.
func (t *table) entry(level, digit int) []link {
	if level >= len(t.rows) || t.rows[level] == nil {
		return nil
	}
	return t.rows[level][digit]
}

// add puts ref in its entry if the entry has room or ref is nearer than
// its farthest link. It reports whether ref was added (or its round trip
// updated), whether the entry was empty before (a hole filled, which can
// change roots), and the link pushed out, if any.
func (t *table) add(ref wire.NodeRef, rtt time.Duration) (added, filled bool, evicted wire.NodeRef) {
	level, digit, ok := t.place(ref)
	if !ok {
		return false, false, wire.NodeRef{}
	}
	for len(t.rows) <= level {
		t.rows = append(t.rows, nil)
	}
	if t.rows[level] == nil {
		t.rows[level] = new(row)
	}
	e := t.rows[level][digit]
	if i := slices.IndexFunc(e, func(l link) bool { return l.ref.Addr == ref.Addr }); i >= 0 {
		if e[i].ref.ID != ref.ID {
			return false, false, wire.NodeRef{} // another ID at a known address: ignore the claim
		}
		e[i].rtt = rtt
		sortLinks(e)
		return true, false, wire.NodeRef{}
	}
	filled = len(e) == 0
	if len(e) >= t.links {
		if e[len(e)-1].rtt <= rtt {
			return false, false, wire.NodeRef{}
		}
		evicted = e[len(e)-1].ref
		e = e[:len(e)-1]
		t.size--
	}
	e = append(e, link{ref: ref, rtt: rtt})
	sortLinks(e)
	t.rows[level][digit] = e
	t.size++
	return true, filled, evicted
}

func sortLinks(e []link) {
	slices.SortStableFunc(e, func(a, b link) int {
		if a.rtt != b.rtt {
			return int(a.rtt - b.rtt)
		}
		return a.ref.ID.Cmp(b.ref.ID)
	})
}

// remove takes the node at addr out of every entry and returns the
// (level, digit) entries it was in, and whether each is now empty.
func (t *table) remove(addr string) (where []slot) {
	for l, r := range t.rows {
		if r == nil {
			continue
		}
		for d, e := range r {
			i := slices.IndexFunc(e, func(x link) bool { return x.ref.Addr == addr })
			if i < 0 {
				continue
			}
			r[d] = slices.Delete(e, i, i+1)
			t.size--
			where = append(where, slot{level: l, digit: d, empty: len(r[d]) == 0})
		}
	}
	return where
}

// slot names one entry of the table.
type slot struct {
	level, digit int
	empty        bool
}

// contains reports whether the node at addr is a link of the table.
func (t *table) contains(addr string) bool {
	for _, r := range t.rows {
		if r == nil {
			continue
		}
		for _, e := range r {
			for _, l := range e {
				if l.ref.Addr == addr {
					return true
				}
			}
		}
	}
	return false
}

// nextHop is NEXTHOP(level, key) of Fig. 3: the primary of the first
// non-empty entry of row level, from key's digit on and wrapping; the
// node's own digit means the node itself, and the search goes on at the
// next level. It returns the next node and the level the route will have
// resolved when it gets there; root is true when the node itself is the
// key's root. With selfGone the node routes as if it were gone (a leaving
// node sends its pointers on); avoid, if not nil, names links to route
// around (a route goes around a link that missed a timeout).
func (t *table) nextHop(level int, key id.ID, selfGone bool, avoid func(addr string) bool) (next wire.NodeRef, nextLevel int, root bool) {
	for ; level < t.levels; level++ {
		own := t.digit(t.self, level)
		d := t.digit(key, level)
		for i := 0; i < t.base; i++ {
			dd := (d + i) % t.base
			if dd == own && (!selfGone || t.below(level, avoid)) {
				// The node itself, or, if it is gone, another node with
				// its first level+1 digits: resolve the next digit.
				break
			}
			for _, l := range t.entry(level, dd) {
				if avoid == nil || !avoid(l.ref.Addr) {
					return l.ref, level + 1, false
				}
			}
		}
	}
	return wire.NodeRef{}, t.levels, true
}

// below reports whether a link past row level, so sharing the node's
// first level+1 digits, is not avoided: the own digit of row level then
// still leads to a node when the node itself is gone.
func (t *table) below(level int, avoid func(addr string) bool) bool {
	for _, r := range t.rows[min(level+1, len(t.rows)):] {
		if r == nil {
			continue
		}
		for _, e := range r {
			for _, l := range e {
				if avoid == nil || !avoid(l.ref.Addr) {
					return true
				}
			}
		}
	}
	return false
}

// all calls fn for every link, level by level.
func (t *table) all(fn func(level, digit int, l link)) {
	for lv, r := range t.rows {
		if r == nil {
			continue
		}
		for d, e := range r {
			for _, l := range e {
				fn(lv, d, l)
			}
		}
	}
}

// level returns the links of one row, primaries first.
func (t *table) level(lv int) []wire.NodeRef {
	if lv >= len(t.rows) || t.rows[lv] == nil {
		return nil
	}
	var out []wire.NodeRef
	for _, e := range t.rows[lv] {
		for _, l := range e {
			out = append(out, l.ref)
		}
	}
	return out
}

// nearest returns up to n links of the table, nearest first, each node
// once.
func (t *table) nearest(n int) []link {
	var all []link
	seen := map[string]bool{}
	t.all(func(_, _ int, l link) {
		if !seen[l.ref.Addr] {
			seen[l.ref.Addr] = true
			all = append(all, l)
		}
	})
	sortLinks(all)
	if len(all) > n {
		all = all[:n]
	}
	return all
}
