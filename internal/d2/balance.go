package d2

import (
	"slices"

	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/wire"
)

// Load balancing (§6, Figs. 4-5): once per probe interval a node samples a
// random node, by a short random walk over long links and successors; if
// that node's primary load is more than t times its own, it leaves and
// rejoins as its predecessor, at the median key of its range, taking half
// its load. The node it joins hands it pointers, not blocks; they are
// fetched after the pointer stabilization time, or handed on.

// maxWalk bounds the random walk's steps.
const maxWalk = 8

// probe samples a random node and moves if it is loaded past t times this
// node.
func (n *Node) probe(env node.Env) {
	if !n.joined || n.alone() || n.cfg.Threshold <= 0 {
		return
	}
	if !n.lastMove.IsZero() && env.Now().Sub(n.lastMove) < n.cfg.Probe {
		return
	}
	start := n.known()
	if len(start) == 0 {
		return
	}
	n.Stats.Probes++
	steps := min(maxWalk, len(n.links)+2)
	n.walk(env, start[env.Rand().IntN(len(start))], steps, &walkSamples{})
}

// walk takes one step of the random walk at at. Every node the walk
// meets is a sample of the ring: at its end the node considers the
// heaviest it met, or, if none calls for a move, the lightest (to invite
// it), not only the last. One sample per probe finds the one pair of
// nodes past t times apart among n nodes in about n/2 probe intervals;
// a walk of s steps in about s times fewer (§6: Mercury's random sampling).
func (n *Node) walk(env node.Env, at wire.D2Ref, left int, met *walkSamples) {
	n.call(env, at.Node.Addr, &wire.D2GetNeighbors{}, func(env node.Env, reply wire.Msg, err error) {
		nb, ok := reply.(*wire.D2Neighbors)
		if err != nil || !ok || !n.joined {
			return
		}
		met.add(nb, n.self.Addr)
		if left > 1 {
			next := slices.DeleteFunc(append(append(slices.Clone(nb.Links), nb.Succs...), nb.Preds...), func(r wire.D2Ref) bool {
				return r.Node.Addr == n.self.Addr
			})
			if len(next) > 0 {
				n.walk(env, next[env.Rand().IntN(len(next))], left-1, met)
				return
			}
		}
		switch mine := float64(n.Load()); {
		case met.heavy != nil && float64(met.heavy.Load) > n.cfg.Threshold*mine:
			n.consider(env, met.heavy)
		case met.light != nil:
			n.consider(env, met.light)
		}
	})
}

// walkSamples are the heaviest and lightest nodes a walk met.
type walkSamples struct{ heavy, light *wire.D2Neighbors }

func (w *walkSamples) add(nb *wire.D2Neighbors, self node.Addr) {
	if nb.Self.Node.Addr == self {
		return
	}
	if w.heavy == nil || nb.Load > w.heavy.Load {
		w.heavy = nb
	}
	if w.light == nil || nb.Load < w.light.Load {
		w.light = nb
	}
}

// consider moves next to the sampled node if its load calls for it, or,
// if this node is the one loaded past t times the other, invites it to.
func (n *Node) consider(env node.Env, nb *wire.D2Neighbors) {
	mine := n.Load()
	if nb.Self.Node.Addr == n.self.Addr {
		return
	}
	if mine >= 2 && float64(mine) > n.cfg.Threshold*float64(nb.Load) {
		n.send(env, nb.Self.Node.Addr, &wire.D2Invite{})
		return
	}
	if nb.Load < 2 || float64(nb.Load) <= n.cfg.Threshold*float64(mine) {
		return
	}
	med := nb.Median
	if med.IsZero() || !med.Between(n.predOf(nb), nb.Self.Pos) || med == n.pos {
		return
	}
	n.move(env, nb.Self, nb)
}

// move leaves this node's position and rejoins at the median of target's
// range, as target's predecessor.
func (n *Node) move(env node.Env, target wire.D2Ref, nb *wire.D2Neighbors) {
	n.Stats.Moves++
	n.lastMove = env.Now()
	n.leave(env)
	n.rejoin = n.rejoin[:0]
	for _, r := range append([]wire.D2Ref{target}, n.succs...) {
		if len(n.rejoin) < 4 && r.Node.Addr != n.self.Addr {
			n.rejoin = append(n.rejoin, r.Node.Addr)
		}
	}
	n.joined = false
	n.pred, n.preds, n.succs, n.links = wire.D2Ref{}, nil, nil, nil
	n.building, n.fixing = nil, false
	n.pos = nb.Median
	n.heldKnown, n.doubts, n.heldLoaded = false, nil, true // a new range, joined into from its holders (doubt.go)
	n.savePosition(env)
	n.joinSeq++
	seq := n.joinSeq
	env.After(n.cfg.Stabilize, joinTimer{seq: seq})
	n.joinAt(env, target, seq, 0)
}

// invited checks an invitation: the inviter is sampled, and this node
// moves if it is light enough, as after its own probe.
func (n *Node) invited(env node.Env, from wire.NodeRef) {
	if from.IsZero() || !n.joined || n.alone() || n.cfg.Threshold <= 0 {
		return
	}
	if !n.lastMove.IsZero() && env.Now().Sub(n.lastMove) < n.cfg.Probe {
		return
	}
	n.walk(env, wire.D2Ref{Node: from}, 1, &walkSamples{})
}

// StoredBytes is the block bytes the node's engine holds, primary and
// replica (pointers hold none): the storage load that balancing evens
// out (§10, Fig. 11), read from the index that mirrors the engine.
func (n *Node) StoredBytes() int64 {
	var sum int64
	n.idx.all(func(e entry) bool {
		if !e.pointer() {
			sum += int64(e.size)
		}
		return true
	})
	return sum
}

// primaryCount is a node's primary load and the median of its range, as
// counted for an index generation and a range: stabilization asks a node
// for both every interval (D2Neighbors), and counting is linear in the
// range.
type primaryCount struct {
	gen    uint64
	lo, hi id.ID
	load   int
	median id.ID // zero: fewer than two keys
}

// primaryLoad is the node's primary load and median, counted again only
// when the index or the range changed since the last count.
func (n *Node) primaryLoad() primaryCount {
	lo, p := n.rangeLo(), &n.primary
	if p.gen == n.idx.gen && p.lo == lo && p.hi == n.pos && !p.hi.IsZero() {
		return *p
	}
	*p = primaryCount{gen: n.idx.gen, lo: lo, hi: n.pos, load: n.idx.count(lo, n.pos)}
	if p.load >= 2 {
		p.median = n.idx.at(lo, n.pos, p.load/2-1).key
	}
	return *p
}
