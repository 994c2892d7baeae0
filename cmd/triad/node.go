package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"triad/internal/cc"
	"triad/internal/deploy"
	"triad/internal/dhash"
	"triad/internal/host"
	"triad/internal/id"
	"triad/internal/maint"
	"triad/internal/metrics"
	"triad/internal/node"
	"triad/internal/pki"
	"triad/internal/ring"
	"triad/internal/sim"
	"triad/internal/status"
	"triad/internal/store"
	"triad/internal/tcp"
	"triad/internal/wire"
)

const nodeAbout = `
Runs one triad node: a process with one or more virtual servers on the Chord
ring, serving peers and clients on --listen.

The first node of a ring is started without --join. Every other node joins
through any running node. A node keeps its ring IDs and the peers it last knew
in --data, so after a crash or reboot the same command (even without --join)
brings it back at the same ring positions, as a transient failure rather than a
new node. SIGINT or SIGTERM makes it leave the ring gracefully.

A node's ring IDs derive from its listen address (vnode i sits at a hash of
the address and i), and it refuses peers whose IDs do not. With --tls every
connection is mutual TLS and a certificate grants only what it names: a
node's certificate its address, machine and vnode count (--vnodes must not
exceed it; --machine is the certificate's), a client's, a news front-end's
or an operator's the client API, and only an operator's the operators'
commands (maint pause). Without --tls the node trusts its network: any
process that can reach the port and proves the address it listens on can
join the ring, and maint pause is taken from this machine only.

Example:
  triad node --listen 127.0.0.1:4001 --data /var/lib/triad
  triad node --listen 127.0.0.1:4002 --join 127.0.0.1:4001 --vnodes 4`

func runNode(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("node", "node --listen ADDR [--join ADDR] [--vnodes N] [--data DIR] [block-store flags]", nodeAbout, stderr)
	listen := fs.String("listen", "127.0.0.1:4001", "TCP `address` to listen on (host:port)")
	join := fs.String("join", "", "`address` of any running node to join through (none: start a ring, or rejoin from saved peers)")
	joinTimeout := fs.Duration("join-timeout", time.Minute, "with --join: give up and exit non-zero if no other node of the ring is reached within this long (0: keep trying)")
	vnodes := fs.Int("vnodes", 1, "virtual servers (ring positions) in this process")
	data := fs.String("data", "", "data `directory` (default ./triad-data/<port>)")
	maxConns := fs.Int("max-conns", 1024, "connections from peers and clients accepted at once; more are closed on arrival")
	machine := fs.String("machine", "", "machine `name` shared by the processes that store on one machine (one disk): no two of them get replicas of one block (default: an identity made once and kept under --data)")
	stab := fs.Duration("stabilize", time.Second, "mean time between stabilization rounds")
	repairKBps := fs.Int("repair-budget", 0, "bytes per second, in KB, that maintenance may fetch and hand over, across the node's vnodes (0: no bound)")
	maintEvery := fs.Duration("maint-interval", maint.DefaultConfig().Interval, "mean time between a vnode's maintenance rounds (Passing Tone: pull what its replica range lacks from its successor and predecessor); a neighbour change starts one at once; 0 turns maintenance off")
	verbose := fs.Bool("v", false, "log connection-level detail")
	tlsDir := fs.String("tls", "", "mutual TLS on every connection with the bundle in this `directory` (from 'triad ca issue NAME --addr LISTEN'; none: plain TCP)")
	httpAddr := fs.String("http", "", "serve the status page (/) and Prometheus metrics (/metrics) on this TCP `address` (host:port; none by default)")
	testLie := fs.String("test-lie", "", "for tests only (triad chaos --ack-and-drop): the node's storage lies to its own code: `lying-tree` acknowledges puts and keeps only the keys, which its Merkle tree lists, ack-and-drop keeps nothing, forged returns forged bytes")
	ccScheme := fs.String("cc-scheme", "marking", "congestion control of requests routed through the ring: marking, loss, backpressure, none, or off (not run)")
	ccUplink := fs.Int("cc-uplink-kbps", 0, "pace routed requests at this uplink, in kbit/s, so that the forwarding queue fills when more comes than it carries (0: unpaced)")
	ccFlood := fs.Float64("cc-flood", 0, "load generator: route this many requests per second for random keys from this node (for benchmarks; 0: none)")
	ccPayload := fs.Int("cc-payload", 100, "bytes each generated request carries")
	profile := addProfileFlag(fs, "the node until it stops")
	bf := addBlockFlags(fs)
	configPath := addConfigFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	cf, err := applyConfig(fs, *configPath, "node")
	if err != nil {
		return err
	}
	// The command's own checks of a value from the file name its line.
	usageErr := func(fs *flag.FlagSet, format string, args ...any) error {
		return usageErr(fs, "%v", cf.Explain("node", fmt.Errorf(format, args...)))
	}
	stopProfile, err := profile.start()
	if err != nil {
		return err
	}
	defer stopProfile()
	relaxGC()
	if fs.NArg() > 0 {
		return usageErr(fs, "unexpected argument %q", fs.Arg(0))
	}
	if *vnodes < 1 || *vnodes > 64 {
		return usageErr(fs, "--vnodes %d: want 1 to 64", *vnodes)
	}
	spec, err := bf.spec()
	if err != nil {
		return usageErr(fs, "%v", err)
	}
	spec.machine = machineID(*machine)
	if *maxConns < 1 {
		return usageErr(fs, "--max-conns %d: want at least 1", *maxConns)
	}
	spec.maxConns = *maxConns
	if *data == "" {
		_, port, _ := strings.Cut(*listen, ":")
		*data = filepath.Join("triad-data", port)
	}
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	spec.listen, spec.data, spec.join, spec.vnodes, spec.http = *listen, *data, *join, *vnodes, *httpAddr
	if *tlsDir != "" {
		if spec.tls, err = pki.LoadBundle(*tlsDir); err != nil {
			return err
		}
	}
	spec.ring.StabilizeInterval = *stab
	if *testLie != "" {
		if spec.lie, err = sim.ParseLie(*testLie); err != nil {
			return usageErr(fs, "--test-lie: %v", err)
		}
	}
	if *ccScheme == "off" {
		spec.cc = nil
	} else {
		if spec.cc.Scheme, err = cc.ParseScheme(*ccScheme); err != nil {
			return usageErr(fs, "--cc-scheme: %v", err)
		}
		spec.cc.UplinkBps, spec.cc.Offered, spec.cc.PayloadBytes = 1000*float64(*ccUplink), *ccFlood, *ccPayload
		if err := spec.cc.Validate(); err != nil {
			return usageErr(fs, "--cc-uplink-kbps, --cc-flood, --cc-payload: %v", err)
		}
	}
	switch {
	case *maintEvery < 0:
		return usageErr(fs, "--maint-interval %v: want 0 (off) or a positive duration", *maintEvery)
	case *maintEvery == 0:
		spec.maint = nil
	default:
		spec.maint.Interval = *maintEvery
		if *repairKBps < 0 {
			return usageErr(fs, "--repair-budget %d: want 0 (no bound) or more", *repairKBps)
		}
		spec.maint.Budget = *repairKBps * 1000
	}
	if *joinTimeout < 0 {
		return usageErr(fs, "--join-timeout %v: want 0 (keep trying) or a positive duration", *joinTimeout)
	}
	if checkedOnly(fs) {
		return nil
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	n, err := startNode(ctx, spec, log)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "triad node: listening on %s, data in %s, %d vnode(s):\n", n.addr, *data, *vnodes)
	for _, x := range n.state.IDs {
		fmt.Fprintf(stdout, "  %s\n", x)
	}
	if n.http != nil {
		fmt.Fprintf(stdout, "status page on http://%s/, metrics on http://%s/metrics\n", n.http.Addr, n.http.Addr)
	}
	if *join != "" {
		if err := n.waitJoined(ctx, *join, *joinTimeout, stderr); err != nil {
			cancel()
			return errors.Join(err, n.wait())
		}
	}
	return n.wait()
}

// joinReportEvery is how often a node that has not reached its ring yet
// says so on stderr.
var joinReportEvery = 5 * time.Second

// waitJoined waits until one of the node's vnodes has a successor on
// another host: it has reached the ring it was told to join. Until then it
// says every joinReportEvery why not (what dialling --join gives); after
// timeout (0: never) it gives up with that reason. A node that cannot
// reach its ring would otherwise stand alone and fail every put with "too
// few live hosts".
func (n *runningNode) waitJoined(ctx context.Context, join string, timeout time.Duration, stderr io.Writer) error {
	start := time.Now()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	lastReport := start
	for {
		joined := false
		if err := n.drv.Do(ctx, func(node.Env) {
			for _, v := range n.node.Ring.Vnodes() {
				for _, s := range v.Succs() {
					joined = joined || s.Addr != v.Self().Addr
				}
			}
		}); err != nil {
			return nil // stopping
		}
		if joined {
			if time.Since(start) >= joinReportEvery {
				fmt.Fprintf(stderr, "triad node: joined the ring through %s after %v\n", join, time.Since(start).Round(time.Second))
			}
			return nil
		}
		waited := time.Since(start)
		if timeout > 0 && waited >= timeout {
			return fmt.Errorf("no node of the ring reached through --join %s in %v (%s); is the address right and the node there running?", join, timeout, probeJoin(join))
		}
		if time.Since(lastReport) >= joinReportEvery {
			lastReport = time.Now()
			left := "retrying"
			if timeout > 0 {
				left = fmt.Sprintf("retrying, giving up in %v (--join-timeout)", (timeout - waited).Round(time.Second))
			}
			fmt.Fprintf(stderr, "triad node: not in a ring yet after %v: --join %s: %s; %s\n", waited.Round(time.Second), join, probeJoin(join), left)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// probeJoin says what a TCP connection to the --join address gives.
func probeJoin(addr string) string {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return err.Error()
	}
	c.Close()
	return "it accepts connections but has not answered as a ring member"
}

// blockFlags are the block-store settings of a node.
type blockFlags struct {
	redundancy *string
	replicas   *int
	frags      *string
	maxBlock   *int
	window     *int
	stp        *bool
	capacityMB *int64
	retention  *time.Duration
}

func addBlockFlags(fs *flag.FlagSet) *blockFlags {
	def := dhash.DefaultConfig()
	return &blockFlags{
		redundancy: fs.String("redundancy", "replicas", "how blocks are stored by default: `replicas` or fragments"),
		replicas:   fs.Int("replicas", def.Replicas, "whole copies per block (k)"),
		frags:      fs.String("fragments", fmt.Sprintf("%d/%d", def.DataFrags, def.TotalFrags), "erasure coding `m/l`: any m of l fragments rebuild a block"),
		maxBlock:   fs.Int("max-block", def.MaxBlock, "largest block accepted, in `bytes`"),
		window:     fs.Int("write-window", def.WriteWindow, "puts this node coordinates at once; more are deferred"),
		stp:        fs.Bool("stp", true, "send block copies through one congestion window across all destinations (DHash++'s STP); --stp=false sends every copy at once"),
		capacityMB: fs.Int64("capacity-mb", 0, "disk space for blocks in MiB (0: no limit but the disk)"),
		retention:  fs.Duration("max-retention", def.MaxRetention, "the longest a block may be kept: puts asking for more are refused, and copies from other nodes are kept no longer"),
	}
}

// nodeSpec is everything startNode needs.
type nodeSpec struct {
	listen, data, join string
	vnodes             int
	machine            uint64 // 0: the identity kept under data
	maxConns           int    // 0: the driver's default
	host               host.Config
	maint              *maint.Config // nil: no maintenance
	ring               ring.Config
	dhash              dhash.Config
	capacity           int64
	ids                []id.ID     // ring positions of a new node (nil: random); a restart keeps its own
	http               string      // address of /metrics and the status page ("": none)
	name               string      // the status page's title ("": "node ADDR")
	tls                *pki.Bundle // mutual TLS (nil: plain TCP)
	cc                 *cc.Config  // congestion control of routed requests (nil: none)
	lie                sim.Lie     // tests only: how the node's storage lies to it (0: it does not)
}

// defaultNodeSpec is one vnode with every protocol's defaults.
func defaultNodeSpec() nodeSpec {
	mc := maint.DefaultConfig()
	cf := cc.DefaultConfig()
	rc := ring.DefaultConfig()
	// A node's ring IDs derive from its address, and its peers' must too
	// (issue 27: no choosing where one sits on the ring).
	rc.VerifyIDs = true
	return nodeSpec{vnodes: 1, host: host.DefaultConfig(), ring: rc, dhash: dhash.DefaultConfig(), maint: &mc, cc: &cf}
}

func (b *blockFlags) spec() (nodeSpec, error) {
	spec := defaultNodeSpec()
	d := &spec.dhash
	switch *b.redundancy {
	case "replicas":
		d.Redundancy = wire.RedundancyReplicas
	case "fragments":
		d.Redundancy = wire.RedundancyFragments
	default:
		return spec, fmt.Errorf("--redundancy %q: want replicas or fragments", *b.redundancy)
	}
	if _, err := fmt.Sscanf(*b.frags, "%d/%d", &d.DataFrags, &d.TotalFrags); err != nil {
		return spec, fmt.Errorf("--fragments %q: want m/l, like 7/14", *b.frags)
	}
	d.Replicas, d.MaxBlock, d.WriteWindow, d.FixedWindow, d.MaxRetention = *b.replicas, *b.maxBlock, *b.window, !*b.stp, *b.retention
	if *b.capacityMB < 0 {
		return spec, fmt.Errorf("--capacity-mb must not be negative")
	}
	spec.capacity = *b.capacityMB << 20
	return spec, d.Validate()
}

// machineID turns a --machine name into a machine identity (0 for none).
func machineID(name string) uint64 {
	if name == "" {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(name))
	return max(h.Sum64(), 1)
}

// runningNode is a driver and the host it runs in this process.
type runningNode struct {
	addr  string
	drv   *tcp.Driver
	node  *deploy.Node
	state ring.State
	done  chan error
	http  *metrics.Server // nil without spec.http
	page  *status.Sources // the status page's, with http
}

// startNode binds, opens the node's storage (the driver owns it), builds
// the host from it, and runs it until ctx ends.
func startNode(ctx context.Context, spec nodeSpec, log *slog.Logger) (*runningNode, error) {
	var rec *status.Recorder
	if spec.http != "" {
		// The status page shows the last warnings and errors.
		rec = status.NewRecorder(log.Handler(), 50)
		log = slog.New(rec)
	}
	// Puts wait for durability. Group commits back to back keep that wait
	// near one fdatasync (about 0.1 ms here) while puts still share them; a
	// timed interval would add a timer's granularity to every put.
	so := store.Options{Capacity: spec.capacity, MaxObject: spec.dhash.MaxBlock + 64, SyncInterval: -1, MaxRetention: spec.dhash.MaxRetention}
	if spec.tls != nil {
		// The certificate names the node's machine and how many vnodes it
		// may run; its peers refuse anything else.
		self := spec.tls.Self
		if spec.machine != 0 && spec.machine != self.MachineID() {
			return nil, fmt.Errorf("--machine is not the machine the certificate (%s) names: issue it with 'triad ca issue --machine'", self.Name)
		}
		spec.machine = self.MachineID()
		if spec.ring.VerifyIDs && spec.vnodes > self.Vnodes {
			return nil, fmt.Errorf("%d vnodes, but the certificate (%s) allows %d: issue it with 'triad ca issue --vnodes'", spec.vnodes, self.Name, self.Vnodes)
		}
	}
	ncfg := tcp.Config{Listen: spec.listen, DataDir: spec.data, Store: so, Log: log, Workers: 256, MaxConns: spec.maxConns, TLS: spec.tls, CheckVnodes: spec.ring.VerifyIDs}
	if spec.lie != 0 {
		ncfg.WrapEngine = func(e store.Engine) store.Engine { return sim.LyingEngine(e, spec.lie) }
	}
	drv, err := tcp.Listen(ncfg)
	if err != nil {
		return nil, err
	}
	if spec.ids != nil {
		if err := ring.SeedIDs(drv.Storage(), spec.ids); err != nil {
			return nil, errors.Join(err, drv.Close())
		}
	}
	blocks := spec.dhash
	opts := deploy.Options{Vnodes: spec.vnodes, Bootstrap: spec.join, Host: spec.host, Ring: spec.ring, Blocks: &blocks, Machine: spec.machine, Maint: spec.maint, CC: spec.cc}
	n, err := deploy.New(opts, drv.Addr(), drv.Storage(), drv.Rand())
	if err != nil {
		return nil, errors.Join(fmt.Errorf("%s: %w", spec.data, err), drv.Close())
	}
	if len(n.Moved) > 0 {
		log.Warn("this node's vnode IDs now derive from its listen address: it left the IDs it had saved, and its neighbours hand it what it now holds", "left", fmt.Sprint(n.Moved), "now", fmt.Sprint(n.State.IDs))
	}
	rn := &runningNode{addr: drv.Addr(), drv: drv, node: n, state: n.State, done: make(chan error, 1)}
	if spec.http != "" {
		mc := metrics.NewNode(drv, n)
		if rn.http, err = metrics.Listen(spec.http, metrics.NewRegistry(mc)); err != nil {
			return nil, errors.Join(fmt.Errorf("--http %s: %w", spec.http, err), drv.Close())
		}
		name := spec.name
		if name == "" {
			name = "node " + drv.Addr()
		}
		rn.page = &status.Sources{Name: name, Node: mc.Snapshot, Store: mc.StoreStats, Log: rec}
		rn.http.Mux.Handle("/", status.Handler(rn.page))
	}
	if spec.tls != nil {
		go watchCRL(ctx, spec.tls, log, func() {
			if n := drv.RecheckCertificates(); n > 0 {
				log.Warn("closed connections whose certificates the new CRL revokes", "connections", n)
			}
		})
	}
	go func() {
		err := drv.Run(ctx, n)
		if rn.http != nil {
			err = errors.Join(err, rn.http.Close())
		}
		rn.done <- err
	}()
	return rn, nil
}

func (n *runningNode) wait() error { return <-n.done }

// crlCheckEvery is how often a daemon with a bundle reads its crl.pem
// again: a revocation copied into the bundle takes effect within it.
var crlCheckEvery = 30 * time.Second

// watchCRL reads b's CRL every crlCheckEvery until ctx ends, and calls
// changed when it revokes more than before.
func watchCRL(ctx context.Context, b *pki.Bundle, log *slog.Logger, changed func()) {
	t := time.NewTicker(crlCheckEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		switch ok, err := b.ReloadCRL(); {
		case err != nil:
			log.Error("reading the CRL again; the one in use stays", "err", err)
		case ok:
			log.Info("read a new CRL: the certificates it revokes are refused from now on")
			if changed != nil {
				changed()
			}
		}
	}
}
