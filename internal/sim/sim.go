package sim

import (
	"encoding/binary"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"reflect"
	"time"

	"triad/internal/node"
	"triad/internal/store"
	"triad/internal/store/mem"
	"triad/internal/wire"
)

// Config sets the network model and the seed.
type Config struct {
	// Seed fixes every random choice of a run.
	Seed uint64
	// Loss is the probability that a message between distinct hosts is lost.
	Loss float64
	// MaxQueueDelay bounds the backlog of an access link: a message that
	// would wait longer is dropped (tail drop). Default 2s.
	MaxQueueDelay time.Duration
	// Epoch is virtual time zero. Default 2026-01-01 UTC.
	Epoch time.Time
	// DecodeMessages makes every message cross the full codec (encode and
	// decode) rather than encode for its size and deep-copy. Slower; tests
	// turn it on to prove that everything the nodes send decodes.
	DecodeMessages bool
	// Parallel runs the hosts on two goroutines, split by region (see
	// Topology.Partition), in windows no longer than the least one-way
	// delay between the two halves, so that neither can receive a message
	// the other has yet to send: the run is as deterministic as a serial
	// one, but its events interleave differently, so a seed gives another
	// (fixed) run than without it. Callbacks that the simulator's caller
	// gave the nodes (Do) then run on either goroutine: they must hand
	// what they record to Later.
	Parallel bool
	// Observe, if set, is told of every message sent between two hosts,
	// with its size on the wire, as it leaves: an experiment counts what a
	// protocol's operation cost (a join's bytes) apart from everything
	// else. Not with Parallel.
	Observe func(from, to *Host, e wire.Envelope, size int)
}

// Factory builds a host's state machine, from its storage (which may hold a
// previous incarnation's state and objects) and its own random source. The
// simulator calls it when a host is added and at every restart.
type Factory func(addr node.Addr, st node.Storage, r *rand.Rand) (node.Handler, error)

// Host is one simulated process.
type Host struct {
	s     *Sim
	Index int
	Addr  node.Addr
	// DiskFailures counts the times Wipe lost this host's storage.
	DiskFailures int
	// Lie is how the host's storage lies to its node code (AddLiar); zero:
	// it does not.
	Lie     Lie
	factory Factory
	handler node.Handler
	up      bool
	inc     uint64 // incarnation: events of earlier ones are dropped
	rng     *rand.Rand
	storage *Storage // kept across a crash; replaced when the disk fails
	env     *hostEnv
	w       *worker // the worker that runs this host's events

	upFree, downFree time.Duration // when each access link is next idle
}

// Handler is the host's current state machine (nil while down).
func (h *Host) Handler() node.Handler { return h.handler }

// Up reports whether the host is running.
func (h *Host) Up() bool { return h.up }

// Stats counts what the simulator did.
type Stats struct {
	Events, Messages, Dropped, Lost, QueueDrops, Bytes uint64
	BootFailures                                       uint64
}

// Sim is one simulation.
type Sim struct {
	cfg     Config
	topo    *Topology
	now     time.Duration
	queue   eventQueue // simulator-level actions (At)
	seq     uint64
	rng     *rand.Rand
	hosts   []*Host
	group   []int  // partition group per host index; nil when healed
	gen     uint64 // bumped whenever a host goes up or down
	trace   uint64 // hash of the simulator-level actions so far
	workers []*worker
	// Stats counts what the simulator did outside the workers (boot
	// failures, actions); Totals adds the workers' counts.
	Stats Stats
}

// worker runs the events of a set of hosts: all of them, or with
// Config.Parallel the hosts of one half of the topology. Everything a
// host's event touches is its worker's or its own, so that two workers
// run at once without locks.
type worker struct {
	s     *Sim
	index int
	now   time.Duration
	queue eventQueue
	seq   uint64
	rng   *rand.Rand // the network's randomness for messages sent here
	trace uint64     // hash of every event run here
	ebuf  []byte     // encoding scratch
	stats Stats
	// out holds the messages sent to the other workers' hosts during the
	// window, delivered at its end; later the callbacks to run then.
	out   [][]crossing
	later []func()
}

// crossing is a message on its way to another worker's host, which takes
// it at the end of the window (it arrives after the window ends).
type crossing struct {
	dst    *Host
	arrive time.Duration
	bits   float64
	in     node.MsgIn
}

// New makes a simulator over topo.
func New(cfg Config, topo *Topology) *Sim {
	if cfg.MaxQueueDelay == 0 {
		cfg.MaxQueueDelay = 2 * time.Second
	}
	if cfg.Epoch.IsZero() {
		cfg.Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	s := &Sim{
		cfg:   cfg,
		topo:  topo,
		rng:   rand.New(rand.NewPCG(cfg.Seed, 0x5151)),
		trace: fnvOffset,
	}
	n := 1
	if cfg.Parallel {
		if cfg.Observe != nil {
			panic("sim: Observe runs on one goroutine: not with Parallel")
		}
		n = Partitions
	}
	for i := range n {
		s.workers = append(s.workers, &worker{s: s, index: i, rng: rand.New(rand.NewPCG(cfg.Seed, 0x5152+uint64(i))),
			trace: fnvOffset, out: make([][]crossing, n)})
	}
	return s
}

// workerOf is the worker that runs host i.
func (s *Sim) workerOf(i int) *worker {
	if len(s.workers) == 1 {
		return s.workers[0]
	}
	return s.workers[s.topo.Partition(i)]
}

// Totals is everything the simulator counted: its own and its workers'.
func (s *Sim) Totals() Stats {
	t := s.Stats
	for _, w := range s.workers {
		t.Events += w.stats.Events
		t.Messages += w.stats.Messages
		t.Dropped += w.stats.Dropped
		t.Lost += w.stats.Lost
		t.QueueDrops += w.stats.QueueDrops
		t.Bytes += w.stats.Bytes
	}
	return t
}

// Later runs fn in the simulator's own context, after the event of host
// h that calls it, before the simulation moves past the current window. A
// callback that runs on h (one given to Do) and records what it saw in
// variables the caller shares must do so through Later: with
// Config.Parallel, hosts run on two goroutines.
func (s *Sim) Later(h *Host, fn func()) {
	h.w.later = append(h.w.later, fn)
}

// Epoch is the wall-clock time of virtual time zero: a host's env.Now()
// is Epoch().Add(Now()).
func (s *Sim) Epoch() time.Time { return s.cfg.Epoch }

// Now is the virtual time elapsed since the start.
func (s *Sim) Now() time.Duration { return s.now }

// Rand is the simulator's own random source, for experiments.
func (s *Sim) Rand() *rand.Rand { return s.rng }

// Topology is the network the hosts live on.
func (s *Sim) Topology() *Topology { return s.topo }

// Hosts lists every host ever added, in order.
func (s *Sim) Hosts() []*Host { return s.hosts }

// HostAt returns the host with the given address, or nil.
func (s *Sim) HostAt(a node.Addr) *Host {
	// Addresses are "h" and the index (AddHost): parsing one is cheaper
	// than a map lookup on every message.
	if len(a) < 2 || a[0] != 'h' {
		return nil
	}
	i := 0
	for _, c := range []byte(a[1:]) {
		if c < '0' || c > '9' {
			return nil
		}
		if i = 10*i + int(c-'0'); i >= len(s.hosts) {
			return nil
		}
	}
	if h := s.hosts[i]; h.Addr == a {
		return h
	}
	return nil // a leading zero
}

// Membership changes whenever a host goes up or down, so that callers can
// cache what they derive from the set of running hosts.
func (s *Sim) Membership() uint64 { return s.gen }

// TraceHash fingerprints every event processed so far.
func (s *Sim) TraceHash() uint64 {
	h := s.trace
	for _, w := range s.workers {
		h = (h ^ w.trace) * fnvPrime
	}
	return h
}

// AddHost adds a host, grows the topology if needed, and starts it now.
func (s *Sim) AddHost(f Factory) (*Host, error) { return s.AddLiar(f, 0) }

// AddLiar is AddHost for a Byzantine host: its node code sees storage
// that lies as lie says (zero: none), in every incarnation; Storage()
// still shows what it really keeps.
func (s *Sim) AddLiar(f Factory, lie Lie) (*Host, error) {
	i := len(s.hosts)
	if i >= s.topo.Len() {
		s.topo.Grow(i + 1)
		if i >= s.topo.Len() {
			return nil, fmt.Errorf("sim: topology full at %d hosts", i)
		}
	}
	h := &Host{s: s, Index: i, Addr: fmt.Sprintf("h%d", i), factory: f, w: s.workerOf(i), Lie: lie}
	h.storage = h.newStorage()
	h.env = &hostEnv{h: h}
	s.hosts = append(s.hosts, h)
	if err := s.boot(h); err != nil {
		return nil, err
	}
	return h, nil
}

func (s *Sim) boot(h *Host) error {
	h.inc++
	h.rng = rand.New(rand.NewPCG(s.cfg.Seed^uint64(h.Index)*0x9e3779b97f4a7c15, h.inc))
	hd, err := h.factory(h.Addr, h.view(), h.rng)
	if err != nil {
		return fmt.Errorf("sim: start %s: %w", h.Addr, err)
	}
	h.handler, h.up = hd, true
	s.gen++
	s.schedule(0, h, node.Start{})
	return nil
}

// Crash stops h at once, as a power cut or a reboot would: what it had in
// memory is gone, its storage (state files and storage engine) is kept, and
// Restart brings it back with it. This is a transient failure.
func (s *Sim) Crash(h *Host) {
	if !h.up {
		return
	}
	h.up, h.handler = false, nil
	s.gen++
	h.inc++ // pending timers and work of this incarnation die with it
}

// Wipe fails h's disk: h stops at once if it is running, and its storage
// is thrown away, so a Restart brings it back empty, with new ring IDs.
// This is a permanent failure in Passing Tone's terms.
func (s *Sim) Wipe(h *Host) {
	s.Crash(h)
	h.storage = h.newStorage()
	h.DiskFailures++
}

// Storage is h's storage: its state files and storage engine.
func (h *Host) Storage() node.Storage { return h.storage }

// Restart boots a crashed host again from what its storage holds.
func (s *Sim) Restart(h *Host) error {
	if h.up {
		return fmt.Errorf("sim: %s is running", h.Addr)
	}
	return s.boot(h)
}

// Leave stops h gracefully: it gets a node.Stop and then goes down once
// what it sent has left.
func (s *Sim) Leave(h *Host) {
	if !h.up {
		return
	}
	h.w.stats.Events++
	h.handler.Handle(h.env, node.Stop{})
	s.Crash(h)
}

// Partition splits the network: hosts in different groups cannot reach
// each other. Hosts not listed form one more group.
func (s *Sim) Partition(groups ...[]int) {
	s.group = make([]int, s.topo.Len())
	for g, hs := range groups {
		for _, i := range hs {
			if i < len(s.group) {
				s.group[i] = g + 1
			}
		}
	}
}

// Heal ends a partition.
func (s *Sim) Heal() { s.group = nil }

func (s *Sim) reachable(a, b int) bool {
	if s.group == nil {
		return true
	}
	ga, gb := 0, 0
	if a < len(s.group) {
		ga = s.group[a]
	}
	if b < len(s.group) {
		gb = s.group[b]
	}
	return ga == gb
}

// At runs fn (a simulator-level action: crash, join, measure) at virtual
// time t, or now if t has passed.
func (s *Sim) At(t time.Duration, fn func()) {
	if t < s.now {
		t = s.now
	}
	s.push(t, event{fn: fn})
}

// Do runs fn in h's event loop now, as a node.Request.
func (s *Sim) Do(h *Host, fn func(env node.Env)) {
	s.schedule(0, h, node.Request{Fn: fn})
}

// DoAt runs fn in h's event loop at virtual time t (now if t has passed),
// as a node.Request, if h is up then. Unlike At, it does not stop the
// hosts at t: it is an event of h's, not of the simulator's.
func (s *Sim) DoAt(h *Host, t time.Duration, fn func(env node.Env)) {
	s.schedule(max(t-h.w.now, 0), h, node.Request{Fn: fn})
}

// RunFor processes events for d of virtual time.
func (s *Sim) RunFor(d time.Duration) { s.RunUntil(s.now + d) }

// RunUntil processes every event due at or before t, then sets the clock
// to t. Hosts' events run in windows: every worker runs its events due
// before the window's end, then the messages that crossed between workers
// are delivered and the callbacks handed to Later run. An action (At) due
// at time a runs once every host event due before a has run.
func (s *Sim) RunUntil(t time.Duration) {
	for {
		next, any := s.nextHostEvent()
		act, hasAct := s.queue.peek()
		if hasAct && act.at <= t && (!any || act.at <= next) {
			s.setNow(act.at)
			e := s.queue.take(act)
			s.Stats.Events++
			s.hashAction(act.at)
			e.fn()
			continue
		}
		if !any || next > t {
			break
		}
		// A window may run past next by the least delay of a message
		// between workers, and not into the next action.
		end := t + 1
		if len(s.workers) > 1 {
			end = min(end, next+s.topo.Lookahead())
		}
		if hasAct {
			end = min(end, act.at)
		}
		s.runWindow(end)
	}
	if t > s.now {
		s.setNow(t)
	}
}

// setNow moves the clock of the simulator and of every worker to t, where
// the simulator's own context runs.
func (s *Sim) setNow(t time.Duration) {
	s.now = t
	for _, w := range s.workers {
		w.now = t
	}
}

// nextHostEvent is the time of the earliest host event of any worker.
func (s *Sim) nextHostEvent() (time.Duration, bool) {
	var next time.Duration
	any := false
	for _, w := range s.workers {
		if top, ok := w.queue.peek(); ok && (!any || top.at < next) {
			next, any = top.at, true
		}
	}
	return next, any
}

// runWindow runs every host event due before end, on all workers at once,
// then delivers what crossed between them and runs what they left for
// Later, in a fixed order.
func (s *Sim) runWindow(end time.Duration) {
	if len(s.workers) == 1 {
		s.workers[0].run(end)
	} else {
		done := make(chan struct{})
		for _, w := range s.workers[1:] {
			go func() { w.run(end); done <- struct{}{} }()
		}
		s.workers[0].run(end)
		for range s.workers[1:] {
			<-done
		}
		for _, from := range s.workers {
			for i, out := range from.out {
				for _, c := range out {
					s.workers[i].arrive(c)
				}
				clear(out)
				from.out[i] = out[:0]
			}
		}
	}
	s.setNow(max(s.now, end-1))
	for _, w := range s.workers {
		later := w.later
		w.later = nil
		for _, fn := range later {
			fn()
		}
	}
}

// run processes the worker's events due before end.
func (w *worker) run(end time.Duration) {
	for {
		top, ok := w.queue.peek()
		if !ok || top.at >= end {
			return
		}
		w.now = top.at
		w.step(top.at, w.queue.take(top))
	}
}

func (w *worker) step(at time.Duration, e event) {
	h := e.host
	if !h.up {
		return
	}
	if e.bits != 0 {
		w.downlink(h, e)
		return
	}
	if e.timer != nil {
		// Boxed only now: most timers (RPC timeouts) are cancelled.
		e.ev = node.TimerFired{T: e.timer}
	}
	if _, isMsg := e.ev.(node.MsgIn); !isMsg && e.inc != h.inc {
		return // a timer or work result of an earlier incarnation
	}
	w.stats.Events++
	w.hashEvent(at, e.ev, h.Index+1)
	h.handler.Handle(h.env, e.ev)
}

// The trace hash is FNV-1a taken a 64-bit word at a time rather than a
// byte at a time: it only has to tell runs apart, and it runs on every
// event.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func (w *worker) mix(x uint64) { w.trace = (w.trace ^ x) * fnvPrime }

func (w *worker) mixString(str string) {
	for len(str) >= 8 {
		w.mix(binary.LittleEndian.Uint64([]byte(str[:8])))
		str = str[8:]
	}
	var x uint64
	for i := 0; i < len(str); i++ {
		x |= uint64(str[i]) << (8 * i)
	}
	w.mix(x<<8 | uint64(len(str)))
}

// hashAction records a simulator-level action at time at.
func (s *Sim) hashAction(at time.Duration) {
	s.trace = (s.trace ^ uint64(at)) * fnvPrime
	s.trace = (s.trace ^ 'f') * fnvPrime
}

func (s *worker) hashEvent(at time.Duration, ev node.Event, host int) {
	s.mix(uint64(at))
	s.mix(uint64(host))
	switch ev := ev.(type) {
	case node.MsgIn:
		s.mix('m' | uint64(ev.Env.Msg.Type())<<8)
		s.mix(ev.Env.ReqID)
		s.mixString(ev.From)
	case node.TimerFired:
		s.mix('t')
		s.mixTimer(ev.T)
	case node.WorkDone:
		s.mix('w')
	case node.Start:
		s.mix('s')
	case node.Request:
		s.mix('r')
	default:
		s.mix('f')
	}
}

// mixTimer hashes what identifies a timer: its type's name and its integer
// and string fields, read by reflection because formatting it with String
// would cost an allocation per fired timer. Other timers are printed.
func (s *worker) mixTimer(t node.Timer) {
	v := reflect.ValueOf(t)
	s.mixString(v.Type().String())
	if v.Kind() != reflect.Struct {
		s.mixString(t.String())
		return
	}
	for i := range v.NumField() {
		switch f := v.Field(i); f.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			s.mix(uint64(f.Int()))
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
			s.mix(f.Uint())
		case reflect.String:
			s.mixString(f.String())
		default:
			s.mixString(t.String())
			return
		}
	}
}

// schedule queues ev for h after d, on h's worker.
func (s *Sim) schedule(d time.Duration, h *Host, ev node.Event) (int32, uint64) {
	return h.w.push(h.w.now+d, event{host: h, inc: h.inc, ev: ev})
}

func (w *worker) push(at time.Duration, e event) (int32, uint64) {
	w.seq++
	return w.queue.push(at, w.seq, e), w.seq
}

func (s *Sim) push(at time.Duration, e event) (int32, uint64) {
	s.seq++
	return s.queue.push(at, s.seq, e), s.seq
}

// send models the network path from h to the process at to.
func (w *worker) send(from *Host, to node.Addr, e wire.Envelope) {
	s := w.s
	w.stats.Messages++
	dst := s.HostAt(to)
	if dst == nil {
		w.stats.Dropped++
		return
	}
	// The size on the wire is the real encoded size; the receiver gets its
	// own copy, decoded or deep-copied.
	got := e
	var size int
	if s.cfg.DecodeMessages {
		b := wire.Encode(w.ebuf[:0], e)
		w.ebuf = b
		var err error
		if got, err = wire.Decode(b); err != nil {
			panic(fmt.Sprintf("sim: %T does not survive the codec: %v", e.Msg, err))
		}
		size = len(b) + 4
	} else {
		got.Msg = wire.Clone(e.Msg)
		size = wire.Size(e) + 4
	}
	w.stats.Bytes += uint64(size)
	if s.cfg.Observe != nil && dst != from {
		s.cfg.Observe(from, dst, e, size)
	}
	in := node.MsgIn{From: from.Addr, Env: got}
	if dst == from {
		s.schedule(0, dst, in)
		return
	}
	if !s.reachable(from.Index, dst.Index) {
		w.stats.Dropped++
		return
	}
	if s.cfg.Loss > 0 && w.rng.Float64() < s.cfg.Loss {
		w.stats.Lost++
		return
	}
	bits := float64(8 * size)
	// Uplink: FIFO behind what the host already queued.
	start := max(w.now, from.upFree)
	if start-w.now > s.cfg.MaxQueueDelay {
		w.stats.QueueDrops++
		return
	}
	from.upFree = start + time.Duration(bits/s.topo.UpBps(from.Index)*float64(time.Second))
	c := crossing{dst: dst, arrive: from.upFree + s.topo.RTT(from.Index, dst.Index)/2, bits: bits, in: in}
	if dst.w != w {
		w.out[dst.w.index] = append(w.out[dst.w.index], c)
		return
	}
	w.arrive(c)
}

// arrive schedules a message's arrival at its host's downlink, where
// downlink queues it (an event at the arrival time, so that the link
// serves messages in the order they reach it, not the order they were
// sent: a message from across the world, sent first, must not hold the
// link for one from next door that arrives long before it).
func (w *worker) arrive(c crossing) {
	w.push(c.arrive, event{host: c.dst, inc: c.dst.inc, ev: c.in, bits: c.bits})
}

// downlink queues a message that reached dst's downlink at now: FIFO, and
// dropped past the longest queueing delay; the host takes it once it is
// through.
func (w *worker) downlink(dst *Host, e event) {
	start := max(w.now, dst.downFree)
	if start-w.now > w.s.cfg.MaxQueueDelay {
		w.stats.QueueDrops++
		return
	}
	dst.downFree = start + time.Duration(e.bits/w.s.topo.DownBps(dst.Index)*float64(time.Second))
	e.bits = 0
	w.push(dst.downFree, e)
}

// env is the node.Env of one host.
type hostEnv struct{ h *Host }

func (e *hostEnv) Now() time.Time   { return e.h.s.cfg.Epoch.Add(e.h.w.now) }
func (e *hostEnv) Rand() *rand.Rand { return e.h.rng }

func (e *hostEnv) Send(to node.Addr, m wire.Envelope) { e.h.w.send(e.h, to, m) }

func (e *hostEnv) After(d time.Duration, t node.Timer) func() {
	w := e.h.w
	slot, seq := w.push(w.now+d, event{host: e.h, inc: e.h.inc, timer: t})
	return func() { w.queue.cancel(slot, seq) }
}

// Offload runs w at once against the host's storage; the result arrives
// as the next event.
func (e *hostEnv) Offload(w node.Work) {
	res, err := w.Run(e.h.view())
	e.h.s.schedule(0, e.h, node.WorkDone{W: w, Result: res, Err: err})
}

// Storage is a host's storage in memory: state files in a map and a mem
// engine that reads the time from a clock. It implements node.Storage; the
// simulator keeps one per host across a crash, and Wipe replaces it.
type Storage struct {
	files  map[string][]byte
	engine store.Engine
	stores map[string]keptStore // Store's, made on first use: most hosts run only Engine
	clock  func() time.Time
}

// NewStorage makes empty storage whose engines read the time from clock:
// the host's object store, and the stores its protocols ask for.
func NewStorage(clock func() time.Time) *Storage {
	return &Storage{files: make(map[string][]byte), engine: mem.New(store.Options{Now: clock}), stores: map[string]keptStore{}, clock: clock}
}

// newStorage makes empty storage whose engine reads h's clock.
func (h *Host) newStorage() *Storage {
	return NewStorage(func() time.Time { return h.s.cfg.Epoch.Add(h.w.now) })
}

// Engine is the storage engine.
func (st *Storage) Engine() store.Engine { return st.engine }

// Store is the engine called name with keyWidth-byte keys, made on first
// use and kept across crashes like Engine (node.Storage).
func (st *Storage) Store(name string, keyWidth int) (store.Engine, error) {
	k, ok := st.stores[name]
	if !ok {
		k = keptStore{mem.New(store.Options{Now: st.clock, KeyWidth: keyWidth}), keyWidth}
		st.stores[name] = k
	}
	if k.keyWidth != keyWidth {
		return nil, fmt.Errorf("sim: store %q has %d-byte keys, not %d", name, k.keyWidth, keyWidth)
	}
	return k.engine, nil
}

// keptStore is one of Storage.Store's engines and its key width.
type keptStore struct {
	engine   store.Engine
	keyWidth int
}

// WriteFile replaces the file called name.
func (st *Storage) WriteFile(name string, data []byte) error {
	st.files[name] = append([]byte(nil), data...)
	return nil
}

// ReadFile returns a copy of the file called name.
func (st *Storage) ReadFile(name string) ([]byte, error) {
	b, ok := st.files[name]
	if !ok {
		return nil, fs.ErrNotExist
	}
	return append([]byte(nil), b...), nil
}
