package tapestry_test

import (
	"slices"
	"testing"
	"time"

	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/sim"
	"triad/internal/tapestry"
	"triad/internal/wire"
)

// sendPointers sends a TapPointers from one host to another, as a node of
// the mesh may, and runs until it is answered.
func (m *mesh) sendPointers(from, to *sim.Host, ps []wire.TapPointer) {
	m.t.Helper()
	answered := false
	m.s.Do(from, func(env node.Env) {
		tap(from).Host().Call(env, to.Addr, tap(from).Self(), tap(to).Self().ID, &wire.TapPointers{Pointers: ps}, 0,
			func(node.Env, wire.Msg, error) { answered = true })
	})
	m.s.RunFor(2 * time.Second)
	if !answered {
		m.t.Fatalf("%s never answered the pointers", to.Addr)
	}
}

// TestUnpublishIsTheServers (issue 44, row 6): a node of the mesh sends
// every holder of another server's pointer a removal of it. A removal is
// taken only from the server or from the peer the pointer came from (its
// publish path), so each holder keeps the pointer and locates still find
// the server (before, they said "not found" until the next republish).
// The server's own unpublish still removes it everywhere.
func TestUnpublishIsTheServers(t *testing.T) {
	m := newMesh(t, 21, 16, tapestry.DefaultConfig())
	server := m.hosts[3]
	keys := m.publish(server, 5)
	m.s.RunFor(10 * time.Second)
	var insider *sim.Host
	for _, h := range m.hosts {
		if h != server && !slices.Contains(m.holders(keys[0]), h.Addr) {
			insider = h
			break
		}
	}
	for _, k := range keys {
		for _, a := range m.holders(k) {
			if a == server.Addr {
				continue
			}
			to := m.hosts[slices.IndexFunc(m.hosts, func(h *sim.Host) bool { return h.Addr == a })]
			m.sendPointers(insider, to, []wire.TapPointer{{Key: k, App: tapestry.AppDOLR, Server: tap(server).Self(), Remove: true}})
		}
	}
	refused := uint64(0)
	for _, h := range m.up() {
		refused += tap(h).Stats.RemovesRefused
	}
	if refused == 0 {
		t.Error("no removal was refused")
	}
	for _, l := range m.locate(keys, m.up()) {
		if l.o.Err != nil || l.o.Status != wire.TapDelivered || l.o.Node.Addr != server.Addr {
			t.Errorf("locate of %s from %s after the forged removals: %+v", l.key.Short(), l.from, l.o)
		}
	}
	m.s.Do(server, func(env node.Env) { tap(server).Unpublish(env, keys[0]) })
	m.s.RunFor(10 * time.Second)
	if h := m.holders(keys[0]); len(h) > 0 {
		t.Errorf("after the server's unpublish, %v still hold its pointer", h)
	}
}

// TestPointerFloodIsBounded (issue 44, row 8): a node of the mesh sends
// another pointers naming one server, with 30-day lifetimes, past the
// per-server bound: the node holds MaxPointersPerServer of them, each
// for no longer than its own pointers live unrepublished.
func TestPointerFloodIsBounded(t *testing.T) {
	cfg := tapestry.DefaultConfig()
	cfg.MaxPointersPerServer = 50
	m := newMesh(t, 22, 8, cfg)
	from, to := m.hosts[2], m.hosts[5]
	r := m.s.Rand()
	const month = 30 * 24 * 3600 * 1000
	var keys []id.ID
	for range 3 {
		var ps []wire.TapPointer
		for range 40 {
			k := id.Random(r, id.Bytes)
			keys = append(keys, k)
			ps = append(ps, wire.TapPointer{Key: k, App: tapestry.AppDOLR, Server: tap(from).Self(), TTLMillis: month})
		}
		m.sendPointers(from, to, ps)
	}
	held := 0
	for _, k := range keys {
		if servers, _ := tap(to).Pointers(k); len(servers) > 0 {
			held++
		}
	}
	if held > cfg.MaxPointersPerServer {
		t.Errorf("%d pointers naming one server held, want at most %d", held, cfg.MaxPointersPerServer)
	}
	if tap(to).Stats.PointersRefused == 0 {
		t.Error("no pointer refused")
	}
	wait := cfg.PointerTTL() + cfg.PointerTTL()/4 + time.Minute // the expiry timer runs every quarter TTL
	m.s.RunFor(wait)
	for _, k := range keys {
		if servers, _ := tap(to).Pointers(k); len(servers) > 0 {
			t.Fatalf("a 30-day pointer is still held %v after it was sent, past the node's pointer TTL %v", wait, cfg.PointerTTL())
		}
	}
}

// TestForgedServerPointers (issue 44, row 7): a node of the mesh sends
// every other node pointers that name a server which does not serve the
// key: a live node of the mesh (which receives its own share), for keys
// another server serves and for a key nobody serves, and an address where
// nothing runs. A pointer counts only once its server says it serves the
// key (one that came straight from its server needs no asking), and a
// node sends on no pointer naming itself for a key it does not serve:
// routes to the objects end at the real server, or not found, never
// unreachable, and the root's list of servers (triad locate --all) names
// the real server only. Before: the lists named the forged servers too,
// and every route to the key nobody serves timed out. The same holds for
// forged backup pointers, which travel to the root's stand-in first.
func TestForgedServerPointers(t *testing.T) {
	m := newMesh(t, 23, 16, tapestry.DefaultConfig())
	server, other, insider := m.hosts[3], m.hosts[7], m.hosts[11]
	keys := m.publish(server, 3)
	m.s.RunFor(10 * time.Second)
	nobodys := id.Random(m.s.Rand(), id.Bytes)
	nowhere := wire.NodeRef{ID: id.Random(m.s.Rand(), id.Bytes), Addr: "h-nowhere"}
	var forged []wire.TapPointer
	for _, k := range append(slices.Clone(keys), nobodys) {
		for _, s := range []wire.NodeRef{tap(other).Self(), nowhere} {
			p := wire.TapPointer{Key: k, App: tapestry.AppDOLR, Server: s, TTLMillis: 600_000}
			// And as a root's backup pointer (Extra, Backup), which a
			// node sends on along the route and keeps only where the
			// route ends (issue 45).
			backup := p
			backup.Extra, backup.Backup = true, true
			forged = append(forged, p, backup)
		}
	}
	for _, h := range m.up() {
		if h != insider {
			m.sendPointers(insider, h, forged)
		}
	}
	m.s.RunFor(10 * time.Second)

	for _, l := range m.locate(keys, m.up()) {
		if l.o.Err != nil || l.o.Status != wire.TapDelivered || l.o.Node.Addr != server.Addr {
			t.Errorf("route to %s from %s: %v at %s, want delivered at the server %s", l.key.Short(), l.from, l.o.Status, l.o.Node.Addr, server.Addr)
		}
	}
	for _, l := range m.locate([]id.ID{nobodys}, m.up()) {
		if l.o.Err != nil || l.o.Status != wire.TapNotFound {
			t.Errorf("route to the key nobody serves from %s: %v at %s (%v), want not found", l.from, l.o.Status, l.o.Node.Addr, l.o.Err)
		}
	}
	for _, k := range append(slices.Clone(keys), nobodys) {
		for _, h := range []*sim.Host{m.hosts[0], insider, other} {
			var got tapestry.Outcome
			m.s.Do(h, func(env node.Env) {
				tap(h).LocateAll(env, k, func(env node.Env, o tapestry.Outcome) { got = o })
			})
			m.s.RunFor(m.cfg.RouteTimeout + 5*time.Second)
			var names []string
			for _, s := range got.Servers {
				names = append(names, s.Addr)
			}
			want := []string{server.Addr}
			if k == nobodys {
				want = nil
			}
			if !slices.Equal(names, want) {
				t.Errorf("locate --all of %s from %s: servers %v, want %v", k.Short(), h.Addr, names, want)
			}
		}
	}
	forgedSeen := uint64(0)
	for _, h := range m.up() {
		forgedSeen += tap(h).Stats.PointersForged
	}
	if forgedSeen == 0 {
		t.Error("no node counted a forged pointer")
	}
}

// TestServerChecksBounded (issue 44): an insider sends one node 16,384
// pointers naming another node as the server of keys nobody serves. The
// node asks that server about at most 4,096 of them in the minute
// (4 TapCheckServed), defers the rest unconfirmed, and drops the ones it
// asked about; before, it asked about all 16,384 at once, and every node
// the insider reached would have done the same to the one victim.
func TestServerChecksBounded(t *testing.T) {
	m := newMesh(t, 29, 12, tapestry.DefaultConfig())
	victim, target, insider := m.hosts[2], m.hosts[5], m.hosts[9]
	const sent = 16 * wire.MaxTapPointers
	for range sent / wire.MaxTapPointers {
		ps := make([]wire.TapPointer, wire.MaxTapPointers)
		for i := range ps {
			k := id.Random(m.s.Rand(), id.Bytes)
			ps[i] = wire.TapPointer{Key: k, App: tapestry.AppDOLR, Server: tap(victim).Self(), TTLMillis: 600_000}
		}
		m.sendPointers(insider, target, ps)
	}
	st := tap(target).Stats
	if st.ServerChecks == 0 || st.ServerChecks > 4 || st.ChecksDeferred < sent-4*wire.MaxTapPointers {
		t.Errorf("the target sent %d TapCheckServed and deferred %d checks; want 1 to 4 and at least %d", st.ServerChecks, st.ChecksDeferred, sent-4*wire.MaxTapPointers)
	}
	if st.PointersForged == 0 || st.PointersForged > 4*wire.MaxTapPointers {
		t.Errorf("the target dropped %d forged pointers; want those it asked about, 1 to %d", st.PointersForged, 4*wire.MaxTapPointers)
	}
}

// TestOutboxSharedBetweenPeers (issue 44): an insider sends a node 8,192
// pointers to send on at once, past the node's 2,048-pointer share per
// peer of what it holds to send on (the queue drains two batches a round
// trip); the pointers past its share are dropped, counted, and an honest
// peer's pointers that arrive after still go on: every one of them
// reaches its root within the minute. Before, one queue served all in arrival order, and a
// flood filled it for everyone.
func TestOutboxSharedBetweenPeers(t *testing.T) {
	cfg := tapestry.DefaultConfig()
	cfg.MaxQueuedPerPeer = 2048
	cfg.NoServerCheck = true // the pointers name a server of no object: this test is about the queue
	m := newMesh(t, 31, 12, cfg)
	target, insider, honest := m.hosts[4], m.hosts[8], m.hosts[10]
	pointers := func(n int) []wire.TapPointer {
		ps := make([]wire.TapPointer, n)
		for i := range ps {
			ps[i] = wire.TapPointer{Key: id.Random(m.s.Rand(), id.Bytes), App: tapestry.AppDOLR, Server: tap(m.hosts[0]).Self(), TTLMillis: 600_000}
		}
		return ps
	}
	flood := pointers(8 * wire.MaxTapPointers)
	mine := pointers(256)
	m.s.Do(insider, func(env node.Env) {
		for i := 0; i < len(flood); i += wire.MaxTapPointers {
			tap(insider).Host().Call(env, target.Addr, tap(insider).Self(), tap(target).Self().ID, &wire.TapPointers{Pointers: flood[i : i+wire.MaxTapPointers]}, 0, nil)
		}
	})
	m.s.Do(honest, func(env node.Env) {
		tap(honest).Host().Call(env, target.Addr, tap(honest).Self(), tap(target).Self().ID, &wire.TapPointers{Pointers: mine}, 0, nil)
	})
	m.s.RunFor(time.Minute)
	st := tap(target).Stats
	if st.PointersShed < uint64(len(flood)-2048-wire.MaxTapPointers) {
		t.Errorf("the target shed %d of the insider's %d pointers; want all but its share of 2048 (and a batch)", st.PointersShed, len(flood))
	}
	atRoot := 0
	for _, p := range mine {
		for _, h := range m.up() {
			if servers, root := tap(h).Pointers(p.Key); root && len(servers) > 0 {
				atRoot++
				break
			}
		}
	}
	if atRoot < len(mine) {
		t.Errorf("%d of the honest peer's %d pointers reached their root", atRoot, len(mine))
	}
}
