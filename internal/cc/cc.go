package cc

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"triad/internal/host"
	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/rpc"
	"triad/internal/wire"
)

// Scheme is how a ring controls congestion (see the package comment).
type Scheme uint8

// Schemes.
const (
	None Scheme = iota
	Loss
	BackPressure
	Marking
)

var schemeNames = [...]string{None: "none", Loss: "loss", BackPressure: "backpressure", Marking: "marking"}

func (s Scheme) String() string {
	if int(s) < len(schemeNames) {
		return schemeNames[s]
	}
	return fmt.Sprintf("Scheme(%d)", uint8(s))
}

// ParseScheme reads a scheme's name.
func ParseScheme(name string) (Scheme, error) {
	for s, n := range schemeNames {
		if n == name {
			return Scheme(s), nil
		}
	}
	return 0, fmt.Errorf("cc: scheme %q: want none, loss, backpressure or marking", name)
}

// Config configures a node's congestion control. Zero fields take the
// defaults of DefaultConfig where one is noted.
type Config struct {
	Scheme Scheme
	// QueueCap is the forwarding queue's capacity in requests (200).
	QueueCap int
	// Threshold is t, the average queue length at which every request is
	// marked (20): well below the capacity, so bursts fit.
	Threshold float64
	// Delta is δ, the weight of the old average queue length (0.9).
	Delta float64
	// Gamma is γ, how much a source's rate above the average raises its
	// marking probability (0: no fairness term).
	Gamma float64
	// RateMemory is about how many requests' rates x_avg averages (100).
	RateMemory int
	// Increase is c+ (2) and Decrease c− (0.5) of the sources' AIMD.
	Increase, Decrease float64
	// InitialWindow and MaxWindow bound a source's window of requests in
	// flight (2 and 1,000).
	InitialWindow, MaxWindow float64
	// UplinkBps, if set, paces the node's sending at this many bits per
	// second: its queue then fills when more comes than the link carries.
	UplinkBps float64
	// MinRTO and MaxRTO bound the retransmission timeout (1 s, as RFC
	// 6298 sets it: one estimate covers paths of one hop and of many).
	MinRTO, MaxRTO time.Duration
	// MaxRetries is how often a request is sent again before it is given
	// up (8).
	MaxRetries int
	// MaxBacklog bounds the requests an application may have waiting at a
	// source for its window (1,000); Send refuses past it.
	MaxBacklog int
	// PauseFraction is cross-load: the share of time the node stops
	// forwarding, in pauses of exponential length averaging PauseMean
	// (500 ms).
	PauseFraction float64
	PauseMean     time.Duration
	// Offered, if set, makes the node a load generator: requests for
	// random keys at this many per second (Poisson), each with a payload
	// of PayloadBytes.
	Offered      float64
	PayloadBytes int
	// Deliver, if set, receives each request at the node responsible for
	// its key (more than once if a retransmission crossed its ack).
	Deliver func(env node.Env, key id.ID, payload []byte)
}

// DefaultConfig is marking with the paper's parameters.
func DefaultConfig() Config {
	return Config{Scheme: Marking, QueueCap: 200, Threshold: 20, Delta: 0.9, RateMemory: 100, Increase: 2, Decrease: 0.5,
		InitialWindow: 2, MaxWindow: 1000, MinRTO: time.Second, MaxRTO: 20 * time.Second, MaxRetries: 8,
		MaxBacklog: 1000, PauseMean: 500 * time.Millisecond}
}

// Validate reports a configuration that cannot work.
func (c Config) Validate() error {
	switch {
	case c.Scheme > Marking:
		return fmt.Errorf("cc: unknown scheme %d", c.Scheme)
	case c.QueueCap < 1 || c.Threshold <= 0 || c.Threshold >= float64(c.QueueCap):
		return fmt.Errorf("cc: queue capacity %d and threshold %g: want 0 < threshold < capacity", c.QueueCap, c.Threshold)
	case c.Delta < 0 || c.Delta >= 1 || c.Gamma < 0 || c.RateMemory < 1:
		return errors.New("cc: want 0 <= delta < 1, gamma >= 0, rate memory >= 1")
	case c.Increase <= 0 || c.Decrease <= 0 || c.Decrease >= 1:
		return errors.New("cc: want c+ > 0 and 0 < c- < 1")
	case c.InitialWindow < 1 || c.MaxWindow < c.InitialWindow:
		return errors.New("cc: want 1 <= initial window <= max window")
	case c.MinRTO <= 0 || c.MaxRTO < c.MinRTO || c.MaxRetries < 0 || c.MaxBacklog < 1:
		return errors.New("cc: want 0 < min RTO <= max RTO, retries >= 0, backlog >= 1")
	case c.PauseFraction < 0 || c.PauseFraction >= 1 || c.PauseFraction > 0 && c.PauseMean <= 0:
		return errors.New("cc: want 0 <= pause fraction < 1 and a positive pause mean")
	case c.UplinkBps < 0 || c.Offered < 0 || c.PayloadBytes < 0 || c.PayloadBytes > wire.MaxCCPayload:
		return errors.New("cc: negative uplink, offered load or payload, or a payload over the limit")
	}
	return nil
}

// Stats are a node's counters; Window, Outstanding and Queue are now.
type Stats struct {
	Generated   uint64 // requests the load generator made
	Refused     uint64 // requests Send refused: the backlog was full
	Injected    uint64 // requests sent for the first time
	Retransmits uint64
	Acked       uint64 // requests acknowledged (once each)
	AckedMarked uint64 // of those, with the congestion bit
	AckedHere   uint64 // of those, for keys this node holds: no hop, no cost
	Lost        uint64 // requests given up: not acknowledged after the retries
	DelaySum    time.Duration
	HopsSum     uint64
	Forwarded   uint64 // requests sent on towards their key
	Delivered   uint64 // requests that reached this node, responsible for their key
	Dropped     uint64 // requests dropped here: the queue was full
	Marked      uint64 // requests this node's queue marked
	PausedFor   time.Duration
	QueueHigh   int

	Window      float64
	Outstanding int
	Queue       int
}

// ErrBusy is Send's refusal when the source's backlog is full.
var ErrBusy = errors.New("cc: the source's backlog is full")

// Node is a host's congestion control: its forwarding queue and, for the
// requests it sends itself, its source.
type Node struct {
	cfg    Config
	rt     *host.Host
	router Router

	q        fifo[item] // requests to forward, or inject
	ctl      fifo[item] // acknowledgements and pause notices: first, never dropped
	linkFree time.Time  // when the uplink has sent what it was given
	pacing   bool       // a pacer timer is armed
	avgQ     float64    // s̄
	xAvg     float64    // x_avg, requests per second
	paused   bool       // cross-load: not forwarding now
	gen      bool       // the load generator's timer is armed
	pausedAt time.Time
	blocked  []node.Addr // neighbours that told us to hold (back-pressure)
	holding  []node.Addr // neighbours we told to hold

	src source

	Stats Stats
}

// item is a message waiting to leave.
type item struct {
	to   node.Addr
	env  wire.Envelope
	size int
}

// New makes the protocol and registers it on the host.
func New(cfg Config, rt *host.Host, router Router) (*Node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	n := &Node{cfg: cfg, rt: rt, router: router}
	n.src.init(n)
	if err := rt.Register(wire.TypeCCRequest, n); err != nil {
		return nil, err
	}
	return n, nil
}

// Config is the node's configuration.
func (n *Node) Config() Config { return n.cfg }

// Snapshot returns the counters with the gauges filled in.
func (n *Node) Snapshot() Stats {
	st := n.Stats
	st.Window, st.Outstanding, st.Queue = n.src.window, len(n.src.out), n.q.len()
	return st
}

// Start starts the load generator and cross-load, if configured.
func (n *Node) Start(env node.Env) {
	n.generate(env)
	if n.cfg.PauseFraction > 0 {
		env.After(exponential(env, n.activeMean()), pauseTimer{})
	}
}

// generate arms the load generator's next request, if it offers any.
func (n *Node) generate(env node.Env) {
	if n.cfg.Offered > 0 && !n.gen {
		n.gen = true
		env.After(exponential(env, time.Duration(float64(time.Second)/n.cfg.Offered)), genTimer{})
	}
}

// activeMean is the mean time between cross-load pauses.
func (n *Node) activeMean() time.Duration {
	f := n.cfg.PauseFraction
	return time.Duration(float64(n.cfg.PauseMean) * (1 - f) / f)
}

// Stop does nothing: requests in flight are the sources' to retry.
func (n *Node) Stop(node.Env) {}

// PeerDown forgets a dead neighbour's hold on us.
func (n *Node) PeerDown(env node.Env, addr node.Addr) {
	n.blocked = slices.DeleteFunc(n.blocked, func(a node.Addr) bool { return a == addr })
	n.pump(env)
}

// Work: cc offloads nothing.
func (n *Node) Work(node.Env, node.WorkDone) bool { return false }

// Validate checks the fields a cc message carries (host.Validator).
func (n *Node) Validate(m wire.Msg) error {
	if r, ok := m.(*wire.CCRequest); ok {
		if r.Source.ID.Width() != id.Bytes || r.Source.Addr == "" || r.Key.Width() != id.Bytes {
			return errors.New("cc: a request without a source or a key")
		}
	}
	return nil
}

// Receive handles the protocol's messages.
func (n *Node) Receive(env node.Env, in node.MsgIn) {
	switch m := in.Env.Msg.(type) {
	case *wire.CCRequest:
		n.route(env, m, in.From)
	case *wire.CCAck:
		n.src.acked(env, m)
	case *wire.CCFlood:
		if in.Env.Kind != wire.Request {
			return
		}
		n.cfg.Offered = float64(m.MilliRate) / 1000
		n.generate(env)
		rpc.Respond(env, in, wire.NodeRef{Addr: n.rt.Addr()}, &wire.Ack{})
	case *wire.CCPause:
		if m.Paused {
			if !slices.Contains(n.blocked, in.From) {
				n.blocked = append(n.blocked, in.From)
			}
		} else {
			n.blocked = slices.DeleteFunc(n.blocked, func(a node.Addr) bool { return a == in.From })
		}
		n.pump(env)
	}
}

// Timer handles the protocol's timers.
func (n *Node) Timer(env node.Env, t node.Timer) bool {
	switch t := t.(type) {
	case pacerTimer:
		n.pacing = false
		n.pump(env)
	case retransmitTimer:
		n.src.timedOut(env, t)
	case genTimer:
		n.gen = false
		if n.cfg.Offered <= 0 {
			return true
		}
		n.Stats.Generated++
		key := id.Random(env.Rand(), id.Bytes)
		n.Send(env, key, make([]byte, n.cfg.PayloadBytes)) // a refusal is counted
		n.generate(env)
	case pauseTimer:
		now := env.Now()
		if n.paused {
			n.paused = false
			n.Stats.PausedFor += now.Sub(n.pausedAt)
			n.pump(env)
			env.After(exponential(env, n.activeMean()), pauseTimer{})
		} else {
			n.paused, n.pausedAt = true, now
			env.After(exponential(env, n.cfg.PauseMean), pauseTimer{})
		}
	default:
		return false
	}
	return true
}

type (
	pacerTimer      struct{}
	genTimer        struct{}
	pauseTimer      struct{}
	retransmitTimer struct {
		seq     uint64
		attempt int
	}
)

func (pacerTimer) String() string { return "cc-pacer" }
func (genTimer) String() string   { return "cc-generate" }
func (pauseTimer) String() string { return "cc-crossload" }
func (t retransmitTimer) String() string {
	return fmt.Sprintf("cc-retransmit(%d,%d)", t.seq, t.attempt)
}

// Send injects a request for key from this node, as soon as its window
// (or, under back-pressure, its queue) lets it. It refuses with ErrBusy
// when the backlog waiting for the window is full.
func (n *Node) Send(env node.Env, key id.ID, payload []byte) error {
	return n.src.send(env, key, payload)
}

// route takes a request that arrived from a neighbour (or from this
// node's source, from ""): deliver it here and acknowledge it, or queue it
// for its next hop.
func (n *Node) route(env node.Env, m *wire.CCRequest, from node.Addr) bool {
	next, here, ok := n.router.NextHop(env, m.Key)
	if !ok {
		n.Stats.Dropped++
		return false
	}
	if here {
		n.Stats.Delivered++
		if n.cfg.Deliver != nil {
			n.cfg.Deliver(env, m.Key, m.Payload)
		}
		ack := &wire.CCAck{Seq: m.Seq, Marked: m.Marked, Hops: m.Hops}
		switch {
		case m.Source.Addr == n.rt.Addr():
			n.src.acked(env, ack)
		case n.ctl.len() >= ctlCap*n.cfg.QueueCap:
			// Acknowledgements wait for the uplink too; past this many
			// the source will send again rather than this node queue
			// without bound.
			n.Stats.Dropped++
		default:
			n.push(env, &n.ctl, m.Source.Addr, ack)
		}
		return true
	}
	if m.Hops >= wire.MaxCCHops {
		n.Stats.Dropped++
		return false
	}
	fwd := *m
	fwd.Hops++
	return n.enqueue(env, &fwd, next, from)
}

// enqueue is one hop's queue (§IV-1): average its length, learn the
// source's rate, drop when full (except under back-pressure), mark.
func (n *Node) enqueue(env node.Env, m *wire.CCRequest, next wire.NodeRef, from node.Addr) bool {
	n.average()
	x := float64(m.Rate) / 1000
	if n.xAvg == 0 {
		n.xAvg = x
	} else {
		n.xAvg += (x - n.xAvg) / float64(n.cfg.RateMemory)
	}
	full := n.q.len() >= n.cfg.QueueCap
	if full && n.cfg.Scheme != BackPressure {
		n.Stats.Dropped++
		return false
	}
	if n.cfg.Scheme == Marking && !m.Marked && env.Rand().Float64() < n.markProbability(x) {
		m.Marked = true
		n.Stats.Marked++
	}
	if n.cfg.Scheme == BackPressure && n.q.len()+1 >= n.cfg.QueueCap && from != "" && !slices.Contains(n.holding, from) {
		n.holding = append(n.holding, from)
		n.push(env, &n.ctl, from, &wire.CCPause{Paused: true})
	}
	n.push(env, &n.q, next.Addr, m, next.ID)
	n.Stats.QueueHigh = max(n.Stats.QueueHigh, n.q.len())
	return true
}

// ctlCap bounds the acknowledgements and notices waiting for the uplink,
// in forwarding queues' worth.
const ctlCap = 4

// average folds the queue's length into s̄; it runs as requests enter and
// leave, so that s̄ falls as fast as it rose once a burst has gone.
func (n *Node) average() {
	n.avgQ = (1-n.cfg.Delta)*float64(n.q.len()) + n.cfg.Delta*n.avgQ
}

// markProbability is equation 10 for a request whose source sends at x.
func (n *Node) markProbability(x float64) float64 {
	t, s := n.cfg.Threshold, n.avgQ
	if s >= t {
		return 1
	}
	q := s / (t * (t - s))
	if n.cfg.Gamma > 0 && n.xAvg > 0 && x > 0 {
		q *= math.Pow(x/n.xAvg, n.cfg.Gamma)
	}
	return min(q, 1)
}

// push queues a message for to and lets the pacer send what it can.
func (n *Node) push(env node.Env, q *fifo[item], to node.Addr, m wire.Msg, dst ...id.ID) {
	e := wire.Envelope{Kind: wire.OneWay, From: n.router.Self(), Msg: m}
	if len(dst) > 0 {
		e.To = dst[0]
	}
	q.push(item{to: to, env: e, size: wire.Size(e) + 4})
	n.pump(env)
}

// pump sends what the uplink can carry now, control first, and arms the
// pacer for the rest.
func (n *Node) pump(env node.Env) {
	now := env.Now()
	for {
		if n.linkFree.After(now) {
			if !n.pacing && (n.ctl.len() > 0 || n.q.len() > 0) {
				n.pacing = true
				env.After(n.linkFree.Sub(now), pacerTimer{})
			}
			return
		}
		it, ok := n.ctl.pop()
		if !ok {
			if it, ok = n.next(); !ok {
				return
			}
			n.Stats.Forwarded++
			n.average()
		}
		env.Send(it.to, it.env)
		if n.cfg.UplinkBps > 0 {
			n.linkFree = now.Add(time.Duration(float64(8*it.size) / n.cfg.UplinkBps * float64(time.Second)))
		}
		n.resume(env)
	}
}

// next takes the first queued request that may leave: none while the node
// is paused (cross-load), and none for a neighbour that told us to hold.
func (n *Node) next() (item, bool) {
	if n.paused {
		return item{}, false
	}
	if len(n.blocked) == 0 {
		return n.q.pop()
	}
	return n.q.take(func(it item) bool { return !slices.Contains(n.blocked, it.to) })
}

// resume tells the neighbours we held that there is room again, once the
// queue is down to half its capacity.
func (n *Node) resume(env node.Env) {
	if len(n.holding) == 0 || n.q.len() > n.cfg.QueueCap/2 {
		return
	}
	for _, a := range n.holding {
		n.ctl.push(item{to: a, env: wire.Envelope{Kind: wire.OneWay, From: n.router.Self(), Msg: &wire.CCPause{}}, size: 64})
	}
	n.holding = n.holding[:0]
}

// exponential draws an exponential duration of mean m.
func exponential(env node.Env, m time.Duration) time.Duration {
	return time.Duration(env.Rand().ExpFloat64() * float64(m))
}
