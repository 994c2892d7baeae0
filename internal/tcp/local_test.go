package tcp

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"triad/internal/client"
	"triad/internal/node"
	"triad/internal/testutil"
	"triad/internal/wire"
)

// keepHandler answers a ClientPut with a Block of its own buffer (without
// one, of the put's data), and keeps the put's data and every sender it
// saw, with whether the driver marked the message as from its own
// process.
type keepHandler struct {
	buf   []byte
	kept  []byte
	from  []node.Addr
	local []bool
}

func (h *keepHandler) Handle(env node.Env, ev node.Event) {
	if r, ok := ev.(node.Request); ok {
		r.Fn(env)
		return
	}
	in, ok := ev.(node.MsgIn)
	if !ok {
		return
	}
	h.from, h.local = append(h.from, in.From), append(h.local, in.Local)
	if m, ok := in.Env.Msg.(*wire.ClientPut); ok && in.Env.Kind == wire.Request {
		h.kept = m.Data
		reply := h.buf
		if reply == nil {
			reply = m.Data // an echo
		}
		env.Send(in.From, wire.Envelope{Kind: wire.Reply, ReqID: in.Env.ReqID, Msg: &wire.Block{Data: reply}})
	}
}

// dialLocal makes a client of d through a Local, closed when the test ends.
func dialLocal(ctx context.Context, t *testing.T, d *Driver) *client.Client {
	t.Helper()
	local := &client.Local{Addr: d.Addr(), Attach: func(deliver func(wire.Envelope)) client.Link { return d.Attach(deliver) }}
	c, err := client.DialOptions(ctx, d.Addr(), client.Options{Local: local})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestLocalClientCallsWithoutASocket(t *testing.T) {
	h := &keepHandler{buf: []byte("the node's bytes")}
	d := runDriver(t, Config{}, h)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := dialLocal(ctx, t, d)
	sent := []byte("the client's bytes")
	m, err := c.Call(ctx, &wire.ClientPut{Data: sent})
	if err != nil {
		t.Fatal(err)
	}
	got, ok := m.(*wire.Block)
	if !ok || string(got.Data) != "the node's bytes" {
		t.Fatalf("reply %#v, want the node's Block", m)
	}
	// A put's block bytes are handed over (wire.Hand), not copied; the
	// reply crosses as a copy, so the node's buffer is its own.
	var handed bool
	var from []node.Addr
	if err := d.Do(ctx, func(node.Env) { handed, from = &h.kept[0] == &sent[0], h.from; copy(h.buf, "YYYY") }); err != nil {
		t.Fatal(err)
	}
	if !handed {
		t.Error("the node's put is a copy of the client's bytes, not the bytes it handed over")
	}
	if string(got.Data) != "the node's bytes" {
		t.Errorf("the client's reply became %q when the node changed its buffer", got.Data)
	}
	if len(from) != 1 || !strings.HasPrefix(from[0], localRoute) {
		t.Errorf("the node saw senders %q, want one route of a Local", from)
	}
	if n := d.accepted.Load(); n != 0 {
		t.Errorf("%d connections accepted, want none: a Local uses no socket", n)
	}
	// The same call over a socket is not from the node's own process.
	c2, err := client.Dial(ctx, d.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if _, err := c2.Call(ctx, &wire.ClientPut{Data: sent}); err != nil {
		t.Fatal(err)
	}
	var local []bool
	if err := d.Do(ctx, func(node.Env) { local = slices.Clone(h.local) }); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(local, []bool{true, false}) {
		t.Errorf("the node saw messages marked local %v, want the Local's only (true, false)", local)
	}
}

func TestLocalClientMaySendOnlyAClientsMessages(t *testing.T) {
	h := &keepHandler{}
	d := runDriver(t, Config{}, h)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l := d.Attach(func(wire.Envelope) { t.Error("a reply to a refused message") })
	defer l.Close()
	if err := l.Send(ctx, wire.Envelope{Kind: wire.OneWay, Msg: &wire.Proof{Nonce: 1}}); err == nil {
		t.Fatal("a Local sent a node's message (Proof)")
	}
	var seen int
	if err := d.Do(ctx, func(node.Env) { seen = len(h.from) }); err != nil {
		t.Fatal(err)
	}
	if seen != 0 {
		t.Errorf("the node received %d messages, want none", seen)
	}
}

func TestLocalClientFailsOnceTheNodeStops(t *testing.T) {
	cfg := Config{Listen: "127.0.0.1:0", DataDir: t.TempDir()}
	d, err := Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	run, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- d.Run(run, &keepHandler{}) }()
	c := dialLocal(ctx, t, d)
	if _, err := c.Call(ctx, &wire.ClientPut{Data: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// A call after the stop fails at once, not at ctx's deadline.
	if _, err := c.Call(ctx, &wire.ClientPut{Data: []byte("x")}); !errors.Is(err, client.ErrClosed) {
		t.Fatalf("a call after the node stopped: %v, want client.ErrClosed", err)
	}
	if ctx.Err() != nil {
		t.Fatal("the call waited for its deadline")
	}
}

// gateHandler holds the event loop on its first ClientPut until gate is
// closed, then answers every ClientPut with an Ack.
type gateHandler struct {
	gate chan struct{}
	held bool
}

func (h *gateHandler) Handle(env node.Env, ev node.Event) {
	in, ok := ev.(node.MsgIn)
	if !ok || in.Env.Kind != wire.Request {
		return
	}
	if !h.held {
		h.held = true
		<-h.gate
	}
	env.Send(in.From, wire.Envelope{Kind: wire.Reply, ReqID: in.Env.ReqID, Msg: &wire.Ack{}})
}

// TestLocalSendWaitsForBudgetUntilCancelled: a Local's message holds the
// inbound budget like a socket's frame, so a sender finds it full while
// the loop is held; cancelling the wait (a context with no deadline)
// fails that call alone, and the client goes on once the loop does.
func TestLocalSendWaitsForBudgetUntilCancelled(t *testing.T) {
	h := &gateHandler{gate: make(chan struct{})}
	d := runDriver(t, Config{MaxFrameBytes: 1 << 20, MaxInflightBytes: 1 << 20}, h)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := dialLocal(ctx, t, d)
	big := make([]byte, 600<<10)
	first := make(chan error, 1)
	go func() {
		_, err := c.Call(ctx, &wire.ClientPut{Data: big})
		first <- err
	}()
	testutil.WaitFor(t, 5*time.Second, "the first put to hold the budget", func() bool { return d.inflight.used() >= len(big) })
	waiting, stop := context.WithCancel(context.Background()) // no deadline
	second := make(chan error, 1)
	go func() {
		_, err := c.Call(waiting, &wire.ClientPut{Data: big})
		second <- err
	}()
	select {
	case err := <-second:
		t.Fatalf("a put past the budget returned %v while the loop was held", err)
	case <-time.After(100 * time.Millisecond):
	}
	stop()
	select {
	case err := <-second:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("the cancelled put: %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		close(h.gate)
		t.Fatal("the cancelled put still waited for the budget 5 s later")
	}
	close(h.gate)
	if err := <-first; err != nil {
		t.Fatalf("the first put: %v", err)
	}
	if _, err := c.Call(ctx, &wire.ClientPut{Data: big}); err != nil {
		t.Fatalf("a put after the cancelled one: %v (the client must not fail for one call)", err)
	}
}

// Calls through one Local from many goroutines each get their own reply
// (run under -race in CI: replies are delivered from the event loop while
// calls register and give up).
func TestLocalClientConcurrentCalls(t *testing.T) {
	d := runDriver(t, Config{}, &keepHandler{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := dialLocal(ctx, t, d)
	errs := make(chan error, 8)
	for g := range 8 {
		go func() {
			for i := range 100 {
				want := fmt.Sprintf("%d/%d", g, i)
				// The handler echoes: each reply must be its own call's.
				// Every tenth call gives up before it starts.
				cctx, ccancel := context.WithCancel(ctx)
				if i%10 == 9 {
					ccancel()
				}
				m, err := c.Call(cctx, &wire.ClientPut{Data: []byte(want)})
				ccancel()
				switch {
				case i%10 == 9 && errors.Is(err, context.Canceled):
				case err != nil:
					errs <- fmt.Errorf("call %s: %w", want, err)
					return
				case string(m.(*wire.Block).Data) != want:
					errs <- fmt.Errorf("call %s answered %q", want, m.(*wire.Block).Data)
					return
				}
			}
			errs <- nil
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Call(ctx, &wire.ClientPut{Data: []byte("after")}); err != nil {
		t.Fatalf("a call after the rest: %v", err)
	}
}
