package d2

import (
	"bytes"
	"time"

	"triad/internal/fault"
	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/rpc"
	"triad/internal/wire"
)

// The client API. A node serves a client's request as its gateway: it
// finds the key's owner (lookup cache, else a lookup) and talks to the
// owner and its successors directly, as D2-Store downloads blocks from
// the responsible nodes once located (§7).

// begin takes a slot for a client request; false when too many are in
// flight.
func (n *Node) begin() bool {
	if n.pending >= n.cfg.MaxPending {
		n.Stats.Busy++
		return false
	}
	n.pending++
	return true
}

// resolveFresh is resolve, or a plain lookup on a second attempt (the
// cached owner was wrong).
func (n *Node) resolveFresh(env node.Env, k id.ID, attempt int, done Done) {
	if attempt == 0 {
		n.resolve(env, k, done)
		return
	}
	n.Lookup(env, k, func(env node.Env, r Route, err error) {
		if err == nil && n.cfg.CacheTTL > 0 && r.Owner.Node.Addr != n.self.Addr {
			n.cache.add(r, env.Now(), n.cfg.CacheTTL)
		}
		done(env, r, err)
	})
}

// Put stores data under k on k's r successors and reports the copies
// stored: the owner answers once every replica it asked has answered, so
// copies < r means some did not store it.
func (n *Node) Put(env node.Env, k id.ID, data []byte, done func(env node.Env, copies int, err error)) {
	if err := key(k); err != nil {
		done(env, 0, err)
		return
	}
	if len(data) > n.cfg.BlockBytes {
		done(env, 0, ErrTooLarge)
		return
	}
	if !n.begin() {
		done(env, 0, ErrBusy)
		return
	}
	n.Stats.Puts++
	n.put(env, k, data, 0, func(env node.Env, copies int, err error) {
		n.pending--
		done(env, copies, err)
	})
}

func (n *Node) put(env node.Env, k id.ID, data []byte, attempt int, done func(env node.Env, copies int, err error)) {
	n.resolveFresh(env, k, attempt, func(env node.Env, r Route, err error) {
		if err != nil {
			done(env, 0, err)
			return
		}
		n.putAt(env, k, data, r, attempt, done)
	})
}

// putAt sends a put to the owner r names. An owner that answers "not
// mine" is asked for its neighbours, which name the right one (a node
// just joined or moved in front of it): one more attempt.
func (n *Node) putAt(env node.Env, k id.ID, data []byte, r Route, attempt int, done func(env node.Env, copies int, err error)) {
	if r.Owner.Node.Addr == n.self.Addr {
		n.putHere(env, k, data, attempt, done)
		return
	}
	ok := n.callFor(env, r.Owner.Node.Addr, &wire.D2Store{Key: k, Data: data, Primary: true}, relayTimeout, func(env node.Env, reply wire.Msg, err error) {
		s, ok := reply.(*wire.D2Stored)
		switch {
		case err != nil && attempt == 0:
			n.cache.drop(k)
			n.put(env, k, data, 1, done)
		case err != nil:
			done(env, 0, err)
		case !ok:
			done(env, 0, ErrNoRoute)
		case s.NotMine && attempt < maxAttempts:
			n.wrong(k)
			n.reroute(env, r.Owner, k, func(env node.Env, r Route, err error) {
				if err != nil {
					done(env, 0, err)
					return
				}
				n.putAt(env, k, data, r, attempt+1, done)
			})
		case s.NotMine:
			done(env, 0, ErrNoRoute)
		default:
			done(env, int(s.Copies), nil)
		}
	})
	if !ok {
		done(env, 0, ErrBusy)
	}
}

// maxAttempts bounds the owners a client request tries after "not mine".
const maxAttempts = 3

// reroute finds k's owner after the node at wrong said k was not its: in
// wrong's neighbour lists, else by a lookup.
func (n *Node) reroute(env node.Env, wrong wire.D2Ref, k id.ID, done Done) {
	ok := n.call(env, wrong.Node.Addr, &wire.D2GetNeighbors{}, func(env node.Env, reply wire.Msg, err error) {
		if nb, ok := reply.(*wire.D2Neighbors); err == nil && ok {
			if r, found := routeAmong(k, nb); found {
				if n.cfg.CacheTTL > 0 && r.Owner.Node.Addr != n.self.Addr {
					n.cache.add(r, env.Now(), n.cfg.CacheTTL)
				}
				done(env, r, nil)
				return
			}
		}
		n.Lookup(env, k, done)
	})
	if !ok {
		done(env, Route{}, ErrBusy)
	}
}

// putHere stores a block this node owns, and on its successors.
func (n *Node) putHere(env node.Env, k id.ID, data []byte, attempt int, done func(env node.Env, copies int, err error)) {
	if !n.mayOwn(k) {
		// A stale route: this node's own neighbours name the owner.
		r, found := routeAmong(k, n.neighbors())
		switch {
		case attempt >= maxAttempts:
			done(env, 0, ErrNoRoute)
		case found && r.Owner.Node.Addr != n.self.Addr:
			n.putAt(env, k, data, r, attempt+1, done)
		default:
			n.put(env, k, data, attempt+1, done)
		}
		return
	}
	n.writeLocal(env, k, data, func(env node.Env, err error) {
		if err != nil {
			done(env, 0, err)
			return
		}
		n.replicate(env, k, data, func(env node.Env, copies int) { done(env, 1+copies, nil) })
	})
}

// Get returns the block k whose SHA-256 is hash: from the owner, else from
// the next replica. A copy that does not match hash is skipped and counted
// (Stats.Mismatches), never returned.
func (n *Node) Get(env node.Env, k id.ID, hash []byte, done func(env node.Env, data []byte, err error)) {
	if err := key(k); err != nil {
		done(env, nil, err)
		return
	}
	if len(hash) != hashBytes {
		done(env, nil, fault.New(fault.ErrBadRequest, "d2: a get needs the block's SHA-256"))
		return
	}
	if !n.begin() {
		done(env, nil, ErrBusy)
		return
	}
	n.Stats.Gets++
	n.get(env, k, hash, 0, func(env node.Env, data []byte, err error) {
		n.pending--
		done(env, data, err)
	})
}

func (n *Node) get(env node.Env, k id.ID, hash []byte, attempt int, done func(env node.Env, data []byte, err error)) {
	n.resolveFresh(env, k, attempt, func(env node.Env, r Route, err error) {
		if err != nil {
			done(env, nil, err)
			return
		}
		n.getFrom(env, k, hash, r.Holders(n.cfg.Replicas), true, attempt, done)
	})
}

// getFrom asks each holder in turn, the owner first (which may answer
// through a pointer); a holder that answers "not mine" sends the get back
// to a lookup once.
func (n *Node) getFrom(env node.Env, k id.ID, hash []byte, holders []wire.D2Ref, owner bool, attempt int, done func(env node.Env, data []byte, err error)) {
	if len(holders) == 0 {
		done(env, nil, ErrNotFound)
		return
	}
	next := func(env node.Env) { n.getFrom(env, k, hash, holders[1:], false, attempt, done) }
	if holders[0].Node.Addr == n.self.Addr {
		n.fetchHere(env, k, hash, true, func(env node.Env, data []byte, ok bool) {
			if ok {
				done(env, data, nil)
				return
			}
			next(env)
		})
		return
	}
	m := &wire.D2Fetch{Key: k, Hash: hash, Local: !owner}
	timeout := time.Duration(0)
	if owner {
		timeout = relayTimeout
	}
	ok := n.callFor(env, holders[0].Node.Addr, m, timeout, func(env node.Env, reply wire.Msg, err error) {
		b, ok := reply.(*wire.D2Block)
		switch {
		case err == nil && ok && b.NotMine && attempt < maxAttempts:
			n.wrong(k)
			n.reroute(env, holders[0], k, func(env node.Env, r Route, err error) {
				if err != nil {
					done(env, nil, err)
					return
				}
				n.getFrom(env, k, hash, r.Holders(n.cfg.Replicas), true, attempt+1, done)
			})
		case err == nil && ok && b.Found && bytes.Equal(Sum(b.Data), hash):
			done(env, b.Data, nil)
		default:
			if err == nil && ok && b.Found {
				n.Stats.Mismatches++
			}
			next(env)
		}
	})
	if !ok {
		done(env, nil, ErrBusy)
	}
}

// Delete removes k from its owner and successors and reports the copies
// removed.
func (n *Node) Delete(env node.Env, k id.ID, done func(env node.Env, copies int, err error)) {
	if err := key(k); err != nil {
		done(env, 0, err)
		return
	}
	if !n.begin() {
		done(env, 0, ErrBusy)
		return
	}
	n.Stats.Deletes++
	n.resolve(env, k, func(env node.Env, r Route, err error) {
		if err != nil {
			n.pending--
			done(env, 0, err)
			return
		}
		holders := r.Holders(n.cfg.Replicas)
		left, copies := len(holders), 0
		finish := func(env node.Env) {
			if left--; left == 0 {
				n.pending--
				done(env, copies, nil)
			}
		}
		for _, h := range holders {
			if h.Node.Addr == n.self.Addr {
				if n.dropLocal(env, k) {
					copies++
				}
				finish(env)
				continue
			}
			if !n.call(env, h.Node.Addr, &wire.D2Drop{Key: k}, func(env node.Env, reply wire.Msg, err error) {
				if s, ok := reply.(*wire.D2Stored); err == nil && ok && s.Copies > 0 {
					copies++
				}
				finish(env)
			}) {
				finish(env)
			}
		}
	})
}

// maxLatestSteps bounds the owners a Latest walks back through.
const maxLatestSteps = 16

// Latest finds the greatest stored key that starts with prefix (the file
// system's newest root version of a volume). It asks the owner of the
// prefix's last key for its greatest key of the prefix, and, when that
// owner's range begins inside the prefix's keys and holds none of them,
// the owner before it, and so on: the keys may span node boundaries.
func (n *Node) Latest(env node.Env, prefix []byte, done func(env node.Env, k id.ID, found bool, err error)) {
	if len(prefix) > KeyBytes {
		done(env, id.ID{}, false, ErrBadKey)
		return
	}
	if !n.begin() {
		done(env, id.ID{}, false, ErrBusy)
		return
	}
	n.Stats.Latests++
	lo := make([]byte, KeyBytes)
	hi := bytes.Repeat([]byte{0xff}, KeyBytes)
	copy(lo, prefix)
	copy(hi, prefix)
	first, _ := id.FromBytes(lo)
	last, _ := id.FromBytes(hi)
	below := first.Sub(id.Min(KeyBytes).AddPow2(0)) // the arc (below, last] is the prefix's keys
	n.latest(env, below, last, 0, func(env node.Env, k id.ID, found bool, err error) {
		n.pending--
		done(env, k, found, err)
	})
}

func (n *Node) latest(env node.Env, below, hi id.ID, steps int, done func(env node.Env, k id.ID, found bool, err error)) {
	n.resolve(env, hi, func(env node.Env, r Route, err error) {
		if err != nil {
			done(env, id.ID{}, false, err)
			return
		}
		answer := func(env node.Env, l *wire.D2KeyList) {
			switch {
			case len(l.Keys) == 1 && (r.Lo == r.Owner.Pos || l.Keys[0].In(r.Lo, hi)):
				done(env, l.Keys[0], true, nil)
			case r.Lo != r.Owner.Pos && r.Lo.Between(below, hi) && steps < maxLatestSteps:
				n.latest(env, below, r.Lo, steps+1, done) // the owner before holds the rest
			case len(l.Keys) == 1:
				done(env, l.Keys[0], true, nil)
			default:
				done(env, id.ID{}, false, nil)
			}
		}
		q := &wire.D2Keys{Lo: below, Hi: hi, Last: true}
		if r.Owner.Node.Addr == n.self.Addr {
			answer(env, n.keys(q))
			return
		}
		if !n.call(env, r.Owner.Node.Addr, q, func(env node.Env, reply wire.Msg, err error) {
			l, ok := reply.(*wire.D2KeyList)
			if err != nil || !ok {
				done(env, id.ID{}, false, ErrNoRoute)
				return
			}
			answer(env, l)
		}) {
			done(env, id.ID{}, false, ErrBusy)
		}
	})
}

// clientRequest serves the client API's messages.
func (n *Node) clientRequest(env node.Env, in node.MsgIn) {
	fail := func(env node.Env, err error) {
		rpc.RespondError(env, in, n.self, fault.CodeOf(err), err.Error())
	}
	switch m := in.Env.Msg.(type) {
	case *wire.D2Put:
		n.Put(env, m.Key, m.Data, func(env node.Env, copies int, err error) {
			if err != nil {
				fail(env, err)
				return
			}
			rpc.Respond(env, in, n.self, &wire.D2Stored{Copies: uint32(copies)})
		})
	case *wire.D2Get:
		n.Get(env, m.Key, m.Hash, func(env node.Env, data []byte, err error) {
			if err != nil {
				fail(env, err)
				return
			}
			rpc.Respond(env, in, n.self, &wire.D2Block{Key: m.Key, Data: data, Found: true})
		})
	case *wire.D2Delete:
		n.Delete(env, m.Key, func(env node.Env, copies int, err error) {
			if err != nil {
				fail(env, err)
				return
			}
			rpc.Respond(env, in, n.self, &wire.D2Stored{Copies: uint32(copies)})
		})
	case *wire.D2Latest:
		n.Latest(env, m.Prefix, func(env node.Env, k id.ID, found bool, err error) {
			switch {
			case err != nil:
				fail(env, err)
			case found:
				rpc.Respond(env, in, n.self, &wire.D2KeyList{Keys: []id.ID{k}})
			default:
				rpc.Respond(env, in, n.self, &wire.D2KeyList{})
			}
		})
	}
}
