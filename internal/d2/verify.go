package d2

import (
	"fmt"
	"slices"

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

// verifyCopies counts the copies of p on the holders the owner's answer
// s and the route r name, and answers done with them.
func (n *Node) verifyCopies(env node.Env, p putReq, r Route, s *wire.D2StoreDone, done putDone) {
	claimed := int(s.Copies)
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
