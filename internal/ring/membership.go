package ring

import (
	"triad/internal/id"
	"triad/internal/node"
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
// event in which a vnode's successor or predecessor changed (local
// maintenance starts a round at once).
func (h *Chord) OnNeighbours(fn func(env node.Env)) { h.watchers = append(h.watchers, fn) }

// neighbours is each vnode's successor and predecessor, to tell whether
// an event changed them.
func (h *Chord) neighbours() []id.ID {
	if len(h.watchers) == 0 {
		return nil
	}
	out := make([]id.ID, 0, 2*len(h.vnodes))
	for _, v := range h.vnodes {
		out = append(out, v.Successor().ID, v.Predecessor().ID)
	}
	return out
}

func (h *Chord) notifyIfChanged(env node.Env, before []id.ID) {
	if len(h.watchers) == 0 {
		return
	}
	for i, v := range h.vnodes {
		if before[2*i] != v.Successor().ID || before[2*i+1] != v.Predecessor().ID {
			for _, fn := range h.watchers {
				fn(env)
			}
			return
		}
	}
}
