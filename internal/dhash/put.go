package dhash

import (
	"fmt"
	"slices"
	"time"

	"triad/internal/fault"
	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/ring"
	"triad/internal/rpc"
	"triad/internal/store"
	"triad/internal/wire"
)

// PutDone is a put's continuation: the block's key and the nodes that
// acknowledged a durable copy, or an error.
type PutDone func(env node.Env, key id.ID, holders []wire.NodeRef, err error)

// redundancy resolves a put's choice against the deployment's default.
func (n *Node) redundancy(r wire.Redundancy) wire.Redundancy {
	if r == wire.RedundancyDefault {
		return n.cfg.Redundancy
	}
	return r
}

// span is how many successors of a key hold its copies.
func (n *Node) span(r wire.Redundancy) int { return n.cfg.Span(r) }

// candidates looks up key and returns its successors on distinct live
// hosts, nearest first. With integration the lookup may stop at a node
// that already knows need successors of the key. A lookup that fails (right
// after several neighbours died, the nodes before the key may still list
// them) is tried again after the ring has had a moment to notice.
func (n *Node) candidates(env node.Env, key id.ID, need int, done func(env node.Env, cands []wire.NodeRef, err error)) {
	n.lookup(env, key, need, lookupRetries, done)
}

// lookupRetries and lookupRetryDelay bound the retries of a failed lookup.
const (
	lookupRetries    = 2
	lookupRetryDelay = time.Second
)

func (n *Node) lookup(env node.Env, key id.ID, need, retries int, done func(env node.Env, cands []wire.NodeRef, err error)) {
	opts := ring.LookupOptions{MinSuccs: need}
	if n.cfg.NoIntegration {
		opts.MinSuccs = 0
	}
	n.ring.Lookup(env, key, opts, func(env node.Env, r ring.Result) {
		if r.Err != nil {
			if retries > 0 {
				n.after(env, lookupRetryDelay, func(env node.Env) { n.lookup(env, key, need, retries-1, done) })
				return
			}
			done(env, nil, fmt.Errorf("%w: %v", fault.ErrUnavailable, r.Err))
			return
		}
		cands := ring.DistinctHosts(r.Succs)
		cands = slices.DeleteFunc(cands, func(c wire.NodeRef) bool { return n.ring.IsDead(env, c) })
		if len(cands) < need && opts.MinSuccs > 0 && len(r.Succs) < n.ring.Config().Succs {
			// A node that knew need successors answered, and they were
			// vnodes of fewer hosts (hosts with several vnodes): the
			// key's predecessor has the whole successor list.
			n.lookupWhole(env, key, done)
			return
		}
		done(env, cands, nil)
	})
}

// lookupWhole looks key up to its predecessor, for its whole successor
// list, and returns the live distinct hosts in it.
func (n *Node) lookupWhole(env node.Env, key id.ID, done func(env node.Env, cands []wire.NodeRef, err error)) {
	n.ring.Lookup(env, key, ring.LookupOptions{}, func(env node.Env, r ring.Result) {
		if r.Err != nil {
			done(env, nil, fmt.Errorf("%w: %v", fault.ErrUnavailable, r.Err))
			return
		}
		cands := ring.DistinctHosts(r.Succs)
		done(env, slices.DeleteFunc(cands, func(c wire.NodeRef) bool { return n.ring.IsDead(env, c) }), nil)
	})
}

// Put stores data until expiry and calls done once: after every replica
// (or a write quorum of fragments) is durable on a distinct host, or with
// the reason it could not be. A copy whose successor is down goes to the
// next live successor. When the write window is full, Put fails at once
// with fault.ErrBusy.
func (n *Node) Put(env node.Env, data []byte, expiry time.Time, r wire.Redundancy, done PutDone) {
	n.put(env, data, putHint{}, expiry, r, done)
}

// putHint is what the sender of a put said of its block: its key as the
// sender computed it (zero if it gave none), whether the node takes that
// key as it is (the sender is in the node's own process) or checks it
// against its own hash, and whether the sender believes the block is
// stored nowhere yet (wire.ClientPutBatch.Fresh).
type putHint struct {
	key     id.ID
	trusted bool
	fresh   bool
}

// put is Put with what the sender said of the block. A block stored as
// fragments is keyed by its descriptor, so a key hint (a content hash) is
// not used for it.
func (n *Node) put(env node.Env, data []byte, hint putHint, expiry time.Time, r wire.Redundancy, done PutDone) {
	r = n.redundancy(r)
	switch {
	case len(data) == 0:
		done(env, id.ID{}, nil, ErrEmpty)
		return
	case len(data) > n.cfg.MaxBlock:
		done(env, id.ID{}, nil, fmt.Errorf("%w: %d bytes, limit %d", fault.ErrTooLarge, len(data), n.cfg.MaxBlock))
		return
	case r != wire.RedundancyReplicas && r != wire.RedundancyFragments:
		done(env, id.ID{}, nil, fmt.Errorf("%w: redundancy %d", fault.ErrBadRequest, r))
		return
	case !expiry.After(env.Now()):
		done(env, id.ID{}, nil, fmt.Errorf("%w: expiry %v has passed", fault.ErrBadRequest, expiry.UTC()))
		return
	case expiry.After(env.Now().Add(n.cfg.MaxRetention)):
		done(env, id.ID{}, nil, fmt.Errorf("%w: expiry %v is more than the ring's maximum retention (%v) ahead", fault.ErrBadRequest, expiry.UTC(), n.cfg.MaxRetention))
		return
	case n.puts >= n.cfg.WriteWindow:
		n.Stats.PutsDeferred++
		done(env, id.ID{}, nil, fmt.Errorf("%w: %d puts in flight at %s", fault.ErrBusy, n.puts, n.rt.Addr()))
		return
	}
	n.puts++
	n.Stats.Puts++
	finish := func(env node.Env, key id.ID, holders []wire.NodeRef, err error) {
		n.puts--
		if err != nil {
			n.Stats.PutsFailed++
		}
		done(env, key, holders, err)
	}
	coder := n.coder
	// Hashing (and coding) runs off the loop, as a 1 MiB block takes about
	// a millisecond; small blocks are hashed at once, which is cheaper than
	// the trip to another goroutine and back.
	// A key from the node's own process needs no hash at all.
	run := n.offload
	trusted := r == wire.RedundancyReplicas && hint.trusted && !hint.key.IsZero()
	if r == wire.RedundancyReplicas && (len(data) <= inlineHash || trusted) {
		run = inline
	}
	run(env, func() (any, error) {
		p := &putOp{}
		if r == wire.RedundancyFragments {
			// A fragmented block's key is its descriptor's hash, not
			// its content hash (package frag).
			key, frags, err := coder.split(data)
			p.key, p.pieces = key, frags
			return p, err
		}
		if p.key = hint.key; !trusted {
			p.key = id.Key(data)
			if !hint.key.IsZero() && hint.key != p.key {
				return nil, fmt.Errorf("%w: the block's hash is %s, its sender gave %s", fault.ErrBadRequest, p.key.Short(), hint.key.Short())
			}
		}
		for i := 0; i < n.cfg.Replicas; i++ {
			p.pieces = append(p.pieces, data)
		}
		return p, nil
	}, func(env node.Env, val any, err error) {
		if err != nil {
			finish(env, id.ID{}, nil, err)
			return
		}
		p := val.(*putOp)
		p.n, p.expiry, p.fragment, p.fresh, p.done = n, expiry, r == wire.RedundancyFragments, hint.fresh, finish
		p.need = len(p.pieces)
		if p.fragment {
			p.need = n.cfg.quorum()
		}
		n.candidates(env, p.key, len(p.pieces), p.start)
	})
}

// putOp places the pieces of one block (k replicas or l fragments).
type putOp struct {
	n        *Node
	key      id.ID
	expiry   time.Time
	fragment bool
	fresh    bool // the putter believes no host has the block (putHint)
	pieces   [][]byte
	need     int // acknowledgements before the put succeeds
	done     PutDone

	cands       []wire.NodeRef
	next        int // first candidate not yet given a piece
	holders     []wire.NodeRef
	outstanding int
	finished    bool
	lastErr     error
}

func (p *putOp) start(env node.Env, cands []wire.NodeRef, err error) {
	if err != nil {
		p.finish(env, err)
		return
	}
	p.cands = cands
	if len(cands) < p.need {
		p.finish(env, fmt.Errorf("%w: %d live hosts for key %s, need %d", fault.ErrUnavailable, len(cands), p.key.Short(), p.need))
		return
	}
	for i := range p.pieces {
		if !p.place(env, i) {
			break
		}
	}
	p.check(env)
}

// place sends piece i to the next unused candidate; false when none is left.
func (p *putOp) place(env node.Env, i int) bool {
	if p.next >= len(p.cands) {
		return false
	}
	c := p.cands[p.next]
	p.next++
	p.outstanding++
	msg := &wire.StoreBlock{Key: p.key, Data: p.pieces[i], Expiry: p.expiry.UnixNano(), Fragment: p.fragment}
	r := p.n.ring
	ok := p.n.storeAt(env, c, msg, p.fresh, p.allowance(), func(env node.Env, err error) {
		p.outstanding--
		if err != nil {
			p.lastErr = err
			r.CallFailed(env, c, err)
			// The copy goes to the next live successor instead;
			// maintenance moves it home later.
			p.place(env, i)
		} else {
			p.holders = append(p.holders, c)
		}
		p.check(env)
	})
	if !ok {
		p.outstanding--
		p.lastErr = fmt.Errorf("%w: too many calls in flight", fault.ErrBusy)
		return false
	}
	return true
}

// allowance is added to a store's timeout for the time the put's copies
// take to leave on the uplink: the pieces go out together, so the last one
// waits for all. It assumes at least 1 Mbit/s, so that a slow link is not
// taken for a dead peer.
func (p *putOp) allowance() time.Duration {
	total := 0
	for _, b := range p.pieces {
		total += len(b)
	}
	return uplinkTime(total)
}

// uplinkTime is how long n bytes may take to leave on the slowest uplink
// allowed for, at most 30 s.
func uplinkTime(n int) time.Duration {
	return min(time.Duration(float64(n)/minUplink*float64(time.Second)), 30*time.Second)
}

// minUplink is the slowest uplink, in bytes per second, that timeouts allow for.
const minUplink = 125e3

func (p *putOp) check(env node.Env) {
	switch {
	case p.finished:
	case len(p.holders) >= p.need:
		p.finish(env, nil)
	case p.outstanding == 0:
		err := fmt.Errorf("%w: %d of %d copies of %s stored (last error: %v)", fault.ErrUnavailable, len(p.holders), p.need, p.key.Short(), p.lastErr)
		switch fault.CodeOf(p.lastErr) {
		case fault.CodeBusy, fault.CodeTooLarge, fault.CodeFull, fault.CodeBadRequest, fault.CodeNotFound, fault.CodeCorrupt:
			// The block or the hosts' state is at fault, not their reachability.
			err = fmt.Errorf("%w: %d of %d copies of %s stored", p.lastErr, len(p.holders), p.need, p.key.Short())
		}
		p.finish(env, err)
	}
}

func (p *putOp) finish(env node.Env, err error) {
	p.finished = true
	if err != nil {
		p.done(env, p.key, nil, err)
		return
	}
	p.done(env, p.key, slices.Clone(p.holders), nil)
}

// storeAt asks c to keep a copy. A copy for this very process goes straight
// to the engine, without a message; a whole block was hashed by Put already.
// With fresh, the putter believes no host has the block, and the engine
// need not look its key up (a gathered copy carries this in its batch).
func (n *Node) storeAt(env node.Env, c wire.NodeRef, m *wire.StoreBlock, fresh bool, allow time.Duration, done func(env node.Env, err error)) bool {
	if c.Addr == n.rt.Addr() {
		n.storing++
		opt := store.PutOptions{Opaque: m.Fragment, KeyChecked: !m.Fragment, Fresh: fresh}
		n.writeCopy(env, m.Key, m.Data, time.Unix(0, m.Expiry), opt, func(env node.Env, err error) {
			n.storing--
			if err == nil {
				n.Stats.Stored++
			}
			done(env, err)
		})
		return true
	}
	if n.gather != nil {
		n.gather.add(c, m, done)
		return true
	}
	timeout := n.rt.RPC().Timeout(c.Addr) + allow
	return n.transfer(env, c, m, timeout, func(env node.Env, _ wire.Msg, err error) { done(env, err) })
}

// transfer makes a block transfer call (a copy stored or fetched) through
// STP's window, or at once with FixedWindow.
func (n *Node) transfer(env node.Env, c wire.NodeRef, m wire.Msg, timeout time.Duration, cont rpc.Reply) bool {
	if n.stp == nil {
		return n.rt.Call(env, c.Addr, n.self(), c.ID, m, timeout, cont)
	}
	return n.stp.call(env, func(env node.Env, done func(env node.Env, err error)) bool {
		return n.rt.Call(env, c.Addr, n.self(), c.ID, m, timeout, func(env node.Env, r wire.Msg, err error) {
			done(env, err)
			cont(env, r, err)
		})
	}, func(env node.Env) {
		cont(env, nil, fmt.Errorf("%w: too many calls in flight", fault.ErrBusy))
	})
}

// inlineHash is the largest block hashed inside the event loop (about 15 µs).
const inlineHash = 16 << 10

// inline runs work at once in the loop, for work too small to offload.
func inline(env node.Env, run func() (any, error), done func(env node.Env, val any, err error)) {
	v, err := run()
	done(env, v, err)
}
