package tapestry_test

import (
	"testing"
	"time"

	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/sim"
	"triad/internal/tapestry"
	"triad/internal/wire"
)

// slowServerMesh is 24 nodes 20 ms apart on 100 Mbit/s links but the
// last, whose uplink carries 1 Mbit/s.
func slowServerMesh(t *testing.T) (*mesh, *sim.Host) {
	const n = 24
	hosts := make([]sim.FlatHost, n)
	for i := range hosts {
		hosts[i] = sim.FlatHost{Delay: 20 * time.Millisecond, UpBps: 100e6, DownBps: 100e6}
	}
	hosts[n-1].UpBps = 1e6
	m := &mesh{t: t, s: sim.New(sim.Config{Seed: 3}, sim.NewFlatTopology(hosts)), cfg: tapestry.DefaultConfig()}
	for i := 0; i < n; i++ {
		m.add()
		m.s.RunFor(2 * time.Second)
	}
	m.s.RunFor(30 * time.Second)
	m.check()
	return m, m.hosts[n-1]
}

// deaths is the peers declared dead in the mesh, and the links made
// suspects and those that answered their probe.
func (m *mesh) deaths() (dead, suspected, falseSuspects uint64) {
	for _, h := range m.hosts {
		dead += tap(h).Host().Stats.PeersDeclaredDead
		suspected += counter(tap(h), "suspected")
		falseSuspects += counter(tap(h), "false_suspects")
	}
	return dead, suspected, falseSuspects
}

// TestPublishBurstOnASlowUplink: 5,000 objects published at once from a
// server on a 1 Mbit/s uplink (350 KB of pointers: 2.8 s of its uplink,
// past what the simulator's routers queue) all reach their roots within
// 30 s, with no peer declared dead: the pointers go out in batches of
// hundreds, two batches at a time.
func TestPublishBurstOnASlowUplink(t *testing.T) {
	m, server := slowServerMesh(t)
	keys := m.publish(server, 5000)
	m.s.RunFor(30 * time.Second)
	if q := m.s.Totals().QueueDrops; q != 0 {
		t.Errorf("%d messages dropped by full queues", q)
	}
	_, ids := m.live()
	missing := 0
	for _, k := range keys {
		root := tapestry.Root(ids, k, 4)
		if !containsRef(rootServers(m, root, k), server.Addr) {
			missing++
		}
	}
	if missing != 0 {
		t.Errorf("%d of %d objects have no pointer at their root 30 s after the publish", missing, len(keys))
	}
	if dead, _, _ := m.deaths(); dead != 0 {
		t.Errorf("%d live peers declared dead", dead)
	}
	if b := counter(tap(server), "pointer_batches"); b > 200 {
		t.Errorf("%d pointer batches for 5,000 pointers: the publishes were not batched", b)
	}
}

// rootServers are the servers the node with ID root holds pointers to
// for key.
func rootServers(m *mesh, root id.ID, key id.ID) []wire.NodeRef {
	for _, h := range m.hosts {
		if h.Up() && tap(h).Self().ID == root {
			servers, _ := tap(h).Pointers(key)
			return servers
		}
	}
	return nil
}

// TestRouteBurstOnASlowUplinkKillsNobody: 150 routes of 1 KB sent at once
// from a node on a 1 Mbit/s uplink queue there for over a second, well
// past the adaptive timeout of their hops. No live node may be declared
// dead for that (the late answers make the links suspects, whose probes
// answer), the tables stay whole, and once the queue has drained the same
// routes, paced, all arrive: the burst left no damage behind. (During the
// burst some routes give up after three timed-out hops: the node's own
// uplink is full, and that is what it reports.)
func TestRouteBurstOnASlowUplinkKillsNobody(t *testing.T) {
	m, sender := slowServerMesh(t)
	_, ids := m.live()
	payload := make([]byte, 1024)
	burst := func(gap time.Duration) (delivered int) {
		start := m.s.Now()
		for i := 0; i < 150; i++ {
			key := ids[i%len(ids)]
			m.s.DoAt(sender, start+time.Duration(i)*gap, func(env node.Env) {
				tap(sender).RouteToNode(env, key, tapestry.AppDOLR, true, payload, func(env node.Env, o tapestry.Outcome) {
					if o.Err == nil && o.Status == wire.TapDelivered {
						delivered++
					}
				})
			})
		}
		m.s.RunFor(150*gap + 30*time.Second)
		return delivered
	}
	during := burst(0)
	dead, suspected, falseSuspects := m.deaths()
	t.Logf("burst: %d of 150 routes delivered, %d links suspected, %d answered their probe, %d peers declared dead", during, suspected, falseSuspects, dead)
	if suspected == 0 {
		t.Fatal("no hop timed out: the burst did not queue past the timeouts, so the test tests nothing")
	}
	if dead != 0 {
		t.Errorf("%d live peers declared dead after a burst", dead)
	}
	m.check()
	if after := burst(20 * time.Millisecond); after != 150 {
		t.Errorf("after the burst, %d of 150 paced routes delivered", after)
	}
}
