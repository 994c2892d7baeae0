package cc

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"triad/internal/host"
	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/wire"
)

func members(r *rand.Rand, n int) []wire.NodeRef {
	m := make([]wire.NodeRef, n)
	for i := range m {
		m[i] = wire.NodeRef{ID: id.Random(r, id.Bytes), Addr: node.Addr(fmt.Sprintf("h%d", i))}
	}
	return m
}

// A request routed hop by hop on the static ring ends at its key's
// successor, in about ½·log2 N hops and never more than log2 N + 1.
func TestStaticRingRoutesToTheSuccessor(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	m := members(r, 64)
	ring := NewStaticRing(m)
	routers := map[node.Addr]Router{}
	for _, x := range m {
		routers[x.Addr] = ring.Router(x.Addr)
	}
	sorted := slices.Clone(m)
	slices.SortFunc(sorted, func(a, b wire.NodeRef) int { return a.ID.Cmp(b.ID) })
	successor := func(k id.ID) wire.NodeRef {
		for _, x := range sorted {
			if x.ID.Cmp(k) >= 0 {
				return x
			}
		}
		return sorted[0]
	}
	total := 0
	for range 2000 {
		key := id.Random(r, id.Bytes)
		at := m[r.IntN(len(m))].Addr
		hops := 0
		for {
			next, here, ok := routers[at].NextHop(nil, key)
			if !ok {
				t.Fatal("no route")
			}
			if here {
				break
			}
			at, hops = next.Addr, hops+1
			if hops > 7 {
				t.Fatalf("key %s: more than log2 N + 1 hops", key.Short())
			}
		}
		if want := successor(key); at != want.Addr {
			t.Fatalf("key %s ended at %s, its successor is %s", key.Short(), at, want.Addr)
		}
		total += hops
	}
	if mean := float64(total) / 2000; mean < 2.5 || mean > 4.5 {
		t.Errorf("mean hops %.2f, want about ½·log2 64 + 1 = 4", mean)
	}
	if ring.Router("nobody") != nil {
		t.Error("a router for an address that is not a member")
	}
}

// The marking probability is equation 10: it grows with the average queue
// towards the threshold, is 1 from there on, and the fairness term scales
// it by (x/x_avg)^γ.
func TestMarkProbability(t *testing.T) {
	n := &Node{cfg: DefaultConfig()}
	for _, tc := range []struct {
		avgQ, x, xAvg, gamma, want float64
	}{
		{0, 50, 50, 0, 0},
		{10, 50, 50, 0, 10.0 / (20 * 10)},
		{19, 50, 50, 0, 19.0 / 20},
		{20, 50, 50, 0, 1},
		{150, 50, 50, 0, 1},
		{10, 62.5, 50, 4, 10.0 / (20 * 10) * math.Pow(1.25, 4)},
		{10, 37.5, 50, 4, 10.0 / (20 * 10) * math.Pow(0.75, 4)},
		{10, 100, 50, 16, 1},
	} {
		n.avgQ, n.xAvg, n.cfg.Gamma = tc.avgQ, tc.xAvg, tc.gamma
		if got := n.markProbability(tc.x); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("s̄ %g, x %g of %g, γ %g: q = %g, want %g", tc.avgQ, tc.x, tc.xAvg, tc.gamma, got, tc.want)
		}
	}
}

func TestFifoTakeKeepsOrder(t *testing.T) {
	var f fifo[int]
	for i := range 6 {
		f.push(i)
	}
	f.pop()
	if x, ok := f.take(func(v int) bool { return v == 3 }); !ok || x != 3 {
		t.Fatalf("took %d, %v", x, ok)
	}
	var rest []int
	for f.len() > 0 {
		x, _ := f.pop()
		rest = append(rest, x)
	}
	if !slices.Equal(rest, []int{1, 2, 4, 5}) {
		t.Fatalf("left %v", rest)
	}
	if _, ok := f.take(func(int) bool { return true }); ok {
		t.Fatal("took from an empty queue")
	}
}

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]func(*Config){
		"threshold at capacity": func(c *Config) { c.Threshold = 200 },
		"delta 1":               func(c *Config) { c.Delta = 1 },
		"decrease 1":            func(c *Config) { c.Decrease = 1 },
		"window under 1":        func(c *Config) { c.InitialWindow = 0.5 },
		"all paused":            func(c *Config) { c.PauseFraction = 1 },
		"huge payload":          func(c *Config) { c.PayloadBytes = wire.MaxCCPayload + 1 },
		"unknown scheme":        func(c *Config) { c.Scheme = 9 },
	} {
		c := DefaultConfig()
		f(&c)
		if c.Validate() == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	for _, s := range []string{"none", "loss", "backpressure", "marking"} {
		if x, err := ParseScheme(s); err != nil || x.String() != s {
			t.Errorf("%s: %v, %v", s, x, err)
		}
	}
	if _, err := ParseScheme("tcp"); err == nil {
		t.Error("parsed tcp")
	}
}

// fakeEnv is a frozen clock that records what a node sends.
type fakeEnv struct {
	now  time.Time
	rng  *rand.Rand
	sent []wire.Envelope
}

func (e *fakeEnv) Now() time.Time                                  { return e.now }
func (e *fakeEnv) Rand() *rand.Rand                                { return e.rng }
func (e *fakeEnv) Send(_ node.Addr, m wire.Envelope)               { e.sent = append(e.sent, m) }
func (e *fakeEnv) After(time.Duration, node.Timer) (cancel func()) { return func() {} }
func (e *fakeEnv) Offload(node.Work)                               {}

// A node whose uplink is busy bounds what waits for it: requests past the
// queue's capacity are dropped (marking), and so are acknowledgements
// past ctlCap queues' worth, rather than either growing without end.
func TestQueuesAreBounded(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	m := members(r, 2)
	ring := NewStaticRing(m)
	h, err := host.New(host.DefaultConfig(), m[0].Addr)
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.UplinkBps = 1 // one message, then the link is busy for ages
	n, err := New(cfg, h, ring.Router(m[0].Addr))
	if err != nil {
		t.Fatal(err)
	}
	env := &fakeEnv{now: time.Unix(1000, 0), rng: r}
	other := m[1]
	for i := range 5000 {
		// Keys this node holds, from the other one: acknowledgements.
		n.Receive(env, node.MsgIn{From: other.Addr, Env: wire.Envelope{Kind: wire.OneWay, Msg: &wire.CCRequest{Seq: uint64(i), Key: m[0].ID, Source: other}}})
		// Keys the other holds, from a third: requests to forward.
		n.Receive(env, node.MsgIn{From: "h9", Env: wire.Envelope{Kind: wire.OneWay, Msg: &wire.CCRequest{Seq: uint64(i), Key: other.ID, Source: wire.NodeRef{ID: other.ID, Addr: "h9"}}}})
	}
	if n.q.len() > cfg.QueueCap || n.ctl.len() > ctlCap*cfg.QueueCap {
		t.Fatalf("%d requests and %d acknowledgements waiting", n.q.len(), n.ctl.len())
	}
	if n.Stats.Dropped < uint64(2*5000-cfg.QueueCap-ctlCap*cfg.QueueCap-2) || len(env.sent) != 1 {
		t.Fatalf("%d dropped, %d sent", n.Stats.Dropped, len(env.sent))
	}
}
