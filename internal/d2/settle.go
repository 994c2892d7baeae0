package d2

import (
	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/wire"
)

// Settling a doubt. A node doubts an arc that came into its range through
// failures for Config.Doubt (doubt.go), because it cannot tell a
// neighbour that died from one cut off by a partition. Waiting that long
// made two ordinary deaths among a key's holders a minute apart cost
// minutes of refused reads: the first death's new holder still doubted
// when the second came, one holder of three vouched, and every Latest of
// the key (a volume's registry, its superblock) was refused (TestFS,
// issue 45).
//
// So a node also ends a doubt the way an owner's Latest decides: when it
// adds one, and at each stabilization round, it asks the other holders of one doubted arc what
// they hold of it. If a majority of the arc's holders vouch for it, the
// node takes every block they hold at a newer version than its own copy
// (or that it lacks), and once it holds them all, and nothing in the arc
// that none of them holds, it stops doubting the arc: its copies are as
// new as those a Latest would answer from. It asks again as soon as the
// blocks it fetched are in. A partition that leaves a
// minority of a key's earlier holders on one side leaves no vouching
// majority there, so no doubt ends on that side before Config.Doubt; nor
// after every node restarted, when every holder doubts.

// settlePages bounds the key lists asked of one holder per arc; an arc
// with more keys than that waits for Config.Doubt.
const settlePages = 16

// holderList is what one holder listed of an arc: its blocks and
// pointers, with their versions (zero: a pointer), and whether it
// vouched for every page it sent; ok is false when it did not answer
// every page.
type holderList struct {
	from     wire.D2Ref
	keys     []id.ID
	versions []uint64
	vouched  bool
	ok       bool
}

// settleDoubts tries to end one of the node's doubts, each in turn, one at
// a time.
func (n *Node) settleDoubts(env node.Env) {
	if n.settling || !n.joined || !n.heldLoaded {
		return
	}
	n.doubts = dropExpired(n.doubts, env.Now())
	if len(n.doubts) == 0 {
		return
	}
	n.settleNext = (n.settleNext + 1) % len(n.doubts)
	d := n.doubts[n.settleNext]
	gen := n.doubtGen
	n.settling = true
	n.Lookup(env, d.hi, func(env node.Env, r Route, err error) {
		if err != nil || r.Lo.IsZero() || !n.joined {
			n.settling = false
			return
		}
		// The part of the doubt in the owner's range: (lo, d.hi].
		lo := d.lo
		if r.Lo != d.hi && (d.lo == d.hi || r.Lo.Between(d.lo, d.hi)) {
			lo = r.Lo
		}
		holders := r.Holders(n.cfg.Replicas)
		n.countVouches(env, holders, lo, d.hi, func(env node.Env, vouched int) {
			if vouched < quorum(len(holders)) {
				n.settling = false // no majority to catch up with: the common case in a partition
				return
			}
			n.listArc(env, holders, lo, d.hi, func(env node.Env, lists []holderList) {
				n.settling = false
				if n.doubtGen != gen || !n.joined {
					return // the range changed meanwhile: ask again
				}
				if n.caughtUp(env, lo, d.hi, holders, lists, n.settleDoubts) {
					n.endDoubt(d, lo)
				}
			})
		})
	})
}

// countVouches asks each of holders but this node whether it vouches for
// (lo, hi], with the one-key question (D2Keys.Last) a Latest asks: a
// doubt that cannot end yet costs a message per holder per round, not its
// arc's key lists.
func (n *Node) countVouches(env node.Env, holders []wire.D2Ref, lo, hi id.ID, done func(env node.Env, vouched int)) {
	left, vouched := 1, 0
	answered := func(env node.Env) {
		if left--; left == 0 {
			done(env, vouched)
		}
	}
	for _, h := range holders {
		if h.Node.Addr == n.self.Addr {
			continue
		}
		left++
		if !n.call(env, h.Node.Addr, &wire.D2Keys{Lo: lo, Hi: hi, Last: true}, func(env node.Env, reply wire.Msg, err error) {
			if l, ok := reply.(*wire.D2KeyList); err == nil && ok && !l.Unsure {
				vouched++
			}
			answered(env)
		}) {
			answered(env)
		}
	}
	answered(env)
}

// listArc asks each of holders but this node for its keys of (lo, hi].
func (n *Node) listArc(env node.Env, holders []wire.D2Ref, lo, hi id.ID, done func(env node.Env, lists []holderList)) {
	lists := make([]holderList, 0, len(holders))
	for _, h := range holders {
		if h.Node.Addr != n.self.Addr {
			lists = append(lists, holderList{from: h, vouched: true})
		}
	}
	left := len(lists)
	if left == 0 {
		done(env, lists)
		return
	}
	for i := range lists {
		n.listPage(env, &lists[i], lo, hi, 0, func(env node.Env) {
			if left--; left == 0 {
				done(env, lists)
			}
		})
	}
}

// listPage asks l's holder for one page of its keys of (from, hi], and the
// next until the last.
func (n *Node) listPage(env node.Env, l *holderList, from, hi id.ID, page int, done func(env node.Env)) {
	ok := n.call(env, l.from.Node.Addr, &wire.D2Keys{Lo: from, Hi: hi, Max: wire.MaxD2Keys, Pointers: true}, func(env node.Env, reply wire.Msg, err error) {
		kl, isList := reply.(*wire.D2KeyList)
		if err != nil || !isList || len(kl.Versions) != len(kl.Keys) {
			done(env)
			return
		}
		l.keys = append(l.keys, kl.Keys...)
		l.versions = append(l.versions, kl.Versions...)
		l.vouched = l.vouched && !kl.Unsure
		if !kl.More || len(kl.Keys) == 0 {
			l.ok = true
			done(env)
			return
		}
		if page+1 >= settlePages {
			done(env)
			return
		}
		n.listPage(env, l, kl.Keys[len(kl.Keys)-1], hi, page+1, done)
	})
	if !ok {
		done(env)
	}
}

// caughtUp reports whether a majority of holders vouched for (lo, hi]
// and this node holds every block they hold there, at their newest
// version, and no block none of them holds; the blocks it lacks or holds
// older are fetched now, and again is called once they are in (after
// caughtUp returns).
func (n *Node) caughtUp(env node.Env, lo, hi id.ID, holders []wire.D2Ref, lists []holderList, again func(env node.Env)) bool {
	vouched := 0
	for _, l := range lists {
		if l.ok && l.vouched {
			vouched++
		}
	}
	if vouched < quorum(len(holders)) {
		return false
	}
	type newest struct {
		version uint64
		from    wire.D2Ref
	}
	var order []id.ID // the keys as listed: a deterministic order of fetches
	best := map[id.ID]newest{}
	for _, l := range lists {
		if !l.ok || !l.vouched {
			continue
		}
		for i, k := range l.keys {
			b, seen := best[k]
			if !seen {
				order = append(order, k)
			}
			if !seen || l.versions[i] > b.version {
				best[k] = newest{version: l.versions[i], from: l.from}
			}
		}
	}
	behind := false
	fetches := &budget{left: n.cfg.MaxFetchesPerSync}
	// again runs once every fetch is answered, if one was kept: a holder
	// that lists a block and does not give it is not asked in a loop.
	fetching, kept := 1, false
	fetched := func(env node.Env, ok bool) {
		kept = kept || ok
		if fetching--; fetching == 0 && kept {
			again(env)
		}
	}
	for _, k := range order {
		b := best[k]
		if b.version == 0 {
			continue // pointers only: the block lives past the holders
		}
		if e, held := n.idx.get(k); held && !e.pointer() && e.version >= b.version {
			continue
		}
		behind = true
		if fetches.take() {
			fetching++
			n.pull(env, b.from, k, b.version, fetched)
		}
	}
	defer fetched(env, false) // the loop's own count
	for _, e := range n.idx.arc(lo, hi) {
		if _, listed := best[e.key]; !listed && !e.pointer() {
			behind = true // deleted, or never acknowledged: the owner's sync decides
		}
	}
	if !behind {
		n.Stats.DoubtsSettled++
	}
	return !behind
}

// endDoubt stops doubting (lo, d.hi], the top of the doubt d: d ends, or
// keeps its part below lo.
func (n *Node) endDoubt(d doubt, lo id.ID) {
	for i, c := range n.doubts {
		if c.lo != d.lo || c.hi != d.hi {
			continue
		}
		if lo == d.lo {
			n.doubts = append(n.doubts[:i], n.doubts[i+1:]...)
		} else {
			n.doubts[i].hi = lo
		}
		return
	}
}
