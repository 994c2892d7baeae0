package host

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"triad/internal/fault"
	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/rpc"
	"triad/internal/vivaldi"
	"triad/internal/wire"
)

// Protocol is one protocol running on a host. The host calls it only from
// its event loop, one event at a time; it must follow node.Handler's rules.
type Protocol interface {
	// Start runs when the host boots or restarts.
	Start(env node.Env)
	// Receive handles a request or one-way message whose type lies in the
	// protocol's registered range. Replies go to the RPC layer, never here.
	Receive(env node.Env, in node.MsgIn)
	// Timer handles t and reports true if t is one of the protocol's own
	// timers. Timer types are unexported values of the protocol's package,
	// so no two protocols claim the same one.
	Timer(env node.Env, t node.Timer) bool
	// Work handles the result of offloaded work and reports true if the
	// work was the protocol's own.
	Work(env node.Env, done node.WorkDone) bool
	// PeerDown tells the protocol that the host declared the process at
	// addr dead, so that it drops the peer from its tables.
	PeerDown(env node.Env, addr node.Addr)
	// Stop runs once when the host shuts down gracefully.
	Stop(env node.Env)
}

// Validator is implemented by a protocol whose messages carry fields that
// need checking beyond what the codec checks (node references, key
// widths). The host calls Validate for every message in the protocol's
// range before anything acts on it, replies included: a request that fails
// is answered with a bad-request error, a reply that fails is dropped and
// its call times out.
type Validator interface {
	Validate(m wire.Msg) error
}

// Config sets a host's runtime.
type Config struct {
	// RPC configures calls and their timeouts.
	RPC rpc.Config
	// DeadMemory is how long a peer that timed out stays dead unless it is
	// heard from. Default 30s.
	DeadMemory time.Duration
	// Version is the build GetNodeInfo names (the daemon's); "" in the
	// simulator.
	Version string
	// Disk, if set, says the bytes free and in all on the data folder's
	// file system, for GetNodeInfo: the daemon's, never the node logic's.
	Disk func() (free, total uint64)
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{RPC: rpc.DefaultConfig(), DeadMemory: 30 * time.Second}
}

// Validate reports a config that cannot work.
func (c Config) Validate() error {
	if c.DeadMemory < 0 {
		return fmt.Errorf("host: dead memory %v must not be negative", c.DeadMemory)
	}
	return c.RPC.Validate()
}

// Stats are the runtime's counters; drivers export them.
type Stats struct {
	PeersDeclaredDead uint64
	// BadMessages counts messages dropped before any protocol saw them:
	// a malformed sender, or a type no protocol registered.
	BadMessages uint64
}

// registration is one registered protocol and the message types it owns.
type registration struct {
	name   string
	lo, hi wire.Type
	p      Protocol
}

// Host is the runtime of one host. Create it with New, register protocols,
// then hand it to a driver as the node.Handler.
type Host struct {
	cfg     Config
	addr    node.Addr
	rpc     *rpc.Client
	viv     *vivaldi.Model
	dead    map[node.Addr]time.Time
	started time.Time // the first event's time (GetNodeInfo)
	protos  []registration
	stopped bool
	stamper *stampEnv // reused by stamp: an env lives for one Handle
	// checkSender, if set, must accept a message's sender before anything
	// acts on it (CheckSenders).
	checkSender func(wire.NodeRef) error

	Stats Stats
}

// New makes the runtime of the host at addr.
func New(cfg Config, addr node.Addr) (*Host, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if addr == "" {
		return nil, errors.New("host: empty address")
	}
	h := &Host{
		cfg:  cfg,
		addr: addr,
		rpc:  rpc.NewClient(cfg.RPC),
		viv:  vivaldi.New(),
		dead: make(map[node.Addr]time.Time),
	}
	h.rpc.Predict = h.viv.Predict
	return h, nil
}

// Register adds the protocol p, which owns the message types of its range
// in the wire schema (wire.Ranges; first is any type of that range, for
// example the protocol's first message). Protocols start in the order they
// were registered; a range can be registered once. Ping, Ack and Error
// belong to the runtime.
func (h *Host) Register(first wire.Type, p Protocol) error {
	r, ok := wire.RangeOf(first)
	if !ok || r.Lo <= wire.TypeError {
		return fmt.Errorf("host: type %v is in no protocol's range", first)
	}
	name, lo, hi := r.Protocol, r.Lo, r.Hi
	for _, r := range h.protos {
		if r.name == name {
			return fmt.Errorf("host: protocol %s registered twice", name)
		}
		if lo <= r.hi && r.lo <= hi {
			return fmt.Errorf("host: protocol %s: types %d-%d overlap %s's %d-%d", name, lo, hi, r.name, r.lo, r.hi)
		}
	}
	h.protos = append(h.protos, registration{name: name, lo: lo, hi: hi, p: p})
	return nil
}

// CheckSenders makes the host refuse (and count in Stats.BadMessages)
// every message, of any protocol and replies included, whose sender ref
// (wire.Envelope.From, when it names a vnode) check rejects: the ring
// checks that the sender's ID is derived from its address. A refused
// request is answered with a bad-request error.
func (h *Host) CheckSenders(check func(wire.NodeRef) error) { h.checkSender = check }

// CheckRef holds a node reference a message carries (a third party named
// inside it, not its sender) to the check CheckSenders installed: on a
// host whose ring derives IDs from addresses, a reference whose ID is not
// derived from its address is refused. Without a check it accepts all.
func (h *Host) CheckRef(ref wire.NodeRef) error {
	if h.checkSender == nil {
		return nil
	}
	return h.checkSender(ref)
}

// Protocol returns the protocol registered for the range named name in
// the wire schema ("ring", "dhash"...), or nil.
func (h *Host) Protocol(name string) Protocol {
	for _, r := range h.protos {
		if r.name == name {
			return r.p
		}
	}
	return nil
}

// Addr is the host's address: its identity on the network.
func (h *Host) Addr() node.Addr { return h.addr }

// RPC is the host's call layer.
func (h *Host) RPC() *rpc.Client { return h.rpc }

// Coord is the host's Vivaldi coordinate.
func (h *Host) Coord() wire.Coord { return h.viv.Coord() }

// Handle applies one event: the runtime's own first, then the protocol
// that owns it.
func (h *Host) Handle(env node.Env, ev node.Event) {
	if h.stopped {
		return
	}
	env = h.stamp(env)
	switch ev := ev.(type) {
	case node.Start:
		h.started = env.Now()
		for _, r := range h.protos {
			r.p.Start(env)
		}
	case node.MsgIn:
		h.receive(env, ev)
	case node.TimerFired:
		if h.rpc.HandleTimer(env, ev.T) {
			return
		}
		for _, r := range h.protos {
			if r.p.Timer(env, ev.T) {
				return
			}
		}
		panic(fmt.Sprintf("host: timer %v claimed by no protocol", ev.T))
	case node.WorkDone:
		for _, r := range h.protos {
			if r.p.Work(env, ev) {
				return
			}
		}
		panic(fmt.Sprintf("host: work %T claimed by no protocol", ev.W))
	case node.Request:
		ev.Fn(env)
	case node.Stop:
		for _, r := range h.protos {
			r.p.Stop(env)
		}
		h.stopped = true
	}
}

func (h *Host) receive(env node.Env, in node.MsgIn) {
	e := in.Env
	if !e.From.IsZero() {
		if e.From.ID.Width() != id.Bytes || e.From.Addr == "" {
			h.Stats.BadMessages++
			return
		}
		if h.checkSender != nil {
			if err := h.checkSender(e.From); err != nil {
				h.Stats.BadMessages++
				if e.Kind == wire.Request {
					rpc.RespondError(env, in, h.self(), fault.CodeBadRequest, err.Error())
				}
				return
			}
		}
		if len(h.dead) > 0 {
			delete(h.dead, e.From.Addr) // it is alive
		}
	}
	t := e.Msg.Type()
	owner := h.owner(t)
	if v, ok := owner.(Validator); ok {
		if err := v.Validate(e.Msg); err != nil {
			h.Stats.BadMessages++
			if e.Kind == wire.Request {
				rpc.RespondError(env, in, h.self(), fault.CodeBadRequest, err.Error())
			}
			return
		}
	}
	if e.Kind == wire.Reply {
		// It answered: alive, before the call's continuation looks.
		if len(h.dead) > 0 && h.rpc.Expects(in) {
			delete(h.dead, in.From)
		}
		if peer, rtt, ok := h.rpc.HandleReply(env, in); ok {
			h.viv.Observe(peer, rtt, e.Coord, env.Rand())
		}
		return
	}
	if t == wire.TypePing {
		if e.Kind == wire.Request {
			rpc.Respond(env, in, h.self(), &wire.Ack{})
		}
		return
	}
	if t == wire.TypeGetNodeInfo {
		if e.Kind == wire.Request {
			rpc.Respond(env, in, h.self(), h.nodeInfo(env))
		}
		return
	}
	if owner != nil {
		owner.Receive(env, in)
		return
	}
	h.Stats.BadMessages++
	if e.Kind == wire.Request {
		rpc.RespondError(env, in, h.self(), fault.CodeNoProtocol, fmt.Sprintf("no protocol for %v at %s", t, h.addr))
	}
}

// self is the sender of the runtime's own replies: the host's address and
// no vnode. The TCP driver routes a reply by its sender's address, and
// one without an address would be taken for a client's.
func (h *Host) self() wire.NodeRef { return wire.NodeRef{Addr: h.addr} }

// owner is the protocol registered for t's range, or nil.
func (h *Host) owner(t wire.Type) Protocol {
	for _, r := range h.protos {
		if r.lo <= t && t <= r.hi {
			return r.p
		}
	}
	return nil
}

// Call sends m to the virtual server dst (zero: any) of the process at to,
// from the local virtual server from, and runs cont once with the outcome
// (see rpc.Client.Call). It returns false, and cont never runs, when too
// many calls are in flight.
func (h *Host) Call(env node.Env, to node.Addr, from wire.NodeRef, dst id.ID, m wire.Msg, timeout time.Duration, cont rpc.Reply) bool {
	return h.rpc.Call(env, to, from, dst, m, timeout, cont)
}

// MarkDead declares the process at addr dead: calls to it are no longer
// timed from its history, and every protocol drops it (PeerDown). It stays
// dead for DeadMemory unless it is heard from.
func (h *Host) MarkDead(env node.Env, addr node.Addr) {
	if addr == h.addr {
		return
	}
	if _, known := h.dead[addr]; !known {
		h.Stats.PeersDeclaredDead++
	}
	h.dead[addr] = env.Now()
	h.rpc.Forget(addr)
	h.viv.Forget(addr)
	h.expireDead(env.Now())
	for _, r := range h.protos {
		r.p.PeerDown(env, addr)
	}
}

// Departed records that the process at addr left gracefully: it counts as
// dead (calls still in flight to it are no news) without the protocols
// being told, since its leave message already told them.
func (h *Host) Departed(env node.Env, addr node.Addr) {
	if addr == "" || addr == h.addr {
		return
	}
	h.dead[addr] = env.Now()
	h.expireDead(env.Now())
}

// IsDead reports whether the process at addr was declared dead within
// DeadMemory.
func (h *Host) IsDead(env node.Env, addr node.Addr) bool {
	t, ok := h.dead[addr]
	return ok && env.Now().Sub(t) <= h.cfg.DeadMemory
}

// nodeInfo is GetNodeInfo's answer: the build, when the host began, the
// disk, and the peers it holds dead now, at most wire.MaxListLen of them
// (the newest), in address order.
func (h *Host) nodeInfo(env node.Env) *wire.NodeInfo {
	info := &wire.NodeInfo{Version: h.cfg.Version, Started: h.started.UnixNano()}
	if len(info.Version) > wire.MaxVersionBytes {
		info.Version = info.Version[:wire.MaxVersionBytes]
	}
	if h.cfg.Disk != nil {
		info.DiskFree, info.DiskTotal = h.cfg.Disk()
	}
	type mark struct {
		addr node.Addr
		at   time.Time
	}
	var dead []mark
	for a, t := range h.dead {
		if env.Now().Sub(t) <= h.cfg.DeadMemory && len(a) <= wire.MaxAddrBytes {
			dead = append(dead, mark{a, t})
		}
	}
	sort.Slice(dead, func(i, j int) bool {
		if !dead[i].at.Equal(dead[j].at) {
			return dead[i].at.After(dead[j].at)
		}
		return dead[i].addr < dead[j].addr
	})
	for i, d := range dead {
		if i == wire.MaxListLen {
			break
		}
		info.Dead = append(info.Dead, d.addr)
	}
	sort.Strings(info.Dead)
	return info
}

// maxDead bounds the dead-peer memory.
const maxDead = 1024

// expireDead bounds the dead-peer memory: past maxDead marks it drops the
// expired ones and, if that is not enough, the oldest, down to half, so
// the cost is paid once per maxDead/2 new marks.
func (h *Host) expireDead(now time.Time) {
	if len(h.dead) <= maxDead {
		return
	}
	for a, t := range h.dead {
		if now.Sub(t) > h.cfg.DeadMemory {
			delete(h.dead, a)
		}
	}
	// Still too many: drop the oldest, choosing by (time, address) so that
	// map order never decides what a host remembers.
	if len(h.dead) <= maxDead/2 {
		return
	}
	type mark struct {
		addr node.Addr
		at   time.Time
	}
	marks := make([]mark, 0, len(h.dead))
	for a, t := range h.dead {
		marks = append(marks, mark{a, t})
	}
	slices.SortFunc(marks, func(x, y mark) int {
		if c := x.at.Compare(y.at); c != 0 {
			return c
		}
		return strings.Compare(x.addr, y.addr)
	})
	for _, m := range marks[:len(marks)-maxDead/2] {
		delete(h.dead, m.addr)
	}
}

// PeerCoords returns the Vivaldi coordinates known for peers, by address
// (a copy, for status pages).
func (h *Host) PeerCoords() map[string]wire.Coord { return h.viv.Peers() }

// Predict is the expected round-trip time to the process at addr: measured
// when it has answered us, else predicted from its coordinate. ok is false
// when nothing is known of it.
func (h *Host) Predict(addr node.Addr) (time.Duration, bool) {
	if addr == h.addr {
		return 0, true
	}
	if rtt, ok := h.rpc.SRTT(addr); ok {
		return rtt, true
	}
	rtt, _, ok := h.viv.Predict(addr)
	return rtt, ok
}

// stampEnv puts the host's coordinate on every reply it sends, so that each
// round trip also trains the caller's coordinate.
type stampEnv struct {
	node.Env
	h *Host
}

func (s *stampEnv) Send(to node.Addr, e wire.Envelope) {
	if e.Kind == wire.Reply {
		e.Coord = s.h.viv.Coord()
	}
	s.Env.Send(to, e)
}

func (h *Host) stamp(env node.Env) node.Env {
	if s, ok := env.(*stampEnv); ok && s.h == h {
		return env
	}
	// One wrapper per host, re-aimed at every event: nodes may not keep an
	// env after Handle returns, so the last one is free.
	if h.stamper == nil {
		h.stamper = &stampEnv{h: h}
	}
	h.stamper.Env = env
	return h.stamper
}
