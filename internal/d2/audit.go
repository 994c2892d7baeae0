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
// A partner that answers "not found" for a key is given the block then
// and there, a copy with the writer's proof (as a sync push is); an
// honest partner stores what it acknowledges. If it acknowledged the copy
// and lacks the key again two sync rounds later, it fails, and is
// distrusted for six rounds, renewed while it keeps failing:
//   - as a replica target it is passed over: this node's keys go to its
//     next honest successor instead (replicaTargets);
//   - as a predecessor, this node keeps its whole replica range (drops no
//     stray: replicaLo) and, if it is the nearest one, syncs the keys of
//     the distrusted owner's range as its own, so that they reach the
//     successors after it (syncLo);
//   - it is reported: Stats.AuditsFailed, Distrusted() (the status page
//     and the metric triad_d2_distrusted_peers).
// A partner still filling its range (a new node, a replaced disk) is
// never failed for what it was not yet given, however long that takes.
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

// Bounds of the audit state: cleared when full.
const (
	maxLacking    = 4096
	maxDistrusted = 1024
)

// auditRecheck is how long after a partner acknowledged the copy of a key
// it lacked an audit of the key may fail it; distrust lasts three times
// as long.
func (n *Node) auditRecheck() time.Duration { return 2 * n.cfg.Sync }

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
			n.audit(env, s.Node, n.pred.Pos, n.pos)
		}
	}
	for j := 0; j+1 < len(n.preds) && j < n.cfg.Replicas-1; j++ {
		for range n.cfg.Audits {
			n.audit(env, n.preds[j].Node, n.preds[j+1].Pos, n.preds[j].Pos)
		}
	}
}

// audit challenges peer for a block of the arc (lo, hi] this node holds:
// one peer lacked a recheck period ago, else the first after a random
// point.
func (n *Node) audit(env node.Env, peer wire.NodeRef, lo, hi id.ID) {
	if peer.Addr == n.self.Addr {
		return
	}
	now := env.Now()
	k, found := id.ID{}, false
	for ak, at := range n.lacking {
		// The smallest due key: any is as sound, and the choice must not
		// depend on the map's order.
		if ak.peer == peer.Addr && now.Sub(at) >= n.auditRecheck() && ak.key.In(lo, hi) && (!found || ak.key.Cmp(k) < 0) {
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
				n.lacks(env, peer, k, mine)
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
// mine: the first time, peer is given mine, and noted if it acknowledges
// it; a recheck period after that, it fails.
func (n *Node) lacks(env node.Env, peer wire.NodeRef, k id.ID, mine blockCopy) {
	ak := auditKey{peer.Addr, k}
	if at, ok := n.lacking[ak]; ok {
		if env.Now().Sub(at) >= n.auditRecheck() {
			delete(n.lacking, ak)
			n.failAudit(env, peer)
		}
		return
	}
	n.call(env, peer.Addr, copyMsg(k, mine, false), func(env node.Env, reply wire.Msg, err error) {
		if s, ok := reply.(*wire.D2Stored); err != nil || !ok || s.Copies == 0 {
			return // refused (a conflict, full, a delete it knows of): no verdict
		}
		if n.lacking == nil || len(n.lacking) >= maxLacking {
			n.lacking = make(map[auditKey]time.Time)
		}
		n.lacking[ak] = env.Now()
	})
}

// failAudit distrusts peer for three recheck periods.
func (n *Node) failAudit(env node.Env, peer wire.NodeRef) {
	n.Stats.AuditsFailed++
	if n.distrusted == nil || len(n.distrusted) >= maxDistrusted {
		n.distrusted = make(map[node.Addr]time.Time)
	}
	n.distrusted[peer.Addr] = env.Now().Add(3 * n.auditRecheck())
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
