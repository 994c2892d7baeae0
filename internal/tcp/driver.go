package tcp

import (
	"context"
	crand "crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"triad/internal/fault"
	"triad/internal/node"
	"triad/internal/pki"
	"triad/internal/store"
	"triad/internal/store/disk"
	"triad/internal/wire"
)

// Config sets the driver's limits.
type Config struct {
	// Listen is the TCP address to listen on ("127.0.0.1:0" picks a port).
	Listen string
	// DataDir is where the host's storage lives: its state files, and its
	// storage engine under DataDir/store. Required.
	DataDir string
	// Store configures the storage engine the driver opens under
	// DataDir/store (its Dir is set by the driver).
	Store store.Options
	// Stores configures the engines protocols keep beside Store, by name
	// (node.Storage.Store): each is opened under DataDir/NAME (its Dir is
	// set by the driver; its KeyWidth is the protocol's). Nil: none.
	Stores map[string]store.Options
	// WrapEngine, for tests only, replaces the engines the node code sees
	// (and its offloaded work reads; Stores' too) with what it returns around
	// the ones the driver opened: `triad node --test-lie` runs a node whose storage
	// lies (package lie). Nil: none.
	WrapEngine func(store.Engine) store.Engine
	// MaxFrameBytes bounds an inbound frame. Default wire.MaxFrameBytes.
	MaxFrameBytes int
	// SendQueue is the number of frames queued per connection before
	// further frames are dropped. Default 1024.
	SendQueue int
	// MaxQueuedBytes bounds the bytes of frames queued on one connection
	// and not yet written to its socket; a frame past it is dropped and
	// counted (Stats.QueueDrops). The reader of an accepted connection
	// reads a request only while the replies queued on it, with the room
	// each request read and not yet answered holds (an eighth of this if
	// its reply may carry a block, a 128th if not; see roomFor) and an
	// eighth for one more, are within half of this (and the same across
	// the node within half of MaxQueuedBytesTotal), so a reply of up to
	// twice its room is never dropped for want of room. At least MaxFrameBytes+4. Default
	// 8 MiB.
	MaxQueuedBytes int
	// MaxQueuedBytesTotal bounds the same across all connections.
	// Default 64 MiB.
	MaxQueuedBytesTotal int
	// IdleTimeout closes a connection with no traffic for this long.
	// Default 2m.
	IdleTimeout time.Duration
	// DialTimeout bounds connection setup. Default 3s.
	DialTimeout time.Duration
	// WriteTimeout bounds one write on a connection: one that stalls
	// longer (a peer that stopped reading) is closed. Default DialTimeout
	// + 5s.
	WriteTimeout time.Duration
	// HandshakeTimeout bounds how long an accepted connection that claims
	// a peer's address may take to prove it (see Driver) before it is
	// closed. Default 5s.
	HandshakeTimeout time.Duration
	// MaxUnproven bounds the frames held from an accepted connection
	// while its claim is unproven; one more closes it. Default 256.
	MaxUnproven int
	// MaxConns bounds the connections accepted at once; more are closed
	// as they arrive, and counted (Stats.Refused). Connections from the
	// node's own machine (see Driver) have ownMachineConns more, so that
	// an operator's command is answered when strangers hold all of these.
	// Default 1024.
	MaxConns int
	// MaxConnsPerAddr bounds the connections accepted at once from one
	// IPv4 address or IPv6 /64, other than the node's own machine; more
	// are closed as they arrive, and counted (Stats.Refused). Default 64.
	MaxConnsPerAddr int
	// MaxInflightBytes bounds the bytes of inbound frames read but not
	// yet handled, across all connections. Bytes are charged as a frame's
	// body arrives, not when its length does; a reader waits for room
	// before it grows a frame's buffer. Frames over 64 KiB may not take
	// the last eighth, which small ones keep. At least MaxFrameBytes.
	// Default 64 MiB: with MaxQueuedBytesTotal's 64, a node holds at most
	// 128 MiB of frames whoever sends them, its own machine included
	// (issue 44: 80 connections from 127.0.0.1, each all but the last
	// byte of a 4 MiB frame, took a node from 26 to 951 MB at 256).
	MaxInflightBytes int
	// MaxStrangerBytes bounds the part of MaxInflightBytes that frames
	// from connections not yet known (see Driver) may hold, together:
	// strangers cannot fill the budget that peers and clients need. At
	// least MaxFrameBytes (a client's first request may carry a block).
	// Default 16 MiB.
	MaxStrangerBytes int
	// FrameTimeout is how long a frame's body may take to arrive once its
	// length has, waits for the budget included: a peer that stalls
	// mid-frame is dropped. Default 10s.
	FrameTimeout time.Duration
	// Workers bounds concurrently offloaded work. Default 4.
	Workers int
	// Seed seeds the node's random source; zero picks one at random.
	Seed uint64
	// Log receives connection errors. Default: discard.
	Log *slog.Logger
	// TLS, if set, makes every connection, accepted or dialled, TLS 1.3
	// with certificates from the bundle's CA (see Driver). The bundle's
	// certificate must name Listen, with an explicit port.
	TLS *pki.Bundle
	// CheckVnodes, with TLS, refuses a frame from a node whose sender is
	// not one of the vnodes its certificate allows: an ID derived from its
	// address (ring.VnodeIndex) with an index below the certificate's
	// vnode count. Set it when the ring derives IDs (ring.Config.VerifyIDs).
	CheckVnodes bool
}

func (c *Config) fill() error {
	if c.DataDir == "" {
		return errors.New("tcp: a data directory is required")
	}
	if c.MaxFrameBytes <= 0 {
		c.MaxFrameBytes = wire.MaxFrameBytes
	}
	if c.SendQueue <= 0 {
		c.SendQueue = 1024
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = 2 * time.Minute
	}
	if c.DialTimeout <= 0 {
		c.DialTimeout = 3 * time.Second
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = c.DialTimeout + 5*time.Second
	}
	if c.HandshakeTimeout <= 0 {
		c.HandshakeTimeout = 5 * time.Second
	}
	if c.MaxUnproven <= 0 {
		c.MaxUnproven = 256
	}
	if c.MaxConns <= 0 {
		c.MaxConns = 1024
	}
	if c.MaxConnsPerAddr <= 0 {
		c.MaxConnsPerAddr = 64
	}
	if c.MaxInflightBytes <= 0 {
		c.MaxInflightBytes = 64 << 20
	}
	if c.MaxInflightBytes < c.MaxFrameBytes {
		return fmt.Errorf("tcp: in-flight bound %d bytes is below the largest frame, %d", c.MaxInflightBytes, c.MaxFrameBytes)
	}
	if c.MaxStrangerBytes <= 0 {
		c.MaxStrangerBytes = min(16<<20, c.MaxInflightBytes)
	}
	if c.MaxStrangerBytes < c.MaxFrameBytes || c.MaxStrangerBytes > c.MaxInflightBytes {
		return fmt.Errorf("tcp: strangers' bound %d bytes is below the largest frame, %d, or above the in-flight bound, %d", c.MaxStrangerBytes, c.MaxFrameBytes, c.MaxInflightBytes)
	}
	if c.MaxQueuedBytes <= 0 {
		c.MaxQueuedBytes = max(8<<20, c.MaxFrameBytes+4)
	}
	if c.MaxQueuedBytesTotal <= 0 {
		c.MaxQueuedBytesTotal = max(64<<20, c.MaxQueuedBytes)
	}
	if c.MaxQueuedBytes < c.MaxFrameBytes+4 || c.MaxQueuedBytesTotal < c.MaxQueuedBytes {
		return fmt.Errorf("tcp: queue bounds %d bytes per connection, %d in total, below the largest frame (%d) or each other", c.MaxQueuedBytes, c.MaxQueuedBytesTotal, c.MaxFrameBytes+4)
	}
	if c.FrameTimeout <= 0 {
		c.FrameTimeout = 10 * time.Second
	}
	if c.Workers <= 0 {
		c.Workers = 4
	}
	if c.Seed == 0 {
		c.Seed = rand.Uint64()
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	return nil
}

// Stats are the driver's counters.
type Stats struct {
	FramesIn, FramesOut, BadFrames, QueueDrops, DialFailures, ConnsAccepted atomic.Uint64
	// InlineFrames counts the frames of FramesOut the loop wrote to an
	// idle connection itself, without its writer (conn.writeInline).
	InlineFrames atomic.Uint64
	// Forged counts frames dropped because they did not match the
	// connection they came on: a sender other than the one the
	// connection proved, a reply on a connection we accepted, a request
	// on one we dialled, or a proof nobody asked for.
	Forged atomic.Uint64
	// Unproven counts accepted connections closed because they never
	// proved the address they claimed.
	Unproven atomic.Uint64
	// NoRoute counts replies dropped because the connection their request
	// came on had closed.
	NoRoute atomic.Uint64
	// Refused counts connections closed on arrival: MaxConns were open,
	// or MaxConnsPerAddr from the same address.
	Refused atomic.Uint64
	// StalledFrames counts frames whose body did not arrive within
	// FrameTimeout of their length; their connections were closed.
	StalledFrames atomic.Uint64
	// ReadPauses counts the times the reader of an accepted connection
	// stopped because the replies queued and in service on it, or on the
	// whole node, left no room for another (see Config.MaxQueuedBytes).
	ReadPauses atomic.Uint64
	// TLSRefused counts connections closed because their TLS handshake
	// failed: no certificate, another CA's, expired or revoked, or (on a
	// connection we dialled) one that does not name the dialled address.
	TLSRefused atomic.Uint64
}

// Driver runs one process's node over TCP.
//
// A peer's identity is its listen address, and a frame's sender field is
// only a claim; the driver believes what the connection proves instead.
//
//   - A connection we dial reaches whoever listens at the address we
//     dialled: that address is the sender of everything read from it,
//     which is only ever replies to the requests we sent on it.
//   - A connection we accept claims an address with its first frame. We
//     send a Challenge (a random nonce) to that address over a connection
//     we dial ourselves; the claim holds once the nonce comes back as a
//     Proof on the accepted connection, which only the process listening
//     at that address can do. Until then its frames wait (up to
//     MaxUnproven, for HandshakeTimeout). Every later frame must claim the
//     same address. Requests and one-way messages arrive this way; their
//     replies go back on the connection they came in on.
//   - A connection whose first frame claims no address is a client's: its
//     requests are answered on it, and it can send nothing else.
//
// Frames that break these rules are dropped, counted (Stats.Forged) and
// logged. This holds against anyone who is not on the path between two
// nodes. With Config.TLS every connection is mutual TLS 1.3 and the
// certificate is the proof: an accepted connection whose certificate
// names a node's address may claim that address and no other (no
// challenge is needed), one whose certificate names none is a client's,
// and a dialled connection must present the certificate of the address
// dialled. A failed handshake closes the connection (Stats.TLSRefused).
//
// Limits tell strangers from the peers and clients the node knows. A
// connection is known once it is one of these: a connection we dialled;
// one from the node's own machine (its remote IP is the IP it reached,
// as for an operator's command or a front-end beside the node); with TLS,
// one whose certificate verified; a peer's that proved its address; a
// client's that has been sent a reply (it completed a request: the
// round trip shows its address is real). Frames from connections not yet
// known share MaxStrangerBytes of the in-flight budget, so strangers who
// send frame headers, or frames that cannot be handled yet, hold at most
// that. Connections from the node's own machine are not bounded by
// MaxConnsPerAddr and have ownMachineConns slots past MaxConns.
type Driver struct {
	cfg    Config
	ln     net.Listener
	addr   node.Addr
	events chan node.Event
	msgs   chan inboundMsg // messages read from connections
	local  []node.Event    // events the loop sent itself
	// Totals across connections (see Config).
	inflight  *byteBudget
	strangers *byteBudget // the part of inflight for connections not yet known
	// Bytes queued on every outbound connection, and the most one
	// connection has held.
	queuedTotal, queuedPeak atomic.Int64
	// reservedTotal is the room held for the replies of requests in
	// service on every accepted connection (see conn.waitRoom);
	// replyRoom wakes the readers waiting for room.
	reservedTotal atomic.Int64
	replyRoom     signal
	accepted      atomic.Int64 // accepted connections open
	// connsFrom counts the accepted connections open by remote address
	// (handshakeBucket), but the node's own machine's; it has an entry
	// only for an address with one open.
	connsMu   sync.Mutex
	connsFrom map[string]int
	logLimits
	// handshaking bounds the accepted connections still in their TLS
	// handshake: strangers who connect and say nothing, or start
	// handshakes for the key exchange they cost, hold these slots and not
	// the ones proven peers need.
	handshaking chan struct{}
	// handshakesFrom counts those slots by remote IP address, so that one
	// address holds at most maxHandshakesPerIP of them; it has an entry
	// only for an address holding one, so at most maxHandshakes.
	hsMu           sync.Mutex
	handshakesFrom map[string]int
	// Offloaded work runs on Workers goroutines; what they cannot take yet
	// waits in backlog, in the loop.
	workQ   chan node.Work
	backlog []node.Work
	rng     *rand.Rand
	disk    FileDisk
	engine  store.Engine
	stores  map[string]store.Engine // Config.Stores, opened
	workWG  sync.WaitGroup
	done    chan struct{} // closed when the loop has stopped

	mu      sync.Mutex
	conns   map[node.Addr]*conn // outbound peers, and routes back on accepted connections ("@...")
	inbound map[node.Addr]*conn // the latest proven accepted connection of each peer
	locals  map[node.Addr]*Local

	serverTLS *tls.Config // with Config.TLS
	nextCli   uint64
	wg        sync.WaitGroup

	Stats Stats
}

// Listen binds the listen address and prepares a driver.
func Listen(cfg Config) (*Driver, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("tcp: data directory: %w", err)
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("tcp: listen: %w", err)
	}
	if cfg.TLS != nil && cfg.TLS.Self.Addr != ln.Addr().String() {
		ln.Close()
		return nil, fmt.Errorf("tcp: the certificate (%s of %s) is for the node at %q, not %s", cfg.TLS.Self.Name, cfg.TLS.Self.Site, cfg.TLS.Self.Addr, ln.Addr())
	}
	so := cfg.Store
	so.Dir = filepath.Join(cfg.DataDir, "store")
	opened, err := disk.Open(so)
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("tcp: %w", err)
	}
	var engine store.Engine = opened
	if cfg.WrapEngine != nil {
		engine = cfg.WrapEngine(opened)
	}
	stores, err := openStores(cfg)
	if err != nil {
		ln.Close()
		return nil, errors.Join(err, opened.Close())
	}
	return &Driver{
		cfg:         cfg,
		ln:          ln,
		addr:        ln.Addr().String(),
		events:      make(chan node.Event, 4096),
		msgs:        make(chan inboundMsg, 4096),
		inflight:    newByteBudget(cfg.MaxInflightBytes, reserveFor(cfg.MaxInflightBytes, cfg.MaxFrameBytes)),
		strangers:   newByteBudget(cfg.MaxStrangerBytes, reserveFor(cfg.MaxStrangerBytes, cfg.MaxFrameBytes)),
		connsFrom:   make(map[string]int),
		workQ:       make(chan node.Work, cfg.Workers),
		rng:         rand.New(rand.NewPCG(cfg.Seed, 0x7c9)),
		disk:        FileDisk{Dir: cfg.DataDir},
		engine:      engine,
		stores:      stores,
		done:        make(chan struct{}),
		conns:       make(map[node.Addr]*conn),
		inbound:     make(map[node.Addr]*conn),
		locals:      make(map[node.Addr]*Local),
		handshaking: make(chan struct{}, maxHandshakes),
		serverTLS: func() *tls.Config {
			if cfg.TLS == nil {
				return nil
			}
			return cfg.TLS.ServerConfig()
		}(),
	}, nil
}

// Close releases a driver that will not be run: its listening socket and
// its storage engine.
func (d *Driver) Close() error {
	err := d.ln.Close()
	return errors.Join(err, d.engine.Close(), d.closeStores())
}

// openStores opens cfg.Stores, each under DataDir/NAME, in name order; on
// an error it closes those it opened.
func openStores(cfg Config) (map[string]store.Engine, error) {
	names := slices.Sorted(maps.Keys(cfg.Stores))
	stores := make(map[string]store.Engine, len(names))
	for _, name := range names {
		o := cfg.Stores[name]
		if !validStoreName(name) {
			return nil, errors.Join(fmt.Errorf("tcp: store name %q: want letters and digits", name), closeAll(stores))
		}
		o.Dir = filepath.Join(cfg.DataDir, name)
		opened, err := disk.Open(o)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("tcp: store %s: %w", name, err), closeAll(stores))
		}
		var e store.Engine = opened
		if cfg.WrapEngine != nil {
			e = cfg.WrapEngine(e) // closing the view closes the engine
		}
		stores[name] = e
	}
	return stores, nil
}

// validStoreName keeps a store's folder inside DataDir and off the
// engine's own ("store").
func validStoreName(name string) bool {
	if name == "" || name == "store" {
		return false
	}
	for _, r := range name {
		if !('a' <= r && r <= 'z' || '0' <= r && r <= '9') {
			return false
		}
	}
	return true
}

// closeAll closes every engine of stores.
func closeAll(stores map[string]store.Engine) error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(stores)) {
		if err := stores[name].Close(); err != nil {
			errs = append(errs, fmt.Errorf("tcp: closing store %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// closeStores closes the engines of Config.Stores.
func (d *Driver) closeStores() error { return closeAll(d.stores) }

// Addr is the address the driver listens on.
func (d *Driver) Addr() node.Addr { return d.addr }

// Disk is the driver's data directory as a node.Disk.
func (d *Driver) Disk() node.Disk { return d.disk }

// Storage is the host's storage: its state files and storage engine.
func (d *Driver) Storage() node.Storage { return storage{d.disk, d.engine, d.stores, d.cfg.Stores} }

// storage is the node.Storage the driver owns.
type storage struct {
	FileDisk
	engine store.Engine
	stores map[string]store.Engine
	opts   map[string]store.Options
}

func (s storage) Engine() store.Engine { return s.engine }

func (s storage) Store(name string, keyWidth int) (store.Engine, error) {
	e, ok := s.stores[name]
	switch {
	case !ok:
		return nil, fmt.Errorf("tcp: the driver keeps no store %q (tcp.Config.Stores)", name)
	case s.opts[name].KeyWidth != keyWidth:
		return nil, fmt.Errorf("tcp: store %q has %d-byte keys, not %d", name, s.opts[name].KeyWidth, keyWidth)
	}
	return e, nil
}

// Rand is the node's random source; use it only before Run.
func (d *Driver) Rand() *rand.Rand { return d.rng }

// Do runs fn inside the event loop (as node.Request) and waits until it has
// run or ctx ends.
func (d *Driver) Do(ctx context.Context, fn func(env node.Env)) error {
	done := make(chan struct{})
	select {
	case d.events <- node.Request{Fn: func(env node.Env) { fn(env); close(done) }}:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Run drives h until ctx ends, then delivers node.Stop, flushes what h
// sent (for at most two seconds), closes every connection, and closes the
// storage engine once offloaded work has finished.
func (d *Driver) Run(ctx context.Context, h node.Handler) error {
	go d.accept()
	for range d.cfg.Workers {
		d.workWG.Add(1)
		go d.worker()
	}
	e := &env{d: d}
	h.Handle(e, node.Start{})
	for {
		for len(d.local) > 0 {
			ev := d.local[0]
			d.local = d.local[1:]
			h.Handle(e, ev)
		}
		d.dispatchBacklog()
		select {
		case ev := <-d.events:
			h.Handle(e, ev)
		case m := <-d.msgs:
			h.Handle(e, m.in)
			d.release(m.ch)
		case <-ctx.Done():
			h.Handle(e, node.Stop{})
			// What the handler sent itself while stopping is delivered (a
			// handler may act on it; the host runtime drops it).
			for len(d.local) > 0 {
				ev := d.local[0]
				d.local = d.local[1:]
				h.Handle(e, ev)
			}
			return d.shutdown(2 * time.Second)
		}
	}
}

// shutdown closes the connections and, once offloaded work has finished,
// the storage engine; it reports an engine that could not be closed.
func (d *Driver) shutdown(grace time.Duration) error {
	d.ln.Close()
	d.mu.Lock()
	for _, c := range d.conns {
		c.closeQueue()
	}
	d.mu.Unlock()
	waitTimeout(&d.wg, grace)
	d.mu.Lock()
	for _, c := range d.conns {
		c.kill() // writers that could not flush in time
	}
	d.mu.Unlock()
	// Let offloaded work (a final state save) finish.
	close(d.done)
	d.inflight.close()
	d.strangers.close()
	go func() {
		for _, w := range d.backlog {
			d.workQ <- w
		}
		close(d.workQ)
	}()
	if !waitTimeout(&d.workWG, grace) {
		return errors.New("tcp: offloaded work still running after shutdown; storage engine left open")
	}
	if err := d.engine.Close(); err != nil {
		return errors.Join(fmt.Errorf("tcp: closing the storage engine: %w", err), d.closeStores())
	}
	return d.closeStores()
}

// waitTimeout waits for wg for at most d and reports whether it finished.
func waitTimeout(wg *sync.WaitGroup, d time.Duration) bool {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// post hands an event to the loop from another goroutine; after the loop
// has stopped, events are dropped.
func (d *Driver) post(ev node.Event) {
	select {
	case d.events <- ev:
	case <-d.done:
	}
}

func (d *Driver) accept() {
	for {
		c, err := d.ln.Accept()
		if err != nil {
			return // closed
		}
		own := ownMachine(c)
		from := handshakeBucket(c.RemoteAddr())
		if why := d.admit(from, own); why != "" {
			d.Stats.Refused.Add(1)
			d.warn(&d.logRefused, "refusing a connection: "+why, "remote", c.RemoteAddr().String(), "refused", d.Stats.Refused.Load())
			c.Close()
			continue
		}
		d.Stats.ConnsAccepted.Add(1)
		go func() {
			defer d.leave(from, own)
			d.read(c, own)
		}()
	}
}

// ownMachineConns is how many connections from the node's own machine
// are accepted past MaxConns: room for an operator's command when
// strangers hold every other slot.
const ownMachineConns = 8

// admit takes a connection slot for a connection from the address from,
// or says why there is none.
func (d *Driver) admit(from string, own bool) string {
	d.connsMu.Lock()
	defer d.connsMu.Unlock()
	open := d.accepted.Load()
	switch {
	case own && open >= int64(d.cfg.MaxConns+ownMachineConns):
		return fmt.Sprintf("%d connections open, and %d more from this machine", d.cfg.MaxConns, ownMachineConns)
	case !own && open >= int64(d.cfg.MaxConns):
		return fmt.Sprintf("%d connections open", d.cfg.MaxConns)
	case !own && d.connsFrom[from] >= d.cfg.MaxConnsPerAddr:
		return fmt.Sprintf("%d connections open from %s", d.cfg.MaxConnsPerAddr, from)
	}
	d.accepted.Add(1)
	if !own {
		d.connsFrom[from]++
	}
	return ""
}

// leave gives back the slot admit took.
func (d *Driver) leave(from string, own bool) {
	d.connsMu.Lock()
	defer d.connsMu.Unlock()
	d.accepted.Add(-1)
	if !own {
		if d.connsFrom[from]--; d.connsFrom[from] <= 0 {
			delete(d.connsFrom, from)
		}
	}
}

// ownMachine reports whether an accepted connection comes from the node's
// own machine: its remote IP is the local IP it reached (a connection
// from 127.0.0.1 to 127.0.0.1, or from the node's address to itself).
func ownMachine(nc net.Conn) bool {
	r, ok1 := nc.RemoteAddr().(*net.TCPAddr)
	l, ok2 := nc.LocalAddr().(*net.TCPAddr)
	return ok1 && ok2 && r.IP.Equal(l.IP)
}

// worker runs offloaded work until the queue closes at shutdown.
func (d *Driver) worker() {
	defer d.workWG.Done()
	for w := range d.workQ {
		res, err := w.Run(d.Storage())
		if err != nil {
			d.cfg.Log.Error("offloaded work failed", "work", fmt.Sprintf("%T", w), "err", err)
		}
		d.post(node.WorkDone{W: w, Result: res, Err: err})
	}
}

// dispatchBacklog hands waiting work to idle workers, oldest first.
func (d *Driver) dispatchBacklog() {
	for len(d.backlog) > 0 {
		select {
		case d.workQ <- d.backlog[0]:
			d.backlog[0] = nil
			d.backlog = d.backlog[1:]
		default:
			return
		}
	}
}

// read decodes frames from one accepted connection until it fails or its
// handshake closes it. With TLS it first runs the TLS handshake; then the
// connection's handshake (see Driver and handshake) decides what becomes
// of each frame, and read carries out its actions.
//
// own says the connection comes from the node's own machine.
func (d *Driver) read(nc net.Conn, own bool) {
	defer nc.Close()
	var cert *pki.Identity // the peer's, with TLS
	if d.cfg.TLS != nil {
		tc, id, err := d.acceptTLS(nc)
		if err != nil {
			d.tlsRefused(nc, err)
			return
		}
		defer tc.Close()
		nc, cert = tc, id
	}
	a := &accepted{d: d, nc: nc, h: handshake{
		self: d.addr, timeout: d.cfg.HandshakeTimeout, maxHeld: d.cfg.MaxUnproven, checkVnodes: d.cfg.CheckVnodes,
		cert: cert, loopback: isLoopback(nc), nonce: randomNonce(),
	}}
	defer a.close()
	fr := newFrameReader(d, nc)
	var acts []action
	for {
		deadline := a.h.readBy(time.Now().Add(d.cfg.IdleTimeout))
		if a.route != nil {
			a.route.waitRoom()
		}
		known := own || a.h.known(a.route != nil && a.route.answered.Load())
		e, ch, err := fr.next(deadline, known)
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				if acts = a.h.expired(acts[:0], time.Now()); len(acts) > 0 {
					a.run(acts, wire.Envelope{}, charge{})
					return
				}
			}
			d.readFailed(nc.RemoteAddr().String(), err)
			return
		}
		if acts = a.h.frame(acts[:0], e, time.Now()); a.run(acts, e, ch) {
			return
		}
	}
}

// acceptTLS runs the TLS handshake of an accepted connection, in one of
// the handshake slots and within maxHandshakeTime, and returns the
// connection and the identity its certificate names.
func (d *Driver) acceptTLS(nc net.Conn) (*tls.Conn, *pki.Identity, error) {
	ip := handshakeBucket(nc.RemoteAddr())
	if err := d.startHandshake(ip); err != nil {
		return nil, nil, err
	}
	tc := tls.Server(nc, d.serverTLS)
	tc.SetDeadline(time.Now().Add(min(d.cfg.HandshakeTimeout, maxHandshakeTime)))
	err := tc.Handshake()
	d.endHandshake(ip)
	if err != nil {
		return nil, nil, err
	}
	tc.SetDeadline(time.Time{})
	id, err := pki.PeerIdentity(tc.ConnectionState())
	if err != nil {
		return nil, nil, err
	}
	return tc, &id, nil
}

// accepted is the reader's side of one accepted connection: what the
// actions of its handshake act on.
type accepted struct {
	d     *Driver
	nc    net.Conn
	h     handshake
	route *conn        // replies go back on it; made at the first frame
	held  []inboundMsg // a peer's frames before its proof, with their budget
}

// run carries out, in order, the actions the handshake returned for the
// frame e, which holds ch of the budgets (none for a deadline that
// passed); it reports whether the connection must close.
func (a *accepted) run(acts []action, e wire.Envelope, ch charge) bool {
	d := a.d
	for _, act := range acts {
		switch act.verb {
		case makeRoute:
			a.route = d.newRoute(a.nc, act.addr)
		case sendChallenge:
			d.challenge(act.addr, act.nonce)
		case sendProof:
			d.prove(act.addr, act.nonce)
		case acceptPeer:
			d.mu.Lock()
			d.inbound[act.addr] = a.route
			d.mu.Unlock()
			for _, m := range a.held {
				d.postMsg(m.in, m.ch)
			}
			a.held = nil
		case deliver:
			in := node.MsgIn{From: act.addr, Env: e}
			if in.From == "" {
				in.From, in.Client = a.route.addr, clientName(a.h.cert, a.nc) // a client's
			}
			a.serve(e)
			d.postMsg(in, ch)
		case hold:
			a.serve(e)
			a.held = append(a.held, inboundMsg{node.MsgIn{From: act.addr, Env: e}, ch})
		case consume:
			d.release(ch)
		case drop, closeForged:
			d.release(ch)
			d.forged(a.nc, e, act.why)
		case refuse:
			d.release(ch)
			d.forged(a.nc, e, act.why)
			if a.route == nil {
				break
			}
			a.serve(e)
			d.send(a.route.addr, wire.Envelope{Kind: wire.Reply, ReqID: e.ReqID, From: wire.NodeRef{Addr: d.addr},
				Msg: &wire.Error{Code: fault.CodeBadRequest, Text: "refused: " + act.why}})
		case closeUnproven:
			d.release(ch)
			d.Stats.Unproven.Add(1)
			d.warn(&d.logUnproven, act.why+"; closing it", "remote", a.nc.RemoteAddr().String(), "claimed", a.h.claimed)
		}
		if act.closes() {
			return true
		}
	}
	return false
}

// serve makes a request read on the connection hold room for its reply
// on the route until it is answered (see conn.waitRoom).
func (a *accepted) serve(e wire.Envelope) {
	if e.Kind == wire.Request && a.route != nil {
		a.route.serve(e.ReqID, a.d.roomFor(wire.BigReply(e.Msg.Type())))
	}
}

// close gives back what a closed connection holds: the frames held for a
// proof that never came, and its route.
func (a *accepted) close() {
	for _, m := range a.held {
		a.d.release(m.ch)
	}
	if a.route != nil {
		a.d.dropRoute(a.route)
	}
}

// RecheckCertificates closes every TLS connection whose peer's
// certificate the bundle refuses now (revoked since its handshake, by a
// CRL that pki.Bundle.ReloadCRL read, or expired), so that a revocation
// reaches the connections already open, not only the next handshakes. It
// returns how many it closed; each is counted in Stats.TLSRefused.
func (d *Driver) RecheckCertificates() int {
	if d.cfg.TLS == nil {
		return 0
	}
	d.mu.Lock()
	var open []*tls.Conn
	for _, c := range d.conns {
		if tc, ok := c.nc.(*tls.Conn); ok {
			open = append(open, tc)
		}
	}
	d.mu.Unlock()
	closed := 0
	for _, tc := range open {
		if _, err := d.cfg.TLS.Check(tc.ConnectionState().PeerCertificates, x509.ExtKeyUsageAny); err != nil {
			tc.Close()
			d.tlsRefused(tc, err)
			closed++
		}
	}
	return closed
}

// Bounds of TLS handshakes on accepted connections: at once, at once from
// one IP address, and how long each may take.
const (
	maxHandshakes      = 64
	maxHandshakesPerIP = 16
	maxHandshakeTime   = 3 * time.Second
)

// startHandshake takes a handshake slot for a connection from ip, or says
// why there is none.
func (d *Driver) startHandshake(ip string) error {
	d.hsMu.Lock()
	defer d.hsMu.Unlock()
	if d.handshakesFrom == nil {
		d.handshakesFrom = map[string]int{}
	}
	if d.handshakesFrom[ip] >= maxHandshakesPerIP {
		return fmt.Errorf("%d handshakes at once from %s", maxHandshakesPerIP, ip)
	}
	select {
	case d.handshaking <- struct{}{}:
	default:
		return errors.New("too many handshakes at once")
	}
	d.handshakesFrom[ip]++
	return nil
}

// endHandshake gives back the slot startHandshake took.
func (d *Driver) endHandshake(ip string) {
	<-d.handshaking
	d.hsMu.Lock()
	defer d.hsMu.Unlock()
	if d.handshakesFrom[ip]--; d.handshakesFrom[ip] <= 0 {
		delete(d.handshakesFrom, ip)
	}
}

// handshakeBucket is what a connection's handshakes are counted under: its
// remote IPv4 address, or the /64 of an IPv6 one (one host is commonly
// given a whole /64).
func handshakeBucket(addr net.Addr) string {
	a, ok := addr.(*net.TCPAddr)
	if !ok {
		return addr.String()
	}
	if a.IP.To4() != nil {
		return a.IP.To4().String()
	}
	return a.IP.Mask(net.CIDRMask(64, 128)).String() + "/64"
}

// isLoopback reports whether nc comes from a loopback address.
// clientName is how a client is known to the protocols (node.MsgIn's
// Client): by its certificate, else by its IP address.
func clientName(cert *pki.Identity, nc net.Conn) string {
	if cert != nil {
		return "cert " + cert.Name + "@" + cert.Site
	}
	if a, ok := nc.RemoteAddr().(*net.TCPAddr); ok {
		return "ip " + a.IP.String()
	}
	return "ip " + nc.RemoteAddr().String()
}

func isLoopback(nc net.Conn) bool {
	a, ok := nc.RemoteAddr().(*net.TCPAddr)
	return ok && a.IP.IsLoopback()
}

// tlsRefused counts and logs a connection whose TLS handshake failed.
func (d *Driver) tlsRefused(nc net.Conn, err error) {
	d.Stats.TLSRefused.Add(1)
	d.warn(&d.logTLS, "TLS handshake refused", "remote", nc.RemoteAddr().String(), "err", err, "refused", d.Stats.TLSRefused.Load())
}

// forged counts and logs a frame dropped for not matching its connection.
func (d *Driver) forged(nc net.Conn, e wire.Envelope, why string) {
	d.Stats.Forged.Add(1)
	d.warn(&d.logForged, "dropping frame: "+why, "remote", nc.RemoteAddr().String(), "claimed", e.From.Addr, "type", e.Msg.Type(), "kind", e.Kind)
}

func randomNonce() uint64 {
	var b [8]byte
	crand.Read(b[:])
	return binary.LittleEndian.Uint64(b[:])
}

// challenge asks the process listening at addr, over a connection we dial,
// to prove an accepted connection claiming addr with nonce.
func (d *Driver) challenge(addr node.Addr, nonce uint64) {
	d.send(addr, wire.Envelope{Kind: wire.OneWay, From: wire.NodeRef{Addr: d.addr}, Msg: &wire.Challenge{Nonce: nonce}})
}

// prove answers a challenge from the process at addr: the proof goes out
// on our own connection to addr, the one the challenge is about. A forged
// challenge only makes us send the real process a proof it ignores.
func (d *Driver) prove(addr node.Addr, nonce uint64) {
	d.send(addr, wire.Envelope{Kind: wire.OneWay, From: wire.NodeRef{Addr: d.addr}, Msg: &wire.Proof{Nonce: nonce}})
}

// newRoute makes the route back on an accepted connection: a client's, or
// a peer's (used for replies once it proves its address).
func (d *Driver) newRoute(nc net.Conn, peer node.Addr) *conn {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.nextCli++
	name := clientRoute
	if peer != "" {
		name = "@peer/"
	}
	cl := newConn(d, name+strconv.FormatUint(d.nextCli, 10))
	cl.nc = nc
	cl.setRaw(nc)
	cl.peer = peer
	d.conns[cl.addr] = cl
	d.wg.Add(1)
	go cl.write()
	return cl
}

// clientRoute starts the name of a route back to a client.
const clientRoute = "@client/"

// dropRoute forgets the route of an accepted connection that closed.
func (d *Driver) dropRoute(c *conn) {
	d.mu.Lock()
	delete(d.conns, c.addr)
	if c.peer != "" && d.inbound[c.peer] == c {
		delete(d.inbound, c.peer)
	}
	d.mu.Unlock()
	c.closeQueue()
}

// send encodes e and queues it for to; it never blocks.
func (d *Driver) send(to node.Addr, e wire.Envelope) {
	if isLocal(to) {
		d.sendLocal(to, e)
		return
	}
	size := wire.Size(e)
	if size > d.cfg.MaxFrameBytes {
		d.Stats.QueueDrops.Add(1)
		d.cfg.Log.Error("refusing to send an oversized frame", "to", to, "type", e.Msg.Type(), "bytes", size)
		return
	}
	d.mu.Lock()
	var c *conn
	if e.Kind == wire.Reply && to != "" && to[0] != '@' {
		// A peer's request is answered on the connection it came in on.
		if c = d.inbound[to]; c == nil {
			d.mu.Unlock()
			d.Stats.NoRoute.Add(1)
			return
		}
	} else {
		c = d.conns[to]
	}
	if c == nil {
		if to == "" || to[0] == '@' {
			d.mu.Unlock()
			return // a client that has gone
		}
		c = newConn(d, to)
		d.conns[to] = c
		d.wg.Add(1)
		go c.write()
	}
	d.mu.Unlock()
	if e.Kind == wire.Reply {
		defer c.settle(e.ReqID) // its request no longer holds room, once it is queued
	}
	// A frame that would not fit is not encoded: a client asking for
	// blocks it never reads costs no copies of them.
	if !c.fits(size + 4) {
		d.Stats.QueueDrops.Add(1)
		return
	}
	frame := wire.AppendFrame(make([]byte, 0, size+4), e)
	if !c.writeInline(frame) && !c.enqueue(frame) {
		d.Stats.QueueDrops.Add(1)
		return
	}
	if e.Kind == wire.Reply && strings.HasPrefix(c.addr, clientRoute) {
		c.answered.Store(true) // a client's route: it completed a request
	}
}

// roomFor is the room a request in service holds for its reply, whose
// size is not known until it comes: for a request whose reply may carry a
// block (wire.BigReply), an eighth of MaxQueuedBytes (1 MiB by default),
// so that three such are in service on a connection with nothing queued;
// for any other (an Ack, a list of nodes, a tree node), a 128th (64 KiB),
// so that a peer's stores and lookups are not held to a block's room.
func (d *Driver) roomFor(big bool) int {
	if big {
		return d.cfg.MaxQueuedBytes / 8
	}
	return d.cfg.MaxQueuedBytes / 128
}

// notePeak raises queuedPeak to n if n is more.
func (d *Driver) notePeak(n int64) {
	for {
		p := d.queuedPeak.Load()
		if n <= p || d.queuedPeak.CompareAndSwap(p, n) {
			return
		}
	}
}

// env is the node.Env the loop passes to Handle.
type env struct{ d *Driver }

func (e *env) Now() time.Time   { return time.Now() }
func (e *env) Rand() *rand.Rand { return e.d.rng }

func (e *env) Send(to node.Addr, m wire.Envelope) {
	if to == e.d.addr {
		// Co-located virtual servers: no socket, but a separate event, as
		// if it had crossed the network (a copy, as the codec would make).
		m.Msg = wire.Clone(m.Msg)
		e.d.local = append(e.d.local, node.MsgIn{From: to, Env: m})
		return
	}
	e.d.send(to, m)
}

func (e *env) After(d time.Duration, t node.Timer) func() {
	tm := time.AfterFunc(d, func() { e.d.post(node.TimerFired{T: t}) })
	return func() { tm.Stop() }
}

// Offload queues w for the driver's Workers; it never blocks the loop.
func (e *env) Offload(w node.Work) {
	if len(e.d.backlog) == 0 {
		select {
		case e.d.workQ <- w:
			return
		default:
		}
	}
	e.d.backlog = append(e.d.backlog, w)
}

// FileDisk is a node.Disk in a directory; writes are atomic (temporary
// file, fsync, rename, fsync of the directory).
type FileDisk struct{ Dir string }

// ReadFile reads a file of the disk.
func (f FileDisk) ReadFile(name string) ([]byte, error) {
	return os.ReadFile(filepath.Join(f.Dir, filepath.Base(name)))
}

// WriteFile replaces a file of the disk atomically and durably.
func (f FileDisk) WriteFile(name string, data []byte) error {
	path := filepath.Join(f.Dir, filepath.Base(name))
	tmp, err := os.CreateTemp(f.Dir, ".tmp-"+filepath.Base(name)+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	dir, err := os.Open(f.Dir)
	if err != nil {
		return err
	}
	defer dir.Close()
	return dir.Sync()
}
