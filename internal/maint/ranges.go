package maint

import (
	"triad/internal/id"
	"triad/internal/ring"
	"triad/internal/wire"
)

// replicaStart is where the replica range of vnode v begins: v keeps the
// keys in (replicaStart, v]. The block store places a key's k copies on
// its first k successors on distinct machines (ring.DistinctHosts), so v
// keeps a key when no vnode of its own machine comes before it among the
// key's successors and fewer than k other machines do (UsenetDHT §5.3:
// co-located vnodes are left out of the lists maintenance walks). Walking
// back through v's predecessors, the range ends at the first vnode of v's
// machine, or at the predecessor that makes k other machines. It is the
// whole ring (v itself) when the predecessors run out first in a ring that
// small, and the furthest predecessor known when the list runs out before.
func replicaStart(v *ring.Vnode, k, listMax int) id.ID {
	self := v.Self()
	preds := v.Preds()
	seen := make([]wire.NodeRef, 0, k)
	for _, p := range preds {
		if p.SameMachine(self) {
			return p.ID
		}
		other := true
		for _, q := range seen {
			if q.SameMachine(p) {
				other = false
				break
			}
		}
		if other {
			seen = append(seen, p)
		}
		if len(seen) == k {
			return p.ID
		}
	}
	if len(preds) < listMax {
		return self.ID // every other vnode seen: the whole ring
	}
	return preds[len(preds)-1].ID
}

// partners are the neighbours v synchronizes with: its nearest successor
// and nearest predecessor on another machine (a vnode of its own machine
// shares its storage, or keeps other keys of the same machine's share).
func partners(v *ring.Vnode, dead func(wire.NodeRef) bool) []wire.NodeRef {
	self := v.Self()
	var out []wire.NodeRef
	for _, list := range [][]wire.NodeRef{v.Succs(), v.Preds()} {
		for _, p := range list {
			if p.IsZero() || p.SameMachine(self) || dead(p) {
				continue
			}
			if len(out) == 0 || out[0].ID != p.ID {
				out = append(out, p)
			}
			break
		}
	}
	return out
}
