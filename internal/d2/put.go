package d2

import (
	"bytes"
	"errors"
	"fmt"

	"triad/internal/fault"
	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/rpc"
	"triad/internal/store"
	"triad/internal/wire"
)

// Puts at the key's owner. A put's mode (wire.D2PutMode) is decided by
// the key's owner, against what it holds: a block in its engine, or the
// block a pointer it holds names (fetched from the pointer's holder, else
// its successors). The owner takes the puts of one key one at a time: a
// put of a key whose put is still being decided, stored or replicated
// waits in the key's queue (at most maxQueuedPuts, past which it is
// answered busy), so a conditional put's check and store are atomic with
// respect to every other put of the key that reaches this owner. A put
// the owner decides to store goes to its engine and then to its r-1
// successors, which replace what they hold (D2Store.Replace: a stale copy
// left behind by a delete that missed them, or a put that missed them,
// must not refuse the owner's choice).
//
// When the owner changes (a node joins in front of it, or it fails), the
// puts queued at the old owner are answered "not mine" once it no longer
// owns the key, and their gateways send them to the new owner, which
// decides against what it holds: the pointers its successor handed over
// when it joined, or, after a failure, the replicas it held already. A
// joiner may own keys before their pointers reach it (they travel beside
// the join's reply; a node that lost its predecessor hands none over and
// the joiner's sync takes them): so an owner that holds nothing of a key
// a conditional put names asks its successors, the old owner first,
// unless it remembers deleting the key (tombs.go). Two owners at once
// (the old one not yet told of the joiner) can still each decide a put:
// the window is one stabilization round.

// ErrConflict answers a put whose condition did not hold at the key's
// owner (the key holds other bytes than IfHash's, or any for IfAbsent and
// for Keep other bytes): nothing was stored.
var ErrConflict = fmt.Errorf("d2: %w", store.ErrConflict)

// errNotMine is the owner's answer for a key it no longer owns; the
// gateway finds the owner again.
var errNotMine = errors.New("d2: not the key's owner")

// maxQueuedPuts bounds the puts of one key waiting at its owner.
const maxQueuedPuts = 8

// putReq is a put as the owner decides it.
type putReq struct {
	key  id.ID
	data []byte
	mode wire.D2PutMode
	prev []byte // the SHA-256 IfHash expects
}

// putDone receives a put's outcome: the copies stored.
type putDone func(env node.Env, copies int, err error)

// queuedPut is a put waiting for the one before it on the same key.
type queuedPut struct {
	p    putReq
	done putDone
}

// checkPut refuses a put no owner could decide: an unknown mode, IfHash
// without a SHA-256, another mode with a malformed one.
func checkPut(mode wire.D2PutMode, prev []byte) error {
	switch {
	case mode >= wire.D2PutModes:
		return fault.New(fault.ErrBadRequest, fmt.Sprintf("d2: put mode %d", mode))
	case len(prev) != hashBytes && (mode == wire.D2PutIfHash || len(prev) != 0):
		return fault.New(fault.ErrBadRequest, fmt.Sprintf("d2: a put's previous hash of %d bytes, want %d (SHA-256)", len(prev), hashBytes))
	}
	return nil
}

// answerPut serves a gateway's put (a D2Store marked Primary): as the
// key's owner, or "not mine".
func (n *Node) answerPut(env node.Env, in node.MsgIn, p putReq) {
	if !n.mayOwn(p.key) {
		rpc.Respond(env, in, n.self, &wire.D2Stored{NotMine: true})
		return
	}
	n.ownerPut(env, p, func(env node.Env, copies int, err error) {
		switch {
		case errors.Is(err, errNotMine):
			rpc.Respond(env, in, n.self, &wire.D2Stored{NotMine: true})
		case errors.Is(err, ErrConflict):
			rpc.Respond(env, in, n.self, &wire.D2Stored{Conflict: true})
		case err != nil:
			rpc.RespondError(env, in, n.self, fault.CodeOf(err), err.Error())
		default:
			rpc.Respond(env, in, n.self, &wire.D2Stored{Copies: uint32(copies)})
		}
	})
}

// ownerPut decides p as the key's owner once the puts of the key before it
// are done.
func (n *Node) ownerPut(env node.Env, p putReq, done putDone) {
	if q, busy := n.putting[p.key]; busy {
		if len(q) >= maxQueuedPuts {
			n.Stats.Busy++
			done(env, 0, ErrBusy)
			return
		}
		n.putting[p.key] = append(q, queuedPut{p, done})
		n.Stats.PutsQueued++
		return
	}
	if len(n.putting) >= n.cfg.MaxPending {
		n.Stats.Busy++
		done(env, 0, ErrBusy)
		return
	}
	n.putting[p.key] = nil
	n.decidePut(env, p, n.thenNext(p.key, done))
}

// thenNext is done, then the next queued put of k.
func (n *Node) thenNext(k id.ID, done putDone) putDone {
	return func(env node.Env, copies int, err error) {
		done(env, copies, err)
		q := n.putting[k]
		if len(q) == 0 {
			delete(n.putting, k)
			return
		}
		next := q[0]
		n.putting[k] = q[1:]
		n.decidePut(env, next.p, n.thenNext(k, next.done))
	}
}

// decidePut checks p's condition against what this node holds and stores
// p if it holds.
func (n *Node) decidePut(env node.Env, p putReq, done putDone) {
	if !n.mayOwn(p.key) {
		done(env, 0, errNotMine) // the ring changed while p waited
		return
	}
	if p.mode == wire.D2PutReplace {
		var known uint64
		if e, ok := n.idx.get(p.key); ok {
			known = e.version
		}
		n.storeAsOwner(env, p, true, known, done)
		return
	}
	conditional := p.mode == wire.D2PutIfAbsent || p.mode == wire.D2PutIfHash
	n.current(env, p.key, conditional, func(env node.Env, cur current, err error) {
		if err != nil {
			done(env, 0, err)
			return
		}
		ok, replace := true, true
		switch p.mode {
		case wire.D2PutKeep:
			ok, replace = !cur.held || bytes.Equal(cur.sum, Sum(p.data)), false
		case wire.D2PutIfAbsent:
			ok = !cur.held
		case wire.D2PutIfHash:
			ok = cur.held && bytes.Equal(cur.sum, p.prev)
		}
		if !ok {
			n.Stats.Conflicts++
			done(env, 0, ErrConflict)
			return
		}
		n.storeAsOwner(env, p, replace, cur.version, done)
	})
}

// current is what the key holds, as the owner decides a put against it.
type current struct {
	held    bool
	sum     []byte // SHA-256 of the newest copy
	version uint64 // its version
}

// current finds what k holds: this node's copy, else (a pointer, or a
// copy it cannot read) the copy of the pointer's holder or of a
// successor. With conditional, the successors' copies are read too and
// the newest counts: this node may have been down while the key was
// replaced, and its own copy is then older than theirs (a restarted owner
// must not refuse the put that follows the replace it missed), and a key
// held nothing of (and not deleted here) is asked of the successors,
// which hold what a joiner has no pointer to yet. An error when the key
// is held but no copy could be read.
func (n *Node) current(env node.Env, k id.ID, conditional bool, done func(env node.Env, cur current, err error)) {
	e, ok := n.idx.get(k)
	if !ok && (!conditional || n.deleted(env, k)) {
		done(env, current{}, nil)
		return
	}
	var from []wire.NodeRef
	if ok && e.pointer() {
		from = append(from, e.holder)
	}
	for _, s := range n.replicaTargets() {
		from = append(from, s.Node)
	}
	found := func(env node.Env, c blockCopy, found bool) {
		switch {
		case found:
			done(env, current{held: true, sum: Sum(c.data), version: c.version}, nil)
		case ok:
			done(env, current{held: true}, fmt.Errorf("d2: %w: the key's block could not be read to check a put", fault.ErrUnavailable))
		default:
			done(env, current{}, nil)
		}
	}
	if conditional {
		n.newest(env, k, from, found)
		return
	}
	if e.pointer() {
		n.fetchFrom(env, k, nil, from, found)
		return
	}
	n.readLocal(env, k, nil, func(env node.Env, c blockCopy, ok bool) {
		if !ok {
			n.fetchFrom(env, k, nil, from, found)
			return
		}
		found(env, c, true)
	})
}

// storeAsOwner stores p here and on the successors, ending any record of
// a delete of the key.
// The block's version is past every version known of the key.
func (n *Node) storeAsOwner(env node.Env, p putReq, replace bool, known uint64, done putDone) {
	n.tombs.clear(p.key)
	version := n.stamp(env, known)
	n.writeLocal(env, p.key, p.data, replace, version, func(env node.Env, err error) {
		switch {
		case errors.Is(err, store.ErrConflict):
			n.Stats.Conflicts++
			done(env, 0, ErrConflict)
			return
		case err != nil:
			done(env, 0, err)
			return
		}
		n.replicate(env, p.key, p.data, version, func(env node.Env, copies int) { done(env, 1+copies, nil) })
	})
}
