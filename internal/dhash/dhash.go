// Package dhash is the block store on the ring (DHash, as in DHash++ and
// UsenetDHT): content-hash blocks kept as k whole replicas on the key's
// first k successors, or as l erasure-coded fragments of which any m rebuild
// the block. A Node wraps a ring.Host: it serves the block messages and
// passes everything else to the ring. Like the ring it is a pure state
// machine; the storage engine is reached only through offloaded work.
package dhash

import (
	"errors"
	"fmt"
	"time"

	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/ring"
	"triad/internal/rpc"
	"triad/internal/store"
	"triad/internal/wire"
)

// Errors a put or get can end with. Client replies carry them as wire error
// codes (see Code and FromWire).
var (
	ErrDeferred    = errors.New("dhash: write window full; deferred, try later")
	ErrTooLarge    = errors.New("dhash: block too large")
	ErrEmpty       = errors.New("dhash: empty block")
	ErrUnavailable = errors.New("dhash: too few live hosts")
	ErrNotFound    = errors.New("dhash: block not found")
	ErrFull        = errors.New("dhash: disk full")
	ErrCorrupt     = errors.New("dhash: stored copy damaged")
	ErrBadRequest  = errors.New("dhash: bad request")
)

var codes = []struct {
	err  error
	code wire.ErrCode
}{
	{ErrDeferred, wire.ErrCodeBusy},
	{ErrTooLarge, wire.ErrCodeTooLarge},
	{ErrUnavailable, wire.ErrCodeUnavailable},
	{ErrNotFound, wire.ErrCodeNotFound},
	{ErrFull, wire.ErrCodeFull},
	{ErrCorrupt, wire.ErrCodeCorrupt},
	{ErrEmpty, wire.ErrCodeBadRequest},
	{ErrBadRequest, wire.ErrCodeBadRequest},
}

// Code is the wire error code for err.
func Code(err error) wire.ErrCode {
	for _, c := range codes {
		if errors.Is(err, c.err) {
			return c.code
		}
	}
	return wire.ErrCodeInternal
}

// FromWire turns an error reply back into an error that errors.Is matches
// against this package's errors, keeping the node's text.
func FromWire(e *wire.Error) error {
	for _, c := range codes {
		if c.code == e.Code {
			return remoteErr{c.err, e.Text}
		}
	}
	return e
}

// remoteErr is an error a node replied with: its text, matching its kind.
type remoteErr struct {
	kind error
	text string
}

func (e remoteErr) Error() string { return e.text }
func (e remoteErr) Unwrap() error { return e.kind }

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
	// WriteWindow bounds the puts this node coordinates at once; beyond it
	// a put is deferred at once. Default 256.
	WriteWindow int
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
	}
	return nil
}

func (c Config) quorum() int {
	if c.WriteQuorum > 0 {
		return c.WriteQuorum
	}
	return c.DataFrags + (c.TotalFrags-c.DataFrags)/2
}

// Store is the storage engine a node keeps its copies in (disk.Disk, or
// mem.Mem in the simulator). It is called only from offloaded work.
type Store interface {
	Put(key id.ID, data []byte, expiry time.Time, opt store.PutOptions) error
	Get(key id.ID) ([]byte, store.Meta, error)
	Stat(key id.ID) (store.Meta, error)
}

// Stats are a node's block-store counters.
type Stats struct {
	Puts, PutsFailed, PutsDeferred uint64
	Gets, GetsFailed               uint64
	Stored, StoreRefused           uint64 // copies written here for others
	Fetched                        uint64 // copies served
	BadCopies                      uint64 // fetched copies that failed verification
	FetchRetries                   uint64 // fetches that moved on to another holder
}

// Node is one process's block store.
type Node struct {
	cfg     Config
	host    *ring.Host
	store   Store
	coder   *coder
	puts    int // puts being coordinated (the write window)
	storing int // copies being written for others
	timers  map[uint64]func(env node.Env)
	nextT   uint64
	Stats   Stats
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

// New makes the block store of host, keeping copies in st.
func New(cfg Config, host *ring.Host, st Store) (*Node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c, err := newCoder(cfg.DataFrags, cfg.TotalFrags)
	if err != nil {
		return nil, err
	}
	return &Node{cfg: cfg, host: host, store: st, coder: c, timers: make(map[uint64]func(node.Env))}, nil
}

// Host is the ring state machine underneath.
func (n *Node) Host() *ring.Host { return n.host }

// Config is the node's configuration.
func (n *Node) Config() Config { return n.cfg }

// Handle applies one event: block messages and offloaded store work here,
// the rest to the ring.
func (n *Node) Handle(env node.Env, ev node.Event) {
	env = n.host.Stamp(env)
	switch ev := ev.(type) {
	case node.MsgIn:
		if ev.Env.Kind == wire.Request && n.handleRequest(env, ev) {
			return
		}
	case node.TimerFired:
		if t, ok := ev.T.(retryTimer); ok {
			if fn := n.timers[t.id]; fn != nil {
				delete(n.timers, t.id)
				fn(env)
			}
			return
		}
	case node.WorkDone:
		if w, ok := ev.W.(*work); ok {
			r := ev.Result.(workResult)
			w.done(env, r.val, r.err)
			return
		}
	}
	n.host.Handle(env, ev)
}

// work is a job for the storage engine or the CPU (hashing, coding), run
// off the event loop; done runs back in the loop.
type work struct {
	run  func() (any, error)
	done func(env node.Env, val any, err error)
}

// workResult carries errors inside the result: a missing block is an
// answer, not a failure for the driver to log.
type workResult struct {
	val any
	err error
}

func (w *work) Run(node.Disk) (any, error) {
	v, err := w.run()
	return workResult{v, err}, nil
}

func (n *Node) offload(env node.Env, run func() (any, error), done func(env node.Env, val any, err error)) {
	env.Offload(&work{run: run, done: done})
}

func (n *Node) self() wire.NodeRef { return n.host.Vnodes()[0].Self() }

func respondErr(env node.Env, in node.MsgIn, from wire.NodeRef, err error) {
	rpc.RespondError(env, in, from, Code(err), err.Error())
}

// refuseBadKey answers a request whose key is not a ring key, and reports
// whether it did.
func refuseBadKey(env node.Env, in node.MsgIn, from wire.NodeRef, key id.ID) bool {
	if key.Width() == id.Bytes {
		return false
	}
	respondErr(env, in, from, fmt.Errorf("%w: key must be %d bits", ErrBadRequest, id.Bits))
	return true
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
	case *wire.ClientGet:
		if refuseBadKey(env, in, me, m.Key) {
			return true
		}
		n.Get(env, m.Key, wire.RedundancyDefault, func(env node.Env, b Block, err error) {
			if err != nil {
				respondErr(env, in, me, err)
				return
			}
			rpc.Respond(env, in, me, &wire.Block{Key: m.Key, Data: b.Data, Expiry: b.Expiry.UnixNano()})
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

// storeErr maps an engine error to this package's.
func storeErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, store.ErrNotFound):
		return fmt.Errorf("%w: %v", ErrNotFound, err)
	case errors.Is(err, store.ErrCorrupt):
		return fmt.Errorf("%w: %v", ErrCorrupt, err)
	case errors.Is(err, store.ErrFull):
		return fmt.Errorf("%w: %v", ErrFull, err)
	case errors.Is(err, store.ErrTooLarge):
		return fmt.Errorf("%w: %v", ErrTooLarge, err)
	case errors.Is(err, store.ErrBadKey), errors.Is(err, store.ErrExpired):
		return fmt.Errorf("%w: %v", ErrBadRequest, err)
	}
	return err
}

// serveStore keeps a copy for a putting node. A whole block is checked
// against its key by the engine before it is written.
func (n *Node) serveStore(env node.Env, in node.MsgIn, m *wire.StoreBlock) {
	me := n.self()
	limit := n.cfg.MaxBlock
	if m.Fragment {
		limit += fragHeader
	}
	switch {
	case refuseBadKey(env, in, me, m.Key):
		return
	case len(m.Data) == 0:
		respondErr(env, in, me, ErrEmpty)
		return
	case len(m.Data) > limit:
		respondErr(env, in, me, fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, len(m.Data), limit))
		return
	case n.storing >= n.cfg.StoreWindow:
		n.Stats.StoreRefused++
		respondErr(env, in, me, fmt.Errorf("%w: %d copies being written", ErrDeferred, n.storing))
		return
	}
	n.storing++
	st, expiry := n.store, time.Unix(0, m.Expiry)
	n.offload(env, func() (any, error) {
		return nil, st.Put(m.Key, m.Data, expiry, store.PutOptions{Opaque: m.Fragment})
	}, func(env node.Env, _ any, err error) {
		n.storing--
		if err != nil {
			n.Stats.StoreRefused++
			respondErr(env, in, me, storeErr(err))
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
	st := n.store
	n.offload(env, func() (any, error) {
		data, meta, err := st.Get(m.Key)
		return &wire.Block{Key: m.Key, Data: data, Expiry: meta.Expiry.UnixNano(), Fragment: meta.Opaque}, err
	}, func(env node.Env, val any, err error) {
		if err != nil {
			respondErr(env, in, me, storeErr(err))
			return
		}
		n.Stats.Fetched++
		rpc.Respond(env, in, me, val.(*wire.Block))
	})
}

func (n *Node) serveStat(env node.Env, in node.MsgIn, m *wire.StatBlock) {
	me := n.self()
	if refuseBadKey(env, in, me, m.Key) {
		return
	}
	st := n.store
	n.offload(env, func() (any, error) {
		meta, err := st.Stat(m.Key)
		return &wire.BlockInfo{Key: m.Key, Size: uint64(meta.Size), Expiry: meta.Expiry.UnixNano(), Fragment: meta.Opaque}, err
	}, func(env node.Env, val any, err error) {
		if err != nil {
			respondErr(env, in, me, storeErr(err))
			return
		}
		rpc.Respond(env, in, me, val.(*wire.BlockInfo))
	})
}
