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
// the owner decides to store goes to its engine and to its r-1
// successors at once, which replace what they hold (D2Store.Replace: a
// stale copy left behind by a delete that missed them, or a put that
// missed them, must not refuse the owner's choice); it is answered once
// all have answered, so a put costs one durable write's time, not two
// (a keep put, which the engine may refuse as a conflict, goes to the
// engine first and to the successors only once it is stored).
//
// Each key being decided has an explicit state at its owner, a keyPut in
// Node.putting (as etcd raft keeps a Progress per peer): the put in
// progress, the puts queued behind it, and a phase. Each phase waits for
// one answer (a read, an engine write, the replicas'), which a named
// method takes to move the key on:
//
//	phase           entered by            left by, on its answer
//	keyWaiting      ownerPut, finishPut   beginPut: not mine (finishPut), Replace (storePut), else readCurrent
//	keyReading      readCurrent           localRead, copyRead, currentRead: a conflict or error (finishPut), else storePut
//	keyStoring      storePut              putStored and putReplicated (a replace: both, in any order; then storeDone), or
//	                                      putStored (a keep): a conflict or error (finishPut), else replicate
//	keyReplicating  putStored (a keep)    putReplicated: finishPut, with the copies counted
//
// finishPut answers the put, in keyWaiting (a put of the key that arrives
// meanwhile is queued), then begins the next queued put or forgets the
// key. An answer that comes twice, or in another phase, is a broken
// invariant (expect panics).
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
	// auth is a client's consent, relayed to the owner with the put
	// (D2Store.Auth); zero for the host's own puts.
	auth wire.D2Auth
	// confirmTo and tag name the gateway that relayed the put and its
	// tag: each replica tells it of its copy (D2Store.ConfirmTo).
	confirmTo node.Addr
	tag       uint64
}

// putDone receives a put's outcome: the copies stored.
type putDone func(env node.Env, copies int, err error)

// conditional reports whether p is decided against the key's newest
// copy, its successors' included (IfAbsent, IfHash).
func (p putReq) conditional() bool {
	return p.mode == wire.D2PutIfAbsent || p.mode == wire.D2PutIfHash
}

// queuedPut is a put waiting for the one before it on the same key.
type queuedPut struct {
	p    putReq
	done putDone
}

// keyPhase is where the put in progress of a key stands at its owner.
type keyPhase uint8

const (
	// keyWaiting: no put is being decided; the last one is being
	// answered, and the next queued one begins once it is.
	keyWaiting keyPhase = iota
	// keyReading: what the key holds is being read (this node's copy,
	// a pointer's holder's, the successors'), to check the put against.
	keyReading
	// keyStoring: the block is being written to this node's engine.
	keyStoring
	// keyReplicating: the block is being stored on the successors.
	keyReplicating
)

// String names the phase, for expect's panic.
func (ph keyPhase) String() string {
	switch ph {
	case keyWaiting:
		return "waiting"
	case keyReading:
		return "reading"
	case keyStoring:
		return "storing"
	case keyReplicating:
		return "replicating"
	}
	return fmt.Sprintf("keyPhase(%d)", uint8(ph))
}

// keyPut is the state of a key at its owner from its first put until
// the last one queued behind it is answered: the put in progress, its
// phase, what the steps so far found, and the puts waiting.
type keyPut struct {
	key   id.ID
	phase keyPhase
	p     putReq  // the put in progress
	done  putDone // its answer
	queue []queuedPut

	// Reading: whether this node holds the key (a block or a pointer),
	// and the nodes asked for a copy when its own cannot be read.
	held bool
	from []wire.NodeRef
	// Storing and replicating: the version stamped on the block, and
	// the copies stored so far (this node's, then the successors').
	version uint64
	copies  int
	// A replace stores here and on the successors at once: the answers
	// still to come (2, then 1, then 0) and this node's engine's error.
	left     int
	localErr error
}

// copy is the block kp stores: the put's bytes at its version, with the
// writer's consent (proof.go).
func (kp *keyPut) copy() blockCopy {
	return blockCopy{data: kp.p.data, version: kp.version, proof: kp.p.proof()}
}

// expect panics unless kp is n's state of its key, in phase ph: each
// step's answer comes once, in the phase that asked for it.
func (n *Node) expect(kp *keyPut, ph keyPhase) {
	if n.putting[kp.key] != kp || kp.phase != ph {
		panic(fmt.Sprintf("d2: a put of %s answered while %s, want %s", kp.key.Short(), kp.phase, ph))
	}
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
		rpc.Respond(env, in, n.self, &wire.D2StoreDone{NotMine: true})
		return
	}
	if n.cfg.AckAndDrop {
		rpc.Respond(env, in, n.self, &wire.D2StoreDone{Copies: uint32(n.cfg.Replicas), Holders: n.holderRefs()})
		return
	}
	n.ownerPut(env, p, func(env node.Env, copies int, err error) {
		switch {
		case errors.Is(err, errNotMine):
			rpc.Respond(env, in, n.self, &wire.D2StoreDone{NotMine: true})
		case errors.Is(err, ErrConflict):
			rpc.Respond(env, in, n.self, &wire.D2StoreDone{Conflict: true})
		case err != nil:
			rpc.RespondError(env, in, n.self, fault.CodeOf(err), err.Error())
		default:
			rpc.Respond(env, in, n.self, &wire.D2StoreDone{Copies: uint32(copies), Holders: n.holderRefs()})
		}
	})
}

// holderRefs are the nodes this owner stores its keys on: itself, then
// the successors that keep their replicas.
func (n *Node) holderRefs() []wire.NodeRef {
	holders := []wire.NodeRef{n.self}
	for _, t := range n.replicaTargets() {
		holders = append(holders, t.Node)
	}
	return holders
}

// ownerPut decides p as the key's owner once the puts of the key before it
// are done: at once if none is in progress, else after them, from the
// key's queue.
func (n *Node) ownerPut(env node.Env, p putReq, done putDone) {
	if kp, busy := n.putting[p.key]; busy {
		if len(kp.queue) >= maxQueuedPuts {
			n.Stats.Busy++
			done(env, 0, ErrBusy)
			return
		}
		kp.queue = append(kp.queue, queuedPut{p, done})
		n.Stats.PutsQueued++
		return
	}
	if len(n.putting) >= n.cfg.MaxPending {
		n.Stats.Busy++
		done(env, 0, ErrBusy)
		return
	}
	kp := &keyPut{key: p.key}
	n.putting[p.key] = kp
	n.beginPut(env, kp, queuedPut{p, done})
}

// beginPut takes q as kp's put in progress: not mine if the ring changed
// while it waited; a Replace is stored at once, past the version this
// node knows; another mode reads what the key holds first.
func (n *Node) beginPut(env node.Env, kp *keyPut, q queuedPut) {
	n.expect(kp, keyWaiting)
	kp.p, kp.done = q.p, q.done
	kp.held, kp.from, kp.version, kp.copies = false, nil, 0, 0
	switch {
	case !n.mayOwn(kp.key):
		n.finishPut(env, kp, errNotMine)
	case kp.p.mode == wire.D2PutReplace:
		var known uint64
		if e, ok := n.idx.get(kp.key); ok {
			known = e.version
		}
		n.storePut(env, kp, true, known)
	default:
		n.readCurrent(env, kp)
	}
}

// current is what the key holds, as the owner decides a put against it.
type current struct {
	held    bool
	sum     []byte // SHA-256 of the newest copy
	version uint64 // its version
}

// readCurrent reads what kp's key holds: this node's copy, else (a
// pointer, or a copy it cannot read) the copy of the pointer's holder or
// of a successor. A conditional put reads the successors' copies too, and
// the newest counts: this node may have been down while the key was
// replaced, and its own copy is then older than theirs (a restarted owner
// must not refuse the put that follows the replace it missed), and a key
// held nothing of (and not deleted here) is asked of the successors,
// which hold what a joiner has no pointer to yet.
func (n *Node) readCurrent(env node.Env, kp *keyPut) {
	kp.phase = keyReading
	e, ok := n.idx.get(kp.key)
	conditional := kp.p.conditional()
	if !ok && (!conditional || n.deleted(env, kp.key)) {
		n.currentRead(env, kp, current{}, nil)
		return
	}
	kp.held = ok
	if ok && e.pointer() {
		kp.from = append(kp.from, e.holder)
	}
	for _, s := range n.replicaTargets() {
		kp.from = append(kp.from, s.Node)
	}
	read := func(env node.Env, c blockCopy, found bool) { n.copyRead(env, kp, c, found) }
	switch {
	case conditional:
		n.newest(env, kp.key, kp.from, func(env node.Env, c blockCopy, found bool) {
			if c.vouches < n.vouchQuorum() {
				n.expect(kp, keyReading)
				n.Stats.Unvouched++
				n.finishPut(env, kp, errUnvouched(kp.key))
				return
			}
			read(env, c, found)
		})
	case e.pointer():
		n.fetchFrom(env, kp.key, nil, kp.from, read)
	default:
		n.readLocal(env, kp.key, nil, func(env node.Env, c blockCopy, found bool) { n.localRead(env, kp, c, found) })
	}
}

// localRead takes this node's own copy of an unconditional put's key;
// one it cannot read is fetched from the successors.
func (n *Node) localRead(env node.Env, kp *keyPut, c blockCopy, found bool) {
	n.expect(kp, keyReading)
	if !found {
		n.fetchFrom(env, kp.key, nil, kp.from, func(env node.Env, c blockCopy, found bool) { n.copyRead(env, kp, c, found) })
		return
	}
	n.copyRead(env, kp, c, true)
}

// copyRead takes the copy read of kp's key: an error when this node
// holds the key but no copy could be read.
func (n *Node) copyRead(env node.Env, kp *keyPut, c blockCopy, found bool) {
	n.expect(kp, keyReading)
	switch {
	case found:
		n.currentRead(env, kp, current{held: true, sum: Sum(c.data), version: c.version}, nil)
	case kp.held:
		n.currentRead(env, kp, current{held: true}, fmt.Errorf("d2: %w: the key's block could not be read to check a put", fault.ErrUnavailable))
	default:
		n.currentRead(env, kp, current{}, nil)
	}
}

// currentRead checks kp's put against what the key holds, and stores it
// if its condition holds.
func (n *Node) currentRead(env node.Env, kp *keyPut, cur current, err error) {
	n.expect(kp, keyReading)
	if err != nil {
		n.finishPut(env, kp, err)
		return
	}
	ok, replace := kp.p.holds(cur)
	if !ok {
		n.Stats.Conflicts++
		n.finishPut(env, kp, ErrConflict)
		return
	}
	n.storePut(env, kp, replace, cur.version)
}

// holds reports whether p's condition holds against what the key holds,
// and whether the block then replaces what is there (Keep stores only
// the same bytes again).
func (p putReq) holds(cur current) (ok, replace bool) {
	switch p.mode {
	case wire.D2PutKeep:
		return !cur.held || bytes.Equal(cur.sum, Sum(p.data)), false
	case wire.D2PutIfAbsent:
		return !cur.held, true
	case wire.D2PutIfHash:
		return cur.held && bytes.Equal(cur.sum, p.prev), true
	}
	return true, true
}

// storePut stores kp's block in this node's engine, ending any record of
// a delete of the key, with a version past every version known of the
// key.
func (n *Node) storePut(env node.Env, kp *keyPut, replace bool, known uint64) {
	kp.phase = keyStoring
	n.tombs.clear(kp.key)
	kp.version = n.stamp(env, known)
	kp.left, kp.localErr = 0, nil
	if replace {
		kp.left = 2
		n.replicate(env, kp.key, kp.copy(), kp.p.confirmTo, kp.p.tag, func(env node.Env, copies int) { n.putReplicated(env, kp, copies) })
	}
	n.writeLocal(env, kp.key, kp.copy(), replace, false, func(env node.Env, err error) { n.putStored(env, kp, err) })
}

// putStored takes the engine's answer: for a replace, one of the two the
// put waits for; for a keep, once the block is stored here, it is stored
// on the successors.
func (n *Node) putStored(env node.Env, kp *keyPut, err error) {
	n.expect(kp, keyStoring)
	if kp.left > 0 {
		kp.localErr = err
		if err == nil {
			kp.copies++
		}
		n.storeAnswered(env, kp)
		return
	}
	if err != nil {
		n.finishStore(env, kp, err)
		return
	}
	kp.phase, kp.copies = keyReplicating, 1
	n.replicate(env, kp.key, kp.copy(), kp.p.confirmTo, kp.p.tag, func(env node.Env, copies int) { n.putReplicated(env, kp, copies) })
}

// putReplicated counts the successors' copies: for a replace, one of the
// two answers the put waits for; for a keep, the last.
func (n *Node) putReplicated(env node.Env, kp *keyPut, copies int) {
	kp.copies += copies
	if kp.left > 0 {
		n.expect(kp, keyStoring)
		n.storeAnswered(env, kp)
		return
	}
	n.expect(kp, keyReplicating)
	n.finishPut(env, kp, nil)
}

// storeAnswered notes one of a replace's two answers, and answers the put
// once both have come: failed if this node's engine failed (the
// successors' copies then wait for the put's retry, which replaces them).
func (n *Node) storeAnswered(env node.Env, kp *keyPut) {
	if kp.left--; kp.left == 0 {
		n.finishStore(env, kp, kp.localErr)
	}
}

// finishStore answers a put whose block is stored (err nil) or was
// refused by this node's engine.
func (n *Node) finishStore(env node.Env, kp *keyPut, err error) {
	if errors.Is(err, store.ErrConflict) {
		n.Stats.Conflicts++
		err = ErrConflict
	}
	n.finishPut(env, kp, err)
}

// finishPut answers kp's put, with the copies stored unless err, then
// begins the next put queued behind it (one that arrived while the answer
// ran included) or, with none, forgets the key.
func (n *Node) finishPut(env node.Env, kp *keyPut, err error) {
	done, copies := kp.done, kp.copies
	if err != nil {
		copies = 0
	}
	kp.phase, kp.p, kp.done = keyWaiting, putReq{}, nil
	done(env, copies, err)
	if len(kp.queue) == 0 {
		delete(n.putting, kp.key)
		return
	}
	next := kp.queue[0]
	kp.queue[0] = queuedPut{}
	kp.queue = kp.queue[1:]
	n.beginPut(env, kp, next)
}
