package tapestry

import (
	"fmt"
	"slices"

	"triad/internal/id"
	"triad/internal/wire"
)

// Root is the oracle's root of key among the live IDs: the surrogate rule
// of Fig. 3 applied to the whole live set, digit by digit (each digit the
// key's, or the next one up, wrapping, that some live ID has there). A
// mesh whose tables are consistent routes every key there from anywhere.
func Root(live []id.ID, key id.ID, bits int) id.ID {
	set := live
	levels := 8 * key.Width() / bits
	base := 1 << bits
	for level := 0; level < levels && len(set) > 1; level++ {
		var present [256]bool
		for _, x := range set {
			present[x.Digit(level, bits)] = true
		}
		d := key.Digit(level, bits)
		for i := 0; i < base; i++ {
			if present[(d+i)%base] {
				d = (d + i) % base
				break
			}
		}
		var next []id.ID
		for _, x := range set {
			if x.Digit(level, bits) == d {
				next = append(next, x)
			}
		}
		set = next
	}
	if len(set) == 0 {
		return id.ID{}
	}
	return set[0]
}

// Check holds n's table to the live set (the invariant checker's rule for
// a stabilized mesh): an entry is empty only if no live node has its
// prefix, and no entry names a node that is not live. It returns the
// violations, up to max.
func Check(n *Node, live map[string]wire.NodeRef, max int) []string {
	return CheckTable(n.Table(), n.table.bits, live, max)
}

// CheckTable is Check on a table as TapGetTable answers it, digits of
// bits bits: the same rule held on real processes, whose tables are read
// over the wire.
func CheckTable(t *wire.TapTable, bits int, live map[string]wire.NodeRef, max int) []string {
	var out []string
	report := func(format string, args ...any) {
		if len(out) < max {
			out = append(out, fmt.Sprintf("%s: ", t.Self)+fmt.Sprintf(format, args...))
		}
	}
	filled := map[[2]int]bool{}
	for _, e := range t.Entries {
		for _, l := range e.Links {
			if _, ok := live[l.Addr]; !ok {
				report("entry (%d, %x) names %s, not live", e.Level, e.Digit, l)
			}
		}
		if len(e.Links) > 0 {
			filled[[2]int{int(e.Level), int(e.Digit)}] = true
		}
	}
	// Which entries some live node fills: its place in t's table.
	levels := 8 * t.Self.ID.Width() / bits
	want := map[[2]int]bool{}
	for _, r := range live {
		if r.Addr == t.Self.Addr || r.ID.Width() != t.Self.ID.Width() {
			continue
		}
		if level := t.Self.ID.SharedDigits(r.ID, bits); level < levels {
			want[[2]int{level, r.ID.Digit(level, bits)}] = true
		}
	}
	keys := make([][2]int, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b [2]int) int {
		if a[0] != b[0] {
			return a[0] - b[0]
		}
		return a[1] - b[1]
	})
	for _, k := range keys {
		if !filled[k] {
			report("entry (%d, %x) is empty, but a live node has its prefix", k[0], k[1])
		}
	}
	return out
}
