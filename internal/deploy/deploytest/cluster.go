package deploytest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"triad/internal/deploy"
	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/ring"
	"triad/internal/sim"
	"triad/internal/store/mem"
	"triad/internal/wire"
)

// Epoch is the cluster's time zero.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// MaxDeliveries bounds the messages one DeliverAll delivers, so that a
// protocol that never falls quiet fails a test rather than hanging it.
const MaxDeliveries = 100_000

// Cluster is a set of hosts driven by hand. It is not safe for concurrent
// use; one test owns it.
type Cluster struct {
	// Options are those of hosts added from now on (Vnodes and Bootstrap
	// come from AddHost).
	Options deploy.Options

	seed   uint64
	now    time.Duration
	hosts  []*Host
	byName map[string]*Host
	flight []Msg
	timers []*timer
	seq    uint64
	labels map[id.ID]string  // vnode IDs (and D2 keys) as the script wrote them
	sums   map[string]string // the texts a script named, by SHA-256 (D2's hashes)

	directives Directives      // what Run runs, by name
	formats    []Format        // RegisterFormat's, tried in order before FormatMsg's own
	out        strings.Builder // the trace of the directive under way
	verbose    bool            // print each event, message and change
	enc        []byte

	// Delivered and Fired count messages delivered and timers fired.
	Delivered, Fired int
}

// Host is one host of a Cluster.
type Host struct {
	Name string // also its address
	// Node is the running host, nil while it is down.
	Node *deploy.Node

	c       *Cluster
	index   int
	ids     []id.ID
	boot    node.Addr
	storage *sim.Storage
	inc     uint64 // incarnation: timers of earlier ones are dropped
	rng     *rand.Rand
	work    []node.WorkDone
}

// Up reports whether the host is running.
func (h *Host) Up() bool { return h.Node != nil }

// Storage is the host's storage, kept across crashes.
func (h *Host) Storage() *sim.Storage { return h.storage }

// Msg is a message in flight.
type Msg struct {
	From, To node.Addr
	Env      wire.Envelope
}

type timer struct {
	at        time.Duration
	seq       uint64
	h         *Host
	inc       uint64
	t         node.Timer
	cancelled bool
}

// New makes an empty cluster whose hosts run with opts; seed fixes their
// random sources.
func New(opts deploy.Options, seed uint64) *Cluster {
	c := &Cluster{
		Options:    opts,
		seed:       seed,
		byName:     make(map[string]*Host),
		labels:     make(map[id.ID]string),
		sums:       make(map[string]string),
		directives: make(Directives),
		verbose:    true,
	}
	c.Register(ringDirectives)
	c.Register(blockDirectives)
	c.Register(d2Directives)
	return c
}

// Now is the cluster's clock.
func (c *Cluster) Now() time.Time { return Epoch.Add(c.now) }

// Host returns the host called name, or nil.
func (c *Cluster) Host(name string) *Host { return c.byName[name] }

// Hosts lists the hosts in the order they were added.
func (c *Cluster) Hosts() []*Host { return c.hosts }

// ParseID reads a ring ID written as a hex prefix ("40" is 0x4000...0),
// and remembers the prefix as the ID's label in traces.
func (c *Cluster) ParseID(prefix string) (id.ID, error) {
	prefix = strings.ToLower(prefix)
	if prefix == "" || len(prefix) > 2*id.Bytes {
		return id.ID{}, fmt.Errorf("deploytest: bad id prefix %q", prefix)
	}
	x, err := id.Parse(prefix+strings.Repeat("0", 2*id.Bytes-len(prefix)), id.Bytes)
	if err != nil {
		return id.ID{}, fmt.Errorf("deploytest: bad id prefix %q: %w", prefix, err)
	}
	c.labels[x] = prefix
	return x, nil
}

// AddHost adds a host called name (also its address) with vnodes at ids,
// joining through boot (empty: it starts a ring), and starts it.
func (c *Cluster) AddHost(name string, ids []id.ID, boot node.Addr) (*Host, error) {
	h, err := c.newHost(name, ids, boot)
	if err != nil {
		return nil, err
	}
	return h, c.boot(h)
}

// newHost adds a host that has not started yet, its storage seeded with
// its ring IDs.
func (c *Cluster) newHost(name string, ids []id.ID, boot node.Addr) (*Host, error) {
	if name == "" || c.byName[name] != nil {
		return nil, fmt.Errorf("deploytest: host name %q empty or taken", name)
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("deploytest: host %s has no ids", name)
	}
	h := &Host{Name: name, c: c, index: len(c.hosts), ids: ids, boot: boot}
	h.storage = sim.NewStorage(c.Now)
	if err := ring.SeedIDs(h.storage, ids); err != nil {
		return nil, err
	}
	c.hosts = append(c.hosts, h)
	c.byName[name] = h
	return h, nil
}

func (c *Cluster) boot(h *Host) error {
	h.inc++
	h.rng = rand.New(rand.NewPCG(c.seed, uint64(h.index)<<32|h.inc))
	o := c.Options
	o.Vnodes, o.Bootstrap = len(h.ids), h.boot
	n, err := deploy.New(o, h.Name, h.storage, h.rng)
	if err != nil {
		return fmt.Errorf("deploytest: start %s: %w", h.Name, err)
	}
	h.Node = n
	c.step(h, node.Start{}, h.Name+": start")
	return nil
}

// Crash stops h at once, as a power cut would: what it had in memory,
// its pending timers and work are gone; its storage is kept. Messages
// already sent by it stay in flight; those to it are dropped on delivery.
func (c *Cluster) Crash(h *Host) {
	h.Node, h.work = nil, nil
	h.inc++
	c.printf("%s: crash\n", h.Name)
}

// Damage damages h's stored copy of key, as a bad sector would: the next
// read of it finds the damage and quarantines the copy.
func (c *Cluster) Damage(h *Host, key id.ID) error {
	m, ok := h.storage.Engine().(*mem.Mem)
	if !ok {
		return fmt.Errorf("deploytest: %s keeps its blocks in a %T", h.Name, h.storage.Engine())
	}
	return m.Damage(key)
}

// Restart boots a crashed host again from its storage.
func (c *Cluster) Restart(h *Host) error {
	if h.Up() {
		return fmt.Errorf("deploytest: %s is running", h.Name)
	}
	return c.boot(h)
}

// Do runs fn in h's event loop now, as a node.Request; label heads its
// lines in the trace.
func (c *Cluster) Do(h *Host, label string, fn func(env node.Env)) error {
	if !h.Up() {
		return fmt.Errorf("deploytest: %s is down", h.Name)
	}
	c.step(h, node.Request{Fn: fn}, label)
	return nil
}

// step hands ev to h, then the results of the work it offloaded, and
// prints label, what h sent, and how its vnodes' lists changed.
func (c *Cluster) step(h *Host, ev node.Event, label string) {
	c.printf("%s\n", label)
	before := c.lists(h)
	env := &env{h: h, inc: h.inc}
	h.Node.Handle(env, ev)
	for len(h.work) > 0 && h.Up() {
		w := h.work[0]
		h.work = h.work[1:]
		h.Node.Handle(env, w)
	}
	if !h.Up() {
		return
	}
	after := c.lists(h)
	for i := range after {
		if after[i] != before[i] {
			c.printf("  %s\n", after[i])
		}
	}
}

// lists describes each vnode of h: its predecessor and successor lists;
// and its D2 node's, if it runs D2.
func (c *Cluster) lists(h *Host) []string {
	if !c.verbose || !h.Up() {
		return nil
	}
	var out []string
	if h.Node.Ring != nil {
		for _, v := range h.Node.Ring.Vnodes() {
			out = append(out, c.vnodeLine(v))
		}
	}
	if h.Node.D2 != nil {
		out = append(out, c.d2Line(h))
	}
	return out
}

func (c *Cluster) vnodeLine(v *ring.Vnode) string {
	return fmt.Sprintf("%s preds=%s succs=%s", c.Ref(v.Self()), c.Refs(v.Preds()), c.Refs(v.Succs()))
}

// printf writes a line of the verbose trace.
func (c *Cluster) printf(format string, args ...any) {
	if c.verbose {
		fmt.Fprintf(&c.out, format, args...)
	}
}

// Logf writes to the trace whether or not it is verbose: results that a
// summary must show too (a put's holders, a get's block).
func (c *Cluster) Logf(format string, args ...any) {
	fmt.Fprintf(&c.out, format, args...)
}

// Quietly runs fn printing only what Logf writes.
func (c *Cluster) Quietly(fn func()) {
	v := c.verbose
	c.verbose = false
	defer func() { c.verbose = v }()
	fn()
}

// Flush returns the trace written since the last Flush.
func (c *Cluster) Flush() string {
	s := c.out.String()
	c.out.Reset()
	return s
}

// Tick advances the clock by d, firing the timers due on the way in
// (due time, order set), each at its own time.
func (c *Cluster) Tick(d time.Duration) {
	end := c.now + d
	for t := c.nextTimer(end); t != nil; t = c.nextTimer(end) {
		c.fire(t)
	}
	c.now = end
}

// RunFor advances the clock by d like Tick, but delivers every message
// as soon as the event that sent it is over, as a network without delay
// would: first what is in flight, then after each timer.
func (c *Cluster) RunFor(d time.Duration) error {
	end := c.now + d
	if _, err := c.DeliverAll(); err != nil {
		return err
	}
	for t := c.nextTimer(end); t != nil; t = c.nextTimer(end) {
		c.fire(t)
		if _, err := c.DeliverAll(); err != nil {
			return err
		}
	}
	c.now = end
	return nil
}

func (c *Cluster) fire(t *timer) {
	c.now = t.at
	if t.h.inc != t.inc || !t.h.Up() {
		return
	}
	c.Fired++
	c.step(t.h, node.TimerFired{T: t.t}, fmt.Sprintf("%s %s: %s", Seconds(t.at), t.h.Name, t.t))
}

// nextTimer removes and returns the first timer due by end, dropping
// cancelled ones.
func (c *Cluster) nextTimer(end time.Duration) *timer {
	c.timers = slices.DeleteFunc(c.timers, func(t *timer) bool { return t.cancelled })
	best := -1
	for i, t := range c.timers {
		if t.at <= end && (best < 0 || t.at < c.timers[best].at || t.at == c.timers[best].at && t.seq < c.timers[best].seq) {
			best = i
		}
	}
	if best < 0 {
		return nil
	}
	t := c.timers[best]
	c.timers = slices.Delete(c.timers, best, best+1)
	return t
}

// Filter picks messages in flight; the zero Filter picks all.
type Filter struct {
	From, To node.Addr // empty: any
	N        int       // at most this many; 0: no limit
}

func (f Filter) match(m Msg) bool {
	return (f.From == "" || m.From == f.From) && (f.To == "" || m.To == f.To)
}

// take removes the messages in flight that f picks, oldest first.
func (c *Cluster) take(f Filter) []Msg {
	var got, keep []Msg
	for _, m := range c.flight {
		if f.match(m) && (f.N == 0 || len(got) < f.N) {
			got = append(got, m)
		} else {
			keep = append(keep, m)
		}
	}
	c.flight = keep
	return got
}

// Deliver delivers the messages in flight that f picks, oldest first;
// what they cause to be sent waits for the next delivery. It returns how
// many it delivered (or dropped, for a host that is down).
func (c *Cluster) Deliver(f Filter) int {
	msgs := c.take(f)
	for _, m := range msgs {
		c.deliver(m)
	}
	return len(msgs)
}

func (c *Cluster) deliver(m Msg) {
	c.Delivered++
	h := c.byName[m.To]
	line := c.FormatEnvelope(m)
	if h == nil || !h.Up() {
		c.printf("%s  (dropped: %s is down)\n", line, m.To)
		return
	}
	c.step(h, node.MsgIn{From: m.From, Env: m.Env}, line)
}

// Drop loses the messages in flight that f picks and returns how many.
func (c *Cluster) Drop(f Filter) int {
	msgs := c.take(f)
	for _, m := range msgs {
		c.printf("%s  (dropped)\n", c.FormatEnvelope(m))
	}
	return len(msgs)
}

// DeliverAll delivers messages until none is in flight, without moving
// the clock, and returns how many it delivered. It fails after
// MaxDeliveries.
func (c *Cluster) DeliverAll() (int, error) {
	n := 0
	for len(c.flight) > 0 {
		if n == MaxDeliveries {
			return n, fmt.Errorf("deploytest: still not quiet after %d messages", n)
		}
		m := c.flight[0]
		c.flight = c.flight[1:]
		c.deliver(m)
		n++
	}
	return n, nil
}

// Stabilize runs rounds of RunFor(every) until the ring is right (Check
// finds nothing), for at most max rounds, and returns the rounds it ran
// and whether the ring is right.
func (c *Cluster) Stabilize(max int, every time.Duration) (int, bool, error) {
	for r := 1; r <= max; r++ {
		if err := c.RunFor(every); err != nil {
			return r, false, err
		}
		if len(c.Check()) == 0 {
			return r, true, nil
		}
	}
	return max, false, nil
}

// Check compares every running vnode's lists with the ring the running
// hosts form (ring.Check) and returns what is wrong, one line per list:
// each successor list must hold the next min(Succs, n-1) running vnodes
// clockwise, each predecessor list the previous min(Preds, n-1). Hosts
// that run D2 are checked on D2's ring too (d2Check).
func (c *Cluster) Check() []string {
	var views []wire.VnodeInfo
	for _, v := range c.Vnodes() {
		views = append(views, v.Info())
	}
	var bad []string
	for _, p := range ring.Check(views, ring.Want{Succs: c.Options.Ring.Succs, Preds: c.Options.Ring.Preds}) {
		bad = append(bad, fmt.Sprintf("%s: %s=%s, want %s", c.Ref(p.Self), p.List, c.Refs(p.Got), c.Refs(p.Want)))
	}
	return append(bad, c.d2Check()...)
}

// Vnodes lists the vnodes of running hosts in ring order.
func (c *Cluster) Vnodes() []*ring.Vnode {
	var vs []*ring.Vnode
	for _, h := range c.hosts {
		if h.Up() && h.Node.Ring != nil {
			vs = append(vs, h.Node.Ring.Vnodes()...)
		}
	}
	slices.SortFunc(vs, func(a, b *ring.Vnode) int { return a.Self().ID.Cmp(b.Self().ID) })
	return vs
}

// Ring describes every running vnode in ring order, then every running
// D2 node in D2's ring order, then the hosts that are down, then what
// Check finds wrong (or "ring ok").
func (c *Cluster) Ring() string {
	var b strings.Builder
	for _, v := range c.Vnodes() {
		b.WriteString(c.vnodeLine(v) + "\n")
	}
	for _, l := range c.d2Lines() {
		b.WriteString(l + "\n")
	}
	for _, h := range c.hosts {
		if !h.Up() {
			fmt.Fprintf(&b, "%s down\n", h.Name)
		}
	}
	bad := c.Check()
	if len(bad) == 0 {
		b.WriteString("ring ok\n")
	}
	for _, s := range bad {
		b.WriteString("wrong: " + s + "\n")
	}
	return b.String()
}

// env is the node.Env of one incarnation of a host.
type env struct {
	h   *Host
	inc uint64
}

func (e *env) Now() time.Time   { return e.h.c.Now() }
func (e *env) Rand() *rand.Rand { return e.h.rng }

// Send queues m, encoded and decoded as the TCP driver would, and prints
// it under the event that sent it.
func (e *env) Send(to node.Addr, m wire.Envelope) {
	c := e.h.c
	c.enc = wire.Encode(c.enc[:0], m)
	got, err := wire.Decode(c.enc)
	if err != nil {
		panic(fmt.Sprintf("deploytest: %T from %s does not survive the codec: %v", m.Msg, e.h.Name, err))
	}
	msg := Msg{From: e.h.Name, To: to, Env: got}
	c.flight = append(c.flight, msg)
	c.printf("  %s\n", c.FormatEnvelope(msg))
}

func (e *env) After(d time.Duration, t node.Timer) func() {
	c := e.h.c
	c.seq++
	tm := &timer{at: c.now + d, seq: c.seq, h: e.h, inc: e.inc, t: t}
	c.timers = append(c.timers, tm)
	return func() { tm.cancelled = true }
}

// Offload runs w at once; its result is handled after the current event.
func (e *env) Offload(w node.Work) {
	res, err := w.Run(e.h.storage)
	e.h.work = append(e.h.work, node.WorkDone{W: w, Result: res, Err: err})
}
