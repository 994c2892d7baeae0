package ring

import (
	"slices"
	"time"

	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/rpc"
	"triad/internal/wire"
)

// Membership is a view of the live vnodes that a driver keeps in place of
// the ring protocol finding it: the idealized membership of UsenetDHT's
// trace experiment (§6.2), whose question is how data maintenance keeps
// objects through a year of failures, not how the ring heals. With one
// set (Config.Membership) a host sends no ring messages: its lists are
// read from the view at start and whenever the driver calls Refresh, and
// a lookup is answered from the view at once. It is for the simulator
// only; a real node always runs the protocol.
type Membership interface {
	// Succs returns the first n live vnodes at or after x, nearest first.
	Succs(x id.ID, n int) []wire.NodeRef
	// Preds returns the last n live vnodes before x, nearest first.
	Preds(x id.ID, n int) []wire.NodeRef
}

// Refresh reads the vnodes' lists again from the membership view (a no-op
// without one) and tells the watchers if a successor or predecessor
// changed. The driver calls it when the view changed around this host.
func (h *Chord) Refresh(env node.Env) {
	if h.cfg.Membership == nil {
		return
	}
	before := h.neighbours()
	for _, v := range h.vnodes {
		v.succs = withoutSelf(h.cfg.Membership.Succs(v.self.ID.AddPow2(0), h.cfg.Succs+1), v.self.ID, h.cfg.Succs)
		v.preds = withoutSelf(h.cfg.Membership.Preds(v.self.ID, h.cfg.Preds+1), v.self.ID, h.cfg.Preds)
		v.alone = len(v.succs) == 0
	}
	h.notifyIfChanged(env, before)
}

func withoutSelf(list []wire.NodeRef, self id.ID, max int) []wire.NodeRef {
	out := make([]wire.NodeRef, 0, min(len(list), max))
	for _, n := range list {
		if n.ID != self && len(out) < max {
			out = append(out, n)
		}
	}
	return out
}

// lookupInView answers a lookup from the membership view.
func (h *Chord) lookupInView(key id.ID) Result {
	r := Result{Succs: h.cfg.Membership.Succs(key, h.cfg.Succs)}
	if preds := h.cfg.Membership.Preds(key, 1); len(preds) > 0 {
		r.Pred = preds[0]
	}
	if len(r.Succs) == 0 {
		r.Err = ErrLookupFailed
	}
	return r
}

// OnNeighbours registers fn to run, in the host's event loop, after any
// event in which a vnode's successor, or one of its first preds
// predecessors, changed: local maintenance starts a round when the start
// of a vnode's replica range moves, not only its nearest neighbours.
func (h *Chord) OnNeighbours(preds int, fn func(env node.Env)) {
	h.watchers = append(h.watchers, fn)
	h.watchPreds = max(h.watchPreds, preds, 1)
}

// call is the runtime's Call with the reply watched for neighbour changes,
// as the ring's events are: replies and timeouts reach their continuation
// from the runtime, not through Receive or Timer.
func (h *Chord) call(env node.Env, to node.Addr, from wire.NodeRef, dst id.ID, m wire.Msg, timeout time.Duration, cont rpc.Reply) bool {
	if len(h.watchers) == 0 {
		return h.rt.Call(env, to, from, dst, m, timeout, cont)
	}
	return h.rt.Call(env, to, from, dst, m, timeout, func(env node.Env, reply wire.Msg, err error) {
		before := h.neighbours()
		cont(env, reply, err)
		h.notifyIfChanged(env, before)
	})
}

// neighbours is each vnode's successor and first watchPreds predecessors,
// to tell whether an event changed them.
func (h *Chord) neighbours() []id.ID {
	if len(h.watchers) == 0 {
		return nil
	}
	out := make([]id.ID, 0, (1+h.watchPreds)*len(h.vnodes))
	for _, v := range h.vnodes {
		out = append(out, v.Successor().ID)
		for i := range h.watchPreds {
			var p id.ID
			if i < len(v.preds) {
				p = v.preds[i].ID
			}
			out = append(out, p)
		}
	}
	return out
}

func (h *Chord) notifyIfChanged(env node.Env, before []id.ID) {
	if len(h.watchers) == 0 {
		return
	}
	if !slices.Equal(before, h.neighbours()) {
		for _, fn := range h.watchers {
			fn(env)
		}
	}
}
