package dhash

import (
	"errors"
	"fmt"
	"time"

	"triad/internal/dhash/frag"
	"triad/internal/fault"
	"triad/internal/host"
	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/ring"
	"triad/internal/rpc"
	"triad/internal/store"
	"triad/internal/wire"
)

// ErrEmpty refuses a put of no bytes.
var ErrEmpty = fault.New(fault.ErrBadRequest, "dhash: empty block")

// Config sets a Node's behaviour.
type Config struct {
	// Redundancy is the deployment's default: RedundancyReplicas or
	// RedundancyFragments. A put may ask for the other.
	Redundancy wire.Redundancy
	// Replicas is k, the whole copies of a block. Default 2 (UsenetDHT).
	Replicas int
	// DataFrags (m) and TotalFrags (l): any m of the l fragments rebuild a
	// block. Default 7 of 14 (DHash++).
	DataFrags, TotalFrags int
	// WriteQuorum is how many fragments must be durable before a put is
	// acknowledged. Default m + (l-m)/2.
	WriteQuorum int
	// MaxBlock is the largest block accepted. Default 1 MiB.
	MaxBlock int
	// WriteWindow bounds the puts this node coordinates (and holds in
	// memory) at once; beyond it a put is deferred at once. Default 256.
	// How many of their copies go out at once is STP's window.
	WriteWindow int
	// FixedWindow turns STP off: every copy of the puts in the write
	// window, and every fetch, goes out at once (for comparisons).
	FixedWindow bool
	// StoreWindow bounds the copies this node is writing to its disk at
	// once for others; beyond it a store is refused as busy. Default 1024.
	StoreWindow int
	// Integration lets lookups stop at a predecessor that already knows
	// enough successors of the key (DHash++). Default on; NoIntegration
	// turns it off for experiments.
	NoIntegration bool
	// DefaultExpiry is the lifetime of a block put without one. Default 30
	// days.
	DefaultExpiry time.Duration
	// MaxRetention is the furthest ahead a put may ask its block to be
	// kept; a put asking for more is refused (fault.ErrBadRequest) rather than
	// acknowledged for a time the hosts would not keep it: their engines
	// cap every expiry at their own store.Options.MaxRetention, which
	// should be no shorter. Default store.DefaultMaxRetention (400 days).
	MaxRetention time.Duration
	// AckWritten makes a holder acknowledge a copy once its engine has
	// written it, before the group commit makes it durable: periodic
	// durability, as Cassandra's periodic commit log, for operators who
	// take INN's promise. The engine's sync interval bounds how long a
	// copy stays in the page cache only; a power cut of a holder loses
	// the copies it acknowledged within that interval (the copies on
	// other holders are lost only if they lose power too). Default off:
	// every copy is durable before it is acknowledged.
	AckWritten bool
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{
		Redundancy:    wire.RedundancyReplicas,
		Replicas:      2,
		DataFrags:     7,
		TotalFrags:    14,
		MaxBlock:      1 << 20,
		WriteWindow:   256,
		StoreWindow:   1024,
		DefaultExpiry: 30 * 24 * time.Hour,
		MaxRetention:  store.DefaultMaxRetention,
	}
}

// MaxBlockLimit is the largest MaxBlock a deployment may set: a block must
// fit in one frame with its envelope.
const MaxBlockLimit = wire.MaxFrameBytes - 64<<10

// Validate reports a config that cannot work.
func (c Config) Validate() error {
	switch {
	case c.Redundancy != wire.RedundancyReplicas && c.Redundancy != wire.RedundancyFragments:
		return fmt.Errorf("dhash: redundancy %d is neither replicas nor fragments", c.Redundancy)
	case c.Replicas < 1 || c.Replicas > 16:
		return fmt.Errorf("dhash: replicas %d not in [1, 16]", c.Replicas)
	case c.DataFrags < 1 || c.TotalFrags <= c.DataFrags || c.TotalFrags > 32:
		return fmt.Errorf("dhash: fragments %d of %d: want 1 <= m < l <= 32", c.DataFrags, c.TotalFrags)
	case c.WriteQuorum != 0 && (c.WriteQuorum < c.DataFrags || c.WriteQuorum > c.TotalFrags):
		return fmt.Errorf("dhash: write quorum %d not in [m, l] = [%d, %d]", c.WriteQuorum, c.DataFrags, c.TotalFrags)
	case c.MaxBlock < 1 || c.MaxBlock > MaxBlockLimit:
		return fmt.Errorf("dhash: max block %d not in [1, %d]", c.MaxBlock, MaxBlockLimit)
	case c.WriteWindow < 1 || c.StoreWindow < 1:
		return fmt.Errorf("dhash: write and store windows must be at least 1")
	case c.DefaultExpiry <= 0:
		return fmt.Errorf("dhash: default expiry must be positive")
	case c.MaxRetention < c.DefaultExpiry:
		return fmt.Errorf("dhash: max retention %v is shorter than the default expiry %v", c.MaxRetention, c.DefaultExpiry)
	}
	return nil
}

// Span is how many successors of a key hold its copies under r (the
// deployment's default for wire.RedundancyDefault): Replicas whole
// copies, or TotalFrags fragments.
func (c Config) Span(r wire.Redundancy) int {
	if r == wire.RedundancyDefault {
		r = c.Redundancy
	}
	if r == wire.RedundancyFragments {
		return c.TotalFrags
	}
	return c.Replicas
}

func (c Config) quorum() int {
	if c.WriteQuorum > 0 {
		return c.WriteQuorum
	}
	return c.DataFrags + (c.TotalFrags-c.DataFrags)/2
}

// Stats are a node's block-store counters.
type Stats struct {
	Puts, PutsFailed, PutsDeferred uint64
	Gets, GetsFailed               uint64
	Stored, StoreRefused           uint64 // copies written here for others
	Fetched                        uint64 // copies served
	BadCopies                      uint64 // fetched copies that failed verification
	DuplicateFragments             uint64 // fetched fragments whose index a get already held
	FetchRetries                   uint64 // fetches that moved on to another holder
	Repaired                       uint64 // damaged copies a get replaced with good ones
	RepairsFailed                  uint64 // replacements refused, lost or not sent
}

// Node is one host's block-store protocol.
type Node struct {
	cfg     Config
	rt      *host.Host
	ring    *ring.Chord
	coder   *coder
	puts    int  // puts being coordinated (the write window)
	stp     *stp // block transfers in flight (DHash++ §5); nil with FixedWindow
	storing int  // copies being written for others
	// gather collects the copies for other hosts while a ClientPutBatch
	// starts its puts (see storeGather); nil otherwise.
	gather *storeGather
	timers map[uint64]func(env node.Env)
	nextT  uint64
	Stats  Stats
}

// retryTimer fires a delayed step of a put or get.
type retryTimer struct{ id uint64 }

func (t retryTimer) String() string { return fmt.Sprintf("dhash-retry(%d)", t.id) }

// after runs fn in the loop after d.
func (n *Node) after(env node.Env, d time.Duration, fn func(env node.Env)) {
	n.nextT++
	n.timers[n.nextT] = fn
	env.After(d, retryTimer{n.nextT})
}

// New makes the block store of the host that ring runs on, and registers
// it with that host. Copies are kept in the host's storage engine.
func New(cfg Config, ring *ring.Chord) (*Node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c, err := newCoder(cfg.DataFrags, cfg.TotalFrags)
	if err != nil {
		return nil, err
	}
	n := &Node{cfg: cfg, rt: ring.Runtime(), ring: ring, coder: c, timers: make(map[uint64]func(node.Env))}
	if !cfg.FixedWindow {
		n.stp = newSTP()
	}
	if err := n.rt.Register(wire.TypeStoreBlock, n); err != nil {
		return nil, err
	}
	return n, nil
}

// Ring is the ring protocol the block store finds holders with.
func (n *Node) Ring() *ring.Chord { return n.ring }

// Runtime is the host runtime the block store runs on.
func (n *Node) Runtime() *host.Host { return n.rt }

// Config is the node's configuration.
func (n *Node) Config() Config { return n.cfg }

// Start does nothing: the block store has no rounds of its own yet.
func (n *Node) Start(node.Env) {}

// Stop does nothing: puts and gets in flight end with their callers.
func (n *Node) Stop(node.Env) {}

// PeerDown does nothing: the ring drops the peer, and lookups skip it.
func (n *Node) PeerDown(node.Env, node.Addr) {}

// Receive serves the block messages.
func (n *Node) Receive(env node.Env, in node.MsgIn) {
	if in.Env.Kind == wire.Request {
		n.handleRequest(env, in)
	}
}

// Timer runs a delayed step of a put or get.
func (n *Node) Timer(env node.Env, t node.Timer) bool {
	rt, ok := t.(retryTimer)
	if !ok {
		return false
	}
	if fn := n.timers[rt.id]; fn != nil {
		delete(n.timers, rt.id)
		fn(env)
	}
	return true
}

// Work hands the result of engine or CPU work back to its step.
func (n *Node) Work(env node.Env, done node.WorkDone) bool {
	var cont func(env node.Env, val any, err error)
	switch w := done.W.(type) {
	case *engineWork:
		cont = w.done
	case *cpuWork:
		cont = w.done
	default:
		return false
	}
	r := done.Result.(workResult)
	cont(env, r.val, r.err)
	return true
}

// workResult carries errors inside the result: a missing block is an
// answer, not a failure for the driver to log.
type workResult struct {
	val any
	err error
}

// cpuWork is hashing or erasure coding, run off the event loop; done runs
// back in the loop.
type cpuWork struct {
	run  func() (any, error)
	done func(env node.Env, val any, err error)
}

func (w *cpuWork) Run(node.Storage) (any, error) {
	v, err := w.run()
	return workResult{v, err}, nil
}

func (n *Node) offload(env node.Env, run func() (any, error), done func(env node.Env, val any, err error)) {
	env.Offload(&cpuWork{run: run, done: done})
}

// engineOp is what an engineWork asks of the storage engine.
type engineOp uint8

const (
	opPut engineOp = iota + 1
	opGet
	opStat
	opStatMany
	opPutMany
)

// engineWork is one read or write of the host's storage engine, as a value
// the driver runs against the storage it owns. A get's result is a
// *wire.Block, a stat's a *wire.BlockInfo, a stat of many keys' a
// []wire.BlockInfo.
type engineWork struct {
	op     engineOp
	key    id.ID
	keys   []id.ID     // opStatMany's
	puts   []enginePut // opPutMany's
	data   []byte
	expiry time.Time
	opt    store.PutOptions
	done   func(env node.Env, val any, err error)
}

func (w *engineWork) Run(s node.Storage) (any, error) {
	e := s.Engine()
	switch w.op {
	case opPut:
		return workResult{nil, e.Put(w.key, w.data, w.expiry, w.opt)}, nil
	case opGet:
		data, meta, err := e.Get(w.key)
		return workResult{&wire.Block{Key: w.key, Data: data, Expiry: meta.Expiry.UnixNano(), Fragment: meta.Opaque}, err}, nil
	case opStat:
		meta, err := e.Stat(w.key)
		return workResult{&wire.BlockInfo{Key: w.key, Size: uint64(meta.Size), Expiry: meta.Expiry.UnixNano(), Fragment: meta.Opaque}, err}, nil
	case opStatMany:
		infos := make([]wire.BlockInfo, len(w.keys))
		for i, k := range w.keys {
			infos[i].Key = k
			switch meta, err := e.Stat(k); {
			case err == nil:
				infos[i] = wire.BlockInfo{Key: k, Size: uint64(meta.Size), Expiry: meta.Expiry.UnixNano(), Fragment: meta.Opaque}
			case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrExpired):
				// Not held: Size 0, and the asker looks further (the ring).
			default:
				// A failing engine fails the answer, as it would a lone
				// StatBlock's: the asker sees it rather than a "not held".
				return workResult{nil, err}, nil
			}
		}
		return workResult{infos, nil}, nil
	case opPutMany:
		return workResult{putMany(e, w.puts), nil}, nil
	}
	panic(fmt.Sprintf("dhash: engine op %d", w.op))
}

func (w *engineWork) String() string {
	return fmt.Sprintf("dhash-engine(%d, %s)", w.op, w.key.Short())
}

// writeCopy stores a copy in this host's engine. A fragment is verified
// against key first (its descriptor and shard hashes); the engine checks a
// whole block's hash itself.
func (n *Node) writeCopy(env node.Env, key id.ID, data []byte, expiry time.Time, opt store.PutOptions, done func(env node.Env, err error)) {
	if opt.Opaque {
		if err := n.coder.checkFragment(key, data, n.cfg.MaxBlock); err != nil {
			done(env, err)
			return
		}
	}
	opt.NoWait = n.cfg.AckWritten
	env.Offload(&engineWork{op: opPut, key: key, data: data, expiry: expiry, opt: opt, done: func(env node.Env, _ any, err error) {
		done(env, err)
	}})
}

// readCopy reads this host's copy of key.
func (n *Node) readCopy(env node.Env, key id.ID, done func(env node.Env, b *wire.Block, err error)) {
	env.Offload(&engineWork{op: opGet, key: key, done: func(env node.Env, val any, err error) {
		done(env, val.(*wire.Block), err)
	}})
}

// statCopy describes this host's copy of key.
func (n *Node) statCopy(env node.Env, key id.ID, done func(env node.Env, bi *wire.BlockInfo, err error)) {
	env.Offload(&engineWork{op: opStat, key: key, done: func(env node.Env, val any, err error) {
		done(env, val.(*wire.BlockInfo), err)
	}})
}

func (n *Node) self() wire.NodeRef { return n.ring.Vnodes()[0].Self() }

func respondErr(env node.Env, in node.MsgIn, from wire.NodeRef, err error) {
	rpc.RespondError(env, in, from, fault.CodeOf(err), err.Error())
}

// refuseBadKey answers a request whose key is not a ring key, and reports
// whether it did.
func refuseBadKey(env node.Env, in node.MsgIn, from wire.NodeRef, key id.ID) bool {
	if key.Width() == id.Bytes {
		return false
	}
	respondErr(env, in, from, fmt.Errorf("%w: key must be %d bits", fault.ErrBadRequest, id.Bits))
	return true
}

// serveStats answers a StatBlocks from this host's engine, in one piece of
// engine work for the whole batch.
func (n *Node) serveStats(env node.Env, in node.MsgIn, m *wire.StatBlocks) {
	me := n.self()
	for _, k := range m.Keys {
		if refuseBadKey(env, in, me, k) {
			return
		}
	}
	env.Offload(&engineWork{op: opStatMany, keys: m.Keys, done: func(env node.Env, val any, err error) {
		if err != nil {
			respondErr(env, in, me, err)
			return
		}
		rpc.Respond(env, in, me, &wire.BlockInfos{Infos: val.([]wire.BlockInfo)})
	}})
}

// handleRequest serves the block messages; false passes the message on to
// the ring.
func (n *Node) handleRequest(env node.Env, in node.MsgIn) bool {
	me := n.self()
	switch m := in.Env.Msg.(type) {
	case *wire.StoreBlock:
		n.serveStore(env, in, m)
	case *wire.FetchBlock:
		n.serveFetch(env, in, m)
	case *wire.StatBlock:
		n.serveStat(env, in, m)
	case *wire.StatBlocks:
		n.serveStats(env, in, m)
	case *wire.StoreBlocks:
		n.serveStores(env, in, m)
	case *wire.ClientPut:
		expiry := time.Unix(0, m.Expiry)
		if m.Expiry == 0 {
			expiry = env.Now().Add(n.cfg.DefaultExpiry)
		}
		n.Put(env, m.Data, expiry, m.Redundancy, func(env node.Env, key id.ID, holders []wire.NodeRef, err error) {
			if err != nil {
				respondErr(env, in, me, err)
				return
			}
			rpc.Respond(env, in, me, &wire.PutDone{Key: key, Holders: holders})
		})
	case *wire.ClientPutBatch:
		n.servePutBatch(env, in, m)
	case *wire.ClientGet:
		if refuseBadKey(env, in, me, m.Key) {
			return true
		}
		n.Get(env, m.Key, wire.RedundancyDefault, func(env node.Env, b Block, err error) {
			if err != nil {
				respondErr(env, in, me, err)
				return
			}
			rpc.Respond(env, in, me, clientBlock(m.Key, b))
		})
	case *wire.ClientStat:
		if refuseBadKey(env, in, me, m.Key) {
			return true
		}
		n.Stat(env, m.Key, func(env node.Env, holders []wire.Holder, err error) {
			if err != nil {
				respondErr(env, in, me, err)
				return
			}
			rpc.Respond(env, in, me, &wire.StatDone{Key: m.Key, Holders: holders})
		})
	default:
		return false
	}
	return true
}

// clientBlock is the answer to a ClientGet. A block rebuilt from
// fragments has a key that is not its content hash, so the client could
// not check it alone: the answer is marked Fragment and its Data is the
// block's descriptor followed by the block (frag.Descriptor.CheckBlock).
func clientBlock(key id.ID, b Block) *wire.Block {
	if b.Desc == nil {
		return &wire.Block{Key: key, Data: b.Data, Expiry: b.Expiry.UnixNano()}
	}
	data := b.Desc.Append(make([]byte, 0, frag.DescriptorBytes(b.Desc.L)+len(b.Data)))
	return &wire.Block{Key: key, Data: append(data, b.Data...), Expiry: b.Expiry.UnixNano(), Fragment: true}
}

// servePutBatch runs a client's batch of puts (PutBatch) and answers once
// every one has ended.
func (n *Node) servePutBatch(env node.Env, in node.MsgIn, m *wire.ClientPutBatch) {
	me := n.self()
	n.putBatch(env, m.Items, putHint{trusted: in.Local, fresh: m.Fresh}, m.Redundancy, func(env node.Env, results []wire.PutResult) {
		rpc.Respond(env, in, me, &wire.PutBatchDone{Results: results})
	})
}

// PutBatch runs each item as a Put and calls done with every item's
// result, in order, once the last has ended (at once for no items). The
// copies the puts send a host leave together, in one StoreBlocks, so that
// the host's group commit makes them durable together. An item's Key, if
// given, must be its data's hash, or that item fails.
func (n *Node) PutBatch(env node.Env, items []wire.PutItem, r wire.Redundancy, done func(env node.Env, results []wire.PutResult)) {
	n.putBatch(env, items, putHint{}, r, done)
}

// putBatch is PutBatch with what the sender said of the whole batch
// (hint.key unused: each item has its own): the items' keys taken as they
// are when trusted (a batch from the node's own process, which has hashed
// them), and written without look-ups when fresh.
func (n *Node) putBatch(env node.Env, items []wire.PutItem, hint putHint, r wire.Redundancy, done func(env node.Env, results []wire.PutResult)) {
	results := make([]wire.PutResult, len(items))
	left := len(items)
	if left == 0 {
		done(env, results)
		return
	}
	g := &storeGather{fresh: hint.fresh}
	n.gather = g
	defer func() {
		n.gather = nil
		n.flush(env, g)
	}()
	for i, it := range items {
		expiry := time.Unix(0, it.Expiry)
		if it.Expiry == 0 {
			expiry = env.Now().Add(n.cfg.DefaultExpiry)
		}
		n.put(env, it.Data, putHint{key: it.Key, trusted: hint.trusted, fresh: hint.fresh}, expiry, r, func(env node.Env, key id.ID, _ []wire.NodeRef, err error) {
			if err != nil {
				results[i] = wire.PutResult{Code: fault.CodeOf(err), Err: err.Error()}
			} else {
				results[i].Key = key
			}
			if left--; left == 0 {
				done(env, results)
			}
		})
	}
}

// serveStore keeps a copy for a putting node. Every copy is checked against
// its key before it is written (a whole block's hash by the engine, a
// fragment's header by writeCopy), and a copy of another object under a key
// this host holds is refused (store.ErrConflict): a put never replaces data.
func (n *Node) serveStore(env node.Env, in node.MsgIn, m *wire.StoreBlock) {
	me := n.self()
	if err := n.storable(m); err != nil {
		if errors.Is(err, fault.ErrBusy) {
			n.Stats.StoreRefused++
		}
		respondErr(env, in, me, err)
		return
	}
	n.storing++
	n.writeCopy(env, m.Key, m.Data, time.Unix(0, m.Expiry), store.PutOptions{Opaque: m.Fragment}, func(env node.Env, err error) {
		n.storing--
		if err != nil {
			n.Stats.StoreRefused++
			respondErr(env, in, me, err)
			return
		}
		n.Stats.Stored++
		rpc.Respond(env, in, me, &wire.Ack{})
	})
}

func (n *Node) serveFetch(env node.Env, in node.MsgIn, m *wire.FetchBlock) {
	me := n.self()
	if refuseBadKey(env, in, me, m.Key) {
		return
	}
	n.readCopy(env, m.Key, func(env node.Env, b *wire.Block, err error) {
		if err != nil {
			respondErr(env, in, me, err)
			return
		}
		n.Stats.Fetched++
		rpc.Respond(env, in, me, b)
	})
}

func (n *Node) serveStat(env node.Env, in node.MsgIn, m *wire.StatBlock) {
	me := n.self()
	if refuseBadKey(env, in, me, m.Key) {
		return
	}
	n.statCopy(env, m.Key, func(env node.Env, bi *wire.BlockInfo, err error) {
		if err != nil {
			respondErr(env, in, me, err)
			return
		}
		rpc.Respond(env, in, me, bi)
	})
}
