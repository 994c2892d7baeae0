package cc

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"triad/internal/host"
	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/wire"
)

// TestTrace replays the scripts in testdata/trace on a static ring of cc
// nodes driven by hand (directives: see traceNet.run), one fresh ring per
// script. Regenerate the expectations with
//
//	go test ./internal/cc -run TestTrace -rewrite
//
// and read the diff: a changed trace is a changed protocol.
func TestTrace(t *testing.T) {
	datadriven.Walk(t, "testdata/trace", func(t *testing.T, path string) {
		tn := newTraceNet(1)
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			return tn.run(t, d)
		})
	})
}

// traceEpoch is a trace's time zero.
var traceEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// traceNet is a static ring of hosts running cc alone, on the host
// runtime, where nothing happens by itself: messages wait in flight, in
// the order sent, until the script delivers or drops them (they cross the
// real codec on the way), and timers fire only when the script moves the
// clock, in (due time, order set). Keys and node IDs print as the hex
// prefixes the script gave, and after each event the state of the node
// that handled it, when it changed: its queue and average queue length
// s̄, its source's window and requests in flight, its counters.
type traceNet struct {
	cfg    Config
	seed   uint64
	now    time.Duration
	nodes  []*traceNode // in the order the script named them
	byName map[string]*traceNode
	labels map[id.ID]string
	flight []traceMsg
	timers []*traceTimer
	seq    uint64
	out    strings.Builder
	enc    []byte
}

type traceNode struct {
	name string
	ref  wire.NodeRef
	h    *host.Host
	n    *Node
	rng  *rand.Rand
}

type traceMsg struct {
	from, to node.Addr
	env      wire.Envelope
}

type traceTimer struct {
	at        time.Duration
	seq       uint64
	tn        *traceNode
	t         node.Timer
	cancelled bool
}

func newTraceNet(seed uint64) *traceNet {
	return &traceNet{cfg: DefaultConfig(), seed: seed, byName: map[string]*traceNode{}, labels: map[id.ID]string{}}
}

// run runs one directive and returns its trace:
//
//	config [scheme=S] [queue=N] [threshold=T] [delta=D] [window=W] [uplink=BPS]
//	                    set the configuration of the nodes the next ring
//	                    makes (from DefaultConfig; the uplink in bits per
//	                    second, 0 unpaced)
//	ring NAME=PREFIX... make the static ring of these nodes and start them
//	uplink NAME BPS     pace a node's uplink from now on
//	send from=NAME key=PREFIX [n=N]
//	                    the application at a node sends n requests (1)
//	deliver [n=N] [from=NAME] [to=NAME]
//	                    deliver the messages in flight (or the first n of
//	                    those from and to the nodes named), oldest first;
//	                    what they cause to be sent stays in flight
//	drop [n=N] [from=NAME] [to=NAME]
//	                    lose messages in flight
//	tick DURATION       move the clock, firing due timers in order
//	in-flight           list the messages in flight
//	state               every node's state
func (tn *traceNet) run(t *testing.T, d *datadriven.TestData) string {
	switch d.Cmd {
	case "config":
		tn.configure(t, d)
	case "ring":
		tn.makeRing(t, d)
	case "uplink":
		if len(d.CmdArgs) != 2 {
			d.Fatalf(t, "uplink NAME BPS")
		}
		n := tn.node(t, d, d.CmdArgs[0].Key)
		if _, err := fmt.Sscan(d.CmdArgs[1].Key, &n.n.cfg.UplinkBps); err != nil {
			d.Fatalf(t, "%v", err)
		}
	case "send":
		var from, key string
		count := 1
		d.ScanArgs(t, "from", &from)
		d.ScanArgs(t, "key", &key)
		d.MaybeScanArgs(t, "n", &count)
		n, k := tn.node(t, d, from), tn.parseID(t, d, key)
		tn.step(n, node.Request{Fn: func(env node.Env) {
			for range count {
				if err := n.n.Send(env, k, nil); err != nil {
					tn.printf("  %s: send refused: %v\n", n.name, err)
				}
			}
		}}, fmt.Sprintf("%s: send %d for %s", n.name, count, key))
	case "deliver", "drop":
		var f traceFilter
		d.MaybeScanArgs(t, "n", &f.n)
		d.MaybeScanArgs(t, "from", &f.from)
		d.MaybeScanArgs(t, "to", &f.to)
		msgs := tn.take(f)
		for _, m := range msgs {
			if d.Cmd == "drop" {
				tn.printf("%s  (dropped)\n", tn.format(m))
				continue
			}
			tn.step(tn.byName[m.to], node.MsgIn{From: m.from, Env: m.env}, tn.format(m))
		}
		if len(msgs) == 0 {
			tn.printf("nothing to %s\n", d.Cmd)
		}
	case "tick":
		if len(d.CmdArgs) != 1 {
			d.Fatalf(t, "tick DURATION")
		}
		dur, err := time.ParseDuration(d.CmdArgs[0].Key)
		if err != nil {
			d.Fatalf(t, "%v", err)
		}
		tn.tick(dur)
	case "in-flight":
		for _, m := range tn.flight {
			tn.printf("%s\n", tn.format(m))
		}
		if len(tn.flight) == 0 {
			tn.printf("nothing in flight\n")
		}
	case "state":
		for _, n := range tn.nodes {
			tn.printf("%s\n", tn.state(n))
		}
	default:
		d.Fatalf(t, "unknown directive %q", d.Cmd)
	}
	s := tn.out.String()
	tn.out.Reset()
	return s
}

func (tn *traceNet) configure(t *testing.T, d *datadriven.TestData) {
	c := &tn.cfg
	var scheme string
	if d.MaybeScanArgs(t, "scheme", &scheme) {
		s, err := ParseScheme(scheme)
		if err != nil {
			d.Fatalf(t, "%v", err)
		}
		c.Scheme = s
	}
	d.MaybeScanArgs(t, "queue", &c.QueueCap)
	d.MaybeScanArgs(t, "threshold", &c.Threshold)
	d.MaybeScanArgs(t, "delta", &c.Delta)
	d.MaybeScanArgs(t, "uplink", &c.UplinkBps)
	if d.MaybeScanArgs(t, "window", &c.InitialWindow) {
		c.MaxWindow = max(c.MaxWindow, c.InitialWindow)
	}
	if err := c.Validate(); err != nil {
		d.Fatalf(t, "%v", err)
	}
}

func (tn *traceNet) makeRing(t *testing.T, d *datadriven.TestData) {
	var members []wire.NodeRef
	for _, a := range d.CmdArgs {
		if len(a.Vals) != 1 {
			d.Fatalf(t, "ring wants NAME=PREFIX")
		}
		members = append(members, wire.NodeRef{ID: tn.parseID(t, d, a.Vals[0]), Addr: node.Addr(a.Key)})
	}
	ring := NewStaticRing(members)
	for i, m := range members {
		h, err := host.New(host.DefaultConfig(), m.Addr)
		if err != nil {
			d.Fatalf(t, "%v", err)
		}
		n, err := New(tn.cfg, h, ring.Router(m.Addr))
		if err != nil {
			d.Fatalf(t, "%v", err)
		}
		tn.nodes = append(tn.nodes, &traceNode{name: m.Addr, ref: m, h: h, n: n, rng: rand.New(rand.NewPCG(tn.seed, uint64(i)))})
		tn.byName[m.Addr] = tn.nodes[i]
	}
	for _, n := range tn.nodes {
		tn.step(n, node.Start{}, n.name+": start")
	}
}

// parseID reads a hex prefix ("40" is 0x4000...0) and labels the ID with it.
func (tn *traceNet) parseID(t *testing.T, d *datadriven.TestData, prefix string) id.ID {
	x, err := id.Parse(prefix+strings.Repeat("0", 2*id.Bytes-len(prefix)), id.Bytes)
	if err != nil {
		d.Fatalf(t, "%v", err)
	}
	tn.labels[x] = prefix
	return x
}

func (tn *traceNet) node(t *testing.T, d *datadriven.TestData, name string) *traceNode {
	n := tn.byName[name]
	if n == nil {
		d.Fatalf(t, "no node %q", name)
	}
	return n
}

func (tn *traceNet) printf(format string, args ...any) { fmt.Fprintf(&tn.out, format, args...) }

// step hands ev to n's host and prints label, what n sent (by env.Send),
// and n's state if the event changed it.
func (tn *traceNet) step(n *traceNode, ev node.Event, label string) {
	tn.printf("%s\n", label)
	before := tn.state(n)
	n.h.Handle(&traceEnv{tn: tn, n: n}, ev)
	if after := tn.state(n); after != before {
		tn.printf("  %s\n", after)
	}
}

// state prints what cc keeps at n: its forwarding queue (with the control
// messages waiting before it) and s̄, its source's window and requests in
// flight (once it has sent any), the neighbours it holds for or told to hold, and its counters.
func (tn *traceNet) state(n *traceNode) string {
	c := n.n
	var b strings.Builder
	fmt.Fprintf(&b, "%s: queue=%d", n.name, c.q.len())
	if c.ctl.len() > 0 {
		fmt.Fprintf(&b, "+%d", c.ctl.len())
	}
	fmt.Fprintf(&b, " s̄=%.2f", c.avgQ)
	if c.src.seq > 0 { // a source
		fmt.Fprintf(&b, " window=%.2f out=%d", c.src.window, len(c.src.out))
	}
	if len(c.blocked) > 0 {
		fmt.Fprintf(&b, " holding-for=%v", c.blocked)
	}
	if len(c.holding) > 0 {
		fmt.Fprintf(&b, " told-to-hold=%v", c.holding)
	}
	st := c.Stats
	for _, x := range []struct {
		name string
		v    uint64
	}{{"marked", st.Marked}, {"dropped", st.Dropped}, {"acked", st.Acked}, {"acked-marked", st.AckedMarked},
		{"retransmits", st.Retransmits}, {"lost", st.Lost}} {
		if x.v > 0 {
			fmt.Fprintf(&b, " %s=%d", x.name, x.v)
		}
	}
	return b.String()
}

// tick moves the clock by d, firing the timers due on the way, each at
// its own time.
func (tn *traceNet) tick(d time.Duration) {
	end := tn.now + d
	for {
		tn.timers = slices.DeleteFunc(tn.timers, func(t *traceTimer) bool { return t.cancelled })
		best := -1
		for i, t := range tn.timers {
			if t.at <= end && (best < 0 || t.at < tn.timers[best].at || t.at == tn.timers[best].at && t.seq < tn.timers[best].seq) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		t := tn.timers[best]
		tn.timers = slices.Delete(tn.timers, best, best+1)
		tn.now = t.at
		tn.step(t.tn, node.TimerFired{T: t.t}, fmt.Sprintf("%.3fs %s: %s", t.at.Seconds(), t.tn.name, t.t))
	}
	tn.now = end
}

type traceFilter struct {
	from, to string // empty: any
	n        int    // at most this many; 0: no limit
}

// take removes the messages in flight that f picks, oldest first.
func (tn *traceNet) take(f traceFilter) []traceMsg {
	var got, keep []traceMsg
	for _, m := range tn.flight {
		if (f.from == "" || m.from == f.from) && (f.to == "" || m.to == f.to) && (f.n == 0 || len(got) < f.n) {
			got = append(got, m)
		} else {
			keep = append(keep, m)
		}
	}
	tn.flight = keep
	return got
}

// format prints a message on one line: sender -> receiver, its type and
// the fields congestion control reads.
func (tn *traceNet) format(m traceMsg) string {
	s := fmt.Sprintf("%s -> %s  %s", m.from, m.to, m.env.Msg.Type())
	switch msg := m.env.Msg.(type) {
	case *wire.CCRequest:
		s += fmt.Sprintf(" seq=%d key=%s src=%s rate=%g hops=%d", msg.Seq, tn.id(msg.Key), msg.Source.Addr, float64(msg.Rate)/1000, msg.Hops)
		if msg.Marked {
			s += " marked"
		}
	case *wire.CCAck:
		s += fmt.Sprintf(" seq=%d hops=%d", msg.Seq, msg.Hops)
		if msg.Marked {
			s += " marked"
		}
	case *wire.CCPause:
		if msg.Paused {
			s += " hold"
		} else {
			s += " resume"
		}
	}
	return s
}

func (tn *traceNet) id(x id.ID) string {
	if l, ok := tn.labels[x]; ok {
		return l
	}
	return x.Short()
}

// traceEnv is one node's node.Env in a traceNet.
type traceEnv struct {
	tn *traceNet
	n  *traceNode
}

func (e *traceEnv) Now() time.Time   { return traceEpoch.Add(e.tn.now) }
func (e *traceEnv) Rand() *rand.Rand { return e.n.rng }

// Send queues m, encoded and decoded as the TCP driver would, and prints
// it under the event that sent it.
func (e *traceEnv) Send(to node.Addr, m wire.Envelope) {
	tn := e.tn
	tn.enc = wire.Encode(tn.enc[:0], m)
	got, err := wire.Decode(tn.enc)
	if err != nil {
		panic(fmt.Sprintf("cc trace: %T does not survive the codec: %v", m.Msg, err))
	}
	msg := traceMsg{from: e.n.name, to: to, env: got}
	tn.flight = append(tn.flight, msg)
	tn.printf("  %s\n", tn.format(msg))
}

func (e *traceEnv) After(d time.Duration, t node.Timer) func() {
	tn := e.tn
	tn.seq++
	tm := &traceTimer{at: tn.now + d, seq: tn.seq, tn: e.n, t: t}
	tn.timers = append(tn.timers, tm)
	return func() { tm.cancelled = true }
}

// Offload is never called: cc offloads nothing.
func (e *traceEnv) Offload(node.Work) { panic("cc trace: cc offloaded work") }
