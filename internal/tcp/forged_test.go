package tcp

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"triad/internal/host"
	"triad/internal/node"
	"triad/internal/rpc"
	"triad/internal/testutil"
	"triad/internal/wire"
)

// recorder runs a host runtime and remembers every message handed to it.
type recorder struct {
	h  *host.Host
	mu sync.Mutex
	in []node.MsgIn
}

func (r *recorder) Handle(env node.Env, ev node.Event) {
	if in, ok := ev.(node.MsgIn); ok {
		r.mu.Lock()
		r.in = append(r.in, in)
		r.mu.Unlock()
	}
	r.h.Handle(env, ev)
}

func (r *recorder) received() []node.MsgIn {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]node.MsgIn(nil), r.in...)
}

// startHost runs a driver with a bare host runtime (it answers pings) on a
// free port until the test ends.
func startHost(t *testing.T, cfg Config) (*Driver, *recorder) {
	t.Helper()
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	cfg.DataDir = t.TempDir()
	d, err := Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hc := host.DefaultConfig()
	hc.RPC.Timeout, hc.RPC.MinTimeout = time.Second, 500*time.Millisecond
	h, err := host.New(hc, d.Addr())
	if err != nil {
		t.Fatal(err)
	}
	r := &recorder{h: h}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx, r) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return d, r
}

// call makes d's host ping addr and returns the outcome.
func call(t *testing.T, d *Driver, r *recorder, addr string) error {
	t.Helper()
	out := make(chan error, 1)
	err := d.Do(context.Background(), func(env node.Env) {
		ok := r.h.Call(env, addr, wire.NodeRef{Addr: d.Addr()}, wire.NodeRef{}.ID, &wire.Ping{}, 0,
			func(_ node.Env, m wire.Msg, err error) {
				if err == nil {
					if _, isAck := m.(*wire.Ack); !isAck {
						err = errors.New("reply is not an Ack")
					}
				}
				out <- err
			})
		if !ok {
			out <- errors.New("call refused")
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-out:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("call neither answered nor timed out in 10s")
		return nil
	}
}

// Two nodes prove their addresses to each other and then talk both ways.
func TestPeersProveAddressesAndTalk(t *testing.T) {
	a, ra := startHost(t, Config{})
	b, rb := startHost(t, Config{})
	if err := call(t, a, ra, b.Addr()); err != nil {
		t.Fatalf("a pings b: %v", err)
	}
	if err := call(t, b, rb, a.Addr()); err != nil {
		t.Fatalf("b pings a: %v", err)
	}
	if n := a.Stats.Forged.Load() + b.Stats.Forged.Load(); n != 0 {
		t.Errorf("%d frames counted as forged between honest peers", n)
	}
}

// A process outside the ring that connects to a node's port and answers a
// call the node made elsewhere, with the exact request ID, under the
// callee's address, changes nothing: the call still times out, and the
// forged frames are counted. Its requests under a borrowed address never
// reach the node either.
func TestForgedRepliesAndSendersChangeNothing(t *testing.T) {
	a, ra := startHost(t, Config{HandshakeTimeout: 300 * time.Millisecond})

	// The callee listens, reads the request and never answers.
	seen := make(chan wire.Envelope, 16)
	callee := testutil.Serve(t, func(c net.Conn) {
		defer c.Close()
		for {
			frame, err := wire.ReadFrame(c, nil, wire.MaxFrameBytes)
			if err != nil {
				return
			}
			if e, err := wire.Decode(frame); err == nil {
				seen <- e
			}
		}
	})

	res := make(chan error, 1)
	go func() { res <- call(t, a, ra, callee) }()
	var req wire.Envelope
	select {
	case req = <-seen:
	case <-time.After(5 * time.Second):
		t.Fatal("the call never reached the callee")
	}

	// The forger knows the request ID (say it is on the path) and answers
	// on a connection of its own, as the callee, without and with a
	// request first to set up the claim.
	forger := dial(t, a.Addr())
	send := func(e wire.Envelope) {
		if err := wire.WriteFrame(forger, e); err != nil {
			t.Fatal(err)
		}
	}
	as := wire.NodeRef{Addr: callee}
	send(wire.Envelope{Kind: wire.Reply, ReqID: req.ReqID, From: as, Msg: &wire.Ack{}})
	send(wire.Envelope{Kind: wire.Request, ReqID: 7, From: as, Msg: &wire.Ping{}})
	send(wire.Envelope{Kind: wire.Reply, ReqID: req.ReqID, From: as, Msg: &wire.Ack{}})
	send(wire.Envelope{Kind: wire.OneWay, From: as, Msg: &wire.Proof{Nonce: 1}})

	if err := <-res; !errors.Is(err, rpc.ErrTimeout) {
		t.Fatalf("call outcome %v, want a timeout: a forged reply completed it", err)
	}
	expectClosed(t, forger) // never proved the callee's address
	if n := a.Stats.Forged.Load(); n < 3 {
		t.Errorf("Forged = %d, want >= 3 (two replies and a proof)", n)
	}
	if n := a.Stats.Unproven.Load(); n != 1 {
		t.Errorf("Unproven = %d, want 1", n)
	}
	for _, in := range ra.received() {
		if in.From == callee {
			t.Errorf("the host was handed %v %v from the callee's address", in.Env.Kind, in.Env.Msg.Type())
		}
	}
	// The real callee was asked to prove the claim, and would have.
	testutil.WaitFor(t, 5*time.Second, "the node to challenge the claimed address", func() bool {
		for {
			select {
			case e := <-seen:
				if _, ok := e.Msg.(*wire.Challenge); ok {
					return true
				}
			default:
				return false
			}
		}
	})
}
