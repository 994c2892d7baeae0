package d2

import (
	"bytes"
	"slices"
	"time"

	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/wire"
)

// Possession audits (issue 44). A key's r holders are its owner and the
// owner's r-1 successors; a node that acknowledges what it is given and
// keeps nothing, as owner or as replica, still lists and answers like an
// honest one. So each sync round a node challenges each replica partner
// for Config.Audits keys of an arc both should hold: each of its r-1
// successors for a key of its own range, and each of its r-1
// predecessors for a key of that predecessor's range. The challenge is a
// D2Fetch from the partner's own engine (Local: a pointer is no copy),
// and the answer must hold the bytes: no round trip can fake them without
// a copy, short of fetching it from another holder, which keeps the copy
// alive elsewhere (relaying is what a pointer does, §6).
//
// A replica that answers "not found" for a key is given the block then
// and there, a copy with the writer's proof (as a sync push is); an
// honest replica stores what it acknowledges. An owner is given nothing
// (its replica's copy may be older than its own last decision): sync
// gives it a pointer to the key, which an honest owner fetches within the
// pointer stabilization time (§6). A partner that still lacks the key a
// recheck period later (two sync rounds after the copy for a replica; the
// pointer stabilization time and six rounds for an owner) takes a strike
// and, a replica, is given the key again; lacking it two rounds after
// that, it fails, and fails again at each audit while it lacks it. At
// each strike the partner's own neighbour list must say the key is its
// own (an honest node can hand a key on while the ring changes), and a
// partner that went down is forgiven what it lacked (a crash can take
// what it acknowledged and had not yet synced). A partner that fails is
// distrusted for twice the owner's period, renewed while it keeps
// failing:
//   - as a replica target it is passed over: this node's keys go to its
//     next honest successor instead (replicaTargets);
//   - as a predecessor, this node keeps its whole replica range (drops no
//     stray: replicaLo) and, if it is the nearest one, syncs the keys of
//     the distrusted owner's range as its own, so that they reach the
//     successors after it (syncLo);
//   - it is reported: Stats.AuditsFailed, Distrusted() (triad fs status
//     and the metric triad_d2_distrusted_peers).
// A replica still filling its range (a new node, a replaced disk) is
// never failed for what it was not yet given, however long that takes.
// An owner still fetching more pointers than its budget allows in that
// time (MaxFetchesPerSync a round) can be failed by a successor: the cost
// is extra copies past it and a false report, never a lost block.
//
// A partner whose copy has another version, or one that does not answer,
// fails nothing: sync repairs versions, and the ring handles the dead.
// Distrust is each node's own and is never taken from another's word, so
// no node can have an honest one passed over. A gateway reaches a key past
// a distrusted owner anyway: it places the copies an owner did not make
// (verify.go) and reads from the next holder (getFrom).

// auditKey names a key a partner said it lacked.
type auditKey struct {
	peer node.Addr
	key  id.ID
}

// lack is what is known of a key a partner lacked: since when (when it
// acknowledged the copy given, for a replica), and the rechecks it has
// failed since.
type lack struct {
	at      time.Time
	strikes int
}

// Bounds of the audit state: cleared when full.
const (
	maxLacking    = 4096
	maxDistrusted = 1024
)

// auditRecheck is how long after a replica acknowledged the copy of a
// key it lacked an audit of the key may fail it; an owner, which is
// given no copy, is failed six rounds past the pointer stabilization time
// after it first lacked the key.
func (n *Node) auditRecheck(owner bool) time.Duration {
	d := 2 * n.cfg.Sync
	if owner {
		d = n.cfg.PointerStabilization + 6*n.cfg.Sync
	}
	return d
}

// due reports whether l is due for a recheck at now: a recheck period
// after it was noted, two sync rounds after a strike.
func (n *Node) due(now time.Time, l lack, owner bool) bool {
	if l.strikes > 0 {
		owner = false
	}
	return now.Sub(l.at) >= n.auditRecheck(owner)
}

// Distrusted lists the partners that failed an audit and are distrusted
// now, in address order.
func (n *Node) Distrusted() []node.Addr {
	out := make([]node.Addr, 0, len(n.distrusted))
	for a := range n.distrusted {
		out = append(out, a)
	}
	slices.Sort(out)
	return out
}

// distrustedNames are the first wire.MaxD2Distrusted of Distrusted.
func (n *Node) distrustedNames() []string {
	l := n.Distrusted()
	return l[:min(len(l), wire.MaxD2Distrusted)]
}

// pruneDistrust forgets the distrust that lapsed by now: at each sync
// round, so that distrust lasts to the round after it lapses.
func (n *Node) pruneDistrust(now time.Time) {
	for a, until := range n.distrusted {
		if !now.Before(until) {
			delete(n.distrusted, a)
		}
	}
}

// audits challenges each replica partner, at a sync round.
func (n *Node) audits(env node.Env) {
	if n.cfg.Audits == 0 || n.pred.IsZero() {
		return
	}
	for _, s := range dedupe(slices.Clone(n.succs), n.self.Addr, n.cfg.Replicas-1) {
		for range n.cfg.Audits {
			n.audit(env, s.Node, n.pred.Pos, n.pos, false)
		}
	}
	for j := 0; j+1 < len(n.preds) && j < n.cfg.Replicas-1; j++ {
		for range n.cfg.Audits {
			n.audit(env, n.preds[j].Node, n.preds[j+1].Pos, n.preds[j].Pos, true)
		}
	}
}

// audit challenges peer for a block of the arc (lo, hi] this node holds:
// one peer lacked a recheck period ago, else the first after a random
// point. owner says peer owns the arc.
func (n *Node) audit(env node.Env, peer wire.NodeRef, lo, hi id.ID, owner bool) {
	if peer.Addr == n.self.Addr {
		return
	}
	now := env.Now()
	k, found := id.ID{}, false
	for ak, l := range n.lacking {
		// The smallest due key: any is as sound, and the choice must not
		// depend on the map's order.
		if ak.peer == peer.Addr && n.due(now, l, owner) && ak.key.In(lo, hi) && (!found || ak.key.Cmp(k) < 0) {
			k, found = ak.key, true
		}
	}
	if !found {
		k, found = n.auditPick(id.RandomIn(env.Rand(), lo, hi), lo, hi)
	}
	if !found {
		return
	}
	n.readLocal(env, k, nil, func(env node.Env, mine blockCopy, ok bool) {
		if !ok {
			delete(n.lacking, auditKey{peer.Addr, k})
			return // gone or damaged here: nothing to check against
		}
		n.Stats.Audits++
		n.call(env, peer.Addr, &wire.D2Fetch{Key: k, Local: true}, func(env node.Env, reply wire.Msg, err error) {
			b, isBlock := reply.(*wire.D2Block)
			switch {
			case err != nil || !isBlock:
				// Silent or busy: the ring finds the dead; no verdict.
			case !b.Found:
				n.lacks(env, peer, k, mine, owner)
			case bytes.Equal(b.Data, mine.data) || b.Version != mine.version:
				// Held (another version: sync repairs whichever is older).
				delete(n.lacking, auditKey{peer.Addr, k})
			default:
				n.failAudit(env, peer) // other bytes at the same version
			}
		})
	})
}

// auditPick is the first block (not pointer) held in (start, hi], else in
// (lo, hi]. start is a random point of the arc.
func (n *Node) auditPick(start, lo, hi id.ID) (id.ID, bool) {
	var k id.ID
	found := false
	first := func(e entry) bool {
		if e.pointer() {
			return true
		}
		k, found = e.key, true
		return false
	}
	if start.In(lo, hi) {
		n.idx.each(start, hi, first)
	}
	if !found {
		n.idx.each(lo, hi, first)
	}
	return k, found
}

// lacks handles peer's "not found" for k, of which this node holds
// mine. A replica is given mine, and noted if it acknowledges it; an
// owner is noted (a replica's copy may be older than what the owner
// decided last: planted at an owner that lost its own, it would decide
// the next conditional put against it, and the simulator's chaos run
// forked a lease that way). A recheck period after it was noted, still
// lacking k, it takes a strike, and is given k again (a replica) and
// rechecked after two sync rounds: an honest node can drop a key as a
// stray while the ring changes, and find it its own again a round later,
// but not twice running. At the second strike it fails, and again at
// each audit while it lacks k.
func (n *Node) lacks(env node.Env, peer wire.NodeRef, k id.ID, mine blockCopy, owner bool) {
	ak := auditKey{peer.Addr, k}
	l, noted := n.lacking[ak]
	switch {
	case noted && !n.due(env.Now(), l, owner):
		return
	case noted:
		n.failIfItsOwn(env, peer, k, owner, l.strikes+1)
		if l.strikes > 0 {
			return
		}
	}
	note := func(env node.Env) {
		if n.lacking == nil || len(n.lacking) >= maxLacking {
			n.lacking = make(map[auditKey]lack)
		}
		if _, ok := n.lacking[ak]; !ok || noted {
			n.lacking[ak] = lack{at: env.Now(), strikes: n.lacking[ak].strikes}
		}
	}
	if owner {
		note(env) // it fetches the block through the pointer sync gives it (§6)
		return
	}
	n.call(env, peer.Addr, copyMsg(k, mine, false), func(env node.Env, reply wire.Msg, err error) {
		if s, ok := reply.(*wire.D2StoreDone); err == nil && ok && s.Copies > 0 {
			note(env) // else refused (a conflict, full, a delete it knows of): no verdict
		}
	})
}

// failIfItsOwn gives peer its strikes-th strike for lacking k if its own
// neighbour list says k is its to hold: of its range if owner, else of
// its replica range; at the second it fails. Else the note is forgotten:
// a ring in change (a node joining between, a cold start re-forming it)
// can have an honest partner hand k on while this node's view still
// names it. (A liar that lies about its neighbours too escapes the
// verdict, not the gateways' copies and reads, which pass it by.)
func (n *Node) failIfItsOwn(env node.Env, peer wire.NodeRef, k id.ID, owner bool, strikes int) {
	ak := auditKey{peer.Addr, k}
	n.call(env, peer.Addr, &wire.D2GetNeighbors{}, func(env node.Env, reply wire.Msg, err error) {
		nb, ok := reply.(*wire.D2Neighbors)
		if err != nil || !ok || nb.Self.Node.Addr != peer.Addr {
			return // no verdict
		}
		preds := dedupe(slices.Clone(nb.Preds), peer.Addr, n.cfg.Replicas)
		var holds bool
		switch {
		case owner:
			holds = len(preds) > 0 && k.In(preds[0].Pos, nb.Self.Pos)
		case len(preds) < n.cfg.Replicas:
			holds = true // a node that knows fewer than r predecessors drops nothing (replicaLo)
		default:
			holds = k.In(preds[n.cfg.Replicas-1].Pos, nb.Self.Pos)
		}
		l, noted := n.lacking[ak]
		switch {
		case !noted:
		case !holds:
			delete(n.lacking, ak)
		case strikes >= 2:
			n.failAudit(env, peer)
		default:
			n.lacking[ak] = lack{at: env.Now(), strikes: max(l.strikes, strikes)}
		}
	})
}

// forgive forgets the keys addr was found lacking: it went down, and a
// crash may take what a node acknowledged moments before (a write not
// yet on its disk). Its distrust, if any, runs its course.
func (n *Node) forgive(addr node.Addr) {
	for ak := range n.lacking {
		if ak.peer == addr {
			delete(n.lacking, ak)
		}
	}
}

// failAudit distrusts peer for two recheck periods of an owner: it fails
// again at each audit while it lacks the key, but a partner down or busy
// at an audit gives no verdict, so distrust outlasts a few of those.
func (n *Node) failAudit(env node.Env, peer wire.NodeRef) {
	n.Stats.AuditsFailed++
	if n.distrusted == nil || len(n.distrusted) >= maxDistrusted {
		n.distrusted = make(map[node.Addr]time.Time)
	}
	n.distrusted[peer.Addr] = env.Now().Add(2 * n.auditRecheck(true))
}

// syncLo is the exclusive start of the keys this node syncs to its
// replicas as their owner: its range, and the range of a distrusted
// nearest predecessor before it.
func (n *Node) syncLo() id.ID {
	if _, distrusted := n.distrusted[n.pred.Node.Addr]; distrusted && len(n.preds) > 1 {
		return n.preds[1].Pos
	}
	return n.rangeLo()
}

// maxAudits bounds Config.Audits.
const maxAudits = 16
