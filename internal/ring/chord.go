package ring

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"triad/internal/fault"
	"triad/internal/host"
	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/rpc"
	"triad/internal/wire"
)

// Chord is the Chord protocol of one host: its virtual servers, the
// lookups they have in flight, and the peers it lost (probed to merge rings
// split by a partition). It runs on a host.Host, which owns the RPC layer,
// Vivaldi and liveness.
type Chord struct {
	cfg    Config
	rt     *host.Host
	addr   node.Addr
	vnodes []*Vnode

	// join lists where a vnode with no live successor may ask its way back
	// into the ring: the bootstrap address first, then saved peers.
	join []wire.NodeRef
	// heard lists peers of other processes that wrote to us while a vnode
	// was alone: more places to join through (maybeHeard).
	heard []wire.NodeRef

	lookups    map[uint64]*lookup
	nextLookup uint64
	lost       []node.Addr // peers declared dead, oldest first; probed to merge rings
	stopped    bool

	// savedAlone is set while the last saved state named no peers. The
	// first node of a ring saves such a state at start; if it crashed
	// before the next periodic save it would come back alone and found a
	// second ring, so the state is saved again as soon as it has a peer.
	savedAlone bool

	watchers   []func(node.Env) // OnNeighbours
	watchPreds int              // the predecessors they watch

	Stats Stats
}

// Stats are the ring's counters; drivers export them.
type Stats struct {
	LookupsStarted, LookupsDone, LookupsFailed uint64
	IterativeFallbacks                         uint64
	HopFailures                                uint64
	// Hops counts the lookups done by the hops they took: Hops[h] for h
	// hops, the last entry for MaxCountedHops or more.
	Hops [MaxCountedHops + 1]uint64
	// NeighbourChanges counts the times a vnode's successor or
	// predecessor was another than at its previous stabilization round.
	NeighbourChanges uint64
	// QuickRounds counts the extra stabilization rounds run
	// (Config.QuickStabilize).
	QuickRounds uint64
	// RefusedLeaves counts Leave messages refused because the vnode they
	// name is not the sender's: its address is not the one the sender's
	// connection proved, or we know its ID at another address (one of our
	// own, or a peer's). A process can take only its own vnodes off the
	// ring.
	RefusedLeaves uint64
	// ForgedRefs counts messages refused (with Config.VerifyIDs) because
	// their sender, or a node reference they carry, has an ID not derived
	// from its address (VnodeIndex).
	ForgedRefs uint64
}

// MaxCountedHops is the last entry of Stats.Hops.
const MaxCountedHops = 32

// New makes the ring protocol of the host rt, with the vnode IDs and known
// peers of st (see LoadState), and registers it with rt. bootstrap, if not
// empty, is the address of any ring member to join through; without one, a
// host with no saved peers starts a new ring.
func New(cfg Config, rt *host.Host, st State, bootstrap node.Addr) (*Chord, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	addr := rt.Addr()
	if len(st.IDs) == 0 {
		return nil, fmt.Errorf("ring: host %s has no vnode ids", addr)
	}
	if cfg.VerifyIDs {
		if len(st.IDs) > MaxVnodes {
			return nil, fmt.Errorf("ring: %d vnodes, more than the %d whose IDs are derived", len(st.IDs), MaxVnodes)
		}
		seen := map[int]bool{}
		for i, x := range st.IDs {
			j, ok := slotPosition(addr, i, x)
			if !ok || seen[j] {
				return nil, fmt.Errorf("ring: vnode %d of %s is at %s, not at a derived position of its own with vnode 0 first (load the state with LoadDerivedState)", i, addr, x.Short())
			}
			seen[j] = true
		}
	}
	h := &Chord{
		cfg:     cfg,
		rt:      rt,
		addr:    addr,
		lookups: make(map[uint64]*lookup),
	}
	if bootstrap != "" && bootstrap != addr {
		h.join = append(h.join, wire.NodeRef{Addr: bootstrap})
	}
	var known []wire.NodeRef
	for _, p := range st.Peers {
		if p.Addr != addr && p.ID.Width() == id.Bytes && (!cfg.VerifyIDs || derived(p)) {
			known = append(known, p)
		}
	}
	h.join = append(h.join, known...)
	for i, x := range st.IDs {
		if x.Width() != id.Bytes {
			return nil, fmt.Errorf("ring: vnode id %d has width %d", i, x.Width())
		}
		v := &Vnode{host: h, index: i, self: wire.NodeRef{ID: x, Addr: addr, Machine: st.Machine}}
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
	if err := rt.Register(wire.TypeStabilize, h); err != nil {
		return nil, err
	}
	if cfg.VerifyIDs {
		rt.CheckSenders(h.checkSender)
	}
	return h, nil
}

func sortedCopy(list []wire.NodeRef, self id.ID, sortFn func(id.ID, []wire.NodeRef)) []wire.NodeRef {
	out := slices.Clone(list)
	sortFn(self, out)
	return out
}

// Runtime is the host runtime the ring runs on.
func (h *Chord) Runtime() *host.Host { return h.rt }

// Addr is the host's address.
func (h *Chord) Addr() node.Addr { return h.addr }

// Config is the ring's configuration.
func (h *Chord) Config() Config { return h.cfg }

// Vnodes returns the host's virtual servers.
func (h *Chord) Vnodes() []*Vnode { return h.vnodes }

// Timers of a host, as typed values.
type (
	stabilizeTimer struct{ vnode int }
	// quickStabilizeTimer is an extra round (Config.QuickStabilize).
	quickStabilizeTimer struct{ vnode int }
	fixFingerTimer      struct{ vnode int }
	lookupTimer         struct{ id uint64 }
	saveTimer           struct{}
	probeTimer          struct{}
)

func (t stabilizeTimer) String() string      { return fmt.Sprintf("stabilize(%d)", t.vnode) }
func (t quickStabilizeTimer) String() string { return fmt.Sprintf("quick-stabilize(%d)", t.vnode) }
func (t fixFingerTimer) String() string      { return fmt.Sprintf("fix-finger(%d)", t.vnode) }
func (t lookupTimer) String() string         { return fmt.Sprintf("lookup-timeout(%d)", t.id) }
func (saveTimer) String() string             { return "save-state" }
func (probeTimer) String() string            { return "probe-lost" }

// Start begins the maintenance rounds of every vnode.
func (h *Chord) Start(env node.Env) { h.start(env) }

// Stop leaves the ring gracefully.
func (h *Chord) Stop(env node.Env) { h.stop(env) }

// Receive handles a ring message.
func (h *Chord) Receive(env node.Env, in node.MsgIn) {
	if h.stopped {
		return
	}
	before := h.neighbours()
	h.handleMsg(env, in)
	h.maybeSave(env)
	h.notifyIfChanged(env, before)
}

// Timer handles the ring's timers.
func (h *Chord) Timer(env node.Env, t node.Timer) bool {
	before := h.neighbours()
	if !h.handleTimer(env, t) {
		return false
	}
	h.maybeSave(env)
	h.notifyIfChanged(env, before)
	return true
}

// Work handles the end of a state save. Saves are best effort: the next
// one retries, and drivers log errors.
func (h *Chord) Work(env node.Env, done node.WorkDone) bool {
	_, ok := done.W.(saveWork)
	return ok
}

// PeerDown drops every vnode of the process at addr from all lists, and
// remembers it for the merge probes.
func (h *Chord) PeerDown(env node.Env, addr node.Addr) {
	if h.cfg.Membership != nil {
		return // the view is the driver's
	}
	before := h.neighbours()
	h.remember(addr)
	for _, v := range h.vnodes {
		v.forget(func(n wire.NodeRef) bool { return n.Addr == addr })
	}
	h.notifyIfChanged(env, before)
}

// maybeSave saves the state once a host whose last save named no peers has
// one (see savedAlone).
func (h *Chord) maybeSave(env node.Env) {
	if h.savedAlone && !h.stopped && h.hasPeer() {
		h.save(env)
	}
}

// hasPeer reports whether any vnode knows a successor on another host.
func (h *Chord) hasPeer() bool {
	for _, v := range h.vnodes {
		for _, s := range v.succs {
			if s.Addr != h.addr {
				return true
			}
		}
	}
	return false
}

func (h *Chord) start(env node.Env) {
	if h.cfg.Membership != nil {
		h.Refresh(env)
		h.save(env)
		return
	}
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
func (h *Chord) stop(env node.Env) {
	for _, v := range h.vnodes {
		if h.cfg.Membership == nil {
			v.leave(env)
		}
	}
	h.save(env)
	h.stopped = true
}

func (h *Chord) save(env node.Env) {
	st := h.State()
	h.savedAlone = len(st.Peers) == 0
	b, err := MarshalState(st)
	if err != nil {
		panic(err) // encoding our own values cannot fail
	}
	env.Offload(saveWork{b})
}

// State is what the host would save now.
func (h *Chord) State() State {
	var s State
	for _, v := range h.vnodes {
		s.IDs = append(s.IDs, v.self.ID)
		s.Machine = v.self.Machine
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

func (h *Chord) jitter(env node.Env, d time.Duration) time.Duration {
	return d*3/4 + time.Duration(env.Rand().Int64N(int64(d)/2+1))
}

func (h *Chord) handleTimer(env node.Env, t node.Timer) bool {
	switch t := t.(type) {
	case stabilizeTimer:
		h.vnodes[t.vnode].stabilize(env)
		env.After(h.jitter(env, h.cfg.StabilizeInterval), t)
	case quickStabilizeTimer:
		h.vnodes[t.vnode].runQuickRound(env)
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
	default:
		return false
	}
	return true
}

// vnodeFor finds the destination vnode of an envelope; the zero ID picks
// the first.
func (h *Chord) vnodeFor(x id.ID) *Vnode {
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

// Validate checks the node references and keys a ring message carries
// (host.Validator); with Config.VerifyIDs every reference's ID must be
// derived from its address.
func (h *Chord) Validate(m wire.Msg) error {
	err := validate(m, h.cfg.VerifyIDs)
	if errors.Is(err, errForgedRef) {
		h.Stats.ForgedRefs++
	}
	return err
}

// errForgedRef is a node reference whose ID is not derived from its
// address.
var errForgedRef = errors.New("ring: a node ID not derived from its address")

// checkSender refuses, for the host runtime, a message of any protocol
// whose sender's ID is not derived from its address (Config.VerifyIDs).
func (h *Chord) checkSender(from wire.NodeRef) error {
	if !derived(from) {
		h.Stats.ForgedRefs++
		return fmt.Errorf("%w: sender %s", errForgedRef, from)
	}
	return nil
}

func (h *Chord) handleMsg(env node.Env, in node.MsgIn) {
	e := in.Env
	h.maybeHeard(e.From)
	v := h.vnodeFor(e.To)
	if v == nil {
		if e.Kind == wire.Request {
			rpc.RespondError(env, in, h.vnodes[0].self, fault.CodeNoVnode, "no vnode "+e.To.Short()+" at "+h.addr)
		}
		return
	}
	switch m := e.Msg.(type) {
	case *wire.Stabilize:
		v.handleStabilize(env, in)
	case *wire.GetNeighbors:
		rpc.Respond(env, in, v.self, &wire.Neighbors{Preds: v.preds, Succs: v.succs})
	case *wire.Lookup:
		if !v.joined() {
			rpc.RespondError(env, in, v.self, fault.CodeBusy, "not joined yet")
			return
		}
		rpc.Respond(env, in, v.self, &wire.Ack{})
		v.route(env, m)
	case *wire.LookupDone:
		h.handleLookupDone(env, m)
	case *wire.NextHop:
		if !v.joined() {
			rpc.RespondError(env, in, v.self, fault.CodeBusy, "not joined yet")
			return
		}
		rpc.Respond(env, in, v.self, v.nextHop(m.Key, int(m.MinSuccs)))
	case *wire.Leave:
		if !h.ownedBy(e.From, in.From) {
			h.Stats.RefusedLeaves++
			return
		}
		v.handleLeave(env, e.From, m)
		h.rt.Departed(env, e.From.Addr) // gone: calls still in flight to it are no news
	case *wire.GetRingInfo:
		rpc.Respond(env, in, v.self, h.RingInfo())
	case *wire.ClientLookup:
		opts := LookupOptions{MinSuccs: int(min(m.MinSuccs, uint32(h.cfg.Succs)))}
		h.Lookup(env, m.Key, opts, func(env node.Env, r Result) {
			done := &wire.LookupDone{Key: r.Key, Hops: uint32(r.Hops), Pred: r.Pred, Succs: r.Succs}
			if r.Err != nil {
				done.Failed = r.Err.Error()
			}
			rpc.Respond(env, in, v.self, done)
		})
	default:
		if e.Kind == wire.Request {
			rpc.RespondError(env, in, v.self, fault.CodeBadRequest, fmt.Sprintf("unexpected %T", m))
		}
	}
}

// ownedBy reports whether the vnode ref may speak for itself from the
// process at addr, the address its connection proved (node.MsgIn.From): its
// address is addr, and none of our vnodes and no peer we know holds its
// ID at another address. Drivers already refuse a frame whose sender
// address differs from its connection's; this also holds when a caller
// hands the ring a message directly.
func (h *Chord) ownedBy(ref wire.NodeRef, addr node.Addr) bool {
	if ref.IsZero() || ref.Addr != addr {
		return false
	}
	other := func(n wire.NodeRef) bool { return n.ID == ref.ID && n.Addr != ref.Addr }
	for _, v := range h.vnodes {
		if other(v.self) || slices.ContainsFunc(v.succs, other) || slices.ContainsFunc(v.preds, other) || slices.ContainsFunc(v.fingers, other) {
			return false
		}
	}
	return true
}

// validate checks the IDs a message carries have the ring's width and,
// with verify, are derived from their addresses.
func validate(m wire.Msg, verify bool) error {
	check := func(list ...[]wire.NodeRef) error {
		for _, l := range list {
			for _, n := range l {
				if n.ID.Width() != id.Bytes || n.Addr == "" {
					return fmt.Errorf("bad node %v", n)
				}
				if verify && !derived(n) {
					return fmt.Errorf("%w: %s", errForgedRef, n)
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
		if !m.Pred.IsZero() {
			if err := check([]wire.NodeRef{m.Pred}); err != nil {
				return err
			}
		}
		return check(m.Succs)
	case *wire.NextHop:
		return key(m.Key)
	case *wire.NextHopInfo:
		return check(m.Succs, m.Next)
	case *wire.ClientLookup:
		return key(m.Key)
	}
	return nil
}

// maxHeard bounds the peers kept in heard.
const maxHeard = 8

// maybeHeard keeps a vnode of another process that sent us a message as a
// place to join through, while one of our vnodes is alone. A host that
// started a ring of one (a founder whose disk failed, or the survivor of a
// partition) is probed by the peers that lost it; without this it would
// answer them and stay a ring apart, since only a probe from its very
// predecessor would make that one adopt it. With it, the alone vnode's
// next round looks its own ID up through the prober and joins that ring.
// Heard peers are kept apart from the bootstrap address and saved peers,
// which they never displace; the newest maxHeard are kept.
func (h *Chord) maybeHeard(from wire.NodeRef) {
	if from.IsZero() || from.Addr == h.addr {
		return
	}
	if !slices.ContainsFunc(h.vnodes, func(v *Vnode) bool { return len(v.succs) == 0 }) || contains(h.heard, from.ID) {
		return
	}
	if len(h.heard) == maxHeard {
		h.heard = slices.Delete(h.heard, 0, 1)
	}
	h.heard = append(h.heard, from)
}

// maxLost bounds the peers remembered for merge probes.
const maxLost = 64

func (h *Chord) remember(addr node.Addr) {
	if addr == h.addr || slices.Contains(h.lost, addr) {
		return
	}
	if len(h.lost) == maxLost {
		h.lost = h.lost[1:]
	}
	h.lost = append(h.lost, addr)
}

// probe asks one peer we lost where our first vnode's ID belongs, and so
// finds rings that formed apart: the two sides of a partition, or hosts
// that lost their disks and restarted through one another. An answer of
// ourselves means the peer is in our ring. A closer successor than ours we
// adopt. Any other answer s is in a ring that lacks us (or has not taken us
// back yet), with our ID between s's predecessor there and s, so we notify
// s: it takes us as its predecessor, that predecessor takes us as its
// successor at its next round, and from that link stabilization zips the
// two rings together. (If the rings are one, s merely lists us among its
// predecessors.) Without the notify a ring apart whose members' true
// predecessors never lost them stays apart: a wiped founder and a wiped
// host that rejoined through it form a ring of two, each the other's
// successor, and no one else ever points at them.
func (h *Chord) probe(env node.Env) {
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
		switch {
		case s.ID == v.self.ID:
		case (len(v.succs) == 0 || s.ID.Between(v.self.ID, v.succs[0].ID)) && !h.isDead(env, s):
			v.succs = buildList(v.self.ID, h.cfg.Succs, nil, []wire.NodeRef{s}, v.succs)
			v.alone = false
		default:
			v.notify(env, s)
		}
	})
}

func (h *Chord) isDead(env node.Env, n wire.NodeRef) bool { return h.rt.IsDead(env, n.Addr) }

// RingInfo is the routing state of all vnodes, for `triad ring`.
func (h *Chord) RingInfo() *wire.RingInfo {
	info := &wire.RingInfo{}
	for _, v := range h.vnodes {
		info.Vnodes = append(info.Vnodes, v.Info())
	}
	return info
}

// IsDead reports whether n's process was declared dead recently.
func (h *Chord) IsDead(env node.Env, n wire.NodeRef) bool { return h.isDead(env, n) }

// CallFailed tells the ring that a call to n by a layer above failed: a
// timeout marks n's process dead, an error reply naming a missing vnode
// drops that vnode. Any other error (a missing block, a full disk) was an
// answer, so n is alive.
func (h *Chord) CallFailed(env node.Env, n wire.NodeRef, err error) {
	var we *wire.Error
	if h.cfg.Membership != nil {
		return
	}
	if errors.As(err, &we) || errors.Is(err, rpc.ErrTimeout) {
		before := h.neighbours()
		h.vnodes[0].callFailed(env, n, err)
		h.notifyIfChanged(env, before)
	}
}
