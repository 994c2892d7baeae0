package d2

import (
	"bytes"
	"fmt"
	"slices"

	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/wire"
)

// A put is acknowledged only for the copies the gateway has seen (issue
// 44). The owner answers a relayed put with the copies it counted and the
// nodes it stored on (D2StoreDone.Holders: itself and its successors); a
// node that placed itself as a key's owner could count copies it never
// made, or keep none. With Config.VerifyCopies the gateway asks each named
// holder for the block by its hash
// (a D2Fetch without the bytes, from the holder's own engine: a pointer
// is not a copy), and acknowledges the copies of distinct machines that
// have it. Machines are told apart by address and by the machine identity
// a holder's reference names (a liar could name two nodes that share a
// disk as two machines).
//
// When fewer confirm than the owner claimed, the owner lied or lost
// them: the gateway gives the block itself, with the writer's proof, to
// each holder of its own route that lacks it (a copy, as a get's repair
// gives one), asks again, and acknowledges what is confirmed then. A
// rogue owner thus costs a put one copy and two round trips, not the put:
// its successors hold the block, reads reach them past the owner
// (getFrom), and their audits find the owner out (audit.go).
// Stats.CopiesUnverified counts the copies claimed and not found;
// Stats.GatewayCopies the copies the gateway placed itself.
//
// Asking the holders afterwards is a round trip more on every put. So a
// gateway names itself and a tag in the put it relays (D2Store.ConfirmTo,
// Tag), the owner passes both on with its copies, and each replica, once
// its copy is stored, tells the gateway itself (D2Kept, one-way). The
// gateway counts a D2Kept for the node its connection names, and only
// for the put of its tag with the block's key and hash; the owner's own
// answer stands for the owner's copy, as its answer to the question
// would. When these cover the copies the owner claimed, the put is
// acknowledged at once (Stats.CopiesConfirmed); when not (a D2Kept
// lost, late, or never sent by a liar), the gateway asks the holders as
// above. A replica's word is worth what its answer to the gateway's
// question was: neither is proof that it keeps the block, which the
// audits test (audit.go).

// confirmWait is a relayed put's D2Kept received so far, at its
// gateway.
type confirmWait struct {
	key  id.ID
	sum  []byte
	from []node.Addr // the senders, at most maxConfirms
}

// maxConfirms bounds the D2Kept a gateway keeps per put: the replicas
// of the r holders, and a spare for a ring that just changed.
const maxConfirms = 8

// expectConfirms readies n, as p's gateway, for its replicas' D2Kept,
// and names n and the tag in p.
func (n *Node) expectConfirms(p *putReq) {
	if !n.cfg.VerifyCopies {
		return
	}
	n.lastTag++
	p.confirmTo, p.tag = n.self.Addr, n.lastTag
	n.confirming[p.tag] = &confirmWait{key: p.key, sum: Sum(p.data)}
}

// takeConfirms ends the wait for p's D2Kept and returns those received.
func (n *Node) takeConfirms(p putReq) *confirmWait {
	w := n.confirming[p.tag]
	delete(n.confirming, p.tag)
	return w
}

// stored takes a replica's D2Kept, from the node at addr (its
// connection's), for a put this gateway is waiting on.
func (n *Node) stored(from node.Addr, m *wire.D2Kept) {
	w := n.confirming[m.Tag]
	if w == nil || w.key != m.Key || !bytes.Equal(w.sum, m.Hash) || len(w.from) >= maxConfirms || slices.Contains(w.from, from) {
		return
	}
	w.from = append(w.from, from)
}

// confirmStored tells the gateway a replica's D2Store names that the
// copy is stored.
func (n *Node) confirmStored(env node.Env, m *wire.D2Store) {
	if m.ConfirmTo == "" {
		return
	}
	c := &wire.D2Kept{Key: m.Key, Hash: Sum(m.Data), Tag: m.Tag}
	if m.ConfirmTo == n.self.Addr {
		n.stored(n.self.Addr, c)
		return
	}
	n.send(env, m.ConfirmTo, c)
}

// verifyCopies counts the copies of p on the holders the owner's answer
// s (from owner) and the route r name, and answers done with them: at
// once if the replicas' D2Kept in w cover the copies claimed, else
// after asking the holders.
func (n *Node) verifyCopies(env node.Env, p putReq, r Route, owner node.Addr, s *wire.D2StoreDone, w *confirmWait, done putDone) {
	claimed := int(s.Copies)
	if w != nil {
		var told []wire.NodeRef
		for _, h := range s.Holders {
			if (h.Addr == owner || slices.Contains(w.from, h.Addr)) && !slices.ContainsFunc(told, func(t wire.NodeRef) bool { return t.Addr == h.Addr }) {
				told = append(told, h)
			}
		}
		if copies := machines(told); copies >= min(claimed, n.cfg.Replicas) {
			n.Stats.CopiesConfirmed++
			done(env, min(copies, claimed), nil)
			return
		}
	}
	n.confirmCopies(env, p, s.Holders, func(env node.Env, found []wire.NodeRef, version uint64) {
		copies := machines(found)
		if copies < claimed {
			n.Stats.CopiesUnverified += uint64(claimed - copies)
		}
		if copies >= min(claimed, n.cfg.Replicas) {
			done(env, min(copies, claimed), nil)
			return
		}
		n.placeCopies(env, p, r, found, version, done)
	})
}

// placeCopies gives p's block to each of r's holders that did not confirm
// it, confirms again, and answers done with the copies then held.
func (n *Node) placeCopies(env node.Env, p putReq, r Route, found []wire.NodeRef, version uint64, done putDone) {
	if version == 0 {
		version = n.stamp(env, 0)
	}
	c := blockCopy{data: p.data, version: version, proof: p.proof()}
	replace := p.mode == wire.D2PutReplace || p.mode == wire.D2PutIfHash
	var lacking []wire.NodeRef
	for _, h := range r.Holders(n.cfg.Replicas) {
		if !slices.ContainsFunc(found, func(f wire.NodeRef) bool { return f.Addr == h.Node.Addr }) {
			lacking = append(lacking, h.Node)
		}
	}
	left := 1
	placed := func(env node.Env) {
		if left--; left > 0 {
			return
		}
		n.confirmCopies(env, p, append(slices.Clone(found), lacking...), func(env node.Env, found []wire.NodeRef, _ uint64) {
			done(env, min(machines(found), n.cfg.Replicas), nil)
		})
	}
	for _, h := range lacking {
		left++
		stored := func(ok bool) {
			if ok {
				n.Stats.GatewayCopies++
			}
			placed(env)
		}
		if h.Addr == n.self.Addr {
			n.keepCopy(env, p.key, c, replace, func(env node.Env, err error) { stored(err == nil) })
			continue
		}
		if !n.call(env, h.Addr, copyMsg(p.key, c, replace), func(env node.Env, reply wire.Msg, err error) {
			s, ok := reply.(*wire.D2StoreDone)
			stored(err == nil && ok && s.Copies > 0)
		}) {
			left--
		}
	}
	placed(env)
}

// confirmCopies asks each of holders (the first r+2 distinct ones) for
// p's block from its own engine, and answers done with those that have it
// and the newest version among them.
func (n *Node) confirmCopies(env node.Env, p putReq, holders []wire.NodeRef, done func(env node.Env, found []wire.NodeRef, version uint64)) {
	sum := Sum(p.data)
	asked := map[node.Addr]bool{}
	var found []wire.NodeRef
	var version uint64
	left := 1 // this call's own, released at the end
	finish := func(env node.Env) {
		if left--; left == 0 {
			done(env, found, version)
		}
	}
	have := func(h wire.NodeRef, v uint64) {
		found = append(found, h)
		version = max(version, v)
	}
	for _, h := range holders {
		if asked[h.Addr] || len(asked) >= n.cfg.Replicas+2 {
			continue
		}
		asked[h.Addr] = true
		left++
		if h.Addr == n.self.Addr {
			n.readLocal(env, p.key, sum, func(env node.Env, c blockCopy, ok bool) {
				if ok {
					have(h, c.version)
				}
				finish(env)
			})
			continue
		}
		if !n.call(env, h.Addr, &wire.D2Fetch{Key: p.key, Hash: sum, Local: true, NoData: true}, func(env node.Env, reply wire.Msg, err error) {
			if b, ok := reply.(*wire.D2Block); err == nil && ok && b.Found {
				have(h, b.Version)
			}
			finish(env)
		}) {
			left--
		}
	}
	finish(env)
}

// machines counts the distinct machines among holders.
func machines(holders []wire.NodeRef) int {
	seen := map[string]bool{}
	for _, h := range holders {
		if h.Machine != 0 {
			seen[fmt.Sprintf("machine %x", h.Machine)] = true
		} else {
			seen["address "+h.Addr] = true
		}
	}
	return len(seen)
}
