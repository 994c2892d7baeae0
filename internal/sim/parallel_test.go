package sim

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"triad/internal/node"
	"triad/internal/wire"
)

// chatter sends 120 one-way Pings to random hosts, one every 100 ms or so,
// and counts what it receives.
type chatter struct {
	self      node.Addr
	n         int
	got, sent int
}

type tick struct{}

func (tick) String() string { return "tick" }

func (c *chatter) Handle(env node.Env, ev node.Event) {
	switch ev := ev.(type) {
	case node.Request:
		ev.Fn(env)
	case node.Start:
		env.After(time.Duration(env.Rand().IntN(100))*time.Millisecond, tick{})
	case node.TimerFired:
		if c.sent++; c.sent > 120 {
			return
		}
		to := fmt.Sprintf("h%d", env.Rand().IntN(c.n))
		env.Send(to, wire.Envelope{Kind: wire.OneWay, From: wire.NodeRef{Addr: c.self}, Msg: &wire.Ping{}})
		env.After(50*time.Millisecond+time.Duration(env.Rand().IntN(100))*time.Millisecond, tick{})
	case node.MsgIn:
		c.got++
	}
}

type chatRun struct {
	trace                    uint64
	stats                    Stats
	got, asked, answer, seen int
}

func runChatter(t *testing.T, parallel bool) chatRun {
	const n = 300
	s := New(Config{Seed: 9, Parallel: parallel}, NewTopology(n, 9))
	var hs []*chatter
	for i := 0; i < n; i++ {
		_, err := s.AddHost(func(addr node.Addr, _ node.Storage, _ *rand.Rand) (node.Handler, error) {
			c := &chatter{self: addr, n: n}
			hs = append(hs, c)
			return c, nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	var r chatRun
	// Requests on the hosts, recording through Later what they saw.
	for i := 0; i < 500; i++ {
		h := s.Hosts()[(i*37)%n]
		r.asked++
		s.DoAt(h, time.Duration(i)*20*time.Millisecond, func(env node.Env) {
			got := h.Handler().(*chatter).got
			s.Later(h, func() {
				r.answer++
				r.seen += got
			})
		})
	}
	s.RunFor(20 * time.Second)
	for _, c := range hs {
		r.got += c.got
	}
	r.trace, r.stats = s.TraceHash(), s.Totals()
	return r
}

// A parallel run is deterministic, runs every event (every request, every
// delivery) and sends what a serial run sends: hosts whose behaviour
// depends on their own timers only make the same choices in both.
func TestParallelRunsRepeatAndMatchSerial(t *testing.T) {
	a, b := runChatter(t, true), runChatter(t, true)
	if a.trace != b.trace || a.got != b.got || a.seen != b.seen {
		t.Fatalf("two parallel runs differ: %x/%d and %x/%d", a.trace, a.got, b.trace, b.got)
	}
	if a.answer != a.asked {
		t.Errorf("%d of %d requests reported back through Later", a.answer, a.asked)
	}
	if delivered := a.stats.Messages - a.stats.Dropped - a.stats.Lost - a.stats.QueueDrops; uint64(a.got) != delivered {
		t.Errorf("hosts received %d messages, the network delivered %d", a.got, delivered)
	}
	serial := runChatter(t, false)
	if serial.stats.Messages != a.stats.Messages {
		t.Errorf("a serial run sent %d messages, a parallel one %d", serial.stats.Messages, a.stats.Messages)
	}
}

// The lookahead is no longer than any path between the two halves.
func TestLookaheadBoundsCrossPaths(t *testing.T) {
	topo := NewTopology(2000, 3)
	for a := 0; a < 2000; a += 7 {
		for b := 1; b < 2000; b += 11 {
			if topo.Partition(a) != topo.Partition(b) && topo.RTT(a, b)/2 < topo.Lookahead() {
				t.Fatalf("hosts %d and %d: one-way %v under the lookahead %v", a, b, topo.RTT(a, b)/2, topo.Lookahead())
			}
		}
	}
}
