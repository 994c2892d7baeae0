package rpc

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"triad/internal/fault"
	"triad/internal/node"
	"triad/internal/wire"
)

// fakeEnv records sends and timers; the test moves the clock by hand.
type fakeEnv struct {
	now    time.Time
	sent   []wire.Envelope
	timers []*fakeTimer
}

type fakeTimer struct {
	at        time.Time
	t         node.Timer
	cancelled bool
}

func (e *fakeEnv) Now() time.Time                    { return e.now }
func (e *fakeEnv) Rand() *rand.Rand                  { return rand.New(rand.NewPCG(1, 1)) }
func (e *fakeEnv) Send(_ node.Addr, m wire.Envelope) { e.sent = append(e.sent, m) }
func (e *fakeEnv) Offload(node.Work)                 {}
func (e *fakeEnv) After(d time.Duration, t node.Timer) func() {
	ft := &fakeTimer{at: e.now.Add(d), t: t}
	e.timers = append(e.timers, ft)
	return func() { ft.cancelled = true }
}

// advance moves the clock and fires due timers into c.
func (e *fakeEnv) advance(c *Client, d time.Duration) {
	e.now = e.now.Add(d)
	for _, ft := range e.timers {
		if !ft.cancelled && !ft.at.After(e.now) {
			ft.cancelled = true
			c.HandleTimer(e, ft.t)
		}
	}
}

func reply(to wire.Envelope, from node.Addr, m wire.Msg) node.MsgIn {
	return node.MsgIn{From: from, Env: wire.Envelope{Kind: wire.Reply, ReqID: to.ReqID, Msg: m}}
}

func TestCallOutcomes(t *testing.T) {
	env := &fakeEnv{now: time.Unix(1000, 0)}
	c := NewClient(DefaultConfig())
	var got []string
	record := func(_ node.Env, m wire.Msg, err error) {
		switch {
		case errors.Is(err, ErrTimeout):
			got = append(got, "timeout")
		case err != nil:
			got = append(got, "error:"+err.Error())
		default:
			got = append(got, m.Type().String())
		}
	}
	c.Call(env, "a", wire.NodeRef{}, wire.NodeRef{}.ID, &wire.Ping{}, 0, record)
	c.Call(env, "b", wire.NodeRef{}, wire.NodeRef{}.ID, &wire.Ping{}, 0, record)
	c.Call(env, "c", wire.NodeRef{}, wire.NodeRef{}.ID, &wire.Ping{}, 0, record)
	env.advance(c, 40*time.Millisecond)
	// A reply from the wrong address is stray and completes nothing.
	if _, _, ok := c.HandleReply(env, reply(env.sent[0], "zzz", &wire.Ack{})); ok {
		t.Fatal("reply from a stranger accepted")
	}
	if _, rtt, ok := c.HandleReply(env, reply(env.sent[0], "a", &wire.Ack{})); !ok || rtt != 40*time.Millisecond {
		t.Fatalf("reply: ok %v rtt %v", ok, rtt)
	}
	c.HandleReply(env, reply(env.sent[1], "b", &wire.Error{Code: fault.CodeBusy, Text: "busy"}))
	// Duplicate replies are stray too.
	if _, _, ok := c.HandleReply(env, reply(env.sent[0], "a", &wire.Ack{})); ok {
		t.Fatal("duplicate reply accepted")
	}
	env.advance(c, 3*time.Second)
	want := []string{"Ack", "error:busy", "timeout"}
	if len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("outcomes %v, want %v", got, want)
	}
	if c.Pending() != 0 || c.Stray != 2 || c.Timeouts != 1 {
		t.Fatalf("pending %d stray %d timeouts %d", c.Pending(), c.Stray, c.Timeouts)
	}
	// a answered in 40ms: its timeout adapts down to the floor; c, never
	// heard from, keeps the default.
	if to := c.Timeout("a"); to != DefaultConfig().MinTimeout {
		t.Errorf("adaptive timeout for a: %v", to)
	}
	if to := c.Timeout("c"); to != DefaultConfig().Timeout {
		t.Errorf("timeout for unknown c: %v", to)
	}
}

func TestMaxPending(t *testing.T) {
	env := &fakeEnv{now: time.Unix(0, 0)}
	cfg := DefaultConfig()
	cfg.MaxPending = 2
	c := NewClient(cfg)
	ran := 0
	cont := func(node.Env, wire.Msg, error) { ran++ }
	for i := 0; i < 2; i++ {
		if !c.Call(env, "a", wire.NodeRef{}, wire.NodeRef{}.ID, &wire.Ping{}, 0, cont) {
			t.Fatal("refused under the limit")
		}
	}
	if c.Call(env, "a", wire.NodeRef{}, wire.NodeRef{}.ID, &wire.Ping{}, 0, cont) {
		t.Fatal("accepted over the limit")
	}
	env.advance(c, time.Minute)
	if ran != 2 {
		t.Fatalf("%d continuations ran, want 2 (the refused call's never)", ran)
	}
}

// TestManyCallsOneSlow keeps two calls pending while thousands of others
// come and go, so the ring of calls in flight must slide past them: a reply
// must still find one, a timeout the other.
func TestManyCallsOneSlow(t *testing.T) {
	env := &fakeEnv{now: time.Unix(0, 0)}
	c := NewClient(DefaultConfig())
	done := map[string]int{}
	record := func(name string) Reply {
		return func(_ node.Env, m wire.Msg, err error) {
			if err != nil {
				name += "-err"
			}
			done[name]++
		}
	}
	c.Call(env, "slow", wire.NodeRef{}, wire.NodeRef{}.ID, &wire.Ping{}, 0, record("slow"))
	c.Call(env, "lost", wire.NodeRef{}, wire.NodeRef{}.ID, &wire.Ping{}, 0, record("lost"))
	slow := env.sent[0]
	for i := 0; i < 3*maxWindow; i++ {
		c.Call(env, "fast", wire.NodeRef{}, wire.NodeRef{}.ID, &wire.Ping{}, 0, record("fast"))
		if i%2 == 1 { // complete in pairs, newest first
			n := len(env.sent)
			for _, e := range []wire.Envelope{env.sent[n-1], env.sent[n-2]} {
				if _, _, ok := c.HandleReply(env, reply(e, "fast", &wire.Ack{})); !ok {
					t.Fatalf("call %d: reply not matched", e.ReqID)
				}
			}
		}
	}
	if c.Pending() != 2 {
		t.Fatalf("pending %d, want 2", c.Pending())
	}
	if _, _, ok := c.HandleReply(env, reply(slow, "slow", &wire.Ack{})); !ok {
		t.Fatal("slow reply not matched after the window slid")
	}
	if _, _, ok := c.HandleReply(env, reply(slow, "slow", &wire.Ack{})); ok {
		t.Fatal("duplicate slow reply accepted")
	}
	env.advance(c, time.Minute)
	if done["slow"] != 1 || done["lost-err"] != 1 || done["fast"] != 3*maxWindow || c.Pending() != 0 || c.Timeouts != 1 {
		t.Fatalf("done %v pending %d timeouts %d", done, c.Pending(), c.Timeouts)
	}
}

// A reply names its call by an ID that only the request carried: one that
// guesses the sequence number, or gets the sequence right and the random
// half wrong, completes nothing, even from the right address.
func TestGuessedRequestIDsAreStray(t *testing.T) {
	env := &fakeEnv{now: time.Unix(1000, 0)}
	c := NewClient(DefaultConfig())
	done := 0
	c.Call(env, "a", wire.NodeRef{}, wire.NodeRef{}.ID, &wire.Ping{}, 0, func(node.Env, wire.Msg, error) { done++ })
	real := env.sent[0].ReqID
	if real == 1 {
		t.Fatalf("first request ID is 1: sequential IDs can be guessed")
	}
	for _, guess := range []uint64{1, 0, real ^ 1<<40, real &^ (1<<32 - 1), real + 1} {
		forged := node.MsgIn{From: "a", Env: wire.Envelope{Kind: wire.Reply, ReqID: guess, Msg: &wire.Ack{}}}
		if c.Expects(forged) {
			t.Errorf("Expects(%#x) = true for the call with ID %#x", guess, real)
		}
		if _, _, ok := c.HandleReply(env, forged); ok || done != 0 {
			t.Fatalf("reply with guessed ID %#x completed the call with ID %#x", guess, real)
		}
	}
	if c.Stray != 5 {
		t.Errorf("Stray = %d, want 5", c.Stray)
	}
	if _, _, ok := c.HandleReply(env, reply(env.sent[0], "a", &wire.Ack{})); !ok || done != 1 {
		t.Fatalf("the real reply did not complete the call")
	}
}

func TestHistogramBuckets(t *testing.T) {
	var h Histogram
	for _, d := range []time.Duration{0, 250 * time.Microsecond, 251 * time.Microsecond, time.Second, time.Minute} {
		h.Observe(d)
	}
	want := [len(LatencyBuckets) + 1]uint64{0: 2, 1: 1, 11: 1, 14: 1}
	if h.Counts != want || h.Count != 5 || h.Sum != time.Minute+time.Second+501*time.Microsecond {
		t.Fatalf("histogram %+v", h)
	}
}

// TestRTTKeepsTheLeastSample: the smoothed estimate follows a queueing
// burst; Min stays at the path's least round trip.
func TestRTTKeepsTheLeastSample(t *testing.T) {
	var e RTT
	for _, ms := range []int{50, 30, 400, 420, 380, 35} {
		e.Observe(time.Duration(ms) * time.Millisecond)
	}
	if e.Min != 30*time.Millisecond {
		t.Errorf("min %v, want 30ms", e.Min)
	}
	if e.SRTT <= 100*time.Millisecond {
		t.Errorf("smoothed %v: the burst should have moved it", e.SRTT)
	}
}
