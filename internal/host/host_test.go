package host_test

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"triad/internal/fault"
	"triad/internal/host"
	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/wire"
)

// recorder is a node.Env that keeps what a host sends and the timers it sets.
type recorder struct {
	now    time.Time
	rng    *rand.Rand
	sent   []sent
	timers []node.Timer
}

type sent struct {
	to node.Addr
	e  wire.Envelope
}

func newRecorder() *recorder {
	return &recorder{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), rng: rand.New(rand.NewPCG(1, 2))}
}

func (r *recorder) Now() time.Time                     { return r.now }
func (r *recorder) Rand() *rand.Rand                   { return r.rng }
func (r *recorder) Send(to node.Addr, e wire.Envelope) { r.sent = append(r.sent, sent{to, e}) }
func (r *recorder) Offload(node.Work)                  {}
func (r *recorder) After(_ time.Duration, t node.Timer) func() {
	r.timers = append(r.timers, t)
	return func() {}
}

// proto is a protocol that records what the host hands it.
type proto struct {
	got      []wire.Msg
	down     []node.Addr
	validate func(wire.Msg) error
}

func (p *proto) Start(node.Env)                      {}
func (p *proto) Stop(node.Env)                       {}
func (p *proto) Receive(_ node.Env, in node.MsgIn)   { p.got = append(p.got, in.Env.Msg) }
func (p *proto) Timer(node.Env, node.Timer) bool     { return false }
func (p *proto) Work(node.Env, node.WorkDone) bool   { return false }
func (p *proto) PeerDown(_ node.Env, addr node.Addr) { p.down = append(p.down, addr) }
func (p *proto) Validate(m wire.Msg) error           { return p.validate(m) }

func newHost(t *testing.T) (*host.Host, *proto) {
	t.Helper()
	h, err := host.New(host.DefaultConfig(), "10.0.0.1:4001")
	if err != nil {
		t.Fatal(err)
	}
	p := &proto{validate: func(wire.Msg) error { return nil }}
	if err := h.Register(wire.TypeStabilize, p); err != nil {
		t.Fatal(err)
	}
	return h, p
}

// The runtime answers pings itself, and its replies name the host's
// address: the TCP driver routes a message by its sender's address and
// takes one without an address for a client's.
func TestPingReplyNamesTheHost(t *testing.T) {
	h, _ := newHost(t)
	env := newRecorder()
	peer := wire.NodeRef{ID: id.Random(env.rng, id.Bytes), Addr: "10.0.0.2:4001"}
	h.Handle(env, node.MsgIn{From: peer.Addr, Env: wire.Envelope{Kind: wire.Request, ReqID: 7, From: peer, Msg: &wire.Ping{}}})
	if len(env.sent) != 1 {
		t.Fatalf("sent %d messages, want one reply", len(env.sent))
	}
	r := env.sent[0]
	if r.to != peer.Addr || r.e.Kind != wire.Reply || r.e.ReqID != 7 || r.e.From.Addr != "10.0.0.1:4001" {
		t.Fatalf("reply %+v to %s: want a reply to request 7 from 10.0.0.1:4001", r.e, r.to)
	}
	if _, ok := r.e.Msg.(*wire.Ack); !ok {
		t.Fatalf("reply is %T, want Ack", r.e.Msg)
	}
	// As the TCP driver sees it: decoded from the wire.
	got, err := wire.Decode(wire.Encode(nil, r.e))
	if err != nil || got.From.Addr != "10.0.0.1:4001" {
		t.Fatalf("decoded reply's sender %+v, %v: want 10.0.0.1:4001", got.From, err)
	}
}

func TestRegisterRefusesOverlapsAndRuntimeTypes(t *testing.T) {
	h, _ := newHost(t)
	if err := h.Register(wire.TypeLookup, &proto{}); err == nil {
		t.Fatal("a second protocol in the ring's range was accepted")
	}
	if err := h.Register(wire.TypePing, &proto{}); err == nil {
		t.Fatal("a protocol took the runtime's Ping")
	}
	if err := h.Register(wire.TypeStoreBlock, &proto{}); err != nil {
		t.Fatalf("the block store's range: %v", err)
	}
	if h.Protocol("ring") == nil || h.Protocol("dhash") == nil || h.Protocol("maint") != nil {
		t.Fatal("Protocol does not find protocols by their range's name")
	}
}

// A request in a range nobody registered is refused; one that fails its
// protocol's validation is refused without reaching the protocol; a valid
// one reaches it.
func TestDispatchAndValidation(t *testing.T) {
	h, p := newHost(t)
	p.validate = func(m wire.Msg) error {
		if nh, ok := m.(*wire.NextHop); ok && nh.Key.Width() != id.Bytes {
			return errors.New("bad key")
		}
		return nil
	}
	env := newRecorder()
	peer := wire.NodeRef{ID: id.Random(env.rng, id.Bytes), Addr: "10.0.0.2:4001"}
	req := func(m wire.Msg) {
		h.Handle(env, node.MsgIn{From: peer.Addr, Env: wire.Envelope{Kind: wire.Request, ReqID: 1, From: peer, Msg: m}})
	}

	req(&wire.FetchBlock{Key: id.Random(env.rng, id.Bytes)})
	req(&wire.NextHop{Key: id.Random(env.rng, 4)})
	req(&wire.NextHop{Key: id.Random(env.rng, id.Bytes)})
	if len(p.got) != 1 {
		t.Fatalf("protocol got %d messages, want only the valid NextHop", len(p.got))
	}
	if len(env.sent) != 2 {
		t.Fatalf("sent %d replies, want 2 refusals", len(env.sent))
	}
	// An unregistered range is answered no-protocol (a client tells "this
	// node does not run it" by the code, not the text); a bad field,
	// bad-request.
	for i, want := range []fault.Code{fault.CodeNoProtocol, fault.CodeBadRequest} {
		e, ok := env.sent[i].e.Msg.(*wire.Error)
		if !ok || e.Code != want {
			t.Fatalf("reply %d is %v, want a %v error", i, env.sent[i].e.Msg, want)
		}
	}
	if !strings.Contains(env.sent[0].e.Msg.(*wire.Error).Text, "no protocol") {
		t.Fatalf("refusal of an unregistered range: %q", env.sent[0].e.Msg.(*wire.Error).Text)
	}
	if h.Stats.BadMessages != 2 {
		t.Fatalf("BadMessages = %d, want 2", h.Stats.BadMessages)
	}
}

// A timed-out call's peer is marked dead and every protocol is told; an
// answer from it clears the mark.
func TestLivenessFromCalls(t *testing.T) {
	h, p := newHost(t)
	env := newRecorder()
	peer := node.Addr("10.0.0.3:4001")
	var callErr error
	h.Call(env, peer, wire.NodeRef{}, id.ID{}, &wire.Ping{}, time.Second, func(env node.Env, _ wire.Msg, err error) {
		callErr = err
		h.MarkDead(env, peer)
	})
	h.Handle(env, node.TimerFired{T: env.timers[0]})
	if callErr == nil || !h.IsDead(env, peer) || len(p.down) != 1 || p.down[0] != peer {
		t.Fatalf("after a timeout: err %v, dead %v, protocol told %v", callErr, h.IsDead(env, peer), p.down)
	}
	h.Call(env, peer, wire.NodeRef{}, id.ID{}, &wire.Ping{}, time.Second, func(node.Env, wire.Msg, error) {})
	req := env.sent[len(env.sent)-1].e
	h.Handle(env, node.MsgIn{From: peer, Env: wire.Envelope{Kind: wire.Reply, ReqID: req.ReqID, From: wire.NodeRef{Addr: peer}, Msg: &wire.Ack{}}})
	if h.IsDead(env, peer) {
		t.Fatal("a peer that answered is still dead")
	}
}

// Leaves naming many addresses (a peer may write any) must not grow the
// dead-peer memory without bound nor make one event slow: the oldest marks
// go first.
func TestDeparturesAreBounded(t *testing.T) {
	h, _ := newHost(t)
	env := newRecorder()
	start := env.now
	for i := 0; i < 20000; i++ {
		env.now = start.Add(time.Duration(i) * time.Microsecond)
		h.Departed(env, node.Addr("10.9."+strconv.Itoa(i/256)+"."+strconv.Itoa(i%256)+":1"))
	}
	if h.IsDead(env, "10.9.0.0:1") {
		t.Fatal("the oldest of 20,000 departures is still remembered")
	}
	if !h.IsDead(env, "10.9.78.31:1") { // the last one, i = 19999
		t.Fatal("the newest departure is forgotten")
	}
	h.Departed(env, "")
	if h.IsDead(env, "") {
		t.Fatal("a departure without an address was recorded")
	}
}

// An answer from a peer marked dead clears the mark before the call's
// continuation runs, so the continuation may act on the peer at once (the
// ring takes a pinged peer back into its lists there).
func TestAnswerClearsDeadMarkBeforeContinuation(t *testing.T) {
	h, _ := newHost(t)
	env := newRecorder()
	peer := node.Addr("10.0.0.4:4001")
	h.MarkDead(env, peer)
	deadInContinuation := true
	h.Call(env, peer, wire.NodeRef{}, id.ID{}, &wire.Ping{}, time.Second, func(env node.Env, _ wire.Msg, err error) {
		if err != nil {
			t.Fatalf("call failed: %v", err)
		}
		deadInContinuation = h.IsDead(env, peer)
	})
	req := env.sent[len(env.sent)-1].e
	h.Handle(env, node.MsgIn{From: peer, Env: wire.Envelope{Kind: wire.Reply, ReqID: req.ReqID, From: wire.NodeRef{Addr: peer}, Msg: &wire.Ack{}}})
	if deadInContinuation {
		t.Fatal("the continuation of an answered call still saw its peer dead")
	}
}

// GetNodeInfo (triad status) is answered by the runtime: the build, when
// the host started, the disk the daemon reports, and the peers it holds
// dead now (those marked past DeadMemory no longer).
func TestNodeInfo(t *testing.T) {
	cfg := host.DefaultConfig()
	cfg.Version, cfg.Disk = "abc123", func() (uint64, uint64) { return 5, 100 }
	h, err := host.New(cfg, "10.0.0.1:4001")
	if err != nil {
		t.Fatal(err)
	}
	env := newRecorder()
	started := env.now
	h.Handle(env, node.Start{})
	h.MarkDead(env, "10.0.0.3:4001")
	h.MarkDead(env, "10.0.0.4:4001")
	env.now = env.now.Add(time.Minute)
	h.MarkDead(env, "10.0.0.5:4001") // the two before are past DeadMemory (30 s)
	h.MarkDead(env, "10.0.0.6:4001")
	client := wire.NodeRef{}
	env.sent = nil
	h.Handle(env, node.MsgIn{From: "@client/1", Env: wire.Envelope{Kind: wire.Request, ReqID: 9, From: client, Msg: &wire.GetNodeInfo{}}})
	if len(env.sent) != 1 {
		t.Fatalf("sent %d messages, want one reply", len(env.sent))
	}
	info, ok := env.sent[0].e.Msg.(*wire.NodeInfo)
	if !ok {
		t.Fatalf("reply %T, want NodeInfo", env.sent[0].e.Msg)
	}
	if info.Version != "abc123" || info.Started != started.UnixNano() || info.DiskFree != 5 || info.DiskTotal != 100 ||
		!slices.Equal(info.Dead, []string{"10.0.0.5:4001", "10.0.0.6:4001"}) {
		t.Fatalf("NodeInfo %+v", info)
	}
}
