package ring

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/rpc"
	"triad/internal/vivaldi"
	"triad/internal/wire"
)

// Host is one process's ring state machine: its virtual servers, the calls
// and lookups they have in flight, and what it knows of dead peers.
type Host struct {
	cfg    Config
	addr   node.Addr
	vnodes []*Vnode
	rpc    *rpc.Client

	// join lists where a vnode with no live successor may ask its way back
	// into the ring: the bootstrap address first, then saved peers.
	join []wire.NodeRef

	lookups    map[uint64]*lookup
	nextLookup uint64
	dead       map[node.Addr]time.Time
	lost       []node.Addr // peers declared dead, oldest first; probed to merge rings
	stopped    bool

	// savedAlone is set while the last saved state named no peers. The
	// first node of a ring saves such a state at start; if it crashed
	// before the next periodic save it would come back alone and found a
	// second ring, so the state is saved again as soon as it has a peer.
	savedAlone bool

	viv   *vivaldi.Model
	stamp *stampEnv // reused by Stamp: an env lives for one Handle

	// RTT, if set, receives every round-trip sample.
	RTT func(peer node.Addr, rtt time.Duration)

	Stats Stats
}

// Stats are a host's counters; drivers export them.
type Stats struct {
	LookupsStarted, LookupsDone, LookupsFailed uint64
	IterativeFallbacks                         uint64
	HopFailures                                uint64
	PeersDeclaredDead                          uint64
	BadRequests                                uint64
}

// NewHost makes the state machine of the process at addr, with the vnode
// IDs and known peers of st (see LoadState). bootstrap, if not empty, is the
// address of any ring member to join through; without one, a host with no
// saved peers starts a new ring.
func NewHost(cfg Config, addr node.Addr, st State, bootstrap node.Addr) (*Host, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if len(st.IDs) == 0 {
		return nil, fmt.Errorf("ring: host %s has no vnode ids", addr)
	}
	h := &Host{
		cfg:     cfg,
		addr:    addr,
		rpc:     rpc.NewClient(cfg.RPC),
		lookups: make(map[uint64]*lookup),
		dead:    make(map[node.Addr]time.Time),
		viv:     vivaldi.New(),
	}
	h.rpc.Predict = h.predictCoord
	if bootstrap != "" && bootstrap != addr {
		h.join = append(h.join, wire.NodeRef{Addr: bootstrap})
	}
	var known []wire.NodeRef
	for _, p := range st.Peers {
		if p.Addr != addr && p.ID.Width() == id.Bytes {
			known = append(known, p)
		}
	}
	h.join = append(h.join, known...)
	for i, x := range st.IDs {
		if x.Width() != id.Bytes {
			return nil, fmt.Errorf("ring: vnode id %d has width %d", i, x.Width())
		}
		v := &Vnode{host: h, index: i, self: wire.NodeRef{ID: x, Addr: addr}}
		v.fingers = make([]wire.NodeRef, id.Bits)
		v.lowFinger = id.Bits
		v.nextFinger = id.Bits - 1
		// Saved peers are a best guess at the neighbours: stabilization and
		// timeouts correct them.
		v.succs = buildList(x, cfg.Succs, nil, sortedCopy(known, x, sortSuccs))
		v.preds = buildList(x, cfg.Preds, nil, sortedCopy(known, x, sortPreds))
		h.vnodes = append(h.vnodes, v)
	}
	// With nobody to ask, the first vnode founds a new ring; the others
	// join through it.
	h.vnodes[0].alone = len(h.join) == 0
	return h, nil
}

func sortedCopy(list []wire.NodeRef, self id.ID, sortFn func(id.ID, []wire.NodeRef)) []wire.NodeRef {
	out := slices.Clone(list)
	sortFn(self, out)
	return out
}

// RPC is the host's call layer, for its counters.
func (h *Host) RPC() *rpc.Client { return h.rpc }

// Addr is the host's address.
func (h *Host) Addr() node.Addr { return h.addr }

// Vnodes returns the host's virtual servers.
func (h *Host) Vnodes() []*Vnode { return h.vnodes }

// Timers of a host, as typed values.
type (
	stabilizeTimer struct{ vnode int }
	fixFingerTimer struct{ vnode int }
	lookupTimer    struct{ id uint64 }
	saveTimer      struct{}
	probeTimer     struct{}
)

func (t stabilizeTimer) String() string { return fmt.Sprintf("stabilize(%d)", t.vnode) }
func (t fixFingerTimer) String() string { return fmt.Sprintf("fix-finger(%d)", t.vnode) }
func (t lookupTimer) String() string    { return fmt.Sprintf("lookup-timeout(%d)", t.id) }
func (saveTimer) String() string        { return "save-state" }
func (probeTimer) String() string       { return "probe-lost" }

// Handle applies one event.
func (h *Host) Handle(env node.Env, ev node.Event) {
	if h.stopped {
		return
	}
	env = h.Stamp(env)
	switch ev := ev.(type) {
	case node.Start:
		h.start(env)
	case node.MsgIn:
		h.handleMsg(env, ev)
	case node.TimerFired:
		h.handleTimer(env, ev.T)
	case node.WorkDone:
		// Saves are best effort: the next one retries. Drivers log errors.
	case node.Request:
		ev.Fn(env)
	case node.Stop:
		h.stop(env)
	}
	if h.savedAlone && !h.stopped && h.hasPeer() {
		h.save(env)
	}
}

// hasPeer reports whether any vnode knows a successor on another host.
func (h *Host) hasPeer() bool {
	for _, v := range h.vnodes {
		for _, s := range v.succs {
			if s.Addr != h.addr {
				return true
			}
		}
	}
	return false
}

func (h *Host) start(env node.Env) {
	for _, v := range h.vnodes {
		// Spread the first rounds so that vnodes (and hosts started together)
		// do not beat in step.
		env.After(h.jitter(env, h.cfg.StabilizeInterval)/4, stabilizeTimer{v.index})
		env.After(h.jitter(env, h.cfg.FixFingersInterval), fixFingerTimer{v.index})
	}
	h.save(env)
	if h.cfg.SaveInterval > 0 {
		env.After(h.cfg.SaveInterval, saveTimer{})
	}
	if h.cfg.ProbeInterval > 0 {
		env.After(h.jitter(env, h.cfg.ProbeInterval), probeTimer{})
	}
}

// stop leaves the ring gracefully: each vnode hands its lists to its
// neighbours so they close the gap at once, and the state is saved.
func (h *Host) stop(env node.Env) {
	for _, v := range h.vnodes {
		v.leave(env)
	}
	h.save(env)
	h.stopped = true
}

func (h *Host) save(env node.Env) {
	st := h.State()
	h.savedAlone = len(st.Peers) == 0
	b, err := MarshalState(st)
	if err != nil {
		panic(err) // encoding our own values cannot fail
	}
	env.Offload(saveWork{b})
}

// State is what the host would save now.
func (h *Host) State() State {
	var s State
	for _, v := range h.vnodes {
		s.IDs = append(s.IDs, v.self.ID)
	}
	var peers []wire.NodeRef
	for _, v := range h.vnodes {
		peers = append(peers, v.succs...)
		peers = append(peers, v.preds...)
		for _, f := range v.fingers {
			if !f.IsZero() {
				peers = append(peers, f)
			}
		}
	}
	for _, p := range peers {
		if p.Addr != h.addr && !contains(s.Peers, p.ID) && len(s.Peers) < maxSavedPeers {
			s.Peers = append(s.Peers, p)
		}
	}
	return s
}

func (h *Host) jitter(env node.Env, d time.Duration) time.Duration {
	return d*3/4 + time.Duration(env.Rand().Int64N(int64(d)/2+1))
}

func (h *Host) handleTimer(env node.Env, t node.Timer) {
	if h.rpc.HandleTimer(env, t) {
		return
	}
	switch t := t.(type) {
	case stabilizeTimer:
		h.vnodes[t.vnode].stabilize(env)
		env.After(h.jitter(env, h.cfg.StabilizeInterval), t)
	case fixFingerTimer:
		h.vnodes[t.vnode].fixFinger(env)
	case lookupTimer:
		h.lookupTimedOut(env, t.id)
	case saveTimer:
		h.save(env)
		env.After(h.cfg.SaveInterval, t)
	case probeTimer:
		h.probe(env)
		env.After(h.jitter(env, h.cfg.ProbeInterval), t)
	}
}

// vnodeFor finds the destination vnode of an envelope; the zero ID picks
// the first.
func (h *Host) vnodeFor(x id.ID) *Vnode {
	if x.IsZero() {
		return h.vnodes[0]
	}
	for _, v := range h.vnodes {
		if v.self.ID == x {
			return v
		}
	}
	return nil
}

func (h *Host) handleMsg(env node.Env, in node.MsgIn) {
	e := in.Env
	if !e.From.IsZero() {
		if e.From.ID.Width() != id.Bytes || e.From.Addr == "" {
			h.Stats.BadRequests++
			return
		}
		if len(h.dead) > 0 {
			delete(h.dead, e.From.Addr) // it is alive
		}
	}
	if err := validate(e.Msg); err != nil {
		h.Stats.BadRequests++
		if e.Kind == wire.Request {
			rpc.RespondError(env, in, h.vnodes[0].self, wire.ErrCodeBadRequest, err.Error())
		}
		return // a bad reply is dropped: its call times out
	}
	if e.Kind == wire.Reply {
		if peer, rtt, ok := h.rpc.HandleReply(env, in); ok {
			h.viv.Observe(peer, rtt, e.Coord, env.Rand())
			if h.RTT != nil {
				h.RTT(peer, rtt)
			}
		}
		return
	}
	v := h.vnodeFor(e.To)
	if v == nil {
		if e.Kind == wire.Request {
			rpc.RespondError(env, in, h.vnodes[0].self, wire.ErrCodeNoVnode, "no vnode "+e.To.Short()+" at "+h.addr)
		}
		return
	}
	switch m := e.Msg.(type) {
	case *wire.Ping:
		rpc.Respond(env, in, v.self, &wire.Ack{})
	case *wire.Stabilize:
		v.handleStabilize(env, in)
	case *wire.GetNeighbors:
		rpc.Respond(env, in, v.self, &wire.Neighbors{Preds: v.preds, Succs: v.succs})
	case *wire.Lookup:
		if !v.joined() {
			rpc.RespondError(env, in, v.self, wire.ErrCodeBusy, "not joined yet")
			return
		}
		rpc.Respond(env, in, v.self, &wire.Ack{})
		v.route(env, m)
	case *wire.LookupDone:
		h.handleLookupDone(env, m)
	case *wire.NextHop:
		if !v.joined() {
			rpc.RespondError(env, in, v.self, wire.ErrCodeBusy, "not joined yet")
			return
		}
		rpc.Respond(env, in, v.self, v.nextHop(m.Key, int(m.MinSuccs)))
	case *wire.Leave:
		v.handleLeave(env, e.From, m)
		h.dead[e.From.Addr] = env.Now() // gone: calls still in flight to it are no news
	case *wire.RingInfoReq:
		rpc.Respond(env, in, v.self, h.RingInfo())
	case *wire.ClientLookup:
		h.Lookup(env, m.Key, LookupOptions{}, func(env node.Env, r Result) {
			done := &wire.LookupDone{Key: r.Key, Hops: uint32(r.Hops), Pred: r.Pred, Succs: r.Succs}
			if r.Err != nil {
				done.Failed = r.Err.Error()
			}
			rpc.Respond(env, in, v.self, done)
		})
	default:
		if e.Kind == wire.Request {
			rpc.RespondError(env, in, v.self, wire.ErrCodeBadRequest, fmt.Sprintf("unexpected %T", m))
		}
	}
}

// validate checks the IDs a message carries have the ring's width.
func validate(m wire.Msg) error {
	check := func(list ...[]wire.NodeRef) error {
		for _, l := range list {
			for _, n := range l {
				if n.ID.Width() != id.Bytes || n.Addr == "" {
					return fmt.Errorf("bad node %v", n)
				}
			}
		}
		return nil
	}
	key := func(k id.ID) error {
		if k.Width() != id.Bytes {
			return fmt.Errorf("key must be %d bits", id.Bits)
		}
		return nil
	}
	switch m := m.(type) {
	case *wire.Neighbors:
		return check(m.Preds, m.Succs)
	case *wire.Leave:
		return check(m.Preds, m.Succs)
	case *wire.Lookup:
		if err := key(m.Key); err != nil {
			return err
		}
		return check([]wire.NodeRef{m.Origin})
	case *wire.LookupDone:
		if err := key(m.Key); err != nil {
			return err
		}
		return check(m.Succs)
	case *wire.NextHop:
		return key(m.Key)
	case *wire.NextHopResp:
		return check(m.Succs, m.Next)
	case *wire.ClientLookup:
		return key(m.Key)
	}
	return nil
}

// markDead removes every vnode of the process at addr from all lists and
// keeps it out until it is heard from or DeadMemory passes.
func (h *Host) markDead(env node.Env, addr node.Addr) {
	if addr == h.addr {
		return
	}
	if _, known := h.dead[addr]; !known {
		h.Stats.PeersDeclaredDead++
		h.remember(addr)
	}
	h.dead[addr] = env.Now()
	h.rpc.Forget(addr)
	h.viv.Forget(addr)
	h.expireDead(env.Now())
	for _, v := range h.vnodes {
		v.forget(func(n wire.NodeRef) bool { return n.Addr == addr })
	}
}

// maxLost bounds the peers remembered for merge probes.
const maxLost = 64

func (h *Host) remember(addr node.Addr) {
	if slices.Contains(h.lost, addr) {
		return
	}
	if len(h.lost) == maxLost {
		h.lost = h.lost[1:]
	}
	h.lost = append(h.lost, addr)
}

// probe asks one peer we lost where our first vnode's ID belongs. If that
// peer is alive again and knows a closer successor, we adopt it: this is how
// two rings that formed on the sides of a partition find each other again
// (stabilization then zips them together).
func (h *Host) probe(env node.Env) {
	if len(h.lost) == 0 {
		return
	}
	i := env.Rand().IntN(len(h.lost))
	addr := h.lost[i]
	v := h.vnodes[0]
	h.iterate(env, v, v.self.ID, 0, []wire.NodeRef{{Addr: addr}}, func(env node.Env, r Result) {
		if r.Err != nil || len(r.Succs) == 0 {
			return
		}
		h.lost = slices.DeleteFunc(h.lost, func(a node.Addr) bool { return a == addr })
		s := r.Succs[0]
		if s.ID != v.self.ID && (len(v.succs) == 0 || s.ID.Between(v.self.ID, v.succs[0].ID)) && !h.isDead(env, s) {
			v.succs = buildList(v.self.ID, h.cfg.Succs, nil, []wire.NodeRef{s}, v.succs)
			v.alone = false
		}
	})
}

// maxDead bounds the dead-peer memory.
const maxDead = 1024

func (h *Host) expireDead(now time.Time) {
	if len(h.dead) <= maxDead/2 {
		return
	}
	for a, t := range h.dead {
		if now.Sub(t) > h.cfg.DeadMemory {
			delete(h.dead, a)
		}
	}
	// Still too many: drop the oldest, choosing by (time, address) so that
	// map order never decides what a node remembers.
	for len(h.dead) > maxDead {
		var oldest node.Addr
		var at time.Time
		for a, t := range h.dead {
			if oldest == "" || t.Before(at) || (t.Equal(at) && a < oldest) {
				oldest, at = a, t
			}
		}
		delete(h.dead, oldest)
	}
}

func (h *Host) isDead(env node.Env, n wire.NodeRef) bool {
	t, ok := h.dead[n.Addr]
	return ok && env.Now().Sub(t) <= h.cfg.DeadMemory
}

// RingInfo is the routing state of all vnodes, for `triad ring`.
func (h *Host) RingInfo() *wire.RingInfo {
	info := &wire.RingInfo{}
	for _, v := range h.vnodes {
		vi := wire.VnodeInfo{Self: v.self, Preds: slices.Clone(v.preds), Succs: slices.Clone(v.succs)}
		for i := len(v.fingers) - 1; i >= 0; i-- {
			if f := v.fingers[i]; !f.IsZero() {
				vi.Fingers = append(vi.Fingers, wire.Finger{Bit: uint32(i), Node: f})
			}
		}
		info.Vnodes = append(info.Vnodes, vi)
	}
	return info
}

// Coord is the host's Vivaldi coordinate.
func (h *Host) Coord() wire.Coord { return h.viv.Coord() }

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

func (h *Host) predictCoord(addr node.Addr) (time.Duration, float64, bool) {
	return h.viv.Predict(addr)
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

// Stamp wraps env so that replies carry the host's coordinate. Layers above
// the ring (the block store) answer requests through it too.
func (h *Host) Stamp(env node.Env) node.Env {
	if s, ok := env.(*stampEnv); ok && s.h == h {
		return env
	}
	// One wrapper per host, re-aimed at every call: nodes may not keep an
	// env after Handle returns, so the last one is free.
	if h.stamp == nil {
		h.stamp = &stampEnv{h: h}
	}
	h.stamp.Env = env
	return h.stamp
}

// IsDead reports whether n's process was declared dead recently.
func (h *Host) IsDead(env node.Env, n wire.NodeRef) bool { return h.isDead(env, n) }

// CallFailed tells the ring that a call to n by a layer above failed: a
// timeout marks n's process dead, an error reply naming a missing vnode
// drops that vnode. Any other error (a missing block, a full disk) was an
// answer, so n is alive.
func (h *Host) CallFailed(env node.Env, n wire.NodeRef, err error) {
	var we *wire.Error
	if errors.As(err, &we) || errors.Is(err, rpc.ErrTimeout) {
		h.vnodes[0].callFailed(env, n, err)
	}
}
