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
	factory      Factory
	handler      node.Handler
	up           bool
	inc          uint64 // incarnation: events of earlier ones are dropped
	rng          *rand.Rand
	storage      *Storage // kept across a crash; replaced when the disk fails
	env          *env

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
	cfg   Config
	topo  *Topology
	now   time.Duration
	queue eventQueue
	seq   uint64
	rng   *rand.Rand
	hosts []*Host
	group []int  // partition group per host index; nil when healed
	gen   uint64 // bumped whenever a host goes up or down
	trace uint64 // hash of every event so far
	ebuf  []byte // encoding scratch
	Stats Stats
}

// New makes a simulator over topo.
func New(cfg Config, topo *Topology) *Sim {
	if cfg.MaxQueueDelay == 0 {
		cfg.MaxQueueDelay = 2 * time.Second
	}
	if cfg.Epoch.IsZero() {
		cfg.Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	return &Sim{
		cfg:   cfg,
		topo:  topo,
		rng:   rand.New(rand.NewPCG(cfg.Seed, 0x5151)),
		trace: fnvOffset,
	}
}

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
func (s *Sim) TraceHash() uint64 { return s.trace }

// AddHost adds a host, grows the topology if needed, and starts it now.
func (s *Sim) AddHost(f Factory) (*Host, error) {
	i := len(s.hosts)
	if i >= s.topo.Len() {
		s.topo.Grow(i + 1)
		if i >= s.topo.Len() {
			return nil, fmt.Errorf("sim: topology full at %d hosts", i)
		}
	}
	h := &Host{s: s, Index: i, Addr: fmt.Sprintf("h%d", i), factory: f}
	h.storage = s.newStorage()
	h.env = &env{h: h}
	s.hosts = append(s.hosts, h)
	if err := s.boot(h); err != nil {
		return nil, err
	}
	return h, nil
}

func (s *Sim) boot(h *Host) error {
	h.inc++
	h.rng = rand.New(rand.NewPCG(s.cfg.Seed^uint64(h.Index)*0x9e3779b97f4a7c15, h.inc))
	hd, err := h.factory(h.Addr, h.storage, h.rng)
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
	h.storage = s.newStorage()
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
	s.deliver(h, node.Stop{})
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

// RunFor processes events for d of virtual time.
func (s *Sim) RunFor(d time.Duration) { s.RunUntil(s.now + d) }

// RunUntil processes every event due at or before t, then sets the clock
// to t.
func (s *Sim) RunUntil(t time.Duration) {
	for {
		top, ok := s.queue.peek()
		if !ok || top.at > t {
			break
		}
		s.now = top.at
		s.step(top.at, s.queue.take(top))
	}
	if t > s.now {
		s.now = t
	}
}

func (s *Sim) step(at time.Duration, e event) {
	if e.fn != nil {
		s.Stats.Events++
		s.hashEvent(at, e.ev, 0)
		e.fn()
		return
	}
	h := e.host
	if !h.up {
		return
	}
	if e.timer != nil {
		// Boxed only now: most timers (RPC timeouts) are cancelled.
		e.ev = node.TimerFired{T: e.timer}
	}
	if _, isMsg := e.ev.(node.MsgIn); !isMsg && e.inc != h.inc {
		return // a timer or work result of an earlier incarnation
	}
	s.Stats.Events++
	s.hashEvent(at, e.ev, h.Index+1)
	h.handler.Handle(h.env, e.ev)
}

// deliver runs ev on h immediately (used for Stop).
func (s *Sim) deliver(h *Host, ev node.Event) {
	s.Stats.Events++
	h.handler.Handle(h.env, ev)
}

// The trace hash is FNV-1a taken a 64-bit word at a time rather than a
// byte at a time: it only has to tell runs apart, and it runs on every
// event.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func (s *Sim) mix(x uint64) { s.trace = (s.trace ^ x) * fnvPrime }

func (s *Sim) mixString(str string) {
	for len(str) >= 8 {
		s.mix(binary.LittleEndian.Uint64([]byte(str[:8])))
		str = str[8:]
	}
	var w uint64
	for i := 0; i < len(str); i++ {
		w |= uint64(str[i]) << (8 * i)
	}
	s.mix(w<<8 | uint64(len(str)))
}

func (s *Sim) hashEvent(at time.Duration, ev node.Event, host int) {
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
func (s *Sim) mixTimer(t node.Timer) {
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

func (s *Sim) schedule(d time.Duration, h *Host, ev node.Event) (int32, uint64) {
	return s.push(s.now+d, event{host: h, inc: h.inc, ev: ev})
}

func (s *Sim) push(at time.Duration, e event) (int32, uint64) {
	s.seq++
	return s.queue.push(at, s.seq, e), s.seq
}

// send models the network path from h to the process at to.
func (s *Sim) send(from *Host, to node.Addr, e wire.Envelope) {
	s.Stats.Messages++
	dst := s.HostAt(to)
	if dst == nil {
		s.Stats.Dropped++
		return
	}
	// The size on the wire is the real encoded size; the receiver gets its
	// own copy, decoded or deep-copied.
	got := e
	var size int
	if s.cfg.DecodeMessages {
		b := wire.Encode(s.ebuf[:0], e)
		s.ebuf = b
		var err error
		if got, err = wire.Decode(b); err != nil {
			panic(fmt.Sprintf("sim: %T does not survive the codec: %v", e.Msg, err))
		}
		size = len(b) + 4
	} else {
		got.Msg = wire.Clone(e.Msg)
		size = wire.Size(e) + 4
	}
	s.Stats.Bytes += uint64(size)
	in := node.MsgIn{From: from.Addr, Env: got}
	if dst == from {
		s.schedule(0, dst, in)
		return
	}
	if !s.reachable(from.Index, dst.Index) {
		s.Stats.Dropped++
		return
	}
	if s.cfg.Loss > 0 && s.rng.Float64() < s.cfg.Loss {
		s.Stats.Lost++
		return
	}
	bits := float64(8 * size)
	// Uplink: FIFO behind what the host already queued.
	start := max(s.now, from.upFree)
	if start-s.now > s.cfg.MaxQueueDelay {
		s.Stats.QueueDrops++
		return
	}
	from.upFree = start + time.Duration(bits/s.topo.UpBps(from.Index)*float64(time.Second))
	arrive := from.upFree + s.topo.RTT(from.Index, dst.Index)/2
	// Downlink: FIFO at the receiver.
	start = max(arrive, dst.downFree)
	if start-arrive > s.cfg.MaxQueueDelay {
		s.Stats.QueueDrops++
		return
	}
	dst.downFree = start + time.Duration(bits/s.topo.DownBps(dst.Index)*float64(time.Second))
	s.schedule(dst.downFree-s.now, dst, in)
}

// env is the node.Env of one host.
type env struct{ h *Host }

func (e *env) Now() time.Time   { return e.h.s.cfg.Epoch.Add(e.h.s.now) }
func (e *env) Rand() *rand.Rand { return e.h.rng }

func (e *env) Send(to node.Addr, m wire.Envelope) { e.h.s.send(e.h, to, m) }

func (e *env) After(d time.Duration, t node.Timer) func() {
	s := e.h.s
	slot, seq := s.push(s.now+d, event{host: e.h, inc: e.h.inc, timer: t})
	return func() { s.queue.cancel(slot, seq) }
}

// Offload runs w at once against the host's storage; the result arrives
// as the next event.
func (e *env) Offload(w node.Work) {
	res, err := w.Run(e.h.storage)
	e.h.s.schedule(0, e.h, node.WorkDone{W: w, Result: res, Err: err})
}

// Storage is a host's storage in memory: state files in a map and a mem
// engine that reads the time from a clock. It implements node.Storage; the
// simulator keeps one per host across a crash, and Wipe replaces it.
type Storage struct {
	files  map[string][]byte
	engine store.Engine
}

// NewStorage makes empty storage whose engine reads the time from clock.
func NewStorage(clock func() time.Time) *Storage {
	return &Storage{files: make(map[string][]byte), engine: mem.New(store.Options{Now: clock})}
}

func (s *Sim) newStorage() *Storage {
	return NewStorage(func() time.Time { return s.cfg.Epoch.Add(s.now) })
}

// Engine is the storage engine.
func (st *Storage) Engine() store.Engine { return st.engine }

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
