package d2

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"triad/internal/fault"
	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/rpc"
	"triad/internal/store"
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
// copies < r means some did not store it. mode says what the put may
// replace and prev is the SHA-256 D2PutIfHash expects (wire.D2PutMode);
// the key's owner decides, one put of the key at a time (put.go). A
// condition that does not hold is ErrConflict, and nothing is stored. A
// conditional put whose owner does not answer in time is not sent again
// (a second try could find its own first one and conflict): its error
// leaves its outcome unknown, to be read back.
func (n *Node) Put(env node.Env, k id.ID, data []byte, mode wire.D2PutMode, prev []byte, done func(env node.Env, copies int, err error)) {
	n.putSigned(env, putReq{key: k, data: data, mode: mode, prev: prev}, done)
}

// putSigned is Put of a client's put, relayed to the owner with its
// consent p.auth, which the owner checks again.
func (n *Node) putSigned(env node.Env, p putReq, done func(env node.Env, copies int, err error)) {
	k, data, mode, prev := p.key, p.data, p.mode, p.prev
	if err := errors.Join(key(k), checkPut(mode, prev)); err != nil {
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
	n.put(env, p, 0, func(env node.Env, copies int, err error) {
		n.pending--
		done(env, copies, err)
	})
}

func (n *Node) put(env node.Env, p putReq, attempt int, done putDone) {
	n.resolveFresh(env, p.key, attempt, func(env node.Env, r Route, err error) {
		if err != nil {
			done(env, 0, err)
			return
		}
		n.putAt(env, p, r, attempt, done)
	})
}

// relayPut is the message that hands p to its owner: a D2Store marked
// Primary, with the put's mode, a node-to-node message (the gateway has
// checked a client's put: auth.go).
func relayPut(p putReq) wire.Msg {
	return &wire.D2Store{Key: p.key, Data: p.data, Primary: true, Mode: p.mode, Prev: p.prev, Auth: p.auth, ConfirmTo: p.confirmTo, Tag: p.tag}
}

// putAt sends a put to the owner r names. An owner that answers "not
// mine" is asked for its neighbours, which name the right one (a node
// just joined or moved in front of it): one more attempt.
func (n *Node) putAt(env node.Env, p putReq, r Route, attempt int, done putDone) {
	if r.Owner.Node.Addr == n.self.Addr {
		n.putHere(env, p, attempt, done)
		return
	}
	conditional := p.mode == wire.D2PutIfAbsent || p.mode == wire.D2PutIfHash
	owner := r.Owner.Node
	n.expectConfirms(&p)
	ok := n.callTo(env, owner.Addr, owner.ID, relayPut(p), relayTimeout, func(env node.Env, reply wire.Msg, err error) {
		confirms := n.takeConfirms(p)
		s, ok := reply.(*wire.D2StoreDone)
		switch {
		case err != nil && attempt == 0 && !conditional:
			n.cache.drop(p.key)
			n.put(env, p, 1, done)
		case err != nil:
			if conditional {
				n.cache.drop(p.key)
			}
			done(env, 0, err)
		case !ok:
			done(env, 0, ErrNoRoute)
		case s.NotMine && attempt < maxAttempts:
			n.wrong(p.key)
			n.reroute(env, r.Owner, p.key, func(env node.Env, r Route, err error) {
				if err != nil {
					done(env, 0, err)
					return
				}
				n.putAt(env, p, r, attempt+1, done)
			})
		case s.NotMine:
			done(env, 0, ErrNoRoute)
		case s.Conflict:
			done(env, 0, ErrConflict)
		case n.cfg.VerifyCopies && s.Copies > 0:
			n.verifyCopies(env, p, r, owner.Addr, s, confirms, done)
		default:
			done(env, int(s.Copies), nil)
		}
	})
	if !ok {
		n.takeConfirms(p)
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

// putHere decides a put of a key this node owns (ownerPut).
func (n *Node) putHere(env node.Env, p putReq, attempt int, done putDone) {
	if !n.mayOwn(p.key) {
		n.putElsewhere(env, p, attempt, done)
		return
	}
	n.ownerPut(env, p, func(env node.Env, copies int, err error) {
		if errors.Is(err, errNotMine) {
			n.putElsewhere(env, p, attempt, done)
			return
		}
		done(env, copies, err)
	})
}

// putElsewhere sends on a put that a stale route brought here: this
// node's own neighbours name the owner.
func (n *Node) putElsewhere(env node.Env, p putReq, attempt int, done putDone) {
	r, found := routeAmong(p.key, n.neighbors())
	switch {
	case attempt >= maxAttempts:
		done(env, 0, ErrNoRoute)
	case found && r.Owner.Node.Addr != n.self.Addr:
		n.putAt(env, p, r, attempt+1, done)
	default:
		n.put(env, p, attempt+1, done)
	}
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
		n.getFrom(env, k, hash, r.Holders(n.cfg.Replicas), nil, attempt, done)
	})
}

// getFrom asks each holder in turn, the owner first (which may answer
// through a pointer); a holder that answers "not mine" sends the get back
// to a lookup once. missed are the holders asked before that had no copy
// whose hash matched: once a later one has, each is given the block
// (repair), if it holds nothing under the key.
func (n *Node) getFrom(env node.Env, k id.ID, hash []byte, holders, missed []wire.D2Ref, attempt int, done func(env node.Env, data []byte, err error)) {
	if len(holders) == 0 {
		done(env, nil, ErrNotFound)
		return
	}
	owner := len(missed) == 0
	next := func(env node.Env) { n.getFrom(env, k, hash, holders[1:], append(missed, holders[0]), attempt, done) }
	found := func(env node.Env, c blockCopy) {
		n.repair(env, k, c, missed)
		done(env, c.data, nil)
	}
	if holders[0].Node.Addr == n.self.Addr {
		n.fetchHere(env, k, hash, true, func(env node.Env, c blockCopy, ok bool) {
			if ok {
				found(env, c)
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
				n.getFrom(env, k, hash, r.Holders(n.cfg.Replicas), nil, attempt+1, done)
			})
		case err == nil && ok && b.Found && bytes.Equal(Sum(b.Data), hash):
			found(env, blockCopy{data: b.Data, version: b.Version})
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

// repair gives data, the block k a get found, to the holders that lacked
// it: a replica store that does not replace, so a holder with other bytes
// under k keeps them (they may be newer than the get's pointer), and a
// holder that lost its copy (a damaged record, a disk replaced) has it
// again at once rather than at the owner's next sync. The copy keeps the
// version it was read with.
func (n *Node) repair(env node.Env, k id.ID, c blockCopy, missed []wire.D2Ref) {
	for _, h := range missed {
		if h.Node.Addr == n.self.Addr {
			n.keepCopy(env, k, c, false, func(env node.Env, err error) {
				if err == nil {
					n.Stats.Repaired++
				}
			})
			continue
		}
		n.call(env, h.Node.Addr, copyMsg(k, c, false), func(env node.Env, reply wire.Msg, err error) {
			if s, ok := reply.(*wire.D2StoreDone); err == nil && ok && s.Copies > 0 {
				n.Stats.Repaired++
			}
		})
	}
}

// Delete removes k from its owner and successors and reports the copies
// removed.
func (n *Node) Delete(env node.Env, k id.ID, done func(env node.Env, copies int, err error)) {
	n.deleteSigned(env, k, wire.D2Auth{}, done)
}

// deleteSigned is Delete of a client's delete: each holder is shown its
// consent auth, without which it drops nothing.
func (n *Node) deleteSigned(env node.Env, k id.ID, auth wire.D2Auth, done func(env node.Env, copies int, err error)) {
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
				if n.deleteHere(env, k, auth) {
					copies++
				}
				finish(env)
				continue
			}
			if !n.call(env, h.Node.Addr, &wire.D2Drop{Key: k, Auth: auth}, func(env node.Env, reply wire.Msg, err error) {
				if s, ok := reply.(*wire.D2StoreDone); err == nil && ok && s.Copies > 0 {
					copies++
				}
				finish(env)
			}) {
				finish(env)
			}
		}
	})
}

// StatDone receives a Stat's outcome: the key's holders in placement
// order, the owner first, each with what it answered.
type StatDone func(env node.Env, holders []wire.D2Holder, err error)

// Stat reports which nodes hold k: its r holders by placement (the owner
// and its successors, from a fresh lookup, as a cached route may be
// stale) and whether each keeps a copy whose SHA-256 is hash in its own
// engine (a pointer to another's copy is none). A holder that does not
// answer is D2HolderNoAnswer, not missing. It is triad fs stat's view of
// a block's replicas.
func (n *Node) Stat(env node.Env, k id.ID, hash []byte, done StatDone) {
	if err := key(k); err != nil {
		done(env, nil, err)
		return
	}
	if len(hash) != hashBytes {
		done(env, nil, fault.New(fault.ErrBadRequest, "d2: a stat needs the block's SHA-256"))
		return
	}
	if !n.begin() {
		done(env, nil, ErrBusy)
		return
	}
	n.Stats.StatReqs++
	n.Lookup(env, k, func(env node.Env, r Route, err error) {
		if err != nil {
			n.pending--
			done(env, nil, err)
			return
		}
		n.checkHolders(env, k, hash, r.Holders(n.cfg.Replicas), func(env node.Env, holders []wire.D2Holder, err error) {
			n.pending--
			done(env, holders, err)
		})
	})
}

// checkHolders asks each of holders at once whether it keeps a copy of k
// whose SHA-256 is hash (this node looks in its own engine).
func (n *Node) checkHolders(env node.Env, k id.ID, hash []byte, holders []wire.D2Ref, done StatDone) {
	out := make([]wire.D2Holder, len(holders))
	left := len(holders)
	finish := func(env node.Env) {
		if left--; left == 0 {
			done(env, out, nil)
		}
	}
	has := func(found bool) wire.D2HolderState {
		if found {
			return wire.D2HolderOK
		}
		return wire.D2HolderMissing
	}
	for i, h := range holders {
		out[i].Node = h
		if h.Node.Addr == n.self.Addr {
			n.fetchHere(env, k, hash, false, func(env node.Env, _ blockCopy, ok bool) {
				out[i].State = has(ok)
				finish(env)
			})
			continue
		}
		m := &wire.D2Fetch{Key: k, Hash: hash, Local: true, NoData: true}
		if !n.call(env, h.Node.Addr, m, func(env node.Env, reply wire.Msg, err error) {
			if b, ok := reply.(*wire.D2Block); err == nil && ok {
				out[i].State = has(b.Found)
			}
			finish(env)
		}) {
			finish(env)
		}
	}
}

// maxLatestSteps bounds the owners a Latest walks back through.
const maxLatestSteps = 16

// LatestDone receives a Latest's outcome: the greatest key of the prefix
// and its bytes (found false: none).
type LatestDone func(env node.Env, k id.ID, data []byte, found bool, err error)

// Latest finds the greatest stored key that starts with prefix (the file
// system's newest root version of a volume) and its bytes. It asks the
// owner of the prefix's last key and that owner's r-1 successors for
// their greatest key of the prefix in the owner's range, and takes the
// greatest: every acknowledged put reached the owner and was replicated
// from it, so when the owner just changed (a node joined in front of it,
// which then lacks the keys it has not taken pointers to yet, or the
// owner failed and its successor took over) the old owner or a replica
// is among those asked. An owner that does not answer fails the Latest
// (ErrUnavailable; its cache entry is dropped for the next try) rather
// than answer from replicas alone. When the owner's range begins inside
// the prefix's keys and none of them holds one there, the owner before it
// is asked, and so on: the keys may span node boundaries. The bytes come
// from the owner, else from a holder that named the key; they are not
// checked (nothing names their hash).
func (n *Node) Latest(env node.Env, prefix []byte, done LatestDone) {
	if len(prefix) > KeyBytes {
		done(env, id.ID{}, nil, false, ErrBadKey)
		return
	}
	if !n.begin() {
		done(env, id.ID{}, nil, false, ErrBusy)
		return
	}
	n.Stats.Latests++
	first, last := prefixArc(prefix)
	below := first.Sub(id.Min(KeyBytes).AddPow2(0)) // the arc (below, last] is the prefix's keys
	n.latest(env, below, last, 0, 0, func(env node.Env, k id.ID, data []byte, found bool, err error) {
		n.pending--
		done(env, k, data, found, err)
	})
}

func (n *Node) latest(env node.Env, below, hi id.ID, steps, attempt int, done LatestDone) {
	n.resolveFresh(env, hi, attempt, func(env node.Env, r Route, err error) {
		if err != nil {
			done(env, id.ID{}, nil, false, err)
			return
		}
		holders := r.Holders(n.cfg.Replicas)
		lo := below // the owner's part of the arc: what its holders vouch for
		if r.Lo != r.Owner.Pos && r.Lo.Between(below, hi) {
			lo = r.Lo
		}
		n.lastKeys(env, holders, lo, hi, func(env node.Env, last []id.ID, answered []bool, vouches int) {
			if !answered[0] {
				n.cache.drop(hi)
				done(env, id.ID{}, nil, false, fmt.Errorf("%w: the owner of %s did not answer", ErrUnavailable, hi.Short()))
				return
			}
			if vouches < quorum(len(holders)) && attempt == 0 {
				// A cached route may name holders the ring has moved on
				// from (a partition healed): ask a fresh lookup's.
				n.cache.drop(hi)
				n.latest(env, below, hi, steps, attempt+1, done)
				return
			}
			if vouches < quorum(len(holders)) {
				n.Stats.Unvouched++
				done(env, id.ID{}, nil, false, errUnvouched(hi))
				return
			}
			var best id.ID
			var from []wire.NodeRef
			for i, k := range last {
				if k.IsZero() || !(r.Lo == r.Owner.Pos || k.In(r.Lo, hi)) {
					continue // none, or the range of an owner before
				}
				switch {
				case best.IsZero() || below.Distance(best).Cmp(below.Distance(k)) < 0:
					best, from = k, []wire.NodeRef{holders[i].Node}
				case k == best:
					from = append(from, holders[i].Node)
				}
			}
			switch {
			case !best.IsZero():
				n.latestBytes(env, best, r.Owner.Node, from, done)
			case r.Lo != r.Owner.Pos && r.Lo.Between(below, hi) && steps < maxLatestSteps:
				n.latest(env, below, r.Lo, steps+1, 0, done) // the owner before holds the rest
			default:
				done(env, id.ID{}, nil, false, nil)
			}
		})
	})
}

// lastKeys asks each holder for its greatest key of (below, hi]: last[i]
// is holders[i]'s (zero: none), answered[i] whether it answered, vouches
// how many that answered vouched for the arc (doubt.go).
func (n *Node) lastKeys(env node.Env, holders []wire.D2Ref, below, hi id.ID, done func(env node.Env, last []id.ID, answered []bool, vouches int)) {
	last, answered := make([]id.ID, len(holders)), make([]bool, len(holders))
	vouches := 0
	left := len(holders)
	finish := func(env node.Env) {
		if left--; left == 0 {
			done(env, last, answered, vouches)
		}
	}
	q := &wire.D2Keys{Lo: below, Hi: hi, Last: true}
	take := func(i int, l *wire.D2KeyList) {
		answered[i] = true
		if !l.Unsure {
			vouches++
		}
		if len(l.Keys) == 1 {
			last[i] = l.Keys[0]
		}
	}
	for i, h := range holders {
		if h.Node.Addr == n.self.Addr {
			take(i, n.keys(env, q))
			finish(env)
			continue
		}
		if !n.call(env, h.Node.Addr, q, func(env node.Env, reply wire.Msg, err error) {
			if l, ok := reply.(*wire.D2KeyList); err == nil && ok {
				take(i, l)
			}
			finish(env)
		}) {
			finish(env)
		}
	}
}

// latestBytes reads k's bytes for a Latest: the newest copy (by
// version) among the holders that named k, so that a holder that missed a
// replace (it was down) is outvoted; else, when those hold only pointers,
// through the owner.
func (n *Node) latestBytes(env node.Env, k id.ID, owner wire.NodeRef, from []wire.NodeRef, done LatestDone) {
	answer := func(env node.Env, c blockCopy, ok bool) {
		if !ok {
			done(env, id.ID{}, nil, false, fmt.Errorf("%w: no holder gave the bytes of %s", ErrUnavailable, k.Short()))
			return
		}
		done(env, k, c.data, true, nil)
	}
	n.newest(env, k, from, func(env node.Env, c blockCopy, ok bool) {
		switch {
		case ok:
			answer(env, c, true)
		case owner.Addr == n.self.Addr:
			n.fetchHere(env, k, nil, true, answer)
		default:
			if !n.callFor(env, owner.Addr, &wire.D2Fetch{Key: k}, relayTimeout, func(env node.Env, reply wire.Msg, err error) {
				b, ok := reply.(*wire.D2Block)
				if err == nil && ok && b.Found {
					answer(env, blockCopy{data: b.Data, version: b.Version}, true)
					return
				}
				answer(env, blockCopy{}, false)
			}) {
				answer(env, blockCopy{}, false)
			}
		}
	})
}

// clientRequest serves the client API's messages.
func (n *Node) clientRequest(env node.Env, in node.MsgIn) {
	fail := func(env node.Env, err error) {
		rpc.RespondError(env, in, n.self, fault.CodeOf(err), err.Error())
	}
	if err := n.authorizeRequest(env, in.Env.Msg); err != nil {
		fail(env, err)
		return
	}
	switch m := in.Env.Msg.(type) {
	case *wire.D2Put:
		if err := n.claimAllowed(in.Client, m.Key); err != nil {
			fail(env, err)
			return
		}
		n.putSigned(env, putReq{key: m.Key, data: m.Data, mode: m.Mode, prev: m.Prev, auth: cloneAuth(m.Auth)}, func(env node.Env, copies int, err error) {
			switch {
			case errors.Is(err, ErrConflict):
				rpc.Respond(env, in, n.self, &wire.D2StoreDone{Conflict: true})
			case err != nil:
				fail(env, err)
			default:
				if copies > 0 {
					n.claimed(env, in.Client, m.Key)
				}
				rpc.Respond(env, in, n.self, &wire.D2StoreDone{Copies: uint32(copies)})
			}
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
		n.deleteSigned(env, m.Key, cloneAuth(m.Auth), func(env node.Env, copies int, err error) {
			if err != nil {
				fail(env, err)
				return
			}
			rpc.Respond(env, in, n.self, &wire.D2StoreDone{Copies: uint32(copies)})
		})
	case *wire.D2Stat:
		n.Stat(env, m.Key, m.Hash, func(env node.Env, holders []wire.D2Holder, err error) {
			if err != nil {
				fail(env, err)
				return
			}
			rpc.Respond(env, in, n.self, &wire.D2Holders{Key: m.Key, Holders: holders})
		})
	case *wire.D2List:
		n.List(env, m.Prefix, m.After, int(m.Max), func(env node.Env, keys []id.ID, next id.ID, err error) {
			if err != nil {
				fail(env, err)
				return
			}
			rpc.Respond(env, in, n.self, &wire.D2Listing{Keys: keys, Next: next})
		})
	case *wire.D2Latest:
		n.Latest(env, m.Prefix, func(env node.Env, k id.ID, data []byte, found bool, err error) {
			switch {
			case err != nil:
				fail(env, err)
			default:
				rpc.Respond(env, in, n.self, &wire.D2Block{Key: k, Data: data, Found: found})
			}
		})
	case *wire.D2GetSpace:
		n.Space(env, func(env node.Env, s wire.D2Space, err error) {
			if err != nil {
				fail(env, err)
				return
			}
			rpc.Respond(env, in, n.self, &s)
		})
	}
}

// Space reports this node's D2 store, for a client's D2GetSpace: its
// engine's capacity and usage (read off the event loop: a disk engine
// counts its index), the ring's r, whether the node is on the ring, and
// its primary load and held keys.
// It asks no other node, and answers whether joined or not, so a client
// learns from it that D2 runs here and is still joining.
func (n *Node) Space(env node.Env, done func(env node.Env, s wire.D2Space, err error)) {
	if !n.begin() {
		done(env, wire.D2Space{}, ErrBusy)
		return
	}
	n.offload(env, &engineWork{op: opStats, done: func(env node.Env, res any, err error) {
		n.pending--
		st, ok := res.(store.Stats)
		if err != nil || !ok {
			done(env, wire.D2Space{}, fmt.Errorf("%w: the engine's stats: %v", fault.ErrInternal, err))
			return
		}
		done(env, wire.D2Space{Joined: n.joined, Capacity: uint64(max(st.Capacity, 0)), Usage: uint64(max(st.Usage, 0)),
			Replicas: uint32(n.cfg.Replicas), Distrusted: n.distrustedNames(),
			Primary: uint64(n.Load()), Held: uint64(n.Held())}, nil)
	}})
}

// ListDone receives a List's outcome: keys in key order, and the after of
// the next call (zero: none).
type ListDone func(env node.Env, keys []id.ID, next id.ID, err error)

// List returns the stored keys that start with prefix and come after
// after (zero: from the first), at most max (0 or past wire.MaxD2Keys:
// that many), from the range of one owner: the owner of the key after
// after, asked for its keys up to the end of its range or of the prefix,
// blocks and pointers alike. next continues the listing, past that
// owner's range or past the last key sent. A listing that meets a
// changing ring may miss a key that moved (it lists what owners hold); it
// never lists one that no node holds.
func (n *Node) List(env node.Env, prefix []byte, after id.ID, max int, done ListDone) {
	if len(prefix) > KeyBytes || !after.IsZero() && (after.Width() != KeyBytes || !bytes.HasPrefix(after.Bytes(), prefix)) {
		done(env, nil, id.ID{}, ErrBadKey)
		return
	}
	if max <= 0 || max > wire.MaxD2Keys {
		max = wire.MaxD2Keys
	}
	if !n.begin() {
		done(env, nil, id.ID{}, ErrBusy)
		return
	}
	n.Stats.Lists++
	first, last := prefixArc(prefix)
	lo := first.Sub(id.Min(KeyBytes).AddPow2(0)) // the arc (lo, last] is the prefix's keys
	if !after.IsZero() {
		lo = after
	}
	finish := func(env node.Env, keys []id.ID, next id.ID, err error) {
		n.pending--
		done(env, keys, next, err)
	}
	if lo == last {
		finish(env, nil, id.ID{}, nil)
		return
	}
	start := lo.Add(id.Min(KeyBytes).AddPow2(0))
	n.resolve(env, start, func(env node.Env, r Route, err error) {
		if err != nil {
			finish(env, nil, id.ID{}, err)
			return
		}
		hi := last
		if r.Owner.Pos.In(lo, last) {
			hi = r.Owner.Pos
		}
		q := &wire.D2Keys{Lo: lo, Hi: hi, Max: uint32(max), Pointers: true}
		answer := func(env node.Env, l *wire.D2KeyList) {
			var next id.ID
			switch {
			case l.More && len(l.Keys) > 0:
				next = l.Keys[len(l.Keys)-1]
			case hi != last:
				next = hi
			}
			finish(env, l.Keys, next, nil)
		}
		if r.Owner.Node.Addr == n.self.Addr {
			answer(env, n.keys(env, q))
			return
		}
		if !n.call(env, r.Owner.Node.Addr, q, func(env node.Env, reply wire.Msg, err error) {
			l, ok := reply.(*wire.D2KeyList)
			if err != nil || !ok {
				n.cache.drop(start)
				finish(env, nil, id.ID{}, fmt.Errorf("%w: the owner of %s did not list its keys", ErrUnavailable, start.Short()))
				return
			}
			answer(env, l)
		}) {
			finish(env, nil, id.ID{}, ErrBusy)
		}
	})
}

// prefixArc is the first and last keys that start with prefix.
func prefixArc(prefix []byte) (first, last id.ID) {
	lo := make([]byte, KeyBytes)
	hi := bytes.Repeat([]byte{0xff}, KeyBytes)
	copy(lo, prefix)
	copy(hi, prefix)
	first, _ = id.FromBytes(lo)
	last, _ = id.FromBytes(hi)
	return first, last
}
