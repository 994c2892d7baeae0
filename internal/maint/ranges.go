package maint

import (
	"slices"

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
// small (the list reaches around to v's successor), and the furthest
// predecessor known when the list runs out before or is still filling.
//
// skip, if set, names predecessors to walk past as no machine at all
// (suspects, see audit.go): the range then reaches one machine further.
func replicaStart(v *ring.Vnode, k, listMax int, skip func(wire.NodeRef) bool) id.ID {
	self := v.Self()
	preds := v.Preds()
	seen := make([]wire.NodeRef, 0, k)
	for _, p := range preds {
		if skip != nil && skip(p) && !p.SameMachine(self) {
			continue
		}
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
	// The list ran out before k other machines. If it reaches around to
	// the successor, every other vnode is in it: a ring this small keeps
	// everything everywhere. Otherwise it is still filling (a restart, a
	// join): the range ends at the furthest predecessor known for now,
	// rather than taking the whole ring for it.
	if n := len(preds); n > 0 && n < listMax && preds[n-1].ID == v.Successor().ID {
		return self.ID
	}
	if len(preds) == 0 {
		return self.ID // no predecessor: plan makes no synchronization
	}
	return preds[len(preds)-1].ID
}

// A syncTask is one synchronization of a round: the arc (lo, hi] with a
// partner. In a fragment arc only fragments are ours to keep.
type syncTask struct {
	peer      wire.NodeRef
	lo, hi    id.ID
	fragments bool
	// audit says the partner keeps whole copies of the arc (auditLo,
	// auditHi] of the range too: audits challenge it there (audit.go).
	auditLo, auditHi id.ID
	audit            bool
}

// plan lists the synchronizations of v's round: its replica range (p_k, v]
// with its nearest successor and nearest predecessor on other machines
// (Figure 2). Erasure-coded blocks have their fragments on their first l
// successors, so with a rebuilder v also keeps the fragments of (p_l, p_k],
// compared where the partner keeps the same fragments and no whole block
// of its own: (p_{l-1}, p_k] with the successor (whose replica range starts
// at p_{k-1}), (p_l, p_{k+1}] with the predecessor (whose starts at
// p_{k+1}). A vnode of a ring of fewer machines keeps more: the arcs then
// end at v itself, and none is left when the replica range is the whole
// ring.
//
// Suspects (skip) are walked past as no machine, and dead (which includes
// them) are no partners. Each replica synchronization names the arc whose
// whole copies the partner keeps too, for audits: the successor keeps
// (p_{k-1}, v] of ours, the predecessor p (p_k, p].
func (m *Maint) plan(v *ring.Vnode, dead, skip func(wire.NodeRef) bool) []syncTask {
	self := v.Self()
	if len(v.Preds()) == 0 {
		return nil // a vnode still joining: its range is not known
	}
	k, l := m.cfg.Replicas, m.cfg.Fragments
	lo := replicaStart(v, k, m.listMax, skip)
	succ, pred := nearestOther(v.Succs(), self, dead), nearestOther(v.Preds(), self, dead)
	var out []syncTask
	if !succ.IsZero() {
		t := syncTask{peer: succ, lo: lo, hi: self.ID}
		if k >= 2 && lo != self.ID {
			t.auditLo, t.auditHi = replicaStart(v, k-1, m.listMax, skip), self.ID
			t.audit = t.auditLo != self.ID
		}
		out = append(out, t)
	}
	if !pred.IsZero() && pred.ID != succ.ID {
		t := syncTask{peer: pred, lo: lo, hi: self.ID}
		if lo != self.ID && pred.ID != lo && pred.ID.In(lo, self.ID) {
			t.auditLo, t.auditHi, t.audit = lo, pred.ID, true
		}
		out = append(out, t)
	}
	if m.cfg.Rebuild == nil || l <= k+1 || lo == self.ID {
		return out
	}
	if flo := replicaStart(v, l-1, m.listMax, skip); !succ.IsZero() && flo != lo {
		out = append(out, syncTask{peer: succ, lo: flo, hi: lo, fragments: true})
	}
	plo, phi := replicaStart(v, l, m.listMax, skip), replicaStart(v, k+1, m.listMax, skip)
	if !pred.IsZero() && plo != phi && phi != self.ID {
		out = append(out, syncTask{peer: pred, lo: plo, hi: phi, fragments: true})
	}
	return out
}

// samePlan reports whether two plans make the same synchronizations: a
// round starts when a vnode's plan changed since its last one (a partner,
// or where its replica or fragment range starts).
func samePlan(a, b []syncTask) bool {
	return slices.EqualFunc(a, b, func(x, y syncTask) bool {
		return x.peer.ID == y.peer.ID && x.lo == y.lo && x.hi == y.hi && x.fragments == y.fragments
	})
}

// nearestOther is the first of list on another machine than self and not
// dead: a vnode of its own machine shares its storage, or keeps other keys
// of the same machine's share.
func nearestOther(list []wire.NodeRef, self wire.NodeRef, dead func(wire.NodeRef) bool) wire.NodeRef {
	for _, p := range list {
		if !p.IsZero() && !p.SameMachine(self) && !dead(p) {
			return p
		}
	}
	return wire.NodeRef{}
}
