package d2

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"time"

	"triad/internal/fault"
	"triad/internal/host"
	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/rpc"
	"triad/internal/store"
	"triad/internal/wire"
)

const maxBlockBytes = wire.MaxD2Block

// Errors of the client API.
var (
	ErrNotFound  = fmt.Errorf("d2: %w", fault.ErrNotFound)
	ErrBusy      = fmt.Errorf("d2: %w: too many requests in flight", fault.ErrBusy)
	ErrNoRoute   = fmt.Errorf("d2: %w", fault.ErrNoRoute)
	ErrBadKey    = fmt.Errorf("d2: %w: a key must be %d bytes", fault.ErrBadRequest, KeyBytes)
	ErrTooLarge  = fmt.Errorf("d2: %w", fault.ErrTooLarge)
	ErrNotJoined = fmt.Errorf("d2: %w", fault.ErrJoining)
	// ErrUnavailable answers a Latest whose owner did not answer, or
	// whose key's bytes no holder could give.
	ErrUnavailable = fmt.Errorf("d2: %w", fault.ErrUnavailable)
)

// Stats are a node's counters: what an experiment reads.
type Stats struct {
	Lookups        uint64 // lookups started here (client requests whose cache missed, joins, moves)
	LookupHops     uint64 // their steps, summed: D2FindSucc requests sent
	LookupFailures uint64
	LookupMsgs     uint64 // D2FindSucc requests sent and answered here
	CacheHits      uint64 // client requests sent straight to a cached owner
	CacheMisses    uint64 // client requests that needed a lookup
	CacheWrong     uint64 // cached owners that said the key was not theirs

	Puts, Gets, Deletes, Latests uint64 // client requests served as the gateway
	Lists                        uint64 // D2List requests served as the gateway
	StatReqs                     uint64 // D2Stat requests served as the gateway
	BytesWritten                 uint64 // block bytes stored here (every copy counts where it lands)
	Mismatches                   uint64 // blocks whose content hash did not match: skipped
	Repaired                     uint64 // copies given to holders that lacked a block a get found elsewhere
	LostLocal                    uint64 // blocks the engine no longer had (quarantined, lost): unlisted, to be put back
	NotFound                     uint64
	Conflicts                    uint64 // puts whose condition did not hold at this owner: nothing stored
	PutsQueued                   uint64 // puts that waited at this owner for an earlier put of their key

	Founded          uint64 // rings founded again after a cold start: every reachable saved peer waited to join (ring.go)
	RingsJoined      uint64 // successors found on another ring through a lost or saved peer: rings split by a partition merging (ring.go)
	Doubts           uint64 // arcs that came into the replica range through failures, doubted for Config.Doubt (doubt.go)
	DoubtsSettled    uint64 // doubts ended before Config.Doubt: a majority of the arc's holders vouched and this node caught up with them (settle.go)
	Unvouched        uint64 // Latests and conditional puts answered unavailable: no holder vouched for the key (doubt.go)
	RingProbeMsgs    uint64 // D2FindSucc requests sent looking for another ring (ring.go): maintenance, not counted in LookupHops
	Moves            uint64 // load-balancing moves this node made
	Probes           uint64
	PointersReceived uint64
	PointersFetched  uint64
	MigratedBytes    uint64 // block bytes fetched for pointers or pushed to replicas
	PointerBytes     uint64 // of those, the bytes fetched for pointers
	ReplicasPushed   uint64
	ReplicasPulled   uint64 // newer copies taken from a successor at sync: a replace this node missed
	Dropped          uint64 // blocks and pointers dropped: no longer this node's to keep
	DeletesRepeated  uint64 // copies a replica still held of a key deleted here, dropped at sync

	BadRequests      uint64 // messages refused by Validate
	QuotaRefused     uint64 // name claims past a client's quota (quota.go)
	CopiesUnverified uint64 // copies an owner claimed that its holders did not confirm (verify.go)
	GatewayCopies    uint64 // copies a gateway placed itself after the owner's claim fell short (verify.go)
	CopiesConfirmed  uint64 // relayed puts whose replicas told the gateway of their copies themselves: no holder asked (verify.go)
	Audits           uint64 // possession challenges sent to replica partners (audit.go)
	AuditsFailed     uint64 // partners found lacking a key they had acknowledged: distrusted (audit.go)
	Unauthorized     uint64 // client puts and deletes without the volume writer's valid signature, and registry writes other than put if absent: refused, nothing changed (auth.go)
	RefusedPositions uint64 // positions claimed for another sender, refused
	MovesDropped     uint64 // joins refused: their node moved within the probe interval
	Busy             uint64 // requests refused: too many in flight
}

// Node is D2 on one host: a position on D2's ring, the blocks it stores,
// its lookup cache and its load balancing. Create it with New; the host
// runs it.
type Node struct {
	cfg        Config
	h          *host.Host
	engine     store.Engine
	self       wire.NodeRef // the host's ring reference: the envelopes' sender
	pos        id.ID
	bootstraps []node.Addr

	joined   bool
	joinSeq  int
	pred     wire.D2Ref
	preds    []wire.D2Ref // pred first, as far as r back
	succs    []wire.D2Ref
	links    []wire.D2Ref // links[i]: the node about 2^i nodes on
	building []wire.D2Ref // the links of the round in progress
	fixing   bool
	stopped  bool
	lastMove time.Time
	// rejoin are nodes near the last move's target, to rejoin through
	// if that join fails (a first node has no bootstraps).
	rejoin []node.Addr
	// lost are the peers dropped from the lists, newest last: where a
	// ring split off by a partition is looked for (probeOtherRing).
	lost    []node.Addr
	merging bool // a probeOtherRing lookup is in flight
	surveys int  // cold-start surveys made (ring.go's founds)
	// heldLo is the low end of the replica range last recorded (kept in
	// the position file), heldKnown whether there is one; doubts are the
	// arcs of it not vouched for yet (doubt.go).
	heldLo     id.ID
	heldKnown  bool
	heldLoaded bool // the position file was read for a saved range
	doubts     []doubt
	doubtGen   uint64 // addDoubt's count: a settle that saw an older one is dropped
	settleNext int    // the doubt the next settle round tries (settle.go)
	settling   bool   // a settle round is in flight
	// sameRing are lost or saved peers a probe found on this node's own
	// ring: not probed again until lost again, so a settled ring sends
	// no probes.
	sameRing []node.Addr

	idx     index
	cache   cache
	pending int // client requests and lookups in flight
	seen    map[node.Addr]seenPos
	// strays are the keys found outside this node's replicas at the last
	// sync round.
	strays map[id.ID]bool
	// suspects are peers that missed a call's timeout, being probed.
	suspects map[node.Addr]bool
	// lacking are the keys audited partners lacked, by when they
	// acknowledged the copy given then; distrusted the partners that
	// failed an audit, until when (audit.go).
	lacking    map[auditKey]lack
	distrusted map[node.Addr]time.Time
	// putting holds the state of each key with a put in progress at this
	// owner, and the puts waiting for it (put.go).
	putting map[id.ID]*keyPut
	// confirming holds, as a gateway, the replicas' D2Kept of each
	// relayed put still waiting for its owner's answer, by tag; lastTag
	// is the last tag given (verify.go).
	confirming map[uint64]*confirmWait
	lastTag    uint64
	// claims counts the names each client claimed through this node,
	// claimsLoaded whether ClaimsFile has been read (quota.go).
	claims       map[string]int
	claimsLoaded bool
	// tombs are the keys deleted here recently (tombs.go).
	tombs tombs
	// primary is the primary load and median last counted (balance.go).
	primary primaryCount

	Stats Stats
}

// seenPos is a peer's last position and when it changed: a node may move
// once per probe interval.
type seenPos struct {
	pos     id.ID
	changed time.Time
}

const maxSeen = 1 << 14

// New makes the D2 node of the host h, with self the host's ring
// reference, pos its first position (64 bytes), engine its store of 64-byte
// keys (a second engine, Options.KeyWidth 64, kept across restarts by the
// driver), joining through the first of bootstraps that answers (none: the
// first node of a ring), and registers it on h.
func New(cfg Config, h *host.Host, self wire.NodeRef, pos id.ID, engine store.Engine, bootstraps []node.Addr) (*Node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if self.ID.Width() != id.Bytes || self.Addr != h.Addr() {
		return nil, fmt.Errorf("d2: node %v must have a %d-byte ring ID and the host's address %s", self, id.Bytes, h.Addr())
	}
	if pos.Width() != KeyBytes {
		return nil, fmt.Errorf("d2: a position of %d bytes, want %d", pos.Width(), KeyBytes)
	}
	if engine == nil {
		return nil, errors.New("d2: no engine")
	}
	n := &Node{cfg: cfg, h: h, engine: engine, self: self, pos: pos, idx: newIndex(), seen: map[node.Addr]seenPos{}, suspects: map[node.Addr]bool{},
		putting: map[id.ID]*keyPut{}, confirming: map[uint64]*confirmWait{}, claims: map[string]int{}}
	n.cache.max = cfg.MaxCache
	for _, b := range bootstraps {
		if b != "" && b != h.Addr() && !slices.Contains(n.bootstraps, b) {
			n.bootstraps = append(n.bootstraps, b)
		}
	}
	if err := h.Register(wire.TypeD2Join, n); err != nil {
		return nil, err
	}
	return n, nil
}

// Me is the node's reference: its host's and its position.
func (n *Node) Me() wire.D2Ref { return wire.D2Ref{Node: n.self, Pos: n.pos} }

// Host is the runtime the node runs on.
func (n *Node) Host() *host.Host { return n.h }

// CacheLen is the number of lookup-cache entries.
func (n *Node) CacheLen() int { return n.cache.Len() }

// Joined reports whether the node holds a position on the ring.
func (n *Node) Joined() bool { return n.joined }

// Pred is the node's predecessor (zero: none known).
func (n *Node) Pred() wire.D2Ref { return n.pred }

// Succs are the node's successors, nearest first (a copy).
func (n *Node) Succs() []wire.D2Ref { return slices.Clone(n.succs) }

// Links are the node's long links, nearest first (a copy).
func (n *Node) Links() []wire.D2Ref { return slices.Clone(n.links) }

// Load is the node's primary load: the blocks (and pointers) whose keys
// lie in its range.
func (n *Node) Load() int { return n.primaryLoad().load }

// Held is the number of keys the node holds, blocks and pointers, primary
// and replica.
func (n *Node) Held() int { return n.idx.len() }

// Holds reports whether the node holds k's block, or a pointer to it.
func (n *Node) Holds(k id.ID) (block, pointer bool) {
	e, ok := n.idx.get(k)
	return ok && !e.pointer(), ok && e.pointer()
}

// Pointers is the number of block pointers the node holds.
func (n *Node) Pointers() int { return n.idx.pointers }

// Timers of the protocol.
type (
	stabilizeTimer struct{}
	linksTimer     struct{}
	probeTimer     struct{}
	syncTimer      struct{}
	// restartSyncTimer is one sync round soon after a restart with blocks
	// kept: the node compares them with its successors' and takes the
	// replaces it missed while down.
	restartSyncTimer struct{}
	joinTimer        struct{ seq int }
)

func (stabilizeTimer) String() string   { return "d2-stabilize" }
func (linksTimer) String() string       { return "d2-links" }
func (probeTimer) String() string       { return "d2-probe" }
func (syncTimer) String() string        { return "d2-sync" }
func (restartSyncTimer) String() string { return "d2-restart-sync" }
func (t joinTimer) String() string      { return fmt.Sprintf("d2-join(%d)", t.seq) }

// jitter is d times a random factor in [0.5, 1.5), so that nodes started
// together do not beat in step.
func jitter(env node.Env, d time.Duration) time.Duration {
	return d/2 + time.Duration(env.Rand().Int64N(int64(d)))
}

// Start joins the ring (or founds it) and starts the periodic work.
func (n *Node) Start(env node.Env) {
	env.After(jitter(env, n.cfg.Stabilize), stabilizeTimer{})
	env.After(jitter(env, n.cfg.FixLinks), linksTimer{})
	// The first sync round comes soon: a restarted node compares what it
	// kept with its successors, and takes the replaces it missed.
	env.After(jitter(env, n.cfg.Sync), syncTimer{})
	if n.cfg.Threshold > 0 {
		env.After(jitter(env, n.cfg.Probe), probeTimer{})
	}
	n.loadIndex(env)
	env.Offload(&loadHeldWork{pos: n.pos})
	env.Offload(&loadClaimsWork{})
	if len(n.bootstraps) == 0 {
		n.joined = true
		n.noteRange(env)
		return
	}
	n.join(env, n.bootstraps[0])
}

// savePosition keeps the node's position for its next run (PositionFile):
// a position is the node's place in the balance, not derived from its
// address.
func (n *Node) savePosition(env node.Env) {
	var held *id.ID
	if n.heldKnown {
		held = &n.heldLo
	}
	env.Offload(&savePositionWork{data: encodePosition(n.pos, held)})
}

// Timer handles the protocol's timers.
func (n *Node) Timer(env node.Env, t node.Timer) bool {
	switch t := t.(type) {
	case stabilizeTimer:
		n.stabilize(env)
		n.settleDoubts(env)
		env.After(jitter(env, n.cfg.Stabilize), stabilizeTimer{})
	case linksTimer:
		n.fixLinks(env)
		n.probeOtherRing(env)
		env.After(jitter(env, n.cfg.FixLinks), linksTimer{})
	case probeTimer:
		n.probe(env)
		env.After(jitter(env, n.cfg.Probe), probeTimer{})
	case syncTimer:
		n.sync(env)
		env.After(jitter(env, n.cfg.Sync), syncTimer{})
	case restartSyncTimer:
		if !n.joined {
			env.After(n.cfg.Stabilize, restartSyncTimer{}) // once it is back on the ring
			break
		}
		n.sync(env)
	case joinTimer:
		if !n.joined && t.seq == n.joinSeq && !n.stopped {
			boot := append(slices.Clone(n.bootstraps), n.rejoin...)
			if len(boot) == 0 {
				n.joined = true // alone again: found the ring afresh
				n.noteRange(env)
				return true
			}
			n.survey(env, boot)
		}
	default:
		return false
	}
	return true
}

// Work handles the results of the protocol's offloaded work.
func (n *Node) Work(env node.Env, done node.WorkDone) bool {
	if _, ok := done.W.(*loadHeldWork); ok {
		h, _ := done.Result.(heldLoaded)
		n.tookHeld(env, h)
		n.savePosition(env)
		return true
	}
	if _, ok := done.W.(*savePositionWork); ok {
		return true // a failed save is made again at the next move or start
	}
	switch done.W.(type) {
	case *loadClaimsWork:
		counts, _ := done.Result.(map[string]int)
		n.tookClaims(env, counts)
		return true
	case *saveClaimsWork:
		return true // a failed save is made again at the next claim
	}
	w, ok := done.W.(*engineWork)
	if !ok || w.owner != n {
		return false
	}
	if !n.stopped {
		w.done(env, done.Result, done.Err)
	}
	return true
}

// Receive handles the protocol's requests and one-way messages.
func (n *Node) Receive(env node.Env, in node.MsgIn) {
	if n.stopped {
		return
	}
	from := in.Env.From
	switch m := in.Env.Msg.(type) {
	case *wire.D2Join:
		n.handleJoin(env, in, m)
	case *wire.D2GetNeighbors:
		if !n.joined {
			rpc.RespondError(env, in, n.self, fault.CodeJoining, "d2: joining")
			return
		}
		rpc.Respond(env, in, n.self, n.neighbors())
	case *wire.D2FindSucc:
		n.Stats.LookupMsgs++
		if !n.joined {
			rpc.RespondError(env, in, n.self, fault.CodeJoining, "d2: joining")
			return
		}
		rpc.Respond(env, in, n.self, n.findSucc(m.Key))
	case *wire.D2Leave:
		n.handleLeave(env, from, m)
	case *wire.D2Store:
		n.handleStore(env, in, m)
	case *wire.D2Fetch:
		n.handleFetch(env, in, m)
	case *wire.D2Pointers:
		n.handlePointers(env, m)
		rpc.Respond(env, in, n.self, &wire.Ack{})
	case *wire.D2Keys:
		rpc.Respond(env, in, n.self, n.keys(env, m))
	case *wire.D2Drop:
		n.handleDrop(env, in, m)
	case *wire.D2Invite:
		n.invited(env, from)
	case *wire.D2Kept:
		n.stored(from.Addr, m)
	case *wire.D2Put, *wire.D2Get, *wire.D2Delete, *wire.D2Latest, *wire.D2Stat, *wire.D2List, *wire.D2GetSpace:
		n.clientRequest(env, in)
	default:
		if in.Env.Kind == wire.Request {
			rpc.RespondError(env, in, n.self, fault.CodeBadRequest, fmt.Sprintf("d2: %v is not a request", m.Type()))
		}
	}
}

// PeerDown drops a dead peer from the node's lists and cache, and the
// keys its audits found it lacking (audit.go).
func (n *Node) PeerDown(env node.Env, addr node.Addr) {
	n.forget(env, addr)
	n.forgive(addr)
}

// Stop leaves the ring gracefully: the neighbours close the gap at once.
func (n *Node) Stop(env node.Env) {
	n.leave(env)
	n.stopped = true
}

// call sends a request to ref's host and runs cont with the outcome; a
// timeout declares the host dead. It reports false when too many calls are
// in flight.
func (n *Node) call(env node.Env, to node.Addr, m wire.Msg, cont rpc.Reply) bool {
	return n.callFor(env, to, m, 0, cont)
}

// relayTimeout is the timeout of a request the receiver answers only
// after calls of its own (a primary store waits for the replicas; an
// owner's fetch may follow a pointer): several round trips.
const relayTimeout = 5 * time.Second

// callFor is call with a timeout (zero: the peer's adaptive one).
func (n *Node) callFor(env node.Env, to node.Addr, m wire.Msg, timeout time.Duration, cont rpc.Reply) bool {
	return n.callTo(env, to, id.ID{}, m, timeout, cont)
}

// callTo is callFor addressed to the ring ID dst (wire.Envelope.To; zero:
// any).
func (n *Node) callTo(env node.Env, to node.Addr, dst id.ID, m wire.Msg, timeout time.Duration, cont rpc.Reply) bool {
	return n.h.Call(env, to, n.self, dst, m, timeout, func(env node.Env, reply wire.Msg, err error) {
		if errors.Is(err, rpc.ErrTimeout) {
			n.suspect(env, to)
		}
		if cont != nil && !n.stopped {
			cont(env, reply, err)
		}
	})
}

// confirmTimeout is how long the probe of a peer that missed a call's
// timeout waits before the peer is declared dead: an answer queued behind
// a burst of blocks on a slow link is late, not lost.
const confirmTimeout = 5 * time.Second

// suspect probes a peer that missed a call's timeout with a patient ping,
// and declares it dead only if that goes unanswered too.
func (n *Node) suspect(env node.Env, to node.Addr) {
	if n.suspects[to] || n.stopped {
		return
	}
	if len(n.suspects) >= maxSuspects {
		n.h.MarkDead(env, to)
		return
	}
	n.suspects[to] = true
	ok := n.h.Call(env, to, n.self, id.ID{}, &wire.Ping{}, confirmTimeout, func(env node.Env, _ wire.Msg, err error) {
		delete(n.suspects, to)
		if errors.Is(err, rpc.ErrTimeout) {
			n.h.MarkDead(env, to)
		}
	})
	if !ok {
		delete(n.suspects, to)
		n.h.MarkDead(env, to)
	}
}

const maxSuspects = 1024

// send sends a one-way message.
func (n *Node) send(env node.Env, to node.Addr, m wire.Msg) {
	env.Send(to, wire.Envelope{Kind: wire.OneWay, From: n.self, Msg: m})
}

// Validate refuses what no node sends: keys and positions of another
// width, nodes without addresses or with IDs their address does not
// give, blocks past the size bound, content hashes of the wrong length,
// a position claimed for another sender.
func (n *Node) Validate(m wire.Msg) error {
	err := n.validate(m)
	if err != nil {
		n.Stats.BadRequests++
	}
	return err
}

func key(k id.ID) error {
	if k.Width() != KeyBytes {
		return fmt.Errorf("%w, got %d", ErrBadKey, k.Width())
	}
	return nil
}

func (n *Node) ref(r wire.D2Ref) error {
	if r.IsZero() {
		return nil
	}
	if r.Node.ID.Width() != id.Bytes || r.Node.Addr == "" {
		return errors.New("d2: a node without a ring ID or an address")
	}
	if err := key(r.Pos); err != nil {
		return err
	}
	return n.h.CheckRef(r.Node)
}

func (n *Node) refs(l []wire.D2Ref) error {
	for _, r := range l {
		if err := n.ref(r); err != nil {
			return err
		}
	}
	return nil
}

func (n *Node) validate(m wire.Msg) error {
	block := func(data []byte) error {
		if len(data) > n.cfg.BlockBytes {
			return fmt.Errorf("%w: a block of %d bytes, limit %d", ErrTooLarge, len(data), n.cfg.BlockBytes)
		}
		return nil
	}
	hash := func(h []byte, need bool) error {
		if len(h) != hashBytes && (need || len(h) != 0) {
			return fmt.Errorf("d2: a content hash of %d bytes, want %d (SHA-256)", len(h), hashBytes)
		}
		return nil
	}
	switch m := m.(type) {
	case *wire.D2Join:
		if m.Self.IsZero() {
			return errors.New("d2: a join without a node")
		}
		return n.ref(m.Self)
	case *wire.D2Neighbors:
		return errors.Join(n.ref(m.Self), n.refs(m.Preds), n.refs(m.Succs), n.refs(m.Links), optKey(m.Median))
	case *wire.D2FindSucc:
		return key(m.Key)
	case *wire.D2Next:
		return errors.Join(n.ref(m.Owner), optKey(m.Lo), n.refs(m.Succs), n.ref(m.Next))
	case *wire.D2Leave:
		return errors.Join(n.refs(m.Preds), n.refs(m.Succs))
	case *wire.D2Store:
		return errors.Join(key(m.Key), block(m.Data), checkPut(m.Mode, m.Prev))
	case *wire.D2Fetch:
		return errors.Join(key(m.Key), hash(m.Hash, false))
	case *wire.D2Kept:
		return errors.Join(key(m.Key), hash(m.Hash, false))
	case *wire.D2Block:
		return errors.Join(optKey(m.Key), block(m.Data))
	case *wire.D2Pointers:
		for _, p := range m.Pointers {
			if err := errors.Join(key(p.Key), n.ref(wire.D2Ref{Node: p.Holder, Pos: p.Key})); err != nil {
				return err
			}
			if p.Holder.IsZero() || p.Size > uint64(n.cfg.BlockBytes) {
				return errors.New("d2: a pointer without a holder or past the block size")
			}
		}
	case *wire.D2Keys:
		if m.Max > wire.MaxD2Keys {
			return fmt.Errorf("d2: %d keys asked, at most %d", m.Max, wire.MaxD2Keys)
		}
		return errors.Join(key(m.Lo), key(m.Hi))
	case *wire.D2KeyList:
		for _, k := range m.Keys {
			if err := key(k); err != nil {
				return err
			}
		}
	case *wire.D2Put:
		return errors.Join(key(m.Key), block(m.Data), checkPut(m.Mode, m.Prev))
	case *wire.D2Get:
		return errors.Join(key(m.Key), hash(m.Hash, true))
	case *wire.D2Delete:
		return key(m.Key)
	case *wire.D2Stat:
		return errors.Join(key(m.Key), hash(m.Hash, true))
	case *wire.D2Holders:
		for _, h := range m.Holders {
			if err := n.ref(h.Node); err != nil {
				return err
			}
			if h.State >= wire.D2HolderStates {
				return fmt.Errorf("d2: a holder state %d", h.State)
			}
		}
		return optKey(m.Key)
	case *wire.D2Drop:
		return key(m.Key)
	case *wire.D2Latest:
		if len(m.Prefix) > KeyBytes {
			return fmt.Errorf("d2: a prefix of %d bytes", len(m.Prefix))
		}
	case *wire.D2List:
		switch {
		case len(m.Prefix) > KeyBytes:
			return fmt.Errorf("d2: a prefix of %d bytes", len(m.Prefix))
		case m.Max > wire.MaxD2Keys:
			return fmt.Errorf("d2: %d keys asked, at most %d", m.Max, wire.MaxD2Keys)
		case !m.After.IsZero() && !bytes.HasPrefix(m.After.Bytes(), m.Prefix):
			return errors.New("d2: a listing's After outside its prefix")
		}
		return optKey(m.After)
	case *wire.D2Listing:
		for _, k := range m.Keys {
			if err := key(k); err != nil {
				return err
			}
		}
		return optKey(m.Next)
	}
	return nil
}

// optKey is key for a field that may be absent.
func optKey(k id.ID) error {
	if k.IsZero() {
		return nil
	}
	return key(k)
}
