package sim

import (
	"math/rand/v2"
	"testing"
	"time"

	"triad/internal/node"
	"triad/internal/wire"
)

// TestTopologyShape checks the synthetic WAN looks like the Internet the
// papers measured on: median RTT in 70-150 ms, a heavy tail, asymmetry-free
// pairs, and not a uniform random matrix (hosts in one region are closer).
func TestTopologyShape(t *testing.T) {
	topo := NewTopology(2048, 1)
	st := topo.Stats(50000)
	t.Logf("rtt: p10 %v median %v p90 %v p99 %v max %v", st.P10, st.Median, st.P90, st.P99, st.Max)
	if st.Median < 70*time.Millisecond || st.Median > 150*time.Millisecond {
		t.Errorf("median RTT %v not in [70ms, 150ms]", st.Median)
	}
	if st.P99 < 2*st.Median {
		t.Errorf("p99 %v is not a heavy tail over median %v", st.P99, st.Median)
	}
	var same, cross []time.Duration
	for a := 0; a < 400; a++ {
		for b := a + 1; b < 400; b++ {
			if topo.RTT(a, b) != topo.RTT(b, a) {
				t.Fatalf("rtt(%d,%d) asymmetric", a, b)
			}
			if topo.Region(a) == topo.Region(b) {
				same = append(same, topo.RTT(a, b))
			} else {
				cross = append(cross, topo.RTT(a, b))
			}
		}
	}
	if avg(same) > avg(cross)/2 {
		t.Errorf("same-region RTT %v not well below cross-region %v", avg(same), avg(cross))
	}
	if NewTopology(2048, 1).RTT(5, 900) != topo.RTT(5, 900) || NewTopology(2048, 2).RTT(5, 900) == topo.RTT(5, 900) {
		t.Error("topology is not a function of its seed")
	}
}

func avg(ds []time.Duration) time.Duration {
	var t time.Duration
	for _, d := range ds {
		t += d
	}
	return t / time.Duration(len(ds))
}

// A flat topology has no geography: two hosts are the mean of their
// delays apart each way, and each keeps its own link.
func TestFlatTopology(t *testing.T) {
	topo := NewFlatTopology([]FlatHost{{Delay: 20 * time.Millisecond, UpBps: 600e3, DownBps: 2.4e6}, {Delay: 10 * time.Millisecond, UpBps: 1e6, DownBps: 4e6}})
	if rtt := topo.RTT(0, 1); rtt != 30*time.Millisecond {
		t.Errorf("RTT %v, want 30ms (one way 15 ms)", rtt)
	}
	if topo.RTT(1, 1) != 0 || topo.UpBps(0) != 600e3 || topo.DownBps(1) != 4e6 {
		t.Errorf("RTT to itself %v, links %v and %v", topo.RTT(1, 1), topo.UpBps(0), topo.DownBps(1))
	}
	topo.Grow(5)
	if topo.Len() != 2 {
		t.Errorf("a flat topology grew to %d hosts", topo.Len())
	}
}

// inbox records when each message reached it, by the sender's address.
type inbox struct {
	at map[node.Addr]time.Duration
	s  *Sim
}

func (b *inbox) Handle(env node.Env, ev node.Event) {
	switch ev := ev.(type) {
	case node.Request:
		ev.Fn(env)
	case node.MsgIn:
		b.at[ev.From] = env.Now().Sub(b.s.Epoch())
	}
}

// TestDownlinkServesInArrivalOrder: a message sent first from across the
// world (100 ms away) must not hold the receiver's downlink for one sent
// a millisecond later from next door (10 ms away), which arrives 89 ms
// before it.
func TestDownlinkServesInArrivalOrder(t *testing.T) {
	topo := NewFlatTopology([]FlatHost{
		{Delay: 200 * time.Millisecond, UpBps: 1e9, DownBps: 1e9}, // h0: far
		{Delay: 20 * time.Millisecond, UpBps: 1e9, DownBps: 1e9},  // h1: near
		{Delay: 0, UpBps: 1e9, DownBps: 1e9},                      // h2: receiver
	})
	s := New(Config{Seed: 1}, topo)
	var boxes []*inbox
	var hosts []*Host
	for i := 0; i < 3; i++ {
		h, err := s.AddHost(func(node.Addr, node.Storage, *rand.Rand) (node.Handler, error) {
			b := &inbox{at: map[node.Addr]time.Duration{}, s: s}
			boxes = append(boxes, b)
			return b, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		hosts = append(hosts, h)
	}
	send := func(from *Host) func(env node.Env) {
		return func(env node.Env) {
			env.Send(hosts[2].Addr, wire.Envelope{Kind: wire.OneWay, From: wire.NodeRef{Addr: from.Addr}, Msg: &wire.Ping{}})
		}
	}
	t0 := s.Now()
	s.Do(hosts[0], send(hosts[0]))
	s.DoAt(hosts[1], t0+time.Millisecond, send(hosts[1]))
	s.RunFor(time.Second)
	near, far := boxes[2].at[hosts[1].Addr]-t0, boxes[2].at[hosts[0].Addr]-t0
	if near < 11*time.Millisecond || near > 12*time.Millisecond {
		t.Errorf("the near message arrived after %v, want about 11ms (the far one after %v)", near, far)
	}
	if far < 100*time.Millisecond || far > 101*time.Millisecond {
		t.Errorf("the far message arrived after %v, want about 100ms", far)
	}
}

// TestObserveSeesEveryMessage: Config.Observe is told of every message
// between two hosts once, with the size Stats counts.
func TestObserveSeesEveryMessage(t *testing.T) {
	var seen, bytes int
	cfg := Config{Seed: 4, Observe: func(from, to *Host, e wire.Envelope, size int) {
		if from == to {
			t.Errorf("a host's message to itself observed")
		}
		seen++
		bytes += size
	}}
	s := New(cfg, NewTopology(20, 4))
	for i := 0; i < 20; i++ {
		if _, err := s.AddHost(func(addr node.Addr, _ node.Storage, _ *rand.Rand) (node.Handler, error) {
			return &chatter{self: addr, n: 20}, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	s.RunFor(30 * time.Second)
	st := s.Totals()
	if seen == 0 || uint64(bytes) > st.Bytes || uint64(seen) > st.Messages {
		t.Errorf("observed %d messages of %d bytes; the run sent %d of %d bytes", seen, bytes, st.Messages, st.Bytes)
	}
}
