package tapestry

import (
	"errors"
	"slices"

	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/rpc"
	"triad/internal/wire"
)

// RouteToNode routes payload to application app at key's root (exact:
// only if a node has key as its ID) and runs done with the outcome.
func (n *Node) RouteToNode(env node.Env, key id.ID, app uint32, exact bool, payload []byte, done Done) {
	n.start(env, &wire.TapRoute{Op: wire.TapToNode, Key: key, App: app, Exact: exact, Payload: payload}, done)
}

// RouteToObject routes to the nearest server of the object key, for app
// (AppDOLR to find it, AppFetch for its bytes, or a registered one), and
// runs done with the outcome.
func (n *Node) RouteToObject(env node.Env, key id.ID, app uint32, payload []byte, done Done) {
	n.start(env, &wire.TapRoute{Op: wire.TapToObject, Key: key, App: app, Payload: payload}, done)
}

// LocateAll routes to the object's root, which answers with every server
// it knows, nearest to it first.
func (n *Node) LocateAll(env node.Env, key id.ID, done Done) {
	n.start(env, &wire.TapRoute{Op: wire.TapToRoot, Key: key, App: AppDOLR}, done)
}

// RouteUpcall routes payload towards key with the application's Forward
// called at every hop (§IV-B), and runs done with the outcome.
func (n *Node) RouteUpcall(env node.Env, key id.ID, app uint32, payload []byte, done Done) {
	n.start(env, &wire.TapRoute{Op: wire.TapToNode, Key: key, App: app, Upcall: true, Payload: payload}, done)
}

// start sends a route from this node. done may be nil.
func (n *Node) start(env node.Env, m *wire.TapRoute, done Done) {
	n.Stats.Routed++
	m.Origin = n.self
	if done != nil {
		if len(n.routes) >= maxOrigins {
			n.Stats.Busy++
			done(env, Outcome{Status: wire.TapUnreachable, Err: ErrRouteTimeout})
			return
		}
		m.Seq = env.Rand().Uint64() | 1
		n.routes[m.Seq] = &origin{sent: env.Now(), done: done, cancel: env.After(n.cfg.RouteTimeout, routeTimer{m.Seq})}
	}
	n.arrive(env, m)
}

// arrive takes a routed message at this node: the hop is counted and
// recorded, a server checks for the object, and the message goes on.
func (n *Node) arrive(env node.Env, m *wire.TapRoute) {
	if m.Hops >= wire.MaxTapHops {
		n.Stats.Loops++
		n.finish(env, m, wire.TapLooped, n.self, nil, nil)
		return
	}
	if len(m.Path) < wire.MaxListLen {
		m.Path = append(m.Path, n.self)
	}
	if m.Op == wire.TapToServer {
		if n.holds(env, m.Key) {
			n.serve(env, m)
			return
		}
		// A pointer named this node, which no longer holds the object: on
		// to the root, with this server excluded (§III-B2).
		n.Stats.ServerMiss++
		if len(m.Exclude) < wire.MaxTapExclude {
			m.Exclude = append(m.Exclude, n.self)
		}
		m.Op, m.Level = wire.TapToObject, 0
	}
	n.dispatch(env, m, 0)
}

// dispatch sends m one hop on: to the nearest server of a pointer held
// here for an object route, else to NEXTHOP; at the root it ends.
func (n *Node) dispatch(env node.Env, m *wire.TapRoute, attempt int) {
	if m.Op == wire.TapToObject {
		if n.holds(env, m.Key) && !excluded(m.Exclude, n.self.Addr) {
			n.serve(env, m)
			return
		}
		if p, ok := n.nearestServer(env, m.Key, m.Exclude); ok {
			n.Stats.Redirected++
			redirect := *m
			redirect.Op = wire.TapToServer
			n.forward(env, &redirect, p.server, int(m.Level), attempt)
			return
		}
	}
	avoid := n.avoid
	if m.Op == wire.TapJoin {
		// A node started again on its old ID is still in others' tables,
		// and its own ID would route to it: a join goes to the surrogate
		// the mesh has without the joiner.
		avoid = func(addr string) bool { return addr == m.Origin.Addr || n.avoid(addr) }
	}
	next, level, root := n.table.nextHop(int(m.Level), m.Key, false, avoid)
	if m.Upcall {
		if a := n.apps[m.App]; a != nil {
			a.Forward(env, n, m, next, root)
			return
		}
	}
	if root {
		n.atRoot(env, m)
		return
	}
	n.forward(env, m, next, level, attempt)
}

// Forward sends m on to next as its next hop, having resolved level
// digits (an application's ROUTE, §IV-B).
func (n *Node) Forward(env node.Env, m *wire.TapRoute, next wire.NodeRef, level int) {
	if next.Addr == n.self.Addr {
		n.Deliver(env, m)
		return
	}
	n.forward(env, m, next, level, 0)
}

// Deliver ends m here: the application's Deliver runs and the origin
// hears of it.
func (n *Node) Deliver(env node.Env, m *wire.TapRoute) {
	n.Stats.Delivered++
	if a := n.apps[m.App]; a != nil {
		a.Deliver(env, n, m)
	}
	n.finish(env, m, wire.TapDelivered, n.self, nil, nil)
}

// forward sends a copy of m to next, acknowledged: if next does not
// answer in time, or refuses, it becomes a suspect (probed, and declared
// dead only if the probe goes unanswered too; routes go around it
// meanwhile), and m is dispatched again from here around it, up to
// hopAttempts times. A refusal never takes a link out of the table: a busy
// node is alive, and a hole would make this node the root of its keys.
func (n *Node) forward(env node.Env, m *wire.TapRoute, next wire.NodeRef, level, attempt int) {
	fwd := *m
	fwd.Level = uint32(level)
	fwd.Hops++
	fwd.Path = slices.Clip(m.Path)
	fwd.Exclude = slices.Clip(m.Exclude)
	n.Stats.Forwarded++
	ok := n.call(env, next, &fwd, 0, func(env node.Env, _ wire.Msg, err error) {
		if err == nil || n.stopped {
			return
		}
		if attempt+1 >= hopAttempts {
			n.Stats.Unreachable++
			n.finish(env, m, wire.TapUnreachable, n.self, nil, nil)
			return
		}
		n.Stats.HopRetries++
		if !errors.Is(err, rpc.ErrTimeout) {
			// It refused (busy, still joining): alive, so it stays in the
			// table, but this message and others for a while go around it
			// (a timed-out link is a suspect already).
			n.suspect(env, next)
		}
		n.dispatch(env, m, attempt+1)
	})
	if !ok {
		n.Stats.Busy++
		n.finish(env, m, wire.TapUnreachable, n.self, nil, nil)
	}
}

// atRoot ends a route at this node, the key's root.
func (n *Node) atRoot(env node.Env, m *wire.TapRoute) {
	switch m.Op {
	case wire.TapToNode:
		if m.Exact && m.Key != n.self.ID {
			n.finish(env, m, wire.TapNotExact, n.self, nil, nil)
			return
		}
		n.Deliver(env, m)
	case wire.TapToObject:
		n.finish(env, m, wire.TapNotFound, n.self, nil, nil)
	case wire.TapToRoot:
		var servers []wire.NodeRef
		for _, p := range n.ptrs.lookup(m.Key) {
			if !p.extra && p.confirmed && p.expires.After(env.Now()) && !n.h.IsDead(env, p.server.Addr) && len(servers) < wire.MaxListLen {
				servers = append(servers, p.server)
			}
		}
		status := wire.TapDelivered
		if len(servers) == 0 {
			status = wire.TapNotFound
		}
		n.finish(env, m, status, n.self, servers, nil)
	case wire.TapJoin:
		n.surrogate(env, m.Origin)
	}
}

// finish tells m's origin how it ended.
func (n *Node) finish(env node.Env, m *wire.TapRoute, status wire.TapStatus, at wire.NodeRef, servers []wire.NodeRef, payload []byte) {
	if m.Seq == 0 {
		return // nobody waits on it
	}
	d := &wire.TapRouteDone{Seq: m.Seq, Key: m.Key, Status: status, Node: at, Servers: servers, Hops: m.Hops, Path: m.Path, Payload: payload}
	if status != wire.TapDelivered || m.Op == wire.TapToRoot || m.Op == wire.TapToNode {
		d.Root = at
	}
	if m.Origin.Addr == n.self.Addr {
		n.delivered(env, d)
		return
	}
	n.send(env, m.Origin, d)
}

// delivered runs the continuation of a route this node started.
func (n *Node) delivered(env node.Env, d *wire.TapRouteDone) {
	o := n.routes[d.Seq]
	if o == nil {
		n.Stats.UnknownDeliveries++
		return
	}
	delete(n.routes, d.Seq)
	o.cancel()
	o.done(env, Outcome{Status: d.Status, Node: d.Node, Root: d.Root, Servers: d.Servers, Hops: int(d.Hops), Path: d.Path,
		Latency: env.Now().Sub(o.sent), Payload: d.Payload})
}

// nearestServer is the nearest live server of a pointer held for key,
// not excluded.
func (n *Node) nearestServer(env node.Env, key id.ID, exclude []wire.NodeRef) (pointer, bool) {
	now := env.Now()
	for _, p := range n.ptrs.lookup(key) {
		if p.confirmed && p.expires.After(now) && !excluded(exclude, p.server.Addr) && !n.h.IsDead(env, p.server.Addr) && !n.avoid(p.server.Addr) {
			return p, true
		}
	}
	return pointer{}, false
}

func excluded(l []wire.NodeRef, addr string) bool {
	return slices.ContainsFunc(l, func(r wire.NodeRef) bool { return r.Addr == addr })
}

// NextHop is the hop a message for key takes from this node at level
// (root: this node is the key's root), for applications.
func (n *Node) NextHop(key id.ID, level int) (next wire.NodeRef, nextLevel int, root bool) {
	return n.table.nextHop(level, key, false, nil)
}
