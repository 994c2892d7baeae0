package tapestry_test

import (
	"testing"
	"time"

	"triad/internal/sim"
	"triad/internal/tapestry"
	"triad/internal/wire"
)

// TestBurstOnASlowUplinkKillsNobody: a server on a 1 Mbit/s uplink that
// publishes 2,000 objects at once queues its pointer batches, and every
// answer behind them, for over a second, well past the adaptive timeout
// of its calls. No live node may be declared dead for that (the late
// answers make the links suspects, whose probes answer), the tables stay
// whole, and every object is found from every node.
func TestBurstOnASlowUplinkKillsNobody(t *testing.T) {
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
	server := m.hosts[n-1]
	keys := m.publish(server, 2000)
	m.s.RunFor(20 * time.Second)

	var dead, suspected, falseSuspects uint64
	for _, h := range m.hosts {
		dead += tap(h).Host().Stats.PeersDeclaredDead
		suspected += counter(tap(h), "suspected")
		falseSuspects += counter(tap(h), "false_suspects")
	}
	t.Logf("%d links suspected, %d answered their probe, %d peers declared dead", suspected, falseSuspects, dead)
	if suspected == 0 {
		t.Fatal("no call timed out: the burst did not queue past the timeouts, so the test tests nothing")
	}
	if dead != 0 {
		t.Errorf("%d live peers declared dead after a burst", dead)
	}
	m.check()
	failed := 0
	for _, l := range m.locate(keys[:100], m.hosts[:n-1]) {
		if l.o.Err != nil || l.o.Status != wire.TapDelivered || l.o.Node.Addr != server.Addr {
			failed++
		}
	}
	if failed != 0 {
		t.Errorf("%d of %d locates failed after the burst", failed, 100*(n-1))
	}
}
