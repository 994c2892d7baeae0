package d2

import (
	"fmt"

	"triad/internal/node"
	"triad/internal/wire"
)

// A put is acknowledged only for the copies the gateway has seen (issue
// 44). The owner answers a relayed put with the copies it counted and the
// nodes it stored on (D2Stored.Holders: itself and its successors); a
// node that placed itself as a key's owner could count copies it never
// made, or keep none. With Config.VerifyCopies the gateway asks each named
// holder for the block by its hash (a D2Fetch without the bytes, from
// the holder's own engine: a pointer is not a copy) and acknowledges the
// copies of distinct machines that have it, at most what the owner
// claimed (Stats.CopiesUnverified counts the difference). The client's
// MinCopies then holds for copies that exist. It costs one round trip
// more per put, to r nodes at once. Machines are told apart by address
// and by the machine identity the owner names (a liar could name two
// nodes that share a disk as two machines).

// verifyCopies counts the copies of p the owner's answer s claims that its
// holders confirm, and answers done with them.
func (n *Node) verifyCopies(env node.Env, p putReq, s *wire.D2Stored, done putDone) {
	claimed := int(s.Copies)
	sum := Sum(p.data)
	asked := map[node.Addr]bool{}
	machines := map[string]bool{}
	left := 1 // this call's own, released at the end
	finish := func(env node.Env) {
		if left--; left > 0 {
			return
		}
		copies := min(claimed, len(machines))
		if copies < claimed {
			n.Stats.CopiesUnverified += uint64(claimed - copies)
		}
		done(env, copies, nil)
	}
	found := func(h wire.NodeRef) {
		if h.Machine != 0 {
			machines[fmt.Sprintf("machine %x", h.Machine)] = true
		} else {
			machines["address "+h.Addr] = true
		}
	}
	for _, h := range s.Holders {
		if asked[h.Addr] || len(asked) > n.cfg.Replicas+1 {
			continue
		}
		asked[h.Addr] = true
		left++
		if h.Addr == n.self.Addr {
			n.readLocal(env, p.key, sum, func(env node.Env, _ blockCopy, ok bool) {
				if ok {
					found(h)
				}
				finish(env)
			})
			continue
		}
		if !n.call(env, h.Addr, &wire.D2Fetch{Key: p.key, Hash: sum, Local: true, NoData: true}, func(env node.Env, reply wire.Msg, err error) {
			if b, ok := reply.(*wire.D2Block); err == nil && ok && b.Found {
				found(h)
			}
			finish(env)
		}) {
			left--
		}
	}
	finish(env)
}
