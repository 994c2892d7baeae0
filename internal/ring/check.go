package ring

import (
	"fmt"
	"slices"

	"triad/internal/id"
	"triad/internal/wire"
)

// Want says how deep Check holds each vnode's lists to the true ring.
type Want struct {
	// Succs is how many successors each vnode must list, nearest first:
	// the next min(Succs, n-1) vnodes clockwise of the n checked. A list
	// is not looked at past them, except that when they are all the
	// others (Succs >= n-1) it must end there. The ring's Config.Succs
	// checks whole lists (they never hold more); 1 checks only the
	// successor pointers, which are right well before the rest of the
	// lists (a stabilization round per entry); zero checks nothing.
	Succs int
	// Preds is the same for predecessor lists, counter-clockwise.
	Preds int
}

// A Problem is one list that disagrees with the true ring.
type Problem struct {
	Self wire.NodeRef   // the vnode whose list it is
	List string         // "succs" or "preds"
	Got  []wire.NodeRef // the whole list, nearest first
	Want []wire.NodeRef // what it should begin with (or be, see Want)
}

// String is p on one line, for test failures and traces.
func (p Problem) String() string {
	return fmt.Sprintf("%s: %s=%v, want %v", p.Self, p.List, p.Got, p.Want)
}

// Check compares what each vnode believes with the true ring, the one its
// vnodes form, and returns the lists that are wrong, in the order of views
// (for each, successors before predecessors); none means the ring is
// right as far as want looks. views holds one entry per running vnode
// (Chord.RingInfo's on each host), with distinct IDs; a list entry is
// right when both its ID and its address are. A list that skips a vnode
// (a gap), names one that is not running (a stranger) or holds too few
// (a shortfall) is wrong.
func Check(views []wire.VnodeInfo, want Want) []Problem {
	ring := make([]wire.NodeRef, len(views))
	for i, v := range views {
		ring[i] = v.Self
	}
	slices.SortFunc(ring, func(a, b wire.NodeRef) int { return a.ID.Cmp(b.ID) })
	n := len(ring)
	var out []Problem
	for _, v := range views {
		i, _ := slices.BinarySearchFunc(ring, v.Self.ID, func(a wire.NodeRef, x id.ID) int { return a.ID.Cmp(x) })
		for _, l := range []struct {
			name       string
			got        []wire.NodeRef
			depth, dir int
		}{{"succs", v.Succs, want.Succs, 1}, {"preds", v.Preds, want.Preds, -1}} {
			if l.depth <= 0 {
				continue
			}
			w := make([]wire.NodeRef, min(l.depth, n-1))
			for j := range w {
				w[j] = ring[(i+l.dir*(j+1)+n)%n]
			}
			if !listRight(l.got, w, n) {
				out = append(out, Problem{Self: v.Self, List: l.name, Got: l.got, Want: w})
			}
		}
	}
	return out
}

// listRight reports whether list begins with want and, when want names
// all n-1 other vnodes, ends there.
func listRight(list, want []wire.NodeRef, n int) bool {
	if len(list) < len(want) || len(want) == n-1 && len(list) > len(want) {
		return false
	}
	return slices.EqualFunc(list[:len(want)], want, func(a, b wire.NodeRef) bool { return a.ID == b.ID && a.Addr == b.Addr })
}
