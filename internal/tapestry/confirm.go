package tapestry

import (
	"maps"
	"slices"
	"time"

	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/wire"
)

// A pointer names its server, and any node of the mesh can send one
// (issue 44): a forged pointer would send routes to a node that does not
// serve the object, or to an address where nothing runs, and a root
// would list that server. So a pointer counts only once its server has
// said it serves the key. A pointer that came straight from its server
// (the first hop of its publish path, or this node's own) needs no
// asking: the sender's address is the connection's, proven by its
// certificate or the handshake (a node never sends on a pointer that
// names itself for a key it does not serve). Any other, relayed along the publish
// path, handed over on a join or restored from disk, is checked: the
// node asks the server, in one TapCheckServed per server for the keys
// that arrived together, and marks the pointer confirmed, or drops it if
// the server does not serve the key (Stats.PointersForged). Until then,
// routes and the root's list of servers pass over it. A confirmed
// pointer stays confirmed when it is refreshed. Config.NoServerCheck
// turns the check off.
//
// The cost is one round trip per pointer and node, batched per server
// and paid once per pointer, off the publish path (the pointer is sent on
// at once); a locate in that round trip's window passes over the
// pointer.

// maxChecking bounds the pointers a node is checking at once; past it a
// new pointer waits, unconfirmed, for its next refresh.
const maxChecking = 16 << 10

// Checks are bounded per server too: a node asks one server about at
// most maxChecksPerServer keys per checkWindow, and the pointers past
// that wait, unconfirmed, for their next refresh. Else an insider could
// send every node pointers naming a victim, and have the whole mesh ask
// the victim about up to maxChecking keys each (an amplification, not a
// forgery). An honest server's pointers mostly come from it on their
// first hop (no check); a node further along its paths confirms a
// publish of many objects over a few windows.
const (
	maxChecksPerServer = 4 * wire.MaxTapPointers
	checkWindow        = time.Minute
)

// checkBudget is what a node has asked one server about in the current
// window.
type checkBudget struct {
	since time.Time
	keys  int
}

// checkKey is one pointer being checked: its key and server.
type checkKey struct {
	key    id.ID
	server string
}

// confirmedOnArrival reports whether a pointer naming server that came
// from the peer from (""; this node) needs no check.
func (n *Node) confirmedOnArrival(server wire.NodeRef, from string) bool {
	return n.cfg.NoServerCheck || server.Addr == n.self.Addr || from != "" && from == server.Addr
}

// checkUnconfirmed queues a check of the pointer of (key, server) if it
// is held and not confirmed.
func (n *Node) checkUnconfirmed(key id.ID, server wire.NodeRef) {
	if !n.cfg.NoServerCheck && !n.ptrs.confirmed(key, server.Addr) {
		n.check(key, server)
	}
}

// check queues a check of the pointer of (key, server) unless it is being
// checked, or too many are.
func (n *Node) check(key id.ID, server wire.NodeRef) {
	ck := checkKey{key, server.Addr}
	if n.checking[ck] || len(n.checking) >= maxChecking {
		return
	}
	n.checking[ck] = true
	q := n.toCheck[server.Addr]
	if q == nil {
		q = &serverCheck{server: server}
		n.toCheck[server.Addr] = q
	}
	q.keys = append(q.keys, key)
}

// serverCheck is the keys to ask one server about.
type serverCheck struct {
	server wire.NodeRef
	keys   []id.ID
}

// sendChecks sends the queued checks, one TapCheckServed per server and
// batch.
func (n *Node) sendChecks(env node.Env) {
	// In address order, not the map's: the simulator replays a seed's
	// run exactly.
	now := env.Now()
	for _, addr := range slices.Sorted(maps.Keys(n.toCheck)) {
		server, keys := n.toCheck[addr].server, n.toCheck[addr].keys
		b := n.checkBudgets[addr]
		if now.Sub(b.since) >= checkWindow {
			b = checkBudget{since: now}
		}
		if over := len(keys) - (maxChecksPerServer - b.keys); over > 0 {
			for _, k := range keys[len(keys)-over:] {
				delete(n.checking, checkKey{k, addr}) // asked at a later refresh
			}
			n.Stats.ChecksDeferred += uint64(over)
			keys = keys[:len(keys)-over]
		}
		b.keys += len(keys)
		n.setCheckBudget(now, addr, b)
		for len(keys) > 0 {
			batch := keys[:min(len(keys), wire.MaxTapPointers)]
			keys = keys[len(batch):]
			n.Stats.ServerChecks++
			if !n.call(env, server, &wire.TapCheckServed{Keys: batch}, 0, func(env node.Env, reply wire.Msg, err error) {
				n.checked(server, batch, reply, err)
			}) {
				n.checked(server, batch, nil, nil) // busy: left unconfirmed
			}
		}
	}
	clear(n.toCheck)
}

// maxBudgets bounds the servers a node keeps a check budget for; past it
// the lapsed ones are forgotten, and if none has, all are.
const maxBudgets = 4096

func (n *Node) setCheckBudget(now time.Time, addr string, b checkBudget) {
	if _, ok := n.checkBudgets[addr]; !ok && len(n.checkBudgets) >= maxBudgets {
		maps.DeleteFunc(n.checkBudgets, func(_ string, b checkBudget) bool { return now.Sub(b.since) >= checkWindow })
		if len(n.checkBudgets) >= maxBudgets {
			clear(n.checkBudgets)
		}
	}
	n.checkBudgets[addr] = b
}

// checked takes a server's answer: the pointers to the keys it serves are
// confirmed, the others dropped. Without an answer they stay unconfirmed
// (a server that does not answer is not routed to either).
func (n *Node) checked(server wire.NodeRef, keys []id.ID, reply wire.Msg, err error) {
	for _, k := range keys {
		delete(n.checking, checkKey{k, server.Addr})
	}
	served, ok := reply.(*wire.TapServed)
	if err != nil || !ok || served == nil {
		return
	}
	yes := make(map[id.ID]bool, len(served.Keys))
	for _, k := range served.Keys {
		yes[k] = true
	}
	for _, k := range keys {
		if yes[k] {
			n.ptrs.confirm(k, server.Addr)
		} else if _, held := n.ptrs.remove(k, server.Addr); held {
			n.Stats.PointersForged++
		}
	}
}

// served answers a TapCheckServed: the keys this node serves.
func (n *Node) served(env node.Env, m *wire.TapCheckServed) *wire.TapServed {
	out := &wire.TapServed{}
	for _, k := range m.Keys {
		if n.holds(env, k) {
			out.Keys = append(out.Keys, k)
		}
	}
	return out
}
