package tapestry

import (
	"errors"
	"slices"
	"time"

	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/rpc"
	"triad/internal/wire"
)

// Publish makes this node a server of the object key for app (§III-A
// PUBLISHOBJECT): a pointer goes to the key's root at once and again at
// every republish until Unpublish or expires (zero: no expiry).
func (n *Node) Publish(env node.Env, key id.ID, app uint32, expires time.Time) {
	n.published[key] = object{app: app, expires: expires}
	n.changed(env)
	if n.joined {
		n.handlePointers(env, "", []wire.TapPointer{n.pointerOf(key, app, false)})
	}
}

// Unpublish stops serving key and removes its pointers on the way to the
// root (§III-A UNPUBLISHOBJECT, best effort: what it misses expires).
func (n *Node) Unpublish(env node.Env, key id.ID) {
	o, ok := n.published[key]
	if !ok {
		return
	}
	delete(n.published, key)
	n.changed(env)
	n.handlePointers(env, "", []wire.TapPointer{n.pointerOf(key, o.app, true)})
}

// Published is the number of objects this node serves.
func (n *Node) Published() int { return len(n.published) }

// PointersHeld is the number of location pointers this node holds.
func (n *Node) PointersHeld() int { return n.ptrs.count }

// Pointers returns the servers this node holds pointers to for key,
// nearest first, and whether it holds them as the key's root.
func (n *Node) Pointers(key id.ID) (servers []wire.NodeRef, root bool) {
	for _, p := range n.ptrs.byKey[key] {
		servers = append(servers, p.server)
		root = root || p.root
	}
	return servers, root
}

// BloomStats are the filter's lookups, its "absent" answers and its false
// positives.
func (n *Node) BloomStats() (lookups, negative, falsePositive uint64) {
	return n.ptrs.BloomLookups, n.ptrs.BloomNegative, n.ptrs.BloomFalsePositive
}

func (n *Node) pointerOf(key id.ID, app uint32, remove bool) wire.TapPointer {
	return wire.TapPointer{Key: key, App: app, Server: n.self, TTLMillis: uint64(n.cfg.PointerTTL() / time.Millisecond), Remove: remove}
}

// holds reports whether this node serves the object key now.
func (n *Node) holds(env node.Env, key id.ID) bool {
	o, ok := n.published[key]
	return ok && (o.expires.IsZero() || o.expires.After(env.Now()))
}

// serve ends an object route at its server: the application hears of it
// (AppFetch: the origin gets the object's bytes).
func (n *Node) serve(env node.Env, m *wire.TapRoute) {
	n.Stats.Delivered++
	if m.App == AppFetch {
		env.Offload(&getWork{key: m.Key, then: func(env node.Env, data []byte, err error) {
			if err != nil {
				n.finish(env, m, wire.TapNotFound, n.self, nil, nil)
				return
			}
			n.finish(env, m, wire.TapDelivered, n.self, nil, data)
		}})
		return
	}
	if a := n.apps[m.App]; a != nil {
		a.Deliver(env, n, m)
	}
	n.finish(env, m, wire.TapDelivered, n.self, nil, nil)
}

// batches groups pointers by the next hop they go to. from is the peer
// whose pointers they are, sent on ("": this node's own).
type batches struct {
	to    map[string]wire.NodeRef
	items map[string][]wire.TapPointer
	from  string
}

func (b *batches) add(to wire.NodeRef, p wire.TapPointer) {
	if b.to == nil {
		b.to, b.items = map[string]wire.NodeRef{}, map[string][]wire.TapPointer{}
	}
	b.to[to.Addr] = to
	b.items[to.Addr] = append(b.items[to.Addr], p)
}

// handlePointers stores a batch of pointers (or removes them) here and
// sends each on towards its root, one batch per next hop (Fig. 4).
func (n *Node) handlePointers(env node.Env, from string, list []wire.TapPointer) {
	out := batches{from: from}
	now := env.Now()
	for _, p := range list {
		if p.Backup && p.Extra {
			// On its way to the root's backup: sent on, and kept here as
			// an extra pointer with its next hop. The first hop from the
			// root is not the backup's node when the route past the root
			// resolves more than one digit, and a locate that reached
			// that node when the root left found nothing
			// (TestNoLocateFailsWhileARootLeaves, issue 45). Kept here,
			// it goes on the new way if its next hop dies
			// (repathPointers): else the backup's node died and no node
			// took its place until the server's next republish
			// (TestBackupFollowsItsHop).
			if next, level, root := n.table.nextHop(int(p.Level), p.Key, false, nil); !root {
				if n.forgedHere(env, p) {
					continue
				}
				switch {
				case p.Remove:
					if n.ptrs.mayRemove(p.Key, p.Server.Addr, from) {
						n.ptrs.removeExtra(p.Key, p.Server.Addr)
					}
				case n.ptrs.admits(p.Key, p.Server.Addr):
					// (Beside a pointer of the publish path, that one keeps
					// where the backup went.)
					n.ptrs.put(p.Key, pointer{server: p.Server, app: p.App, expires: now.Add(n.ttlOf(p)), rtt: n.rttTo(p.Server), level: p.Level,
						extra: true, from: from, confirmed: n.confirmedOnArrival(p.Server, from)})
					n.ptrs.setBackup(p.Key, p.Server.Addr, next.Addr, p.Level)
					n.checkUnconfirmed(p.Key, p.Server)
				}
				q := p
				q.Level, q.Hops = uint32(level), p.Hops+1
				out.add(next, q)
				continue
			}
		}
		if p.Remove {
			if !n.ptrs.mayRemove(p.Key, p.Server.Addr, from) {
				n.Stats.RemovesRefused++
				continue // not sent on either: this hop's path does not carry it
			}
			n.ptrs.remove(p.Key, p.Server.Addr)
		} else if !n.ptrs.admits(p.Key, p.Server.Addr) {
			n.Stats.PointersRefused++
			continue
		} else if n.forgedHere(env, p) {
			continue
		}
		confirmed := n.confirmedOnArrival(p.Server, from)
		if p.Extra {
			if !p.Remove {
				n.ptrs.put(p.Key, pointer{server: p.Server, app: p.App, expires: now.Add(n.ttlOf(p)), rtt: n.rttTo(p.Server), level: p.Level, extra: true, from: from, confirmed: confirmed})
				n.checkUnconfirmed(p.Key, p.Server)
			}
			continue
		}
		next, level, root := n.table.nextHop(int(p.Level), p.Key, false, nil)
		var backup string
		if root {
			backup = n.backupRoot(&out, p)
		}
		if !p.Remove {
			ptr := pointer{server: p.Server, app: p.App, expires: now.Add(n.ttlOf(p)), rtt: n.rttTo(p.Server), level: p.Level, root: root, backup: backup, from: from, confirmed: confirmed}
			if !root {
				ptr.next = next.Addr
			}
			if n.ptrs.put(p.Key, ptr) {
				n.Stats.PointersStored++
			}
			n.checkUnconfirmed(p.Key, p.Server)
		}
		if root {
			n.rootsChanged(env)
			continue
		}
		q := p
		q.Level, q.Hops = uint32(level), p.Hops+1
		out.add(next, q)
		if !p.Remove && int(p.Hops) < n.cfg.ExtraHops {
			n.extraPointers(&out, p, next, level)
		}
	}
	n.sendBatches(env, out)
	n.sendChecks(env)
}

// forgedHere reports (and counts) a pointer that names this node as the
// server of a key it does not serve: sent on from here, it would look as
// if it came from its server, which needs no asking.
func (n *Node) forgedHere(env node.Env, p wire.TapPointer) bool {
	if n.cfg.NoServerCheck || p.Remove || p.Server.Addr != n.self.Addr || n.holds(env, p.Key) {
		return false
	}
	n.Stats.PointersForged++
	return true
}

// backupRoot sends the root's pointer (or its removal), as an extra one,
// to the node that would be the key's root without this one, by way of
// the hops that lead there (TapPointer.Backup). A route that
// goes around this root when it dies, before its death is confirmed and
// the paths republished to the new root, ends there and still finds the
// server, where it would answer not-found (real processes under churn:
// most failed locates). It costs one pointer per object. It returns the
// hop the backup went to ("" for none), kept with the root's pointer: if
// that hop dies, the backup is sent again on the new way
// (repathPointers).
func (n *Node) backupRoot(out *batches, p wire.TapPointer) string {
	next, level, none := n.table.nextHop(0, p.Key, true, nil)
	if none {
		return ""
	}
	q := p
	q.Extra, q.Backup, q.Level, q.Hops = true, true, uint32(level), p.Hops+1
	out.add(next, q)
	return next.Addr
}

// extraPointers adds the extra pointers of §V-B3 for p, which goes on to
// next: copies for k backups of next's entry and the l nearest neighbours
// of this node.
func (n *Node) extraPointers(out *batches, p wire.TapPointer, next wire.NodeRef, level int) {
	extra := p
	extra.Extra, extra.Hops = true, p.Hops+1
	sent := map[string]bool{next.Addr: true, n.self.Addr: true, p.Server.Addr: true}
	entry := n.table.entry(level-1, n.table.digit(next.ID, level-1))
	k := 0
	for _, l := range entry {
		if k < n.cfg.ExtraBackups && !sent[l.ref.Addr] {
			sent[l.ref.Addr] = true
			out.add(l.ref, extra)
			k++
		}
	}
	for _, l := range n.table.nearest(n.cfg.ExtraNearest + len(sent)) {
		if k >= n.cfg.ExtraBackups+n.cfg.ExtraNearest {
			break
		}
		if !sent[l.ref.Addr] {
			sent[l.ref.Addr] = true
			out.add(l.ref, extra)
			k++
		}
	}
}

// ttlOf is how long a pointer received lives here: as long as it asks, but
// no longer than this node's own pointers live unrepublished
// (Config.PointerTTL): a publisher that wants it longer republishes, and
// a 30-day pointer no one renews pins the table (issue 44).
func (n *Node) ttlOf(p wire.TapPointer) time.Duration {
	return min(time.Duration(min(p.TTLMillis, wire.MaxTapTTLMillis))*time.Millisecond, n.cfg.PointerTTL())
}

// Pointer batches go out through a window: a server that publishes
// thousands of objects at once would otherwise queue hundreds of
// kilobytes on its uplink, past every timeout and past what a router
// keeps, and the batches lost would leave their pointers missing until
// the next republish.
const (
	batchPointers   = 256     // pointers per TapPointers sent (~18 KB)
	batchesInFlight = 2       // TapPointers unanswered at once
	batchAttempts   = 3       // sends of a batch whose next hop is slow
	maxQueued       = 1 << 20 // pointers waiting; past it they are dropped, counted
)

// outBatch is one TapPointers waiting in the outbox, with how many of
// its pointers each peer sent (from).
type outBatch struct {
	to      wire.NodeRef
	items   []wire.TapPointer
	from    map[string]int
	attempt int
}

// enqueue counts k more pointers of peer from in batch ob, or, with k
// negative, fewer.
func (n *Node) enqueue(ob *outBatch, from string, k int) {
	n.queued += k
	if from == "" {
		return
	}
	if ob.from == nil {
		ob.from = map[string]int{}
	}
	ob.from[from] += k
	if n.queuedFrom[from] += k; n.queuedFrom[from] <= 0 {
		delete(n.queuedFrom, from)
	}
}

// dequeue uncounts batch ob's pointers, sent (or dropped).
func (n *Node) dequeue(ob *outBatch) {
	n.queued -= len(ob.items)
	for from, k := range ob.from {
		if n.queuedFrom[from] -= k; n.queuedFrom[from] <= 0 {
			delete(n.queuedFrom, from)
		}
	}
}

// requeue counts batch ob's pointers again (a retry).
func (n *Node) requeue(ob *outBatch) {
	n.queued += len(ob.items)
	for from, k := range ob.from {
		n.queuedFrom[from] += k
	}
}

// sendBatches queues each next hop its pointers, in address order, and
// sends what the window allows. Pointers join the batch waiting for the
// same next hop while it has room, so that publishes made one object at a
// time go out in few messages. A leaving node sends everything at once:
// it will not be there to send the rest.
func (n *Node) sendBatches(env node.Env, b batches) {
	addrs := make([]string, 0, len(b.to))
	for a := range b.to {
		addrs = append(addrs, a)
	}
	slices.Sort(addrs)
	for _, a := range addrs {
		items := b.items[a]
		for len(items) > 0 {
			open := n.open[a]
			room := batchPointers
			if open != nil && !n.leaving {
				room -= len(open.items)
			}
			chunk := items[:min(len(items), room)]
			items = items[len(chunk):]
			switch {
			case n.leaving:
				n.Stats.PointerBatches++
				n.call(env, b.to[a], &wire.TapPointers{Pointers: chunk}, 0, nil)
			case n.queued+len(chunk) > maxQueued:
				n.Stats.PointersDropped += uint64(len(chunk))
			case b.from != "" && n.queuedFrom[b.from]+len(chunk) > n.cfg.MaxQueuedPerPeer:
				// A peer past its share (Config.MaxQueuedPerPeer): one
				// flooding the node with pointers to send on (at its
				// PublishRate) cannot fill the queue this node's own and
				// every other peer's wait in (issue 44). Own pointers
				// have the whole queue.
				n.Stats.PointersDropped += uint64(len(chunk))
				n.Stats.PointersShed += uint64(len(chunk))
			case open != nil:
				n.enqueue(open, b.from, len(chunk))
				open.items = append(open.items, chunk...)
			default:
				ob := &outBatch{to: b.to[a], items: slices.Clone(chunk)}
				n.enqueue(ob, b.from, len(chunk))
				n.outbox = append(n.outbox, ob)
				n.open[a] = ob
			}
			if open := n.open[a]; open != nil && len(open.items) >= batchPointers {
				delete(n.open, a)
			}
		}
	}
	n.pump(env)
}

// pump sends queued batches while the window has room. A batch that
// times out goes to the back of the queue, up to batchAttempts sends,
// unless its next hop was declared dead meanwhile: PeerDown has then sent
// its pointers on through the new next hop.
func (n *Node) pump(env node.Env) {
	for n.inFlight < batchesInFlight && len(n.outbox) > 0 && !n.stopped {
		b := n.outbox[0]
		n.outbox = n.outbox[1:]
		n.dequeue(b)
		if n.open[b.to.Addr] == b {
			delete(n.open, b.to.Addr)
		}
		if n.h.IsDead(env, b.to.Addr) {
			continue
		}
		n.Stats.PointerBatches++
		n.inFlight++
		ok := n.call(env, b.to, &wire.TapPointers{Pointers: b.items}, n.cfg.ConfirmTimeout, func(env node.Env, _ wire.Msg, err error) {
			n.inFlight--
			if errors.Is(err, rpc.ErrTimeout) && b.attempt+1 < batchAttempts && !n.h.IsDead(env, b.to.Addr) {
				b.attempt++
				n.requeue(b)
				n.outbox = append(n.outbox, b)
			}
			n.pump(env)
		})
		if !ok {
			n.inFlight--
			n.Stats.PointersDropped += uint64(len(b.items))
			return
		}
	}
}

// republishAll sends a pointer for every object served here, batched by
// next hop.
func (n *Node) republishAll(env node.Env) {
	if !n.joined || len(n.published) == 0 {
		return
	}
	var list []wire.TapPointer
	for _, k := range n.sortedObjects() {
		list = append(list, n.pointerOf(k, n.published[k].app, false))
	}
	n.Stats.Republished += uint64(len(list))
	n.handlePointers(env, "", list)
}

// sortedObjects are the keys served here, in order.
func (n *Node) sortedObjects() []id.ID { return sortedIDs(n.published) }

// expireObjects stops serving objects past their expiry.
func (n *Node) expireObjects(env node.Env) {
	for _, k := range n.sortedObjects() {
		if o := n.published[k]; !o.expires.IsZero() && !o.expires.After(env.Now()) {
			n.Unpublish(env, k)
		}
	}
}

// handOverRoots sends on the pointers whose route from here now leads
// elsewhere: a new node filled a hole and is their root (§III-C1b), or
// is on their new path to it (a hole on the way was filled, so the root
// moved behind it; the old path's pointers expire).
func (n *Node) handOverRoots(env node.Env) {
	var moved []wire.TapPointer
	for _, k := range n.ptrs.sortedKeys() {
		for i := range n.ptrs.byKey[k] {
			p := &n.ptrs.byKey[k][i]
			if p.extra {
				continue
			}
			next, _, root := n.table.nextHop(int(p.level), k, false, nil)
			if root || !p.root && next.Addr == p.next {
				continue
			}
			p.root, p.next = false, next.Addr
			moved = append(moved, n.wirePointer(env, k, *p))
		}
	}
	if len(moved) > 0 {
		n.rootsChanged(env)
		n.Stats.RootHandovers += uint64(len(moved))
		n.handlePointers(env, "", moved)
	}
}

// wirePointer is a pointer held here as sent on from here.
func (n *Node) wirePointer(env node.Env, key id.ID, p pointer) wire.TapPointer {
	ttl := max(p.expires.Sub(env.Now()), time.Millisecond)
	return wire.TapPointer{Key: key, App: p.app, Server: p.server, Level: p.level, TTLMillis: uint64(ttl / time.Millisecond)}
}

// repathPointers drops the pointers to a server that died and sends on,
// through the new next hop, the pointers whose next hop it was: republish
// at once along a path that lost a node. A root's backup whose hop it was
// goes again the new way: else the backup waited for the server's next
// republish (10 minutes by default), and a locate during this root's
// graceful stop or death in that time found no backup at the new root
// (TestBackupFollowsItsHop; TestTapestryCluster, once in 8 runs: "not
// found at root" during a graceful stop, 21 s after another node died).
func (n *Node) repathPointers(env node.Env, addr string) {
	var again, backupsAgain []wire.TapPointer
	backups := batches{}
	for _, k := range n.ptrs.sortedKeys() {
		l := n.ptrs.byKey[k]
		for i := len(l) - 1; i >= 0; i-- {
			p := l[i]
			if p.server.Addr == addr {
				if p.root {
					n.rootsChanged(env)
				}
				n.ptrs.drop(k, i)
				l = n.ptrs.byKey[k]
				continue
			}
			if p.next == addr {
				again = append(again, n.wirePointer(env, k, p))
			}
			switch {
			case p.backup != addr:
			case p.root:
				l[i].backup = n.backupRoot(&backups, n.wirePointer(env, k, p))
				n.Stats.BackupsResent++
			default: // on the backup's way: on from here, the new way
				q := n.wirePointer(env, k, p)
				q.Level, q.Extra, q.Backup = p.backupLevel, true, true
				backupsAgain = append(backupsAgain, q)
				n.Stats.BackupsResent++
			}
		}
	}
	n.sendBatches(env, backups)
	if len(backupsAgain) > 0 {
		n.handlePointers(env, "", backupsAgain)
	}
	if len(again) > 0 {
		n.Stats.PathRepublished += uint64(len(again))
		n.handlePointers(env, "", again)
	}
}
