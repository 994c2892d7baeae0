package d2

import (
	"errors"
	"slices"
	"time"

	"triad/internal/fault"
	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/rpc"
	"triad/internal/wire"
)

// maxLinks bounds the long links: 2^40 nodes is past any ring.
const maxLinks = 40

// alone reports whether the node knows no other: it owns every key.
func (n *Node) alone() bool { return n.pred.IsZero() && len(n.succs) == 0 }

// rangeLo is the exclusive start of the node's range (lo, pos]: its
// predecessor's position; its own when it knows none (the whole ring).
func (n *Node) rangeLo() id.ID {
	if n.pred.IsZero() {
		return n.pos
	}
	return n.pred.Pos
}

// owns reports whether k lies in the node's range.
func (n *Node) owns(k id.ID) bool {
	if !n.joined {
		return false
	}
	if n.alone() {
		return true
	}
	return !n.pred.IsZero() && k.In(n.pred.Pos, n.pos)
}

// mayOwn is owns, or true while the node has lost its predecessor: a
// request sent here by a lookup is then served rather than bounced.
func (n *Node) mayOwn(k id.ID) bool {
	return n.owns(k) || n.joined && n.pred.IsZero()
}

// succ is the nearest successor, or the node itself when alone.
func (n *Node) succ() wire.D2Ref {
	if len(n.succs) == 0 {
		return n.Me()
	}
	return n.succs[0]
}

// neighbors is the node's D2Neighbors.
func (n *Node) neighbors() *wire.D2Neighbors {
	p := n.primaryLoad()
	m := &wire.D2Neighbors{Self: n.Me(), Succs: slices.Clone(n.succs), Links: slices.Clone(n.links), Load: uint64(p.load), Median: p.median}
	if !n.pred.IsZero() {
		m.Preds = append([]wire.D2Ref{n.pred}, n.preds...)
		m.Preds = dedupe(m.Preds, n.self.Addr, n.cfg.Replicas)
	}
	return m
}

// dedupe drops self and repeated hosts from l, keeping at most max.
func dedupe(l []wire.D2Ref, self node.Addr, max int) []wire.D2Ref {
	out := l[:0:0]
	for _, r := range l {
		if r.IsZero() || r.Node.Addr == self || slices.ContainsFunc(out, func(x wire.D2Ref) bool { return x.Node.Addr == r.Node.Addr }) {
			continue
		}
		if out = append(out, r); len(out) == max {
			break
		}
	}
	return out
}

// join looks up the node's position through boot and asks the owner to
// take it as its predecessor. A join that has not completed within a few
// stabilization intervals starts again.
func (n *Node) join(env node.Env, boot node.Addr) {
	n.joinSeq++
	seq := n.joinSeq
	env.After(n.cfg.Stabilize, joinTimer{seq: seq})
	n.lookupFrom(env, boot, n.pos, func(env node.Env, r Route, err error) {
		if err != nil || n.joined || seq != n.joinSeq {
			return
		}
		n.joinAt(env, r.Owner, seq, 0)
	})
}

// joinAt asks owner to take the node as its predecessor.
func (n *Node) joinAt(env node.Env, owner wire.D2Ref, seq, tries int) {
	n.call(env, owner.Node.Addr, &wire.D2Join{Self: n.Me()}, func(env node.Env, reply wire.Msg, err error) {
		nb, ok := reply.(*wire.D2Neighbors)
		if err != nil || !ok || n.joined || seq != n.joinSeq {
			return
		}
		if !n.pos.Between(n.predOf(nb), nb.Self.Pos) && nb.Self.Pos != n.pos {
			// A stale lookup: the owner's neighbours may name the right
			// one; else the join timer tries again.
			if tries >= maxJoinHops {
				return
			}
			if next, found := routeAmong(n.pos, nb); found && next.Owner.Node.Addr != n.self.Addr {
				n.joinAt(env, next.Owner, seq, tries+1)
				return
			}
			if next, found := toward(n.pos, nb); found && next.Node.Addr != n.self.Addr {
				// A lookup through a node whose successor is stale ends
				// here again and again: walk the lists instead.
				n.joinAt(env, next, seq, tries+1)
				return
			}
			n.lookupFrom(env, owner.Node.Addr, n.pos, func(env node.Env, r Route, err error) {
				if err == nil && !n.joined && seq == n.joinSeq && r.Owner.Node.Addr != n.self.Addr {
					n.joinAt(env, r.Owner, seq, tries+1)
				}
			})
			return
		}
		n.joined, n.surveys = true, 0
		n.succs = dedupe(append([]wire.D2Ref{nb.Self}, nb.Succs...), n.self.Addr, n.cfg.succsLen())
		var preds []wire.D2Ref
		for _, p := range nb.Preds {
			if p.Node.Addr != n.self.Addr {
				preds = append(preds, p)
			}
		}
		n.setPreds(env, preds)
	})
}

// Cold start. A node that restarts with saved peers joins through them,
// and a joined node answers; but after every node stopped at once (a
// power cut, a deployment restarted), none has joined and each answers
// the others "joining": without a rule, none ever joins (issue 43). So a
// join that has not completed by its timer surveys the saved peers: one
// that is on the ring is joined through; if none is, but some answer
// "joining" (up, and waiting as this node is), the one with the lowest
// address among them and this node founds the ring again, and the others
// join it at their next survey. Every node applies the rule to the same
// addresses, so among peers that reach each other exactly one founds.
// A node that reaches no peer at all keeps trying them rather than found
// a ring of its own, which would split the ring when the network heals.
// (Peers that never saved each other, in separate groups each with its
// own lowest address, could still each found one: a deployment's saved
// peers name every node of a small ring, and the ring layer's peers on a
// larger one.)

// The rule that picks the founder: every node is told the same seed (a
// deployment's first node, which the others --join), so the seed founds
// once every peer it reaches waits, and the others wait for it while it
// is up; lowest addresses alone would let two nodes found whenever the
// lowest was not up yet, each the lowest of the peers it reached (4
// founders in a 48-node chaos run). A seed that does not answer for
// seedWait surveys leaves it to the lowest address among the reachable.

// seedWait is the surveys a node waits for a silent seed.
const seedWait = 6

// founds reports whether this node founds the ring again, after a survey
// in which every peer that answered was waiting: lowest says no waiting
// peer had a lower address, seedSeen that the seed answered, waiting.
func (n *Node) founds(lowest, seedSeen bool) bool {
	switch {
	case n.cfg.Seed == "":
		return lowest // no seed named: the lowest address alone
	case n.cfg.Seed == n.self.Addr:
		return true // the seed
	case seedSeen:
		return false // the seed is up: it founds
	}
	return lowest && n.surveys > seedWait
}

// maxSurvey bounds the saved peers one survey asks.
const maxSurvey = 16

// survey asks the saved peers boot whether they are on the ring, then
// joins through one that is, founds the ring by the rule above, or tries
// a join through a random one.
func (n *Node) survey(env node.Env, boot []node.Addr) {
	n.joinSeq++
	seq := n.joinSeq
	env.After(n.cfg.Stabilize, joinTimer{seq: seq}) // if the survey goes unanswered
	var asked []node.Addr
	for _, a := range boot {
		if a != n.self.Addr && !slices.Contains(asked, a) && len(asked) < maxSurvey {
			asked = append(asked, a)
		}
	}
	var joined []node.Addr
	waiting := 0
	lowest, seedSeen := true, false
	left := len(asked)
	decide := func(env node.Env) {
		if left--; left > 0 || n.joined || seq != n.joinSeq || n.stopped {
			return
		}
		n.surveys++
		switch {
		case len(joined) > 0:
			n.join(env, joined[env.Rand().IntN(len(joined))])
		case waiting > 0 && n.founds(lowest, seedSeen):
			n.joined = true // every reachable peer waits, and the rule picks this node
			n.Stats.Founded++
			n.noteRange(env)
		default:
			n.join(env, asked[env.Rand().IntN(len(asked))])
		}
	}
	left++ // held until every call is sent
	for _, a := range asked {
		if !n.call(env, a, &wire.D2GetNeighbors{}, func(env node.Env, reply wire.Msg, err error) {
			switch nb, ok := reply.(*wire.D2Neighbors); {
			case err == nil && ok && !nb.Self.IsZero():
				joined = append(joined, a)
			case notOnRing(err):
				waiting++
				if a < n.self.Addr {
					lowest = false
				}
				seedSeen = seedSeen || a == n.cfg.Seed
			}
			decide(env)
		}) {
			left--
		}
	}
	decide(env)
}

// maxJoinHops bounds the neighbours a join walks along after a stale
// lookup.
const maxJoinHops = 8

// routeAmong finds, in a node's neighbour lists, the node whose range
// holds pos, as a route.
func routeAmong(pos id.ID, nb *wire.D2Neighbors) (Route, bool) {
	l := slices.Clone(nb.Preds)
	slices.Reverse(l)
	l = append(append(l, nb.Self), nb.Succs...)
	for i := 1; i < len(l); i++ {
		if pos.In(l[i-1].Pos, l[i].Pos) {
			return Route{Owner: l[i], Lo: l[i-1].Pos, Succs: slices.Clone(l[i+1:])}, true
		}
	}
	return Route{}, false
}

// toward is the end of a neighbour's lists nearest pos, when pos lies
// outside them: its farthest predecessor if pos comes before it, else its
// last successor; each has lists of its own that reach further.
func toward(pos id.ID, nb *wire.D2Neighbors) (wire.D2Ref, bool) {
	if len(nb.Preds) == 0 || len(nb.Succs) == 0 {
		return wire.D2Ref{}, false
	}
	first, last := nb.Preds[len(nb.Preds)-1], nb.Succs[len(nb.Succs)-1]
	if !pos.Between(last.Pos, first.Pos) {
		return wire.D2Ref{}, false
	}
	if pos.Distance(first.Pos).Cmp(last.Pos.Distance(pos)) <= 0 {
		return first, true
	}
	return last, true
}

// predOf is the predecessor a neighbour list names first other than this
// node, or the neighbour's own position when it names none.
func (n *Node) predOf(nb *wire.D2Neighbors) id.ID {
	for _, p := range nb.Preds {
		if p.Node.Addr != n.self.Addr {
			return p.Pos
		}
	}
	return nb.Self.Pos
}

// setPreds sets the predecessor list, nearest first.
// and records the replica range they give (doubt.go).
func (n *Node) setPreds(env node.Env, l []wire.D2Ref) {
	l = dedupe(l, n.self.Addr, n.cfg.Replicas)
	n.preds = l
	n.pred = wire.D2Ref{}
	if len(l) > 0 {
		n.pred = l[0]
	}
	n.noteRange(env)
}

// handleJoin is a join or a stabilization: the sender believes it is
// this node's predecessor. It is taken when it lies between the current
// predecessor and this node; the keys it now owns are handed to it as
// pointers (§6): this node keeps the bytes, since it is still one of
// their r successors.
func (n *Node) handleJoin(env node.Env, in node.MsgIn, m *wire.D2Join) {
	j := m.Self
	if j.Node.Addr != in.Env.From.Addr || j.Node.ID != in.Env.From.ID {
		n.Stats.RefusedPositions++
		rpc.RespondError(env, in, n.self, fault.CodeBadRequest, "d2: a position claimed for another node")
		return
	}
	if !n.notice(env, j) {
		n.Stats.MovesDropped++
		rpc.RespondError(env, in, n.self, fault.CodeBusy, "d2: moved within the probe interval")
		return
	}
	if !n.joined {
		rpc.RespondError(env, in, n.self, fault.CodeJoining, "d2: joining")
		return
	}
	if j != n.pred && j.Pos != n.pos && (n.pred.IsZero() || j.Pos.Between(n.pred.Pos, n.pos)) {
		old := n.pred
		n.setPreds(env, append([]wire.D2Ref{j}, n.preds...))
		if len(n.succs) == 0 {
			n.succs = []wire.D2Ref{j}
		}
		switch {
		case !old.IsZero():
			n.handOver(env, j, old.Pos)
		case len(n.succs) == 1 && n.succs[0] == j:
			n.handOver(env, j, n.pos) // it is the second node: (this node, j] is its
		}
		// A node that lost its predecessor hands nothing over: it does not
		// know where j's range begins; j's sync takes pointers to what it
		// lacks.
	}
	rpc.Respond(env, in, n.self, n.neighbors())
}

// notice records a peer's position and reports false when it moved twice
// within the probe interval (its second move is refused).
func (n *Node) notice(env node.Env, r wire.D2Ref) bool {
	now := env.Now()
	s, known := n.seen[r.Node.Addr]
	switch {
	case !known:
		if len(n.seen) >= maxSeen {
			n.pruneSeen(now)
		}
		n.seen[r.Node.Addr] = seenPos{pos: r.Pos}
	case s.pos != r.Pos:
		if !s.changed.IsZero() && now.Sub(s.changed) < n.cfg.Probe/2 {
			return false
		}
		n.seen[r.Node.Addr] = seenPos{pos: r.Pos, changed: now}
	}
	return true
}

// pruneSeen forgets the peers that have not moved lately, then all.
func (n *Node) pruneSeen(now time.Time) {
	for a, s := range n.seen {
		if now.Sub(s.changed) > n.cfg.Probe {
			delete(n.seen, a)
		}
	}
	if len(n.seen) >= maxSeen {
		clear(n.seen)
	}
}

// stabilize checks the successor (and tells it about this node) and the
// predecessor.
func (n *Node) stabilize(env node.Env) {
	if !n.joined || n.alone() {
		return
	}
	if len(n.succs) == 0 {
		n.succs = []wire.D2Ref{n.pred}
	}
	n.notifySucc(env, 0)
	if !n.pred.IsZero() {
		p := n.pred
		n.call(env, p.Node.Addr, &wire.D2GetNeighbors{}, func(env node.Env, reply wire.Msg, err error) {
			nb, ok := reply.(*wire.D2Neighbors)
			if notOnRing(err) && n.pred == p {
				n.dropRef(env, p.Node.Addr)
				return
			}
			if err != nil || !ok || n.pred != p {
				return
			}
			if nb.Self.Pos != p.Pos {
				n.setPreds(env, n.preds[1:]) // it moved away
				return
			}
			n.setPreds(env, append([]wire.D2Ref{p}, nb.Preds...))
		})
	}
}

// notifySucc tells the successor about this node and takes its answer. A
// successor that names a nearer one is replaced and the new one told at
// once, up to the successor list's length per round: a ring whose wrap
// point moves while nodes join catches up in one round.
func (n *Node) notifySucc(env node.Env, round int) {
	if len(n.succs) == 0 || round >= n.cfg.succsLen() {
		return
	}
	s := n.succs[0]
	n.call(env, s.Node.Addr, &wire.D2Join{Self: n.Me()}, func(env node.Env, reply wire.Msg, err error) {
		nb, ok := reply.(*wire.D2Neighbors)
		if notOnRing(err) {
			n.dropRef(env, s.Node.Addr) // it restarted and is joining again
			n.fillSuccs()
			return
		}
		if err != nil || !ok || !n.joined {
			return
		}
		if n.stabilized(env, s, nb) {
			n.notifySucc(env, round+1)
		}
	})
}

// notOnRing reports whether err is a peer's answer that it is not on the
// ring (it restarted and is joining again).
func notOnRing(err error) bool {
	var e *wire.Error
	return errors.As(err, &e) && e.Code == fault.CodeJoining
}

// stabilized takes a successor's answer: a node between us becomes the
// successor (and stabilized reports true); otherwise the list is the
// successor and its own.
func (n *Node) stabilized(env node.Env, s wire.D2Ref, nb *wire.D2Neighbors) bool {
	if len(n.succs) == 0 || n.succs[0] != s {
		return false
	}
	if nb.Self.Pos != s.Pos {
		n.succs = n.succs[1:] // it moved away
		n.fillSuccs()
		return len(n.succs) > 0
	}
	if len(nb.Preds) > 0 {
		p := nb.Preds[0]
		if p.Node.Addr != n.self.Addr && p.Pos.Between(n.pos, s.Pos) {
			if !n.h.IsDead(env, p.Node.Addr) {
				n.succs = dedupe(append([]wire.D2Ref{p, s}, n.live(env, nb.Succs)...), n.self.Addr, n.cfg.succsLen())
				return true
			}
			// The successor heard from p since this host declared it dead
			// (after a cold start, every peer timed out once): ask p, whose
			// answer clears the mark, and the next round takes it. Taken
			// on the successor's word alone, a dead p would come back each
			// round until the successor's own timeout.
			n.call(env, p.Node.Addr, &wire.D2GetNeighbors{}, func(node.Env, wire.Msg, error) {})
		}
	}
	n.succs = dedupe(append([]wire.D2Ref{s}, n.live(env, nb.Succs)...), n.self.Addr, n.cfg.succsLen())
	return false
}

// live is l without the peers this node's host has declared dead: a
// successor's list may still name one (on a ring of r+3 nodes or fewer
// the lists wrap around), and copied back at the tail, where nothing
// calls it, a dead peer would stay there for good.
func (n *Node) live(env node.Env, l []wire.D2Ref) []wire.D2Ref {
	return slices.DeleteFunc(slices.Clone(l), func(r wire.D2Ref) bool { return n.h.IsDead(env, r.Node.Addr) })
}

// fillSuccs makes sure a joined node with neighbours has a successor.
func (n *Node) fillSuccs() {
	if len(n.succs) > 0 {
		return
	}
	best := wire.D2Ref{}
	for _, r := range n.known() {
		if best.IsZero() || n.pos.Distance(r.Pos).Cmp(n.pos.Distance(best.Pos)) < 0 {
			best = r
		}
	}
	if !best.IsZero() {
		n.succs = []wire.D2Ref{best}
	}
}

// known is every node in the node's tables.
func (n *Node) known() []wire.D2Ref {
	l := make([]wire.D2Ref, 0, len(n.succs)+len(n.links)+len(n.preds))
	l = append(l, n.succs...)
	l = append(l, n.links...)
	return append(l, n.preds...)
}

// findSucc is one step of a lookup of k here.
func (n *Node) findSucc(k id.ID) *wire.D2Next {
	switch {
	case n.owns(k):
		return &wire.D2Next{Done: true, Owner: n.Me(), Lo: n.rangeLo(), Succs: slices.Clone(n.succs)}
	case n.joined && len(n.succs) > 0 && k.In(n.pos, n.succs[0].Pos):
		return &wire.D2Next{Done: true, Owner: n.succs[0], Lo: n.pos, Succs: n.succsOf()}
	}
	return &wire.D2Next{Next: n.closestPreceding(k)}
}

// succsOf is the successors of this node's successor as far as this node
// knows them: its own list after the first and, when that list is not
// full (the ring has fewer nodes than the list's length, so it wraps back
// here), this node itself. Without it, on a ring of r nodes or fewer the
// key's holders named in a lookup's answer missed the replica that
// answered it.
func (n *Node) succsOf() []wire.D2Ref {
	out := slices.Clone(n.succs[1:])
	if len(n.succs) < n.cfg.succsLen() {
		out = append(out, n.Me())
	}
	return out
}

// closestPreceding is the known node nearest before k (from here,
// clockwise), or the successor when none is: greedy routing over the
// successors and long links.
func (n *Node) closestPreceding(k id.ID) wire.D2Ref {
	best := wire.D2Ref{}
	var bestDist id.ID
	for _, r := range n.known() {
		if !r.Pos.Between(n.pos, k) || r.Node.Addr == n.self.Addr {
			continue
		}
		if d := r.Pos.Distance(k); best.IsZero() || d.Cmp(bestDist) < 0 {
			best, bestDist = r, d
		}
	}
	if best.IsZero() {
		return n.succ()
	}
	return best
}

// handleLeave closes the gap a leaving neighbour leaves.
func (n *Node) handleLeave(env node.Env, from wire.NodeRef, m *wire.D2Leave) {
	if from.IsZero() {
		return
	}
	if len(n.succs) > 0 && n.succs[0].Node.Addr == from.Addr {
		n.succs = dedupe(append(slices.Clone(m.Succs), n.succs[1:]...), n.self.Addr, n.cfg.succsLen())
	}
	if n.pred.Node.Addr == from.Addr {
		n.setPreds(env, append(slices.Clone(m.Preds), n.preds[1:]...))
	}
	n.dropRef(env, from.Addr)
}

// leave tells the neighbours that the node leaves its position.
func (n *Node) leave(env node.Env) {
	if !n.joined || n.alone() {
		return
	}
	m := &wire.D2Leave{Preds: slices.Clone(n.preds), Succs: slices.Clone(n.succs)}
	if len(n.succs) > 0 {
		n.send(env, n.succs[0].Node.Addr, m)
	}
	if !n.pred.IsZero() && (len(n.succs) == 0 || n.pred.Node.Addr != n.succs[0].Node.Addr) {
		n.send(env, n.pred.Node.Addr, m)
	}
}

// forget drops a dead peer.
func (n *Node) forget(env node.Env, addr node.Addr) {
	n.dropRef(env, addr)
	n.cache.dropNode(addr)
	n.fillSuccs()
}

// dropRef takes addr out of the successors, predecessors and links.
func (n *Node) dropRef(env node.Env, addr node.Addr) {
	gone := func(r wire.D2Ref) bool { return r.Node.Addr == addr }
	if slices.ContainsFunc(n.known(), gone) {
		n.noteLost(addr)
	}
	n.succs = slices.DeleteFunc(n.succs, gone)
	if slices.ContainsFunc(n.preds, gone) {
		n.setPreds(env, slices.DeleteFunc(slices.Clone(n.preds), gone))
	}
	n.links = slices.DeleteFunc(n.links, gone)
	if slices.ContainsFunc(n.building, gone) {
		n.building, n.fixing = nil, false
	}
}

// Merging rings. A partition splits D2's ring: each side finds the other
// dead, drops it from its lists and closes its ring without it, and when
// the network heals nothing made the two one again (stabilization looks
// only at a successor's predecessor): two rings, each answering for every
// key. So once per link round a node looks up its own position through a
// peer it lost (or a saved peer) that its lists do not name: on the same
// ring the lookup ends at the node itself; on another ring it ends at the
// node that follows its position there, and if that one lies between this
// node and its successor it becomes the successor, which stabilization
// tells and from which the two rings are woven into one, a node at a time.

// maxLost bounds the peers a node remembers losing.
const maxLost = 64

// noteLost remembers a peer dropped from the lists, newest last.
func (n *Node) noteLost(addr node.Addr) {
	n.lost = slices.DeleteFunc(n.lost, func(a node.Addr) bool { return a == addr })
	n.sameRing = slices.DeleteFunc(n.sameRing, func(a node.Addr) bool { return a == addr })
	if len(n.lost) == maxLost {
		n.lost = n.lost[1:]
	}
	n.lost = append(n.lost, addr)
}

// probeOtherRing looks for another ring through a lost or saved peer that
// the node's lists do not name and no probe has found on this ring yet.
func (n *Node) probeOtherRing(env node.Env) {
	if !n.joined || n.merging {
		return
	}
	known := n.known()
	var cands []node.Addr
	for _, a := range append(slices.Clone(n.lost), n.bootstraps...) {
		if a != n.self.Addr && !slices.Contains(cands, a) && !slices.Contains(n.sameRing, a) &&
			!slices.ContainsFunc(known, func(r wire.D2Ref) bool { return r.Node.Addr == a }) {
			cands = append(cands, a)
		}
	}
	if len(cands) == 0 {
		return
	}
	n.merging = true
	via := cands[env.Rand().IntN(len(cands))]
	l := &lookupStep{key: n.pos, probe: true, done: func(env node.Env, r Route, err error) {
		n.merging = false
		o := r.Owner
		if err != nil || !n.joined || o.IsZero() {
			return // via is down or lost its way: asked again next round
		}
		if o.Node.Addr == n.self.Addr || o.Pos == n.pos {
			n.confirmSameRing(via) // the lookup ended here: the same ring
			return
		}
		if len(n.succs) > 0 && !o.Pos.Between(n.pos, n.succs[0].Pos) {
			return // another ring, but not nearer than the successor: asked again
		}
		n.succs = dedupe(append([]wire.D2Ref{o}, n.succs...), n.self.Addr, n.cfg.succsLen())
		n.Stats.RingsJoined++
		n.notifySucc(env, 0)
	}}
	n.step(env, l, wire.D2Ref{Node: wire.NodeRef{Addr: via}}, false)
}

// confirmSameRing records that a probe through addr found this node's own
// ring: addr is no longer looked through until it is lost again.
func (n *Node) confirmSameRing(addr node.Addr) {
	n.lost = slices.DeleteFunc(n.lost, func(a node.Addr) bool { return a == addr })
	if slices.Contains(n.sameRing, addr) {
		return
	}
	if len(n.sameRing) == maxLost {
		n.sameRing = n.sameRing[1:]
	}
	n.sameRing = append(n.sameRing, addr)
}

// fixLinks rebuilds the long links, one round trip per level: link i is
// the node about 2^i nodes on, found as link i-1's own link i-1 (its
// successor for i = 1). Distances are counted in nodes, not in keys
// (Mercury, §7): the table has about log2 n entries and greedy routes take
// O(log n) steps however the positions crowd together.
func (n *Node) fixLinks(env node.Env) {
	if !n.joined || n.fixing || len(n.succs) == 0 {
		return
	}
	n.fixing = true
	n.building = []wire.D2Ref{n.succs[0]}
	n.fixLevel(env, 1)
}

// linksBuilt ends a round of fixLinks.
func (n *Node) linksBuilt() {
	n.links, n.building, n.fixing = n.building, nil, false
}

func (n *Node) fixLevel(env node.Env, level int) {
	if level >= maxLinks {
		n.linksBuilt()
		return
	}
	prev := n.building[level-1]
	ok := n.call(env, prev.Node.Addr, &wire.D2GetNeighbors{}, func(env node.Env, reply wire.Msg, err error) {
		nb, ok := reply.(*wire.D2Neighbors)
		if !n.fixing || level > len(n.building) || n.building[level-1] != prev {
			return // the round was abandoned
		}
		if err != nil || !ok {
			n.building, n.fixing = nil, false // keep the last round's links
			return
		}
		var next wire.D2Ref
		switch {
		case level-1 < len(nb.Links):
			next = nb.Links[level-1]
		case level == 1 && len(nb.Succs) > 0:
			next = nb.Succs[0]
		}
		// Past the ring's size the link wraps around: the table ends.
		if next.IsZero() || next.Node.Addr == n.self.Addr || !prev.Pos.Between(n.pos, next.Pos) {
			n.linksBuilt()
			return
		}
		n.building = append(n.building, next)
		n.fixLevel(env, level+1)
	})
	if !ok {
		n.building, n.fixing = nil, false
	}
}

// Estimate is the node's estimate of the ring's size: 2^(links).
func (n *Node) Estimate() int {
	if n.alone() {
		return 1
	}
	return 1 << min(len(n.links), 30)
}
