package tapestry_test

import (
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"triad/internal/fault"
	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/sim"
	"triad/internal/tapestry"
	"triad/internal/wire"
)

// recorder is a node.Env that keeps what a node sends, for messages a
// test hands a mesh's host between the simulator's runs. Its clock is the
// simulator's; its timers never fire.
type recorder struct {
	now  time.Time
	rng  *rand.Rand
	sent []sentMsg
}

type sentMsg struct {
	to node.Addr
	e  wire.Envelope
}

func newRecorder(s *sim.Sim) *recorder {
	return &recorder{now: s.Epoch().Add(s.Now()), rng: rand.New(rand.NewPCG(7, 7))}
}

func (r *recorder) Now() time.Time                     { return r.now }
func (r *recorder) Rand() *rand.Rand                   { return r.rng }
func (r *recorder) Send(to node.Addr, e wire.Envelope) { r.sent = append(r.sent, sentMsg{to, e}) }
func (r *recorder) Offload(node.Work)                  {}
func (r *recorder) After(time.Duration, node.Timer) func() {
	return func() {}
}

// state is what a node holds that a message could change: its table, its
// backpointers and its pointers.
type state struct {
	entries  []wire.TapEntry
	back     []wire.NodeRef
	pointers int
}

func stateOf(n *tapestry.Node) state {
	t := n.Table()
	return state{entries: t.Entries, back: t.Backpointers, pointers: n.PointersHeld()}
}

// TestBadInputIsRefusedAndChangesNothing: every message that names a key
// of the wrong width, a level past the table, a digit past the base, a
// hop count past the bound, an unknown application or an unknown
// operation is answered with a bad-request error, counted, and leaves the
// node's table, backpointers and pointers as they were. The same messages
// made valid do change them, so the check can see a change.
func TestBadInputIsRefusedAndChangesNothing(t *testing.T) {
	m := newMesh(t, 3, 16, tapestry.DefaultConfig())
	target, peerHost := m.hosts[5], m.hosts[9]
	r := m.s.Rand()
	published := id.Random(r, id.Bytes) // the target holds its own pointer
	m.s.Do(target, func(env node.Env) { tap(target).Publish(env, published, tapestry.AppDOLR, time.Time{}) })
	m.s.RunFor(10 * time.Second)

	n := tap(target)
	before := stateOf(n)
	peer := tap(peerHost).Self()
	for _, h := range m.hosts { // one the target has no backpointer to, so that a notify shows
		if h != target && !containsRef(before.back, h.Addr) {
			peer = tap(h).Self()
			break
		}
	}
	short := id.Random(r, 4)
	key := id.Random(r, id.Bytes)
	pointer := func(p wire.TapPointer) *wire.TapPointers {
		if p.Key.Width() == 0 {
			p.Key = key
		}
		if p.App == 0 {
			p.App = tapestry.AppDOLR
		}
		p.Server, p.TTLMillis = peer, 60_000
		return &wire.TapPointers{Pointers: []wire.TapPointer{p}}
	}
	route := func(rt wire.TapRoute) *wire.TapRoute {
		if rt.Key.Width() == 0 {
			rt.Key = key
		}
		if rt.Op == 0 {
			rt.Op = wire.TapToObject
		}
		if rt.App == 0 {
			rt.App = tapestry.AppDOLR
		}
		rt.Origin, rt.Seq = peer, 99
		return &rt
	}
	bad := []struct {
		name string
		msg  wire.Msg
	}{
		{"route key of 4 bytes", route(wire.TapRoute{Key: short})},
		{"pointer key of 4 bytes", pointer(wire.TapPointer{Key: short})},
		{"unpublish key of 4 bytes", &wire.TapUnpublish{Key: short}},
		{"locate key of 4 bytes", &wire.TapLocate{Key: short, App: tapestry.AppDOLR}},
		{"route level 41", route(wire.TapRoute{Level: 41})},
		{"pointer level 41", pointer(wire.TapPointer{Level: 41})},
		{"nearby level 40", &wire.TapNearby{Level: 40}},
		{"notify level 40", &wire.TapNotify{Kind: wire.TapPointsAt, Level: 40}},
		{"multicast prefix 40", &wire.TapMulticast{Joiner: peer, Prefix: 40, Level: 40}},
		{"joined prefix 40", &wire.TapJoined{Prefix: 40, Nodes: []wire.NodeRef{peer}}},
		{"table digit 16", &wire.TapTable{Self: peer, Entries: []wire.TapEntry{{Level: 0, Digit: 16, Links: []wire.NodeRef{peer}}}}},
		{"table level 40", &wire.TapTable{Self: peer, Entries: []wire.TapEntry{{Level: 40, Digit: 0, Links: []wire.NodeRef{peer}}}}},
		{"route 81 hops", route(wire.TapRoute{Hops: 81})},
		{"pointer 81 hops", pointer(wire.TapPointer{Hops: 81})},
		{"route of application 77", route(wire.TapRoute{App: 77})},
		{"pointer of application 77", pointer(wire.TapPointer{App: 77})},
		{"locate of application 77", &wire.TapLocate{Key: key, App: 77}},
		{"route to node of the system application", &wire.TapRoute{Op: wire.TapToNode, Key: key, App: tapestry.AppSystem, Origin: peer, Seq: 99}},
		{"unknown op 9", route(wire.TapRoute{Op: 9})},
		{"unknown op 0", &wire.TapRoute{Op: 0, Key: key, App: tapestry.AppDOLR, Origin: peer, Seq: 99}},
		{"a pointer living 31 days", &wire.TapPointers{Pointers: []wire.TapPointer{{Key: key, App: tapestry.AppDOLR, Server: peer, TTLMillis: wire.MaxTapTTLMillis + 1}}}},
	}
	if before.pointers == 0 || len(before.entries) == 0 {
		t.Fatalf("the target holds %d pointers and %d entries: nothing to see change", before.pointers, len(before.entries))
	}
	for i, c := range bad {
		env := newRecorder(m.s)
		count := n.Stats.BadRequests
		reqID := uint64(1000 + i)
		n.Host().Handle(env, node.MsgIn{From: peer.Addr, Env: wire.Envelope{Kind: wire.Request, ReqID: reqID, From: peer, To: n.Self().ID, Msg: c.msg}})
		if len(env.sent) != 1 {
			t.Errorf("%s: %d messages sent, want one refusal", c.name, len(env.sent))
			continue
		}
		s := env.sent[0]
		e, ok := s.e.Msg.(*wire.Error)
		if s.to != peer.Addr || s.e.Kind != wire.Reply || s.e.ReqID != reqID || !ok || e.Code != fault.CodeBadRequest {
			t.Errorf("%s: sent %T %+v to %s, want a bad-request error for request %d", c.name, s.e.Msg, s.e, s.to, reqID)
		}
		if got := n.Stats.BadRequests - count; got != 1 {
			t.Errorf("%s: BadRequests went up by %d, want 1", c.name, got)
		}
		if after := stateOf(n); !reflect.DeepEqual(before, after) {
			t.Errorf("%s: the node's state changed: %d pointers (was %d), %d entries (was %d), %d backpointers (was %d)",
				c.name, after.pointers, before.pointers, len(after.entries), len(before.entries), len(after.back), len(before.back))
		}
		if ptrs, _ := n.Pointers(key); len(ptrs) != 0 {
			t.Errorf("%s: a pointer for %s was stored", c.name, key.Short())
		}
	}

	// Made valid, the same messages are acted on: a pointer is stored and
	// a backpointer recorded.
	env := newRecorder(m.s)
	count := n.Stats.BadRequests
	n.Host().Handle(env, node.MsgIn{From: peer.Addr, Env: wire.Envelope{Kind: wire.Request, ReqID: 1, From: peer, Msg: pointer(wire.TapPointer{})}})
	n.Host().Handle(env, node.MsgIn{From: peer.Addr, Env: wire.Envelope{Kind: wire.OneWay, From: peer, Msg: &wire.TapNotify{Kind: wire.TapPointsAt, Level: 39}}})
	if n.Stats.BadRequests != count {
		t.Errorf("valid messages counted as bad: %d", n.Stats.BadRequests-count)
	}
	if ptrs, _ := n.Pointers(key); len(ptrs) != 1 || ptrs[0].Addr != peer.Addr {
		t.Errorf("a valid pointer was not stored: %v", ptrs)
	}
	if after := stateOf(n); !containsRef(after.back, peer.Addr) {
		t.Errorf("a valid notify from %s left no backpointer to it", peer.Addr)
	}
}

func containsRef(l []wire.NodeRef, addr node.Addr) bool {
	for _, r := range l {
		if r.Addr == addr {
			return true
		}
	}
	return false
}

// TestRouteAtTheHopBoundIsDropped: a route that arrives having made the
// bound's 80 hops is acknowledged, dropped and counted as a loop, and its
// origin hears it looped; it is never forwarded. With 5 hops the same
// route goes on.
func TestRouteAtTheHopBoundIsDropped(t *testing.T) {
	m := newMesh(t, 4, 16, tapestry.DefaultConfig())
	target, peerHost := m.hosts[6], m.hosts[11]
	n := tap(target)
	peer := tap(peerHost).Self()
	r := m.s.Rand()
	var key id.ID
	for {
		key = id.Random(r, id.Bytes)
		if _, _, root := n.NextHop(key, 0); !root {
			break
		}
	}
	deliver := func(hops uint32) *recorder {
		env := newRecorder(m.s)
		msg := &wire.TapRoute{Op: wire.TapToNode, Key: key, App: tapestry.AppDOLR, Origin: peer, Seq: 42, Hops: hops, Path: []wire.NodeRef{peer}}
		n.Host().Handle(env, node.MsgIn{From: peer.Addr, Env: wire.Envelope{Kind: wire.Request, ReqID: 7, From: peer, Msg: msg}})
		return env
	}

	loops, forwarded := n.Stats.Loops, n.Stats.Forwarded
	env := deliver(wire.MaxTapHops)
	if n.Stats.Loops != loops+1 || n.Stats.Forwarded != forwarded {
		t.Errorf("at the bound: loops +%d, forwarded +%d; want +1 and +0", n.Stats.Loops-loops, n.Stats.Forwarded-forwarded)
	}
	looped := false
	for _, s := range env.sent {
		switch msg := s.e.Msg.(type) {
		case *wire.TapRoute:
			t.Errorf("at the bound the route was forwarded to %s with %d hops", s.to, msg.Hops)
		case *wire.TapRouteDone:
			looped = looped || s.to == peer.Addr && msg.Seq == 42 && msg.Status == wire.TapLooped
		}
	}
	if !looped {
		t.Errorf("the origin was not told the route looped: %+v", env.sent)
	}

	loops, forwarded = n.Stats.Loops, n.Stats.Forwarded
	env = deliver(5)
	if n.Stats.Loops != loops || n.Stats.Forwarded != forwarded+1 {
		t.Errorf("below the bound: loops +%d, forwarded +%d; want +0 and +1", n.Stats.Loops-loops, n.Stats.Forwarded-forwarded)
	}
	sent := false
	for _, s := range env.sent {
		if msg, ok := s.e.Msg.(*wire.TapRoute); ok && msg.Hops == 6 {
			sent = true
		}
	}
	if !sent {
		t.Error("below the bound the route was not forwarded")
	}
}
