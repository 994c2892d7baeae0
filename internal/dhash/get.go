package dhash

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"triad/internal/dhash/frag"
	"triad/internal/fault"
	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/wire"
)

// Block is a fetched, verified block. Its Data may still be on its way to a
// host whose copy the get found damaged (repair): do not modify it.
type Block struct {
	Data   []byte
	Expiry time.Time
	// Desc is the descriptor of a block rebuilt from fragments, which its
	// key is the hash of; nil for a whole copy.
	Desc *frag.Descriptor
}

// GetDone is a get's continuation.
type GetDone func(env node.Env, b Block, err error)

// Get fetches key's block and calls done once with it, verified against
// the key, or with why it could not. As in DHash++ the lookup stops at a
// node that knows enough successors, then copies are fetched from the
// holders with the lowest predicted latency, moving on to the next one on
// a timeout, a missing copy or bad data. r says how the block was probably
// stored (RedundancyDefault: as this deployment stores blocks); a get that
// finds otherwise switches, but only on a copy that verifies against the
// key: a fragment that does not is a bad copy like any other, and the get
// goes on to the next holder.
func (n *Node) Get(env node.Env, key id.ID, r wire.Redundancy, done GetDone) {
	n.Stats.Gets++
	r = n.redundancy(r)
	g := &getOp{n: n, key: key, done: done, fragment: r == wire.RedundancyFragments}
	n.candidates(env, key, n.span(r), g.start)
}

type getOp struct {
	n        *Node
	key      id.ID
	done     GetDone
	fragment bool // fetching fragments rather than whole copies

	cands    []wire.NodeRef // not yet asked, best first
	inflight int
	frags    []frag.Fragment // verified against key
	fragFrom []node.Addr     // the host each of frags came from
	expiry   time.Time
	decoding bool
	finished bool
	notFound int
	lastErr  error
	asked    []wire.NodeRef
	widened  bool           // the candidates were looked up a second time, further along
	looked   []wire.NodeRef // the successors the first lookup found, in ring order
	damaged  []wire.NodeRef // hosts that found their copy damaged; repaired after a get
}

// widenBy is how many successors beyond its span a get asks for when the
// first ones it asked had no copy. Hosts that joined between a key and its
// holders since the put (and hold nothing yet) push the copies further
// down the successor list, until maintenance moves them.
const widenBy = 8

func (g *getOp) start(env node.Env, cands []wire.NodeRef, err error) {
	if err != nil {
		g.finish(env, Block{}, err)
		return
	}
	span := g.n.cfg.Replicas
	if g.fragment {
		span = g.n.cfg.TotalFrags
	}
	g.looked = slices.Clone(cands)
	g.cands = g.order(cands, span)
	g.fill(env)
}

// order puts the first span candidates (the key's holders when nothing has
// failed) by predicted latency, then the rest in ring order: copies that
// went past a dead successor sit there.
func (g *getOp) order(cands []wire.NodeRef, span int) []wire.NodeRef {
	span = min(span, len(cands))
	head := slices.Clone(cands[:span])
	rtt := func(c wire.NodeRef) time.Duration {
		if d, ok := g.n.rt.Predict(c.Addr); ok {
			return d
		}
		return time.Hour
	}
	slices.SortStableFunc(head, func(a, b wire.NodeRef) int { return int(rtt(a) - rtt(b)) })
	return append(head, cands[span:]...)
}

// want is how many fetches should be in flight: one whole copy, or enough
// fragments to reach m.
func (g *getOp) want() int {
	if !g.fragment {
		return 1
	}
	return g.n.cfg.DataFrags - len(g.frags)
}

func (g *getOp) fill(env node.Env) {
	if !g.finished && !g.decoding && g.fragment && len(g.frags) >= g.n.cfg.DataFrags {
		g.join(env)
		return
	}
	for !g.finished && !g.decoding && g.inflight < g.want() && len(g.cands) > 0 {
		c := g.cands[0]
		g.cands = g.cands[1:]
		g.asked = append(g.asked, c)
		g.fetch(env, c)
	}
	if !g.finished && !g.decoding && g.inflight == 0 && !g.widened && g.notFound > 0 {
		g.widen(env)
		return
	}
	if !g.finished && !g.decoding && g.inflight == 0 {
		err := g.lastErr
		switch {
		case g.fragment && len(g.frags) > 0:
			err = fmt.Errorf("%w: %d of %d fragments of %s found", fault.ErrUnavailable, len(g.frags), g.n.cfg.DataFrags, g.key.Short())
		case err == nil || g.notFound > 0 && errors.Is(err, fault.ErrNotFound):
			err = fmt.Errorf("%w: %s", fault.ErrNotFound, g.key.Short())
		}
		g.finish(env, Block{}, err)
	}
}

// widen looks the key up again asking for more successors, and fetches
// from those not asked yet.
func (g *getOp) widen(env node.Env) {
	g.widened = true
	g.inflight++ // the lookup counts as a fetch in flight
	g.n.candidates(env, g.key, g.n.span(g.redundancy())+widenBy, func(env node.Env, cands []wire.NodeRef, err error) {
		g.inflight--
		if err == nil {
			for _, c := range cands {
				if !slices.ContainsFunc(g.asked, func(a wire.NodeRef) bool { return a.Addr == c.Addr }) {
					g.cands = append(g.cands, c)
				}
			}
		}
		g.fill(env)
	})
}

func (g *getOp) redundancy() wire.Redundancy {
	if g.fragment {
		return wire.RedundancyFragments
	}
	return wire.RedundancyReplicas
}

func (g *getOp) fetch(env node.Env, c wire.NodeRef) {
	r := g.n.ring
	g.inflight++
	ok := g.n.fetchFrom(env, c, g.key, func(env node.Env, b *wire.Block, err error) {
		g.inflight--
		if g.finished {
			return
		}
		switch {
		case err != nil:
			if errors.Is(err, fault.ErrNotFound) {
				g.notFound++
			}
			if fault.CodeOf(err) == fault.CodeCorrupt {
				// c's engine found its copy damaged and quarantined it.
				g.damaged = append(g.damaged, c)
			}
			r.CallFailed(env, c, err)
			g.failed(env, err)
		case b.Fragment:
			g.gotFragment(env, c, b)
		case g.fragment && len(g.frags) > 0:
			g.failed(env, fmt.Errorf("%w: %s holds a whole copy of a fragmented block", fault.ErrCorrupt, c))
		default:
			g.gotWhole(env, c, b)
		}
	})
	if !ok {
		g.inflight--
		g.lastErr = fmt.Errorf("%w: too many calls in flight", fault.ErrBusy)
	}
}

// fetchFrom asks c for its copy of key; this very process reads its own
// engine without a message.
func (n *Node) fetchFrom(env node.Env, c wire.NodeRef, key id.ID, done func(env node.Env, b *wire.Block, err error)) bool {
	if c.Addr == n.rt.Addr() {
		n.readCopy(env, key, func(env node.Env, b *wire.Block, err error) {
			if err != nil {
				done(env, nil, err)
				return
			}
			done(env, b, nil)
		})
		return true
	}
	return n.transfer(env, c, &wire.FetchBlock{Key: key}, 0, func(env node.Env, m wire.Msg, err error) {
		b, isBlock := m.(*wire.Block)
		if err == nil && !isBlock {
			err = fmt.Errorf("%w: %s answered %T", fault.ErrCorrupt, c, m)
		}
		done(env, b, err)
	})
}

func (g *getOp) failed(env node.Env, err error) {
	g.lastErr = err
	g.n.Stats.FetchRetries++
	g.fill(env)
}

// gotWhole verifies a whole copy off the loop; a copy that does not match
// its key is dropped and the next holder asked. A copy read from this
// node's own engine is not hashed again: the engine hashed it before
// storing it and checks its CRCs on every read (docs/storage.md), so the
// hash would only cost a second pass over the block.
func (g *getOp) gotWhole(env node.Env, from wire.NodeRef, b *wire.Block) {
	if from.Addr == g.n.rt.Addr() {
		g.finish(env, Block{Data: b.Data, Expiry: time.Unix(0, b.Expiry)}, nil)
		return
	}
	g.decoding = true
	key := g.key
	run := g.n.offload
	if len(b.Data) <= inlineHash {
		run = inline
	}
	run(env, func() (any, error) {
		if id.Key(b.Data) != key {
			return nil, fmt.Errorf("%w: copy from %s does not match its key", fault.ErrCorrupt, from)
		}
		return nil, nil
	}, func(env node.Env, _ any, err error) {
		g.decoding = false
		if err != nil {
			g.n.Stats.BadCopies++
			g.failed(env, err)
			return
		}
		g.finish(env, Block{Data: b.Data, Expiry: time.Unix(0, b.Expiry)}, nil)
	})
}

// gotFragment verifies a fragment against the key and collects it; with m
// of them the block is rebuilt off the loop. A fragment that does not
// verify is a bad copy: the get asks the next holder, in the mode it was
// in. Verification hashes the shard, in the loop: a shard is at most a
// block's m-th part.
func (g *getOp) gotFragment(env node.Env, from wire.NodeRef, b *wire.Block) {
	f, err := g.n.coder.check(g.key, b.Data, g.n.cfg.MaxBlock)
	if err != nil {
		g.n.Stats.BadCopies++
		g.failed(env, fmt.Errorf("%w: from %s: %v", fault.ErrCorrupt, from, err))
		return
	}
	if !g.fragment {
		// A fragment that verifies proves the key is a fragmented block's
		// (no whole block hashes to it), although whole copies are this
		// deployment's default: fetch fragments from here on.
		g.fragment = true
		g.cands = g.order(g.cands, g.n.cfg.TotalFrags-1)
	}
	if slices.ContainsFunc(g.frags, func(h frag.Fragment) bool { return h.Index == f.Index }) {
		// A copy of a fragment already held (a holder serving another's
		// fragment, or one index rebuilt on two hosts) adds nothing to
		// the rebuild: ask another holder for a distinct one.
		g.n.Stats.DuplicateFragments++
		g.fill(env)
		return
	}
	g.frags = append(g.frags, f)
	g.fragFrom = append(g.fragFrom, from.Addr)
	// The block lives as long as its longest-lived fragment: a copy
	// refreshed by a later put carries the acknowledged expiry, a stale
	// one an earlier (issue 27). A rebuild takes this one.
	if e := time.Unix(0, b.Expiry); e.After(g.expiry) {
		g.expiry = e
	}
	g.fill(env)
}

// join rebuilds the block from the m fragments collected, off the loop.
func (g *getOp) join(env node.Env) {
	g.decoding = true
	frags, coder := slices.Clone(g.frags), g.n.coder
	g.n.offload(env, func() (any, error) {
		return coder.join(frags)
	}, func(env node.Env, val any, err error) {
		g.decoding = false
		if err != nil {
			// Every fragment matched the key, so the putter's fragments
			// are not one block's coding: no other set would do better.
			g.n.Stats.BadCopies++
			g.finish(env, Block{}, err)
			return
		}
		g.finish(env, Block{Data: val.([]byte), Expiry: g.expiry, Desc: &frags[0].Desc}, nil)
	})
}

func (g *getOp) finish(env node.Env, b Block, err error) {
	if g.finished {
		return
	}
	g.finished = true
	if err != nil {
		g.n.Stats.GetsFailed++
	}
	g.done(env, b, err)
	if err == nil && len(g.damaged) > 0 {
		g.repair(env, b)
	}
}

// Stat asks the key's successors what they hold and calls done with one
// entry per host asked, nearest successor first.
func (n *Node) Stat(env node.Env, key id.ID, done func(env node.Env, holders []wire.Holder, err error)) {
	span := max(n.cfg.Replicas, n.cfg.TotalFrags)
	n.candidates(env, key, span, func(env node.Env, cands []wire.NodeRef, err error) {
		if err != nil {
			done(env, nil, err)
			return
		}
		cands = cands[:min(len(cands), span+2, wire.MaxHolders)]
		out := make([]wire.Holder, len(cands))
		left := len(cands)
		if left == 0 {
			done(env, nil, fmt.Errorf("%w: no live hosts", fault.ErrUnavailable))
			return
		}
		for i, c := range cands {
			out[i].Node = c
			ok := n.rt.Call(env, c.Addr, n.self(), c.ID, &wire.StatBlock{Key: key}, 0, func(env node.Env, m wire.Msg, err error) {
				if bi, ok := m.(*wire.BlockInfo); ok && err == nil {
					out[i].Size, out[i].Expiry, out[i].Fragment = bi.Size, bi.Expiry, bi.Fragment
				} else if errors.Is(err, fault.ErrNotFound) {
					out[i].Err = "no copy"
				} else if err != nil {
					out[i].Err = err.Error()
				}
				if left--; left == 0 {
					done(env, out, nil)
				}
			})
			if !ok {
				out[i].Err = "too many calls in flight"
				if left--; left == 0 {
					done(env, out, nil)
				}
			}
		}
	})
}
