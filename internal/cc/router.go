package cc

import (
	"slices"

	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/ring"
	"triad/internal/wire"
)

// Router chooses where a request for a key goes next.
type Router interface {
	// Self is this host's name on the ring: the source of its requests.
	Self() wire.NodeRef
	// NextHop is the next node towards the node responsible for key, or
	// here when that is this host; ok is false while there is no route.
	NextHop(env node.Env, key id.ID) (next wire.NodeRef, here, ok bool)
}

// ChordRouter routes on the host's Chord ring (ring.Chord.NextHop).
type ChordRouter struct{ Ring *ring.Chord }

// Self is the host's first vnode.
func (r ChordRouter) Self() wire.NodeRef { return r.Ring.Vnodes()[0].Self() }

// NextHop implements Router.
func (r ChordRouter) NextHop(env node.Env, key id.ID) (wire.NodeRef, bool, bool) {
	return r.Ring.NextHop(env, key)
}

// StaticRing is a ring whose membership is fixed and known to all, with
// Chord's fingers (the successor of self+2^i for every i) computed once:
// the experiments' routing, which costs no messages of its own, as the
// paper's prototype did not count its own maintenance either.
type StaticRing struct {
	members []wire.NodeRef // sorted by ID
}

// NewStaticRing makes the ring of members (distinct IDs).
func NewStaticRing(members []wire.NodeRef) *StaticRing {
	m := slices.Clone(members)
	slices.SortFunc(m, func(a, b wire.NodeRef) int { return a.ID.Cmp(b.ID) })
	return &StaticRing{members: m}
}

// successor is the index of the first member at or after x.
func (s *StaticRing) successor(x id.ID) int {
	i, _ := slices.BinarySearchFunc(s.members, x, func(n wire.NodeRef, x id.ID) int { return n.ID.Cmp(x) })
	return i % len(s.members)
}

// Router is the router of the member at addr; nil if it is not one.
func (s *StaticRing) Router(addr node.Addr) Router {
	for i, m := range s.members {
		if m.Addr != addr {
			continue
		}
		r := &staticRouter{ring: s, self: i}
		seen := map[int]bool{}
		for b := 0; b < id.Bits; b++ {
			f := s.successor(m.ID.AddPow2(b))
			if f != i && !seen[f] {
				seen[f] = true
				r.fingers = append(r.fingers, s.members[f])
			}
		}
		return r
	}
	return nil
}

type staticRouter struct {
	ring    *StaticRing
	self    int
	fingers []wire.NodeRef
}

func (r *staticRouter) Self() wire.NodeRef { return r.ring.members[r.self] }

func (r *staticRouter) NextHop(_ node.Env, key id.ID) (wire.NodeRef, bool, bool) {
	m := r.ring.members
	self := m[r.self]
	if len(m) == 1 {
		return self, true, true
	}
	pred := m[(r.self+len(m)-1)%len(m)]
	if key.In(pred.ID, self.ID) {
		return self, true, true
	}
	succ := m[(r.self+1)%len(m)]
	if key.In(self.ID, succ.ID) {
		return succ, false, true
	}
	// The finger that precedes the key most closely.
	best := succ
	for _, f := range r.fingers {
		if f.ID.Between(self.ID, key) && f.ID.Between(best.ID, key) {
			best = f
		}
	}
	return best, false, true
}
