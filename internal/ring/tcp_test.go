package ring_test

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"triad/internal/deploy"
	"triad/internal/host"
	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/pki"
	"triad/internal/ring"
	"triad/internal/tcp"
	"triad/internal/testutil"
	"triad/internal/wire"
)

// tcpNode is a ring host run by the TCP driver on 127.0.0.1.
type tcpNode struct {
	t   *testing.T
	drv *tcp.Driver
	n   *deploy.Node
}

// fastRing is a ring config whose rounds are short, so that three hosts
// over loopback form a ring in well under a second.
func fastRing() ring.Config {
	c := ring.DefaultConfig()
	c.StabilizeInterval, c.FixFingersInterval = 50*time.Millisecond, 50*time.Millisecond
	return c
}

// listenTCP binds a TCP driver on listen (a free loopback port if empty),
// over TLS with b if it is not nil, with its data in a temporary folder.
func listenTCP(t *testing.T, listen string, b *pki.Bundle) *tcp.Driver {
	t.Helper()
	if listen == "" {
		listen = "127.0.0.1:0"
	}
	drv, err := tcp.Listen(tcp.Config{Listen: listen, DataDir: t.TempDir(), TLS: b})
	if err != nil {
		t.Fatal(err)
	}
	return drv
}

// startTCPNode runs a ring host (no block store) until the test ends.
func startTCPNode(t *testing.T, cfg ring.Config, listen, join string, b *pki.Bundle) *tcpNode {
	t.Helper()
	drv := listenTCP(t, listen, b)
	o := deploy.Options{Vnodes: 1, Bootstrap: join, Host: host.DefaultConfig(), Ring: cfg}
	n, err := deploy.New(o, drv.Addr(), drv.Storage(), drv.Rand())
	if err != nil {
		drv.Close()
		t.Fatal(err)
	}
	runDriver(t, drv, n)
	return &tcpNode{t: t, drv: drv, n: n}
}

// runDriver runs h on drv until the test ends.
func runDriver(t *testing.T, drv *tcp.Driver, h node.Handler) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- drv.Run(ctx, h) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}

// do runs fn in the node's event loop and waits for it.
func (n *tcpNode) do(fn func(env node.Env)) {
	n.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.drv.Do(ctx, fn); err != nil {
		n.t.Fatal(err)
	}
}

func (n *tcpNode) self() wire.NodeRef { return n.n.Ring.Vnodes()[0].Self() }

// succs is a copy of the node's successor list.
func (n *tcpNode) succs() []wire.NodeRef {
	var out []wire.NodeRef
	n.do(func(node.Env) { out = slices.Clone(n.n.Ring.Vnodes()[0].Succs()) })
	return out
}

// startTCPRing starts n ring hosts joined through the first and waits
// until each lists all the others as successors.
func startTCPRing(t *testing.T, n int, bundle func(i int) (string, *pki.Bundle)) []*tcpNode {
	t.Helper()
	var nodes []*tcpNode
	for i := range n {
		listen, b := "", (*pki.Bundle)(nil)
		if bundle != nil {
			listen, b = bundle(i)
		}
		join := ""
		if i > 0 {
			join = nodes[0].drv.Addr()
		}
		nodes = append(nodes, startTCPNode(t, fastRing(), listen, join, b))
	}
	testutil.WaitFor(t, 10*time.Second, "the ring to form", func() bool {
		for _, x := range nodes {
			if len(x.succs()) != n-1 {
				return false
			}
		}
		return true
	})
	return nodes
}

// prober is a process with a bare host runtime (no ring) on its own
// driver: it proves its own address and sends whatever a test makes it.
type prober struct {
	t   *testing.T
	drv *tcp.Driver
	h   *host.Host
}

func startProber(t *testing.T, listen string, b *pki.Bundle) *prober {
	t.Helper()
	drv := listenTCP(t, listen, b)
	h, err := host.New(host.DefaultConfig(), drv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	runDriver(t, drv, h)
	return &prober{t: t, drv: drv, h: h}
}

// send sends e to addr, then pings addr over the same connection and
// waits for the answer: the node has handled e by then.
func (p *prober) send(addr string, e wire.Envelope) {
	p.t.Helper()
	out := make(chan error, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := p.drv.Do(ctx, func(env node.Env) {
		env.Send(addr, e)
		if !p.h.Call(env, addr, wire.NodeRef{Addr: p.drv.Addr()}, wire.NodeRef{}.ID, &wire.Ping{}, 0, func(_ node.Env, _ wire.Msg, err error) { out <- err }) {
			out <- errors.New("call refused")
		}
	})
	if err != nil {
		p.t.Fatal(err)
	}
	select {
	case err := <-out:
		if err != nil {
			p.t.Fatalf("ping after the message: %v", err)
		}
	case <-ctx.Done():
		p.t.Fatal("ping after the message: no answer in 10s")
	}
}

// watch counts the events in which n's successor or predecessor changed
// from now on.
func (n *tcpNode) watch() *atomic.Int64 {
	var changes atomic.Int64
	n.do(func(node.Env) {
		n.n.Ring.OnNeighbours(1, func(node.Env) { changes.Add(1) })
	})
	return &changes
}

// A process that proved its own address sends a Leave for another node's
// vnode, to that vnode's predecessor: the predecessor keeps its successor
// list and counts the refusal. (Before, the Leave evicted the victim.)
func TestLeaveForAnotherNodeIsRefused(t *testing.T) {
	nodes := startTCPRing(t, 3, nil)
	a := nodes[0]
	victim := a.succs()[0]
	changes := a.watch()
	before := a.succs()

	p := startProber(t, "", nil)
	forged := wire.NodeRef{ID: victim.ID, Addr: p.drv.Addr(), Machine: victim.Machine}
	p.send(a.drv.Addr(), wire.Envelope{Kind: wire.OneWay, From: forged, To: a.self().ID, Msg: &wire.Leave{}})

	if n := changes.Load(); n != 0 {
		t.Errorf("the forged Leave changed the neighbours %d times", n)
	}
	if after := a.succs(); !slices.Equal(after, before) {
		t.Errorf("successors %v after the forged Leave, %v before", after, before)
	}
	var refused uint64
	a.do(func(node.Env) { refused = a.n.Ring.Stats.RefusedLeaves })
	if refused != 1 {
		t.Errorf("RefusedLeaves = %d, want 1", refused)
	}
}

// verifying is fastRing with IDs derived and checked.
func verifying() ring.Config {
	c := fastRing()
	c.VerifyIDs = true
	return c
}

// A node that places itself just before an honest node (its ID − 1, the
// Sybil placement that put 100 acknowledged blocks on one real copy) and
// joins an honest ring over real TCP gets into no successor or
// predecessor list: its messages are refused and counted
// (Stats.ForgedRefs). (Before IDs were derived, it was in lists within a
// few rounds.)
func TestIDsNotDerivedAreRefused(t *testing.T) {
	var nodes []*tcpNode
	for i := range 3 {
		join := ""
		if i > 0 {
			join = nodes[0].drv.Addr()
		}
		nodes = append(nodes, startTCPNode(t, verifying(), "", join, nil))
	}
	testutil.WaitFor(t, 10*time.Second, "the ring to form", func() bool {
		for _, x := range nodes {
			if len(x.succs()) != 2 {
				return false
			}
		}
		return true
	})
	for _, x := range nodes {
		if i, ok := ring.VnodeIndex(x.self()); !ok || i != 0 {
			t.Fatalf("%s: vnode 0 is not at its derived ID", x.self())
		}
	}

	// The intruder runs the ring unchecked, at the victim's ID − 1.
	victim := nodes[1].self()
	drv, err := tcp.Listen(tcp.Config{Listen: "127.0.0.1:0", DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if err := ring.SeedIDs(drv.Storage(), []id.ID{minusOne(victim.ID)}); err != nil {
		t.Fatal(err)
	}
	o := deploy.Options{Vnodes: 1, Bootstrap: nodes[0].drv.Addr(), Host: host.DefaultConfig(), Ring: fastRing()}
	in, err := deploy.New(o, drv.Addr(), drv.Storage(), drv.Rand())
	if err != nil {
		t.Fatal(err)
	}
	runDriver(t, drv, in)

	listed := func() string {
		for _, x := range nodes {
			var where string
			x.do(func(node.Env) {
				v := x.n.Ring.Vnodes()[0]
				if slices.ContainsFunc(v.Succs(), func(n wire.NodeRef) bool { return n.Addr == drv.Addr() }) {
					where = x.self().String() + "'s successors"
				}
				if slices.ContainsFunc(v.Preds(), func(n wire.NodeRef) bool { return n.Addr == drv.Addr() }) {
					where = x.self().String() + "'s predecessors"
				}
			})
			if where != "" {
				return where
			}
		}
		return ""
	}
	forged := func() uint64 {
		var n uint64
		for _, x := range nodes {
			x.do(func(node.Env) { n += x.n.Ring.Stats.ForgedRefs })
		}
		return n
	}
	// Ten refusals take a few of the intruder's rounds; before, it was
	// listed by then.
	testutil.WaitFor(t, 10*time.Second, "the intruder to be refused or listed", func() bool { return forged() >= 10 || listed() != "" })
	if where := listed(); where != "" {
		t.Fatalf("the intruder at %s is in %s", drv.Addr(), where)
	}
	for _, x := range nodes {
		if s := x.succs(); len(s) != 2 {
			t.Errorf("%s: successors %v, want the two other honest nodes", x.self(), s)
		}
	}
}
