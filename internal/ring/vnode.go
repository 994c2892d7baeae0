package ring

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

// Vnode is one virtual server: one position on the ring.
type Vnode struct {
	host  *Chord
	index int
	self  wire.NodeRef

	succs   []wire.NodeRef // nearest first; empty means alone on the ring
	preds   []wire.NodeRef // nearest first
	fingers []wire.NodeRef // fingers[i] = successor(self + 2^i), zero if unknown
	// lowFinger bounds the known fingers from below: fingers[i] is zero for
	// every i < lowFinger. Only the top log2 N or so are ever set, and
	// closest runs on every hop.
	lowFinger int
	// best1 backs closest's answer when it wants one node: forward, on
	// every hop, only reads it before anything else calls closest.
	best1 [1]wire.NodeRef

	nextFinger int
	joining    bool
	// seenSucc and seenPred are the neighbours at the last stabilization
	// round, to count changes (Stats.NeighbourChanges).
	seenSucc, seenPred id.ID
	// alone is set on a vnode that has no successor and nobody to ask: it is
	// a ring of one (the first vnode of a new ring, or the last survivor)
	// and answers every lookup itself. A vnode with no successor that is
	// not alone is still joining and answers none.
	alone bool
	// quick is set while an extra stabilization round is pending, and
	// quickUntil is when the vnode's quick rounds stop: one
	// StabilizeInterval after the last round that changed a list
	// (Config.QuickStabilize). quickDebt bounds them (quickRound).
	quick      bool
	quickUntil time.Time
	quickDebt  time.Time
}

// Self is the vnode's own reference.
func (v *Vnode) Self() wire.NodeRef { return v.self }

// Succs is the successor list, nearest first. The caller must not modify it.
func (v *Vnode) Succs() []wire.NodeRef { return v.succs }

// Preds is the predecessor list, nearest first. The caller must not modify it.
func (v *Vnode) Preds() []wire.NodeRef { return v.preds }

// Successor is the nearest successor, or the vnode itself when alone.
func (v *Vnode) Successor() wire.NodeRef {
	if len(v.succs) == 0 {
		return v.self
	}
	return v.succs[0]
}

// Predecessor is the nearest known predecessor, or zero.
func (v *Vnode) Predecessor() wire.NodeRef {
	if len(v.preds) == 0 {
		return wire.NodeRef{}
	}
	return v.preds[0]
}

// Info is v's routing state, copied: its entry in Chord.RingInfo, and
// what Check compares with the true ring.
func (v *Vnode) Info() wire.VnodeInfo {
	vi := wire.VnodeInfo{Self: v.self, Preds: slices.Clone(v.preds), Succs: slices.Clone(v.succs)}
	for i := len(v.fingers) - 1; i >= 0; i-- {
		if f := v.fingers[i]; !f.IsZero() {
			vi.Fingers = append(vi.Fingers, wire.Finger{Bit: uint32(i), Node: f})
		}
	}
	return vi
}

// Fingers returns the known fingers from the highest bit down, without
// repeats.
func (v *Vnode) Fingers() []wire.NodeRef {
	var out []wire.NodeRef
	for i := len(v.fingers) - 1; i >= 0; i-- {
		if f := v.fingers[i]; !f.IsZero() && !contains(out, f.ID) {
			out = append(out, f)
		}
	}
	return out
}

func (v *Vnode) skipFn(env node.Env) func(wire.NodeRef) bool {
	return func(n wire.NodeRef) bool { return v.host.isDead(env, n) }
}

// stabilize runs one maintenance round: Stabilize (with notify) to the
// successor and GetNeighbors to the predecessor. A vnode with no successor
// asks its way back into the ring.
func (v *Vnode) stabilize(env node.Env) {
	h := v.host
	if s, p := v.Successor().ID, v.Predecessor().ID; s != v.seenSucc || p != v.seenPred {
		h.Stats.NeighbourChanges++
		v.seenSucc, v.seenPred = s, p
	}
	if len(v.succs) == 0 {
		v.rejoin(env)
	} else {
		succ := v.succs[0]
		h.call(env, succ.Addr, v.self, succ.ID, &wire.Stabilize{}, 0, func(env node.Env, m wire.Msg, err error) {
			if err != nil {
				v.callFailed(env, succ, err)
				return
			}
			if nb, ok := m.(*wire.Neighbors); ok {
				v.adoptSuccessors(env, succ, nb)
			}
		})
	}
	if len(v.preds) > 0 {
		pred := v.preds[0]
		h.call(env, pred.Addr, v.self, pred.ID, &wire.GetNeighbors{}, 0, func(env node.Env, m wire.Msg, err error) {
			if err != nil {
				v.callFailed(env, pred, err)
				return
			}
			if nb, ok := m.(*wire.Neighbors); ok && len(v.preds) > 0 && v.preds[0].ID == pred.ID {
				// The predecessor's own list, with itself first.
				old := v.preds
				v.preds = buildList(v.self.ID, h.cfg.Preds, v.skipFn(env), []wire.NodeRef{pred}, nb.Preds)
				v.roundSoonIf(env, !sameIDs(old, v.preds))
			}
		})
	}
}

// adoptSuccessors applies the successor's reply to Stabilize. Any of its
// predecessors that sit between us and it are closer successors of ours
// (Chord adopts just the first; taking the whole list lets a crowd of
// concurrent joiners sort itself out in a round or two instead of one node
// per round). Our list is then all of these ordered clockwise from us.
func (v *Vnode) adoptSuccessors(env node.Env, succ wire.NodeRef, nb *wire.Neighbors) {
	h := v.host
	skip := v.skipFn(env)
	cands := make([]wire.NodeRef, 1, 1+len(nb.Preds)+len(nb.Succs))
	cands[0] = succ
	for _, p := range nb.Preds {
		if p.ID.Between(v.self.ID, succ.ID) {
			cands = append(cands, p)
		}
	}
	// Our successor lists a peer we declared dead, as its predecessor or in
	// its successor list: the peer has probably restarted. Ask it (one such
	// peer per round); an answer clears the mark in the host runtime and
	// the next round adopts it. Without this, a peer we hear of only
	// through lists would stay out of ours until the runtime forgets its
	// death.
	var suspect wire.NodeRef
	if len(nb.Preds) > 0 && nb.Preds[0].ID.Between(v.self.ID, succ.ID) && skip(nb.Preds[0]) {
		suspect = nb.Preds[0]
	} else if i := slices.IndexFunc(nb.Succs, skip); i >= 0 {
		suspect = nb.Succs[i]
	}
	if !suspect.IsZero() && suspect.Addr != h.addr {
		p := suspect
		h.call(env, p.Addr, v.self, p.ID, &wire.Ping{}, 0, func(env node.Env, m wire.Msg, err error) {
			if err != nil {
				v.callFailed(env, p, err)
				return
			}
			// Alive: take it into our list now, as our successor lists it.
			list := buildList(v.self.ID, len(v.succs)+1, v.skipFn(env), v.succs, []wire.NodeRef{p})
			sortSuccs(v.self.ID, list)
			v.succs = list[:min(len(list), h.cfg.Succs)]
		})
	}
	cands = append(cands, nb.Succs...)
	// Drop ourselves, the dead and repeats in place (buildList without a
	// copy): cands is ours alone.
	kept := cands[:0]
	for _, n := range cands {
		if n.ID != v.self.ID && !skip(n) && !contains(kept, n.ID) {
			kept = append(kept, n)
		}
	}
	cands = kept
	sortSuccs(v.self.ID, cands)
	old, oldList := v.Successor(), v.succs
	v.succs = cands[:min(len(cands), h.cfg.Succs)]
	v.roundSoonIf(env, !sameIDs(oldList, v.succs))
	if len(v.preds) == 0 && len(nb.Preds) == 0 {
		// Two-node bootstrap: the successor has no predecessor yet.
		v.preds = []wire.NodeRef{succ}
	}
	if s := v.Successor(); s.ID != old.ID && s.ID != v.self.ID {
		// Notify the new successor now rather than a round later.
		v.notify(env, s)
	}
}

// roundSoonIf, if changed, keeps the vnode in quick rounds
// (Config.QuickStabilize) for one StabilizeInterval from now. A change
// travels backwards along the ring one vnode per round of the vnode
// before it, so a neighbourhood whose lists are changing must all run
// quick rounds for a change to cross it quickly, not only the vnode that
// saw it.
func (v *Vnode) roundSoonIf(env node.Env, changed bool) {
	cfg := v.host.cfg
	if !changed || cfg.QuickStabilize <= 0 {
		return
	}
	v.quickUntil = env.Now().Add(cfg.StabilizeInterval)
	v.quickRound(env)
}

// quickRound schedules the vnode's next quick round, unless one is
// pending, its quick rounds are over, or it has run its share. Each quick
// round adds 1/quickCost of a StabilizeInterval to a debt that time pays
// off, and none runs while
// the debt is more than quickBurst intervals ahead: a ring forming runs
// its quick rounds in one burst (up to about 53 rounds, 7 s; triad up's
// ring needs 3-6 s), and lists kept changing by a peer (an insider whose
// answers change every time) cost at most quickCost extra rounds per
// StabilizeInterval after it, not eight.
func (v *Vnode) quickRound(env node.Env) {
	cfg, now := v.host.cfg, env.Now()
	if v.quick || !now.Before(v.quickUntil) {
		return
	}
	debt := v.quickDebt
	if debt.Before(now) {
		debt = now
	}
	if debt.Sub(now) > quickBurst*cfg.StabilizeInterval {
		return
	}
	v.quickDebt = debt.Add(cfg.StabilizeInterval / quickCost)
	v.quick = true
	env.After(v.host.jitter(env, cfg.QuickStabilize), quickStabilizeTimer{v.index})
}

// runQuickRound is a quick round: a stabilization round, and the next
// quick round scheduled if the vnode still runs them.
func (v *Vnode) runQuickRound(env node.Env) {
	v.quick = false
	v.host.Stats.QuickRounds++
	v.stabilize(env)
	v.quickRound(env)
}

// A quick round costs 1/quickCost of a StabilizeInterval of debt, and the
// debt may run quickBurst intervals ahead (quickRound).
const (
	quickCost  = 2
	quickBurst = 20
)

// sameIDs reports whether a and b list the same IDs in the same order.
func sameIDs(a, b []wire.NodeRef) bool {
	return slices.EqualFunc(a, b, func(x, y wire.NodeRef) bool { return x.ID == y.ID })
}

// notify tells n that we may be its predecessor (Chord's notify: a
// Stabilize whose reply we do not need).
func (v *Vnode) notify(env node.Env, n wire.NodeRef) {
	v.host.call(env, n.Addr, v.self, n.ID, &wire.Stabilize{}, 0, func(env node.Env, _ wire.Msg, err error) {
		if err != nil {
			v.callFailed(env, n, err)
		}
	})
}

// handleStabilize is the successor's side of stabilize: the sender joins
// our predecessor list in its place (nearest first), then we reply with our
// lists.
func (v *Vnode) handleStabilize(env node.Env, in node.MsgIn) {
	from := in.Env.From
	if !from.IsZero() && from.ID != v.self.ID {
		if !contains(v.preds, from.ID) {
			v.preds = append(v.preds, from)
		}
		// Sort even when from was already listed: a list seeded from
		// saved peers, then rebuilt from a predecessor that is not the
		// nearest, can hold the true predecessor further down, and its
		// notify is what must move it to the front.
		sortPreds(v.self.ID, v.preds)
		v.preds = v.preds[:min(len(v.preds), v.host.cfg.Preds)]
		if len(v.succs) == 0 && v.alone {
			// Alone until now: the first joiner is also our successor.
			v.succs = []wire.NodeRef{from}
			v.alone = false
		}
	}
	rpc.Respond(env, in, v.self, &wire.Neighbors{Preds: v.preds, Succs: v.succs})
}

// callFailed handles a failed call to n: a timeout means the process is
// dead; an error reply saying the vnode is not there drops just that ID.
func (v *Vnode) callFailed(env node.Env, n wire.NodeRef, err error) {
	if e := (*wire.Error)(nil); errors.As(err, &e) {
		if e.Code == fault.CodeNoVnode {
			// The process at n.Addr says it has no such vnode: only its
			// own refs with that ID go.
			for _, w := range v.host.vnodes {
				w.forget(func(m wire.NodeRef) bool { return m.ID == n.ID && m.Addr == n.Addr })
			}
		}
		return
	}
	v.host.rt.MarkDead(env, n.Addr)
}

// forget drops every node matching gone from this vnode's tables.
func (v *Vnode) forget(gone func(wire.NodeRef) bool) {
	keep := func(list []wire.NodeRef) []wire.NodeRef {
		out := list[:0]
		for _, n := range list {
			if !gone(n) {
				out = append(out, n)
			}
		}
		return out
	}
	v.succs = keep(v.succs)
	v.preds = keep(v.preds)
	for i, f := range v.fingers {
		if !f.IsZero() && gone(f) {
			v.fingers[i] = wire.NodeRef{}
		}
	}
}

// rejoin looks up our own ID through any node we know of, to find our
// successor again. Without any, the vnode is alone: a ring of one.
func (v *Vnode) rejoin(env node.Env) {
	if v.joining {
		return
	}
	var cands []wire.NodeRef
	for _, w := range v.host.vnodes { // co-located vnodes first: always reachable
		if w != v && (len(w.succs) > 0 || w.alone) {
			cands = append(cands, w.self)
		}
	}
	cands = append(cands, v.preds...)
	cands = append(cands, v.Fingers()...)
	cands = append(cands, v.host.join...)
	cands = append(cands, v.host.heard...)
	var live []wire.NodeRef
	for _, c := range cands {
		if !v.host.isDead(env, c) {
			live = append(live, c)
		}
	}
	if len(live) == 0 {
		v.alone = true
		return
	}
	v.joining = true
	v.host.iterate(env, v, v.self.ID, 0, live, func(env node.Env, r Result) {
		v.joining = false
		if r.Err != nil || len(v.succs) > 0 {
			return
		}
		v.succs = buildList(v.self.ID, v.host.cfg.Succs, v.skipFn(env), r.Succs)
		if len(v.succs) > 0 {
			v.alone = false
			v.stabilize(env)
			// Save the peers we now know at once: a node that crashes
			// before its next periodic save must still find the ring
			// again when it restarts without a bootstrap address.
			v.host.save(env)
		}
	})
}

// leave hands our lists to our neighbours so they close the gap at once.
func (v *Vnode) leave(env node.Env) {
	msg := &wire.Leave{Preds: v.preds, Succs: v.succs}
	if len(v.succs) > 0 {
		env.Send(v.succs[0].Addr, wire.Envelope{Kind: wire.OneWay, From: v.self, To: v.succs[0].ID, Msg: msg})
	}
	if len(v.preds) > 0 && (len(v.succs) == 0 || v.preds[0].ID != v.succs[0].ID) {
		env.Send(v.preds[0].Addr, wire.Envelope{Kind: wire.OneWay, From: v.self, To: v.preds[0].ID, Msg: msg})
	}
}

// handleLeave removes a departing neighbour and splices in its lists. The
// caller checked that from is the sender's own vnode (Chord.ownedBy); only
// refs with both its ID and its address go.
func (v *Vnode) handleLeave(env node.Env, from wire.NodeRef, m *wire.Leave) {
	gone := func(n wire.NodeRef) bool { return n.ID == from.ID && n.Addr == from.Addr }
	wasSucc := len(v.succs) > 0 && gone(v.succs[0])
	wasPred := len(v.preds) > 0 && gone(v.preds[0])
	v.forget(gone)
	skip := func(n wire.NodeRef) bool { return gone(n) || v.host.isDead(env, n) }
	if wasSucc {
		v.succs = buildList(v.self.ID, v.host.cfg.Succs, skip, m.Succs, v.succs)
		sortSuccs(v.self.ID, v.succs)
	}
	if wasPred {
		v.preds = buildList(v.self.ID, v.host.cfg.Preds, skip, m.Preds, v.preds)
		sortPreds(v.self.ID, v.preds)
	}
}

// fixFinger refreshes one finger, from the top bit down. When a finger's
// successor is our own successor, every lower finger is too: start again at
// the top. With PNS the finger is the nearest of the first PNSSamples nodes
// of its range rather than the first.
func (v *Vnode) fixFinger(env node.Env) {
	h := v.host
	i := v.nextFinger
	next := func(env node.Env) { env.After(h.jitter(env, h.cfg.FixFingersInterval), fixFingerTimer{v.index}) }
	if len(v.succs) == 0 {
		next(env)
		return
	}
	target := v.self.ID.AddPow2(i)
	h.Lookup(env, target, LookupOptions{From: v.index}, func(env node.Env, r Result) {
		defer next(env)
		if r.Err != nil || len(r.Succs) == 0 {
			return
		}
		f := r.Succs[0]
		if f.ID == v.self.ID || len(v.succs) > 0 && f.ID == v.succs[0].ID || i == 0 {
			for j := i; j >= 0; j-- {
				v.fingers[j] = wire.NodeRef{}
			}
			v.lowFinger = max(v.lowFinger, i+1)
			v.nextFinger = id.Bits - 1
			return
		}
		v.nextFinger = i - 1
		v.fingers[i] = f
		v.lowFinger = min(v.lowFinger, i)
		if h.cfg.PNSSamples > 1 {
			v.sampleRange(env, i, nil, r.Succs, 0)
		}
	})
}

// sampleRange gathers up to PNSSamples nodes from the start of finger i's
// range, asking the last one found for its successors while the range goes
// on, and makes the nearest of them finger i.
func (v *Vnode) sampleRange(env node.Env, i int, cands, more []wire.NodeRef, asked int) {
	h := v.host
	start, end := v.self.ID.AddPow2(i), v.self.ID // the top finger's range ends at self
	if i+1 < id.Bits {
		end = v.self.ID.AddPow2(i + 1)
	}
	inRange := func(n wire.NodeRef) bool { return n.ID == start || n.ID.Between(start, end) }
	full := false
	for _, n := range more {
		if !inRange(n) || n.ID == v.self.ID {
			full = true // the range ends here
			break
		}
		if !contains(cands, n.ID) && !h.isDead(env, n) {
			cands = append(cands, n)
		}
		if len(cands) == h.cfg.PNSSamples {
			full = true
			break
		}
	}
	if len(cands) == 0 {
		return
	}
	v.fingers[i] = v.nearest(env, cands)
	v.lowFinger = min(v.lowFinger, i)
	if full || len(more) == 0 || asked > h.cfg.PNSSamples/len(more) {
		return
	}
	last := cands[len(cands)-1]
	h.call(env, last.Addr, v.self, last.ID, &wire.GetNeighbors{}, 0, func(env node.Env, m wire.Msg, err error) {
		if nb, ok := m.(*wire.Neighbors); ok && err == nil && !v.fingers[i].IsZero() {
			v.sampleRange(env, i, cands, nb.Succs, asked+1)
		}
	})
}

// nearest returns the candidate with the lowest known round-trip time. Those
// with none are pinged, which measures them (and brings their coordinate) for
// the next refresh.
func (v *Vnode) nearest(env node.Env, cands []wire.NodeRef) wire.NodeRef {
	h := v.host
	best, bestRTT := cands[0], time.Duration(-1)
	for _, c := range cands {
		rtt, ok := h.rt.Predict(c.Addr)
		if !ok {
			h.call(env, c.Addr, v.self, c.ID, &wire.Ping{}, 0, func(node.Env, wire.Msg, error) {})
			continue
		}
		if bestRTT < 0 || rtt < bestRTT {
			best, bestRTT = c, rtt
		}
	}
	return best
}

// closest returns up to n known nodes that precede key (strictly between us
// and key), closest to key first, skipping those bad rejects. full also
// routes on the whole successor list. It runs on
// every hop, so for the common n = 1 it allocates nothing: that answer is
// valid until the next call.
func (v *Vnode) closest(key id.ID, n int, full bool, bad func(wire.NodeRef) bool) []wire.NodeRef {
	// nearer reports whether a is closer to key (from below) than b.
	nearer := func(a, b wire.NodeRef) bool { return a.ID.Between(b.ID, key) }
	var best wire.NodeRef
	var out []wire.NodeRef
	consider := func(c wire.NodeRef) {
		if c.IsZero() || !c.ID.Between(v.self.ID, key) || bad(c) {
			return
		}
		if n == 1 {
			if best.IsZero() || nearer(c, best) {
				best = c
			}
			return
		}
		if !contains(out, c.ID) {
			out = append(out, c)
		}
	}
	// Classic Chord routes on fingers and the immediate successor, which
	// gives its ½·log2 N hops; the rest of the successor list is a fallback
	// when those are dead. Integration lookups use the whole list.
	for i := len(v.fingers) - 1; i >= v.lowFinger; i-- {
		consider(v.fingers[i])
	}
	for i, s := range v.succs {
		if i == 0 || full || (best.IsZero() && len(out) == 0) {
			consider(s)
		}
	}
	if n == 1 {
		if best.IsZero() {
			return nil
		}
		v.best1[0] = best
		return v.best1[:]
	}
	insertionSort(out, nearer)
	if len(out) > n {
		out = out[:n]
	}
	return out
}

// answer reports whether this vnode can end a lookup for key: classic Chord
// needs key in (self, successor]; with minSuccs > 0 any node whose successor
// list holds minSuccs successors of key may answer. pred is the key's
// predecessor, succs its successors.
func (v *Vnode) answer(key id.ID, minSuccs int) (pred wire.NodeRef, succs []wire.NodeRef, ok bool) {
	if len(v.succs) == 0 {
		if v.alone {
			return v.self, []wire.NodeRef{v.self}, true // we own everything
		}
		return wire.NodeRef{}, nil, false
	}
	if key.In(v.self.ID, v.succs[0].ID) {
		return v.self, v.wrapped(v.succs), true
	}
	if len(v.preds) > 0 && key.In(v.preds[0].ID, v.self.ID) {
		// We are the key's successor and know its predecessor.
		return v.preds[0], append([]wire.NodeRef{v.self}, v.succs...), true
	}
	if minSuccs > 0 {
		// When the list holds the whole ring, we follow its last entry:
		// the keys just before us have their successors too. A short list
		// alone does not show that (it is short after failures and joins
		// too); its last entry being our predecessor does.
		known := len(v.succs)
		whole := known < v.host.cfg.Succs && len(v.preds) > 0 && v.preds[0].ID == v.succs[known-1].ID
		if whole {
			known++
		}
		for i := 1; i+minSuccs <= known && i < len(v.succs); i++ {
			if key.In(v.succs[i-1].ID, v.succs[i].ID) {
				return v.succs[i-1], v.from(i, whole), true
			}
		}
	}
	return wire.NodeRef{}, nil, false
}

// wrapped completes a tail of our successor list with ourselves when the
// whole ring fits in the list: then we are the next successor after its
// last entry (in a ring of two, a key's successors are the other node and
// us). Block stores need the full list to place copies on distinct hosts.
func (v *Vnode) wrapped(tail []wire.NodeRef) []wire.NodeRef {
	if len(v.succs) >= v.host.cfg.Succs {
		return tail
	}
	out := make([]wire.NodeRef, 0, len(tail)+1)
	return append(append(out, tail...), v.self)
}

// from is a key's successors when succs[i] is its first: the list from
// i, then, when the list holds the whole ring, us and the list before i
// (every host, so that a put has spares past a dead one).
func (v *Vnode) from(i int, whole bool) []wire.NodeRef {
	if !whole {
		return v.wrapped(v.succs[i:])
	}
	out := make([]wire.NodeRef, 0, len(v.succs)+1)
	out = append(append(out, v.succs[i:]...), v.self)
	return append(out, v.succs[:i]...)
}

// joined reports whether the vnode is part of a ring and may route.
func (v *Vnode) joined() bool { return len(v.succs) > 0 || v.alone }

// nextHop answers one step of an iterative lookup.
func (v *Vnode) nextHop(key id.ID, minSuccs int) *wire.NextHopInfo {
	if _, succs, ok := v.answer(key, minSuccs); ok {
		return &wire.NextHopInfo{Done: true, Succs: succs}
	}
	return &wire.NextHopInfo{Next: v.closest(key, 4, minSuccs > 0, func(wire.NodeRef) bool { return false })}
}
