package ring

import (
	"triad/internal/id"
	"triad/internal/wire"
)

// DistinctHosts returns the nodes of list that are on distinct machines
// (distinct processes, and distinct machine identities where known),
// keeping the first of each, in order. Replicas placed on its result never
// share a disk, unless processes on one machine were given distinct
// identities (triad up's are, and it says so).
func DistinctHosts(list []wire.NodeRef) []wire.NodeRef {
	out := make([]wire.NodeRef, 0, len(list))
	for _, n := range list {
		dup := false
		for _, o := range out {
			if o.SameMachine(n) {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, n)
		}
	}
	return out
}

// buildList makes a neighbour list for self from candidates in the given
// order: it drops self, duplicates and nodes skip rejects, stops where the
// list would wrap back past self, and keeps at most max entries. Ordering by
// ring distance (clockwise for successors, counter-clockwise for
// predecessors) is the caller's: lists from peers are already ordered.
func buildList(self id.ID, max int, skip func(wire.NodeRef) bool, parts ...[]wire.NodeRef) []wire.NodeRef {
	out := make([]wire.NodeRef, 0, max)
	for _, part := range parts {
		for _, n := range part {
			if len(out) == max {
				return out
			}
			if n.ID == self || (skip != nil && skip(n)) || contains(out, n.ID) {
				continue
			}
			out = append(out, n)
		}
	}
	return out
}

func contains(list []wire.NodeRef, x id.ID) bool {
	for _, n := range list {
		if n.ID == x {
			return true
		}
	}
	return false
}

// sortSuccs orders list clockwise from self (nearest successor first).
func sortSuccs(self id.ID, list []wire.NodeRef) {
	insertionSort(list, func(a, b wire.NodeRef) bool { return a.ID.Between(self, b.ID) })
}

// sortPreds orders list counter-clockwise from self (nearest predecessor
// first).
func sortPreds(self id.ID, list []wire.NodeRef) {
	insertionSort(list, func(a, b wire.NodeRef) bool { return a.ID.Between(b.ID, self) })
}

// insertionSort is stable and allocation-free; lists are at most 64 long.
func insertionSort(list []wire.NodeRef, less func(a, b wire.NodeRef) bool) {
	for i := 1; i < len(list); i++ {
		for j := i; j > 0 && less(list[j], list[j-1]); j-- {
			list[j], list[j-1] = list[j-1], list[j]
		}
	}
}
