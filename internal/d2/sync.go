package d2

import (
	"slices"

	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/wire"
)

// Replica upkeep, once per Config.Sync: a block lives on the r successors
// of its key, and each node keeps that true for its own range. It fetches
// the blocks of the pointers it has held past the pointer stabilization
// time, pushes its primary blocks to the successors that lack them (and
// takes pointers to those a successor has and it lacks), and drops what it
// no longer replicates. After a move, the r successors of the old and the
// new position get or lose their replicas this way (§6).

// maxSyncPages bounds the key lists asked of one successor per round.
const maxSyncPages = 16

// budget is what one sync round may still fetch or push.
type budget struct{ left int }

func (b *budget) take() bool {
	if b.left <= 0 {
		return false
	}
	b.left--
	return true
}

// replicaLo is the exclusive start of the keys this node replicates: its
// r-th predecessor's position. ok is false while it knows fewer than r
// predecessors (a small ring, or one still forming): it then drops nothing.
func (n *Node) replicaLo() (id.ID, bool) {
	if len(n.preds) < n.cfg.Replicas {
		return id.ID{}, false
	}
	for _, p := range n.preds[:n.cfg.Replicas] {
		if _, distrusted := n.distrusted[p.Node.Addr]; distrusted {
			return id.ID{}, false // its keys may be on no honest holder before this one (audit.go)
		}
	}
	return n.preds[n.cfg.Replicas-1].Pos, true
}

// keeps reports whether k is one of this node's to keep.
func (n *Node) keeps(k id.ID) bool {
	lo, ok := n.replicaLo()
	return !ok || k.In(lo, n.pos)
}

func (n *Node) sync(env node.Env) {
	if !n.joined {
		return
	}
	b := &budget{left: n.cfg.MaxFetchesPerSync}
	n.tombs.prune(env.Now(), n.cfg.Tombstone)
	n.pruneDistrust(env.Now())
	n.handOff(env, n.strayKeys(), 0, b)
	n.fetchPointers(env, b)
	if !n.pred.IsZero() {
		for _, t := range n.replicaTargets() {
			n.syncWith(env, t, n.syncLo(), 0, b)
		}
	}
	n.audits(env)
}

// strays returns the keys this node holds outside the keys it
// replicates, at this round and the last: a predecessor list caught in a
// change hands nothing off.
func (n *Node) strayKeys() []id.ID {
	lo, ok := n.replicaLo()
	if !ok {
		n.strays = nil
		return nil
	}
	var due []id.ID
	now := map[id.ID]bool{}
	n.idx.each(n.pos, lo, func(e entry) bool { // the keys outside (lo, pos]
		now[e.key] = true
		if n.strays[e.key] {
			due = append(due, e.key)
		}
		return true
	})
	n.strays = now
	return due
}

// maxHandOffRanges bounds the owners' ranges one round hands off to.
const maxHandOffRanges = 8

// handOff passes on what this node no longer replicates (§6: the r
// successors of a mover's old and new positions fetch or drop replicas).
// The first stray key's owner is looked up and the key's r holders asked
// what they hold of the owner's range: the blocks they lack are pushed to
// them (but for an owner that holds a pointer: it fetches the block at
// its own time), and the keys every one of them holds as a block are
// dropped here. A block is never dropped before its r holders are known
// to have its bytes: an owner's pointer is not a copy. (Counted as one,
// every move left a key's bytes on r-1 nodes for the pointer
// stabilization time, an hour, and `triad chaos --d2` lost blocks when
// two of them failed in that hour.)
func (n *Node) handOff(env node.Env, due []id.ID, ranges int, b *budget) {
	if len(due) == 0 || ranges >= maxHandOffRanges || !n.joined {
		return
	}
	n.Lookup(env, due[0], func(env node.Env, r Route, err error) {
		if err != nil || !n.joined {
			return
		}
		var mine, rest []id.ID
		for _, k := range due {
			if k.In(r.Lo, r.Owner.Pos) {
				mine = append(mine, k)
			} else {
				rest = append(rest, k)
			}
		}
		holders := r.Holders(n.cfg.Replicas)
		if len(mine) == 0 || slices.ContainsFunc(holders, func(h wire.D2Ref) bool { return h.Node.Addr == n.self.Addr }) {
			n.handOff(env, rest, ranges+1, b) // still this node's after all
			return
		}
		n.askHolders(env, r, holders, func(env node.Env, have []map[id.ID]held) {
			n.settleStrays(env, mine, holders, have, b)
			n.handOff(env, rest, ranges+1, b)
		})
	})
}

// held is what a holder said it holds of a key: its block, or (the owner
// only) a pointer.
type held uint8

const (
	heldNothing held = iota
	heldPointer
	heldBlock
)

// askHolders asks each holder which keys of r's range it holds (the owner:
// pointers too, told apart by their zero version); a holder that does not
// answer has a nil set.
func (n *Node) askHolders(env node.Env, r Route, holders []wire.D2Ref, done func(env node.Env, have []map[id.ID]held)) {
	have := make([]map[id.ID]held, len(holders))
	left := len(holders)
	answered := func(env node.Env) {
		if left--; left == 0 {
			done(env, have)
		}
	}
	for i, h := range holders {
		q := &wire.D2Keys{Lo: r.Lo, Hi: r.Owner.Pos, Max: wire.MaxD2Keys, Pointers: i == 0}
		if !n.call(env, h.Node.Addr, q, func(env node.Env, reply wire.Msg, err error) {
			if l, ok := reply.(*wire.D2KeyList); err == nil && ok {
				have[i] = make(map[id.ID]held, len(l.Keys))
				for j, k := range l.Keys {
					have[i][k] = heldBlock
					if len(l.Versions) == len(l.Keys) && l.Versions[j] == 0 {
						have[i][k] = heldPointer
					}
				}
			}
			answered(env)
		}) {
			answered(env)
		}
	}
}

// settleStrays pushes the stray keys' blocks to the holders that lack
// them and drops the keys whose blocks all r hold.
func (n *Node) settleStrays(env node.Env, keys []id.ID, holders []wire.D2Ref, have []map[id.ID]held, b *budget) {
	for _, k := range keys {
		e, held := n.idx.get(k)
		if !held {
			continue
		}
		all := len(holders) == n.cfg.Replicas
		for i, h := range holders {
			switch {
			case have[i] == nil:
				all = false
			case have[i][k] == heldPointer:
				all = false // the owner fetches when its pointer is due
			case have[i][k] == heldNothing:
				all = false
				if b.take() {
					n.push(env, h, e, false)
				}
			}
		}
		if all {
			n.dropLocal(env, k)
		}
	}
}

// fetchPointers fetches the blocks of the pointers held past the pointer
// stabilization time, from their holders or else this node's successors.
func (n *Node) fetchPointers(env node.Env, b *budget) {
	if n.idx.pointers == 0 {
		return
	}
	now := env.Now()
	var due []entry
	n.idx.all(func(e entry) bool {
		if e.pointer() && now.Sub(e.since) >= n.cfg.PointerStabilization && n.keeps(e.key) {
			due = append(due, e)
		}
		return len(due) < n.cfg.MaxFetchesPerSync
	})
	for _, e := range due {
		if !b.take() {
			return
		}
		from := []wire.NodeRef{e.holder}
		for _, s := range n.replicaTargets() {
			from = append(from, s.Node)
		}
		k := e.key
		n.fetchFrom(env, k, nil, from, func(env node.Env, c blockCopy, ok bool) {
			cur, held := n.idx.get(k)
			if !ok || !held || !cur.pointer() {
				return
			}
			n.keepCopy(env, k, c, false, func(env node.Env, err error) {
				if err == nil {
					n.Stats.PointersFetched++
					n.Stats.MigratedBytes += uint64(len(c.data))
					n.Stats.PointerBytes += uint64(len(c.data))
				}
			})
		})
	}
}

// syncWith compares this node's primary keys from lo on with what the
// replica t holds: t gets the blocks it lacks, and this node pointers to
// those only t has. Where both hold a key at different versions, the
// newer copy replaces the older: a replace that missed one of them (it
// was down) is repaired, whichever side missed it.
func (n *Node) syncWith(env node.Env, t wire.D2Ref, lo id.ID, page int, b *budget) {
	hi := n.pos
	n.call(env, t.Node.Addr, &wire.D2Keys{Lo: lo, Hi: hi, Max: wire.MaxD2Keys}, func(env node.Env, reply wire.Msg, err error) {
		l, ok := reply.(*wire.D2KeyList)
		if err != nil || !ok || hi != n.pos || !n.joined {
			return
		}
		upTo := hi
		if l.More && len(l.Keys) > 0 {
			upTo = l.Keys[len(l.Keys)-1]
		}
		theirs := l.Keys
		versions := l.Versions
		if len(versions) != len(theirs) {
			versions = nil // a node that does not send them: keys only
		}
		now := env.Now()
		for _, e := range n.idx.arc(lo, upTo) {
			i, found := slices.BinarySearchFunc(theirs, e.key, ringCmp(lo))
			switch {
			case !found:
				if b.take() {
					n.push(env, t, e, false)
				}
			case versions != nil && !e.pointer() && e.version > versions[i] && b.take():
				n.push(env, t, e, true) // t missed a replace
			}
		}
		for i, k := range theirs {
			e, held := n.idx.get(k)
			switch {
			case held && versions != nil && !e.pointer() && versions[i] > e.version && b.take():
				n.pull(env, t, k, versions[i], nil) // this node missed a replace
			case held || !n.owns(k):
			case n.deleted(env, k):
				if b.take() {
					n.dropDeleted(env, t, k) // a delete that missed t
				}
			case n.idx.len() < n.cfg.MaxBlocks:
				// Fetched at the next round.
				n.idx.put(entry{key: k, holder: t.Node, since: now.Add(-n.cfg.PointerStabilization)})
			}
		}
		if l.More && page+1 < maxSyncPages && upTo != hi {
			n.syncWith(env, t, upTo, page+1, b)
		}
	})
}

// ringCmp orders keys clockwise from lo, as a D2KeyList lists them: the
// keys after lo, then those up to lo itself (index.each's order). It
// compares without arithmetic: a sync round runs it on every key of a
// range.
func ringCmp(lo id.ID) func(a, b id.ID) int {
	return func(a, b id.ID) int {
		wa, wb := a.Cmp(lo) <= 0, b.Cmp(lo) <= 0
		switch {
		case wa && !wb:
			return 1
		case wb && !wa:
			return -1
		}
		return a.Cmp(b)
	}
}

// push sends the replica t lacks (or, with replace, holds an older
// version of): from this node's engine, or, for a key this node holds a
// pointer to, from the pointer's holder (a replica fetches at once; only
// the owner defers its own copy, §6). The copy keeps its version.
func (n *Node) push(env node.Env, t wire.D2Ref, e entry, replace bool) {
	send := func(env node.Env, c blockCopy, ok bool) {
		if !ok {
			return
		}
		n.call(env, t.Node.Addr, copyMsg(e.key, c, replace), func(env node.Env, reply wire.Msg, err error) {
			if s, ok := reply.(*wire.D2StoreDone); err == nil && ok && s.Copies > 0 {
				n.Stats.ReplicasPushed++
				n.Stats.MigratedBytes += uint64(len(c.data))
			}
		})
	}
	if !e.pointer() {
		n.readLocal(env, e.key, nil, send)
		return
	}
	from := []wire.NodeRef{e.holder}
	for _, s := range n.replicaTargets() {
		if s.Node.Addr != t.Node.Addr {
			from = append(from, s.Node)
		}
	}
	n.fetchFrom(env, e.key, nil, from, send)
}

// pull replaces this node's copy of k with t's newer one, of version v;
// done, if set, is told whether it was kept.
func (n *Node) pull(env node.Env, t wire.D2Ref, k id.ID, v uint64, done func(env node.Env, kept bool)) {
	n.fetchFrom(env, k, nil, []wire.NodeRef{t.Node}, func(env node.Env, c blockCopy, ok bool) {
		if !ok || c.version < v {
			if done != nil {
				done(env, false)
			}
			return
		}
		n.keepCopy(env, k, c, true, func(env node.Env, err error) {
			if err == nil {
				n.Stats.ReplicasPulled++
				n.Stats.MigratedBytes += uint64(len(c.data))
			}
			if done != nil {
				done(env, err == nil)
			}
		})
	})
}
