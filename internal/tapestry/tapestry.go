package tapestry

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"triad/internal/fault"
	"triad/internal/host"
	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/rpc"
	"triad/internal/wire"
)

// Application ids (A_id, §III-A) the node serves itself; others are
// registered with RegisterApp.
const (
	AppSystem uint32 = 0 // joins
	AppDOLR   uint32 = 1 // object location: the server is found
	AppFetch  uint32 = 2 // object location: the server answers with the object's bytes
)

// App is an application on the mesh (§IV-B upcalls).
type App interface {
	// Deliver runs at the destination: the key's root for a route to a
	// node, the server for a route to an object.
	Deliver(env node.Env, n *Node, m *wire.TapRoute)
	// Forward runs at every hop of a message sent with Upcall, with the
	// hop NEXTHOP chose (root: this node is the key's root). The
	// application sends the message on with n.Forward, to next or
	// elsewhere, or keeps it.
	Forward(env node.Env, n *Node, m *wire.TapRoute, next wire.NodeRef, root bool)
}

// Outcome is how a route this node started ended.
type Outcome struct {
	Status  wire.TapStatus
	Node    wire.NodeRef // where it was delivered
	Root    wire.NodeRef
	Servers []wire.NodeRef
	Hops    int
	Path    []wire.NodeRef
	Latency time.Duration // from the start to the outcome's arrival
	Payload []byte
	// Err is set when no outcome came within Config.RouteTimeout.
	Err error
}

// Done receives a route's outcome.
type Done func(env node.Env, o Outcome)

// ErrRouteTimeout is an Outcome's Err when no outcome came in time.
var ErrRouteTimeout = errors.New("tapestry: no outcome within the route timeout")

// Stats are a node's counters.
type Stats struct {
	Routed      uint64 // routes started here
	Forwarded   uint64 // hops sent on
	Delivered   uint64 // routes ended here
	Redirected  uint64 // object routes turned towards a server by a pointer here
	ServerMiss  uint64 // object routes that reached this server without the object
	Loops       uint64 // routes dropped past the hop bound
	Unreachable uint64 // routes dropped: no next hop answered
	HopRetries  uint64 // hops sent again through another link
	BadRequests uint64 // messages refused by Validate
	RateLimited uint64 // pointers refused: the peer sent too many
	Busy        uint64 // multicasts or routes refused: too many at once

	PointersStored    uint64
	PointerBatches    uint64 // TapPointers sent
	Republished       uint64 // objects republished by the timer
	PathRepublished   uint64 // pointers sent again after their next hop was lost
	RootHandovers     uint64 // root pointers moved to a new root
	Multicasts        uint64 // join multicasts this node took part in
	JoinsServed       uint64 // joins this node was the surrogate of
	Beacons           uint64
	LinksAdded        uint64
	LinksLost         uint64
	HolesRepaired     uint64 // entries refilled after a loss
	Joins             uint64 // this node's own joins completed
	JoinMessages      uint64 // messages this node sent while joining
	TimedOut          uint64 // routes started here that got no outcome
	MeasureFailures   uint64
	RepairQueries     uint64
	LeavesReceived    uint64
	BackupsResent     uint64 // root backups sent again because the hop they went to died (publish.go)
	UnknownDeliveries uint64
	Suspected         uint64 // links that missed a timeout and were probed
	FalseSuspects     uint64 // of those, links that answered the probe
	PointersDropped   uint64 // pointers not sent on: the outbox was full
	PointersShed      uint64 // of those, a peer's past its share of the outbox (publish.go)
	// PointersRefused are new pointers refused because their server
	// already names MaxPointersPerServer here; RemovesRefused are
	// unpublishes from a peer that neither is the pointer's server nor
	// gave it (issue 44).
	PointersRefused, RemovesRefused uint64
	// ServerChecks are the TapCheckServed this node sent; PointersForged
	// the pointers it dropped because their server said it does not
	// serve the key (confirm.go).
	ServerChecks, PointersForged uint64
	// ChecksDeferred are pointers left unconfirmed for now: their server
	// was asked its window's share already (confirm.go).
	ChecksDeferred uint64
}

// object is one object this node publishes.
type object struct {
	app     uint32
	expires time.Time // zero: until unpublished
}

// origin is a route this node started and waits on.
type origin struct {
	sent   time.Time
	done   Done
	cancel func()
}

// backpointer is a node whose table holds this one, at some levels.
type backpointer struct {
	ref    wire.NodeRef
	levels uint128
}

type uint128 [2]uint64

func (u *uint128) set(i int, on bool) {
	if on {
		u[i/64] |= 1 << (i % 64)
	} else {
		u[i/64] &^= 1 << (i % 64)
	}
}
func (u uint128) has(i int) bool { return u[i/64]&(1<<(i%64)) != 0 }
func (u uint128) zero() bool     { return u[0] == 0 && u[1] == 0 }

// Bounds on what peers can make a node hold.
const (
	maxBackpointers = 1 << 16
	maxOrigins      = 1 << 17
	maxPeerBuckets  = 4096
	hopAttempts     = 3
)

// Node is Tapestry on one host. Create it with New; the host runs it.
type Node struct {
	cfg  Config
	h    *host.Host
	self wire.NodeRef
	// bootstraps are the nodes a join goes through, one after another
	// as attempts fail (the configured one, then peers an earlier run
	// knew: a restarted node's first choice may be down).
	bootstraps []node.Addr
	table      table
	back       map[string]backpointer
	ptrs       pointers
	published  map[id.ID]object
	apps       map[uint32]App
	joined     bool
	join       *joinState
	routes     map[uint64]*origin
	joiners    map[string]recentJoiner // joins that passed through this node in the last joinWindow
	mcasts     int                     // multicast branches in progress
	measuring  map[string][]func(env node.Env, rtt time.Duration, ok bool)
	// suspects are links that missed a call's timeout, probed before they
	// are declared dead; routes go around them meanwhile.
	suspects map[string]bool
	// outbox holds pointer batches for the window (pump); queued counts
	// their pointers.
	outbox []*outBatch
	open   map[string]*outBatch // the batch queued last for a next hop
	queued int
	// queuedFrom counts the queued pointers each peer sent
	// (Config.MaxQueuedPerPeer).
	queuedFrom map[string]int
	inFlight   int
	leaving    bool
	buckets    map[string]*bucket
	stopped    bool
	saveDue    bool
	// savedRoots are the root pointers an earlier run saved (LoadRoots),
	// put back at Start; rootsDue is set while a save of them is due.
	savedRoots []RootPointer
	rootsDue   bool
	// benchRunning is set while a TapBench runs.
	benchRunning bool
	// checking are the pointers whose server is being asked, toCheck
	// those to ask at the next sendChecks, by server (confirm.go).
	checking map[checkKey]bool
	toCheck  map[string]*serverCheck
	// checkBudgets are the keys asked of each server in the current
	// window (confirm.go).
	checkBudgets map[string]checkBudget

	Stats Stats
}

// New makes the Tapestry node of the host h, with self's ID (the host's
// first ring ID) and the objects an earlier run published (LoadObjects),
// joining through the first of bootstraps that answers (none: the first
// node of a mesh), and registers it on h.
func New(cfg Config, h *host.Host, self wire.NodeRef, bootstraps []node.Addr, objects map[id.ID]Object, roots []RootPointer) (*Node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if self.ID.Width() != id.Bytes || self.Addr != h.Addr() {
		return nil, fmt.Errorf("tapestry: node %v must have a %d-byte ID and the host's address %s", self, id.Bytes, h.Addr())
	}
	n := &Node{
		cfg:          cfg,
		h:            h,
		self:         self,
		table:        newTable(self.ID, cfg.Links, cfg.DigitBits),
		back:         map[string]backpointer{},
		ptrs:         newPointers(cfg.MaxPointers, cfg.MaxPointersPerServer, !cfg.NoBloom),
		published:    map[id.ID]object{},
		apps:         map[uint32]App{},
		routes:       map[uint64]*origin{},
		joiners:      map[string]recentJoiner{},
		measuring:    map[string][]func(node.Env, time.Duration, bool){},
		suspects:     map[string]bool{},
		open:         map[string]*outBatch{},
		savedRoots:   roots,
		buckets:      map[string]*bucket{},
		checking:     map[checkKey]bool{},
		toCheck:      map[string]*serverCheck{},
		checkBudgets: map[string]checkBudget{},
		queuedFrom:   map[string]int{},
	}
	for k, o := range objects {
		n.published[k] = object{app: o.App, expires: o.Expires}
	}
	for _, b := range bootstraps {
		if b != "" && b != h.Addr() && !slices.Contains(n.bootstraps, b) {
			n.bootstraps = append(n.bootstraps, b)
		}
	}
	if err := h.Register(wire.TypeTapRoute, n); err != nil {
		return nil, err
	}
	return n, nil
}

// RegisterApp adds an application under app (above AppFetch).
func (n *Node) RegisterApp(app uint32, a App) error {
	if app <= AppFetch || app >= wire.MaxTapApp {
		return fmt.Errorf("tapestry: application id %d is reserved or too large", app)
	}
	n.apps[app] = a
	return nil
}

// Self is the node's reference.
func (n *Node) Self() wire.NodeRef { return n.self }

// Host is the runtime the node runs on.
func (n *Node) Host() *host.Host { return n.h }

// Joined reports whether the node has finished inserting itself.
func (n *Node) Joined() bool { return n.joined }

// Levels is the number of digits of an ID in the node's base.
func (n *Node) Levels() int { return n.table.levels }

// Timers of the protocol.
type (
	beaconTimer    struct{}
	repairTimer    struct{}
	settleTimer    struct{ round int }
	republishTimer struct{}
	expireTimer    struct{}
	joinTimer      struct{ attempt int }
	saveTimer      struct{}
	rootsTimer     struct{}
	routeTimer     struct{ seq uint64 }
)

func (beaconTimer) String() string    { return "tapestry-beacon" }
func (repairTimer) String() string    { return "tapestry-repair" }
func (t settleTimer) String() string  { return fmt.Sprintf("tapestry-settle(%d)", t.round) }
func (republishTimer) String() string { return "tapestry-republish" }
func (expireTimer) String() string    { return "tapestry-expire" }
func (t joinTimer) String() string    { return fmt.Sprintf("tapestry-join(%d)", t.attempt) }
func (saveTimer) String() string      { return "tapestry-save" }
func (rootsTimer) String() string     { return "tapestry-save-roots" }
func (t routeTimer) String() string   { return fmt.Sprintf("tapestry-route(%x)", t.seq) }

// jitter is d times a random factor in [0.75, 1.25), so that nodes
// started together do not beat in step. (It was [0.5, 1.5): a beacon then
// came up to 30 s after the last with the default 20 s, and a dead root
// was noticed past the 30 s its objects must be found again within; 2 of
// 40 seeded meshes of TestKilledRootIsRepairedWithin30s failed so.)
func jitter(env node.Env, d time.Duration) time.Duration {
	return d*3/4 + time.Duration(env.Rand().Int64N(int64(d/2)))
}

// Start joins the mesh (or founds it) and starts the periodic work.
func (n *Node) Start(env node.Env) {
	env.After(jitter(env, n.cfg.Beacon), beaconTimer{})
	env.After(jitter(env, n.cfg.Repair), repairTimer{})
	env.After(jitter(env, n.cfg.Republish), republishTimer{})
	env.After(n.cfg.PointerTTL()/4, expireTimer{})
	n.restoreRoots(env)
	if len(n.bootstraps) == 0 {
		n.joined = true
		n.republishAll(env)
		return
	}
	n.startJoin(env, 0)
}

// Timer handles the protocol's timers.
func (n *Node) Timer(env node.Env, t node.Timer) bool {
	switch t := t.(type) {
	case beaconTimer:
		n.beacon(env)
		env.After(jitter(env, n.cfg.Beacon), beaconTimer{})
	case repairTimer:
		n.repairRound(env)
		env.After(jitter(env, n.cfg.Repair), repairTimer{})
	case settleTimer:
		n.repairRound(env)
		if t.round+1 < len(settleAfter) {
			env.After(settleAfter[t.round+1]-settleAfter[t.round], settleTimer{round: t.round + 1})
		}
	case republishTimer:
		n.republishAll(env)
		env.After(jitter(env, n.cfg.Republish), republishTimer{})
	case expireTimer:
		if n.ptrs.expire(env.Now()) > 0 {
			n.rootsChanged(env)
		}
		n.expireObjects(env)
		env.After(n.cfg.PointerTTL()/4, expireTimer{})
	case joinTimer:
		if !n.joined && n.join != nil && n.join.attempt == t.attempt {
			n.startJoin(env, t.attempt+1)
		}
	case saveTimer:
		n.saveDue = false
		env.Offload(&saveWork{data: encodeObjects(n.objects())})
	case rootsTimer:
		n.rootsDue = false
		env.Offload(&saveRootsWork{data: encodeRoots(n.rootPointers())})
	case routeTimer:
		o := n.routes[t.seq]
		if o == nil {
			return true
		}
		delete(n.routes, t.seq)
		n.Stats.TimedOut++
		o.done(env, Outcome{Err: ErrRouteTimeout, Latency: env.Now().Sub(o.sent)})
	default:
		return false
	}
	return true
}

// Work handles the results of the protocol's offloaded work.
func (n *Node) Work(env node.Env, done node.WorkDone) bool {
	switch w := done.W.(type) {
	case *saveWork, *saveRootsWork:
		return true // a failed save is retried by the next change
	case *putWork:
		w.then(env, done.Err)
		return true
	case *getWork:
		data, _ := done.Result.([]byte)
		w.then(env, data, done.Err)
		return true
	}
	return false
}

// Receive handles the protocol's requests and one-way messages.
func (n *Node) Receive(env node.Env, in node.MsgIn) {
	if n.stopped {
		return
	}
	from := in.Env.From
	if err := n.checkNode(from); err != nil {
		n.Stats.BadRequests++
		if in.Env.Kind == wire.Request {
			rpc.RespondError(env, in, n.self, fault.CodeBadRequest, err.Error())
		}
		return
	}
	switch m := in.Env.Msg.(type) {
	case *wire.TapRoute:
		if !n.joined {
			// Its table is being built: a route would end here as at a
			// root. The sender goes around it.
			n.Stats.Busy++
			rpc.RespondError(env, in, n.self, fault.CodeBusy, "tapestry: joining")
			return
		}
		rpc.Respond(env, in, n.self, &wire.Ack{})
		n.arrive(env, m)
	case *wire.TapRouteDone:
		n.delivered(env, m)
	case *wire.TapPointers:
		if !n.allow(env, from.Addr, len(m.Pointers)) {
			n.Stats.RateLimited += uint64(len(m.Pointers))
			rpc.RespondError(env, in, n.self, fault.CodeBusy, "tapestry: too many pointers from this peer")
			return
		}
		rpc.Respond(env, in, n.self, &wire.Ack{})
		n.handlePointers(env, from.Addr, m.Pointers)
	case *wire.TapMulticast:
		n.receiveMulticast(env, in, m)
	case *wire.TapNearby:
		rpc.Respond(env, in, n.self, n.nearby(int(m.Level)))
		if !from.IsZero() {
			n.consider(env, from)
		}
	case *wire.TapNotify:
		n.notified(env, from, m)
	case *wire.TapJoined:
		n.joinedBy(env, from, m)
	case *wire.TapLeave:
		n.left(env, from, m)
	case *wire.TapGetTable:
		rpc.Respond(env, in, n.self, n.Table())
	case *wire.TapPublish:
		n.clientPublish(env, in, m)
	case *wire.TapUnpublish:
		n.Unpublish(env, m.Key)
		rpc.Respond(env, in, n.self, &wire.Ack{})
	case *wire.TapCheckServed:
		rpc.Respond(env, in, n.self, n.served(env, m))
	case *wire.TapLocate:
		n.clientLocate(env, in, m)
	case *wire.TapBench:
		n.bench(env, in, m)
	default:
		if in.Env.Kind == wire.Request {
			rpc.RespondError(env, in, n.self, fault.CodeBadRequest, fmt.Sprintf("tapestry: %v is not a request", m.Type()))
		}
	}
}

// PeerDown drops a dead peer: from the table (its backups are promoted
// and an emptied entry is refilled from the level's other nodes), from
// the backpointers, and as a next hop or a server of pointers held.
func (n *Node) PeerDown(env node.Env, addr node.Addr) {
	n.forget(env, addr)
}

// Stop leaves gracefully: the node unpublishes its objects, hands its root
// pointers to their next roots and tells the nodes that point at it, with
// a replacement per level (§III-C2).
func (n *Node) Stop(env node.Env) {
	n.leave(env)
	n.stopped = true
}

// send sends a one-way message to ref.
func (n *Node) send(env node.Env, ref wire.NodeRef, m wire.Msg) {
	env.Send(ref.Addr, wire.Envelope{Kind: wire.OneWay, From: n.self, To: ref.ID, Msg: m})
}

// call sends a request to ref and runs cont with the outcome; a timeout
// makes ref a suspect. It reports false when too many calls are in
// flight.
func (n *Node) call(env node.Env, ref wire.NodeRef, m wire.Msg, timeout time.Duration, cont rpc.Reply) bool {
	return n.h.Call(env, ref.Addr, n.self, ref.ID, m, timeout, func(env node.Env, reply wire.Msg, err error) {
		if errors.Is(err, rpc.ErrTimeout) {
			n.suspect(env, ref)
		}
		if cont != nil {
			cont(env, reply, err)
		}
	})
}

// suspect probes ref, which missed a call's timeout, with a patient ping:
// an answer queued behind a burst on a slow access link is late, not
// lost, and a false death would cost a live node its place in every table
// here and the pointers that name it. Only a probe that goes unanswered
// too declares ref dead (§III-C3: beacons, then the backup takes over).
// Routes go around ref while it is probed.
func (n *Node) suspect(env node.Env, ref wire.NodeRef) {
	if n.suspects[ref.Addr] || n.stopped {
		return
	}
	n.suspects[ref.Addr] = true
	n.Stats.Suspected++
	ok := n.h.Call(env, ref.Addr, n.self, ref.ID, &wire.Ping{}, n.cfg.ConfirmTimeout, func(env node.Env, _ wire.Msg, err error) {
		delete(n.suspects, ref.Addr)
		if errors.Is(err, rpc.ErrTimeout) {
			n.h.MarkDead(env, ref.Addr)
			return
		}
		n.Stats.FalseSuspects++
	})
	if !ok {
		delete(n.suspects, ref.Addr)
		n.h.MarkDead(env, ref.Addr)
	}
}

// avoid reports whether routes should go around addr for now.
func (n *Node) avoid(addr string) bool { return n.suspects[addr] }

// rttTo is the round trip to ref: measured, else predicted, else an hour
// (sorted last).
func (n *Node) rttTo(ref wire.NodeRef) time.Duration {
	if ref.Addr == n.self.Addr {
		return 0
	}
	if rtt, ok := n.h.Predict(ref.Addr); ok {
		return rtt
	}
	return time.Hour
}

// measure finds the round trip to ref, pinging it unless it was measured,
// and runs fn with it (ok false: it did not answer). The least round trip
// seen is the measure: a smoothed one moves with the load of the moment
// (a join's burst), and tables ranked by it keep far nodes as primaries.
func (n *Node) measure(env node.Env, ref wire.NodeRef, fn func(env node.Env, rtt time.Duration, ok bool)) {
	if rtt, ok := n.h.RPC().MinRTT(ref.Addr); ok {
		fn(env, rtt, true)
		return
	}
	if waiting, busy := n.measuring[ref.Addr]; busy {
		n.measuring[ref.Addr] = append(waiting, fn)
		return
	}
	n.measuring[ref.Addr] = []func(node.Env, time.Duration, bool){fn}
	sent := env.Now()
	ok := n.call(env, ref, &wire.Ping{}, 0, func(env node.Env, _ wire.Msg, err error) {
		waiting := n.measuring[ref.Addr]
		delete(n.measuring, ref.Addr)
		rtt, measured := n.h.RPC().MinRTT(ref.Addr)
		if !measured {
			rtt = env.Now().Sub(sent)
		}
		if err != nil {
			n.Stats.MeasureFailures++
		}
		for _, f := range waiting {
			f(env, rtt, err == nil)
		}
	})
	if !ok {
		delete(n.measuring, ref.Addr)
		fn(env, 0, false)
	}
}

// consider measures ref and puts it in the table where it is nearer than
// what the entry holds (or the entry has room).
func (n *Node) consider(env node.Env, ref wire.NodeRef) {
	if ref.Addr == n.self.Addr || ref.ID.Width() != id.Bytes || n.h.IsDead(env, ref.Addr) {
		return
	}
	if _, _, ok := n.table.place(ref); !ok {
		return
	}
	n.measure(env, ref, func(env node.Env, rtt time.Duration, ok bool) {
		if ok && !n.stopped {
			n.addLink(env, ref, rtt)
		}
	})
}

// addLink puts ref in the table and does what follows: ref is told it has
// a backpointer, a link pushed out is told it lost one, and a hole filled
// may make ref the root of pointers held here as root.
func (n *Node) addLink(env node.Env, ref wire.NodeRef, rtt time.Duration) {
	known := n.table.contains(ref.Addr)
	added, _, evicted := n.table.add(ref, rtt)
	if !added {
		return
	}
	level, _, _ := n.table.place(ref)
	if !known {
		n.Stats.LinksAdded++
		n.send(env, ref, &wire.TapNotify{Kind: wire.TapPointsAt, Level: uint32(level)})
	}
	if !evicted.IsZero() {
		n.send(env, evicted, &wire.TapNotify{Kind: wire.TapDropped, Level: uint32(level)})
	}
	// A filled hole may make ref a root of pointers held here; a link
	// that became primary or pushed one out changes their next hop, and
	// the old one may die unnoticed here, its root with it.
	n.handOverRoots(env)
}

// notified records backpointers; a node that points at this one, or says
// hello, is considered for the table too.
func (n *Node) notified(env node.Env, from wire.NodeRef, m *wire.TapNotify) {
	if from.IsZero() {
		return
	}
	switch m.Kind {
	case wire.TapPointsAt, wire.TapDropped:
		b, ok := n.back[from.Addr]
		if !ok && m.Kind == wire.TapPointsAt && len(n.back) >= maxBackpointers {
			return
		}
		b.ref = from
		b.levels.set(int(m.Level), m.Kind == wire.TapPointsAt)
		if b.levels.zero() {
			delete(n.back, from.Addr)
		} else {
			n.back[from.Addr] = b
		}
	}
	if m.Kind != wire.TapDropped {
		n.consider(env, from)
	}
}

// forget drops a peer that died or left.
func (n *Node) forget(env node.Env, addr node.Addr) {
	delete(n.back, addr)
	delete(n.joiners, addr)
	for _, s := range n.table.remove(addr) {
		n.Stats.LinksLost++
		if len(n.table.entry(s.level, s.digit)) < n.cfg.Links {
			n.repairEntry(env, s)
		}
	}
	n.repathPointers(env, addr)
}

// sortedBack returns the backpointers in address order.
func (n *Node) sortedBack() []backpointer {
	out := make([]backpointer, 0, len(n.back))
	for _, b := range n.back {
		out = append(out, b)
	}
	slices.SortFunc(out, func(a, b backpointer) int { return strings.Compare(a.ref.Addr, b.ref.Addr) })
	return out
}

// checkNode applies Config.CheckNode to a node heard from or named.
func (n *Node) checkNode(r wire.NodeRef) error {
	if n.cfg.CheckNode == nil || r.IsZero() {
		return nil
	}
	return n.cfg.CheckNode(r)
}

// Validate refuses what no node sends: keys of another width, levels past
// the table, digits past the base, hop counts past the bound, unknown
// applications and operations, pointers living past the bound.
func (n *Node) Validate(m wire.Msg) error {
	err := n.validate(m)
	if err != nil {
		n.Stats.BadRequests++
	}
	return err
}

func (n *Node) validate(m wire.Msg) error {
	levels := uint32(n.table.levels)
	key := func(k id.ID) error {
		if k.Width() != id.Bytes {
			return fmt.Errorf("tapestry: a key of %d bytes, want %d", k.Width(), id.Bytes)
		}
		return nil
	}
	ref := func(r wire.NodeRef) error {
		if r.IsZero() {
			return nil
		}
		if err := key(r.ID); err != nil {
			return err
		}
		if r.Addr == "" {
			return errors.New("tapestry: a node without an address")
		}
		// A node named inside a message claims its ID; on real nodes it
		// must be derived from its address, as a sender's is, or one
		// certificate could seed others' tables with any IDs it likes.
		if err := n.h.CheckRef(r); err != nil {
			return err
		}
		return n.checkNode(r)
	}
	refs := func(l []wire.NodeRef) error {
		for _, r := range l {
			if err := ref(r); err != nil {
				return err
			}
		}
		return nil
	}
	switch m := m.(type) {
	case *wire.TapRoute:
		switch {
		case m.Op < wire.TapToNode || m.Op > wire.TapToServer:
			return fmt.Errorf("tapestry: unknown operation %d", m.Op)
		case m.Level > levels:
			return fmt.Errorf("tapestry: level %d past %d", m.Level, levels)
		case m.Hops > wire.MaxTapHops:
			return fmt.Errorf("tapestry: %d hops past the bound %d", m.Hops, wire.MaxTapHops)
		case !n.knownApp(m.App, m.Op):
			return fmt.Errorf("tapestry: unknown application %d", m.App)
		case m.Origin.IsZero():
			return errors.New("tapestry: a route without an origin")
		}
		if err := key(m.Key); err != nil {
			return err
		}
		return errors.Join(ref(m.Origin), refs(m.Exclude), refs(m.Path))
	case *wire.TapRouteDone:
		return errors.Join(ref(m.Node), ref(m.Root), refs(m.Servers), refs(m.Path))
	case *wire.TapPointers:
		for _, p := range m.Pointers {
			switch {
			case p.Level > levels:
				return fmt.Errorf("tapestry: level %d past %d", p.Level, levels)
			case p.Hops > wire.MaxTapHops:
				return fmt.Errorf("tapestry: %d hops past the bound", p.Hops)
			case p.TTLMillis > wire.MaxTapTTLMillis:
				return fmt.Errorf("tapestry: a pointer living %d ms", p.TTLMillis)
			case !n.knownApp(p.App, wire.TapToObject):
				return fmt.Errorf("tapestry: unknown application %d", p.App)
			case p.Server.IsZero():
				return errors.New("tapestry: a pointer without a server")
			}
			if err := errors.Join(key(p.Key), ref(p.Server)); err != nil {
				return err
			}
		}
	case *wire.TapMulticast:
		if m.Prefix >= levels || m.Level > levels || m.Level < m.Prefix {
			return fmt.Errorf("tapestry: multicast prefix %d, level %d", m.Prefix, m.Level)
		}
		return errors.Join(ref(m.Joiner), refs(m.Others))
	case *wire.TapNearby:
		if m.Level >= levels {
			return fmt.Errorf("tapestry: level %d past %d", m.Level, levels)
		}
	case *wire.TapNotify:
		if m.Level >= levels || m.Kind < wire.TapPointsAt || m.Kind > wire.TapHello {
			return fmt.Errorf("tapestry: notify kind %d at level %d", m.Kind, m.Level)
		}
	case *wire.TapJoined:
		if m.Prefix >= levels {
			return fmt.Errorf("tapestry: prefix %d past %d", m.Prefix, levels)
		}
		return refs(m.Nodes)
	case *wire.TapNodes:
		return refs(m.Nodes)
	case *wire.TapLeave:
		return refs(m.Replacements)
	case *wire.TapTable:
		for _, e := range m.Entries {
			if e.Level >= levels || e.Digit >= uint32(n.table.base) {
				return fmt.Errorf("tapestry: entry (%d, %d) outside the table", e.Level, e.Digit)
			}
		}
	case *wire.TapUnpublish:
		return key(m.Key)
	case *wire.TapCheckServed:
		for _, k := range m.Keys {
			if err := key(k); err != nil {
				return err
			}
		}
	case *wire.TapServed:
		for _, k := range m.Keys {
			if err := key(k); err != nil {
				return err
			}
		}
	case *wire.TapLocate:
		if m.App != AppSystem && !n.knownApp(m.App, wire.TapToObject) { // 0: location
			return fmt.Errorf("tapestry: unknown application %d", m.App)
		}
		return key(m.Key)
	case *wire.TapBench:
		return key(m.Key)
	case *wire.TapPublish:
		if m.TTLMillis > wire.MaxTapTTLMillis || m.App != AppSystem && !n.knownApp(m.App, wire.TapToObject) { // 0: location
			return errors.New("tapestry: a publish of an unknown application or past the longest expiry")
		}
	}
	return nil
}

// knownApp reports whether app may be named in a message for op: the
// system's for joins only, the built-in location ones, or registered.
func (n *Node) knownApp(app uint32, op wire.TapOp) bool {
	switch app {
	case AppSystem:
		return op == wire.TapJoin
	case AppDOLR, AppFetch:
		return op != wire.TapJoin
	}
	_, ok := n.apps[app]
	return ok && op != wire.TapJoin
}

// bucket is one peer's allowance of pointers (a token bucket).
type bucket struct {
	tokens float64
	at     time.Time
}

// allow takes k pointers from the sender's allowance.
func (n *Node) allow(env node.Env, addr string, k int) bool {
	now := env.Now()
	b := n.buckets[addr]
	if b == nil {
		if len(n.buckets) >= maxPeerBuckets {
			for a, x := range n.buckets { // drop the idle: full again by now
				if now.Sub(x.at) > 2*time.Second {
					delete(n.buckets, a)
				}
			}
			if len(n.buckets) >= maxPeerBuckets {
				return false
			}
		}
		b = &bucket{tokens: 2 * n.cfg.PublishRate, at: now}
		n.buckets[addr] = b
	}
	b.tokens = min(2*n.cfg.PublishRate, b.tokens+now.Sub(b.at).Seconds()*n.cfg.PublishRate)
	b.at = now
	if b.tokens < float64(k) {
		return false
	}
	b.tokens -= float64(k)
	return true
}
