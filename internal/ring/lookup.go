package ring

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/wire"
)

// ErrLookupFailed is the error of a lookup that found no route.
var ErrLookupFailed = errors.New("ring: lookup failed")

// LookupOptions choose how a lookup runs.
type LookupOptions struct {
	// From is the index of the vnode the lookup starts at.
	From int
	// MinSuccs > 0 lets the lookup stop at the first node that knows that
	// many successors of the key (DHash++ integration); 0 routes to the
	// key's predecessor.
	MinSuccs int
	// Iterative makes the origin drive every step itself instead of
	// forwarding the lookup recursively.
	Iterative bool
}

// Result is the outcome of a lookup.
type Result struct {
	Key   id.ID
	Pred  wire.NodeRef   // the node that answered's view of the key's predecessor
	Succs []wire.NodeRef // the key's successors, nearest first
	Hops  int            // forwarding hops (recursive) or calls (iterative)
	// Iterative is set when the lookup ran (or fell back to) iterative.
	Iterative bool
	Latency   time.Duration
	Err       error
}

// Done is a lookup's continuation; it runs inside the host's event loop,
// possibly before Lookup returns.
type Done func(env node.Env, r Result)

type lookup struct {
	key    id.ID
	opts   LookupOptions
	start  time.Time
	done   Done
	cancel func()
}

// Lookup finds the successors of key and calls done once with the result.
func (h *Chord) Lookup(env node.Env, key id.ID, opts LookupOptions, done Done) {
	if opts.From < 0 || opts.From >= len(h.vnodes) {
		panic(fmt.Sprintf("ring: lookup from vnode %d of %d", opts.From, len(h.vnodes)))
	}
	h.Stats.LookupsStarted++
	v := h.vnodes[opts.From]
	start := env.Now()
	finish := func(env node.Env, r Result) {
		r.Key = key
		r.Latency = env.Now().Sub(start)
		r.Succs = slices.Clone(r.Succs)
		if r.Err != nil {
			h.Stats.LookupsFailed++
		} else {
			h.Stats.LookupsDone++
			h.Stats.Hops[min(max(r.Hops, 0), MaxCountedHops)]++
		}
		done(env, r)
	}
	if h.cfg.Membership != nil {
		finish(env, h.lookupInView(key))
		return
	}
	if opts.Iterative {
		h.iterate(env, v, key, opts.MinSuccs, nil, finish)
		return
	}
	if pred, succs, ok := h.answer(v, key, opts.MinSuccs); ok {
		finish(env, Result{Pred: pred, Succs: succs})
		return
	}
	h.nextLookup++
	lid := h.nextLookup
	l := &lookup{key: key, opts: opts, start: start, done: finish}
	h.lookups[lid] = l
	l.cancel = env.After(h.cfg.LookupTimeout, lookupTimer{lid})
	v.forward(env, &wire.Lookup{LookupID: lid, Key: key, Origin: v.self, MinSuccs: uint32(opts.MinSuccs)}, nil)
}

// answer is Vnode.answer asked of every vnode of this process, v first:
// the longest successor list any of them knows for key, so that a key in
// another local vnode's arc is answered here, not forwarded, and a list
// one vnode knows only the tail of (vnodes of one host, where a block
// store needs distinct hosts) comes whole from the vnode it starts at.
func (h *Chord) answer(v *Vnode, key id.ID, minSuccs int) (pred wire.NodeRef, succs []wire.NodeRef, ok bool) {
	pred, succs, ok = v.answer(key, minSuccs)
	if ok && len(succs) >= h.cfg.Succs {
		return pred, succs, true
	}
	for _, w := range h.vnodes {
		if w == v {
			continue
		}
		if p, s, found := w.answer(key, minSuccs); found && len(s) > len(succs) {
			pred, succs, ok = p, s, true
		}
	}
	return pred, succs, ok
}

// route handles a forwarded lookup: answer it, or pass it on.
func (v *Vnode) route(env node.Env, m *wire.Lookup) {
	if pred, succs, ok := v.host.answer(v, m.Key, int(m.MinSuccs)); ok {
		v.reply(env, m, &wire.LookupDone{LookupID: m.LookupID, Key: m.Key, Hops: m.Hops, Pred: pred, Succs: succs})
		return
	}
	v.forward(env, m, nil)
}

// forward sends m one hop closer to its key, to the best node not yet tried.
// If that node does not acknowledge, the next best is tried, up to HopTries.
func (v *Vnode) forward(env node.Env, m *wire.Lookup, tried []id.ID) {
	h := v.host
	bad := func(n wire.NodeRef) bool { return h.isDead(env, n) || slices.Contains(tried, n.ID) }
	next := v.closest(m.Key, 1, m.MinSuccs > 0, bad)
	if len(next) == 0 || len(tried) >= h.cfg.HopTries {
		v.reply(env, m, &wire.LookupDone{LookupID: m.LookupID, Key: m.Key, Hops: m.Hops, Failed: "no live next hop at " + v.self.String()})
		return
	}
	n := next[0]
	fwd := *m
	fwd.Hops++
	ok := h.call(env, n.Addr, v.self, n.ID, &fwd, 0, func(env node.Env, _ wire.Msg, err error) {
		if err == nil {
			return // acknowledged: the next node owns the lookup now
		}
		h.Stats.HopFailures++
		v.callFailed(env, n, err)
		v.forward(env, m, append(tried, n.ID))
	})
	if !ok {
		v.reply(env, m, &wire.LookupDone{LookupID: m.LookupID, Key: m.Key, Hops: m.Hops, Failed: "too many calls in flight"})
	}
}

// reply sends a lookup's answer to its origin.
func (v *Vnode) reply(env node.Env, m *wire.Lookup, done *wire.LookupDone) {
	if m.Origin.Addr == v.host.addr {
		v.host.handleLookupDone(env, done)
		return
	}
	env.Send(m.Origin.Addr, wire.Envelope{Kind: wire.OneWay, From: v.self, To: m.Origin.ID, Msg: done})
}

func (h *Chord) handleLookupDone(env node.Env, m *wire.LookupDone) {
	l := h.lookups[m.LookupID]
	if l == nil || l.key != m.Key {
		return // late (after a fallback) or not ours
	}
	delete(h.lookups, m.LookupID)
	l.cancel()
	if m.Failed != "" || len(m.Succs) == 0 {
		h.Stats.IterativeFallbacks++
		h.iterate(env, h.vnodes[l.opts.From], l.key, l.opts.MinSuccs, nil, l.done)
		return
	}
	l.done(env, Result{Pred: m.Pred, Succs: m.Succs, Hops: int(m.Hops)})
}

func (h *Chord) lookupTimedOut(env node.Env, lid uint64) {
	l := h.lookups[lid]
	if l == nil {
		return
	}
	delete(h.lookups, lid)
	h.Stats.IterativeFallbacks++
	h.iterate(env, h.vnodes[l.opts.From], l.key, l.opts.MinSuccs, nil, l.done)
}

// iterate runs an iterative lookup for key from v: it asks candidates for
// their next hop, best first, until one can answer. start, if given, are the
// first candidates (a joining vnode knows only a bootstrap address);
// otherwise v's own tables give them.
func (h *Chord) iterate(env node.Env, v *Vnode, key id.ID, minSuccs int, start []wire.NodeRef, done Done) {
	cands := slices.Clone(start)
	if start == nil {
		if pred, succs, ok := v.answer(key, minSuccs); ok {
			done(env, Result{Pred: pred, Succs: succs, Iterative: true})
			return
		}
		cands = v.closest(key, 4, minSuccs > 0, func(n wire.NodeRef) bool { return h.isDead(env, n) })
	}
	var asked []wire.NodeRef
	var step func(env node.Env)
	step = func(env node.Env) {
		for len(cands) > 0 && (h.isDead(env, cands[0]) || askedBefore(asked, cands[0])) {
			cands = cands[1:]
		}
		if len(cands) == 0 || len(asked) >= h.cfg.IterativeSteps {
			done(env, Result{Hops: len(asked), Iterative: true, Err: fmt.Errorf("%w: %s after %d steps", ErrLookupFailed, key.Short(), len(asked))})
			return
		}
		c := cands[0]
		cands = cands[1:]
		asked = append(asked, c)
		ok := h.call(env, c.Addr, v.self, c.ID, &wire.NextHop{Key: key, MinSuccs: uint32(minSuccs)}, 0, func(env node.Env, m wire.Msg, err error) {
			if err != nil {
				v.callFailed(env, c, err)
				step(env)
				return
			}
			resp, _ := m.(*wire.NextHopInfo)
			if resp == nil {
				step(env)
				return
			}
			if resp.Done && len(resp.Succs) > 0 {
				done(env, Result{Succs: resp.Succs, Hops: len(asked), Iterative: true})
				return
			}
			// Only nodes that bring us closer to key are worth asking.
			var closer []wire.NodeRef
			for _, n := range resp.Next {
				if c.ID.IsZero() || n.ID.Between(c.ID, key) {
					closer = append(closer, n)
				}
			}
			cands = append(closer, cands...)
			step(env)
		})
		if !ok {
			done(env, Result{Hops: len(asked), Iterative: true, Err: fmt.Errorf("%w: too many calls in flight", ErrLookupFailed)})
		}
	}
	step(env)
}

func askedBefore(asked []wire.NodeRef, n wire.NodeRef) bool {
	for _, a := range asked {
		if a.Addr == n.Addr && a.ID == n.ID {
			return true
		}
	}
	return false
}

// NextHop is one step of a request that another protocol routes
// recursively itself, one message per hop (congestion control's routed
// requests): here when one of this host's vnodes is the key's successor,
// else the next node to send it to, from the vnode that precedes the key
// most closely: the key's successor when the key lies just past that
// vnode, else its closest live finger or successor before the key. ok is
// false while the host knows no way on.
func (h *Chord) NextHop(env node.Env, key id.ID) (next wire.NodeRef, here, ok bool) {
	best := h.vnodes[0]
	for _, v := range h.vnodes {
		if len(v.preds) > 0 && key.In(v.preds[0].ID, v.self.ID) || v.alone {
			return v.self, true, true
		}
		if v.self.ID.Between(best.self.ID, key) {
			best = v
		}
	}
	if len(best.succs) == 0 {
		return wire.NodeRef{}, false, false
	}
	if key.In(best.self.ID, best.succs[0].ID) {
		return best.succs[0], best.succs[0].Addr == h.addr, true
	}
	bad := func(n wire.NodeRef) bool { return h.isDead(env, n) }
	if c := best.closest(key, 1, false, bad); len(c) > 0 {
		return c[0], false, true
	}
	return best.succs[0], false, true
}
