package noded

import (
	"errors"
	"flag"
	"fmt"
	"hash/fnv"
	"path/filepath"
	"strings"
	"time"

	"triad/internal/cc"
	"triad/internal/deploy"
	"triad/internal/dhash"
	"triad/internal/host"
	"triad/internal/id"
	"triad/internal/maint"
	"triad/internal/pki"
	"triad/internal/ring"
	"triad/internal/store"
	"triad/internal/store/lie"
	"triad/internal/tcp"
	"triad/internal/wire"
)

// Options say everything about one node process. The fields down to
// TapExtra are its flags and the keys of a configuration file's [node]
// table (named in each field's comment); the rest are set by code.
type Options struct {
	// Listen is the TCP address (host:port) the node serves peers and
	// clients on; its ring IDs derive from it. Key listen. Default
	// 127.0.0.1:4001.
	Listen string
	// Join is the address of any running node to join through. Empty
	// starts a ring, or rejoins from the peers saved under Data. Key join.
	Join string
	// JoinTimeout bounds how long, with Join, WaitJoined waits for another
	// node of the ring before it gives up. Zero keeps trying. Key
	// join-timeout. Default 1m.
	JoinTimeout time.Duration
	// Vnodes is the number of ring positions (virtual servers) in the
	// process, 1 to ring.MaxVnodes. Key vnodes. Default 1.
	Vnodes int
	// Positions is how many of the ring positions derived from Listen a
	// new node chooses its vnodes among, to even out the hosts' shares of
	// the ring it joins (ring.Place); a restart keeps what it chose. 0
	// means all it may use: its certificate's vnode count with TLS,
	// ring.MaxVnodes without. Equal to Vnodes, it takes the first ones.
	// Key positions.
	Positions int
	// Data is the data folder. Empty means triad-data/PORT, PORT being
	// Listen's. Key data.
	Data string
	// WriteTimeout bounds one write to a peer or client: a connection whose
	// writes stall longer is closed (0: tcp's default, 8 s).
	WriteTimeout time.Duration
	// MaxConns is how many connections from peers and clients are accepted
	// at once; more are closed on arrival. Key max-conns. Default 1024.
	MaxConns int
	// Machine names the machine (one disk) shared by the processes that
	// store on it: no two of them get replicas of one block. Empty: an
	// identity made once and kept under Data (with a certificate, the
	// certificate's). Key machine.
	Machine string
	// Stabilize is the mean time between Chord stabilization rounds. Key
	// stabilize. Default 1s.
	Stabilize time.Duration
	// RepairBudgetKB bounds, in KB per second across the node's vnodes,
	// what maintenance fetches and hands over. Zero: no bound. Key
	// repair-budget.
	RepairBudgetKB int
	// MaintInterval is the mean time between a vnode's maintenance rounds
	// (Passing Tone); a neighbour change starts one at once. Zero turns
	// maintenance off. Key maint-interval. Default maint.DefaultConfig's
	// (10m).
	MaintInterval time.Duration
	// TLS is the folder of the node's certificate bundle (from 'triad ca
	// issue NAME --addr LISTEN'): every connection is mutual TLS. Empty:
	// plain TCP. Key tls.
	TLS string
	// HTTP is the address of the status page (/) and Prometheus metrics
	// (/metrics). Empty: none. Key http.
	HTTP string
	// TestLie makes the node's storage lie to its own code, for tests only
	// (triad chaos --ack-and-drop): lying-tree, ack-and-drop or forged
	// (lie.Parse). Empty: it does not. Key test-lie.
	TestLie string
	// CCScheme is the congestion control of requests routed through the
	// ring: marking, loss, backpressure, none, or off (not run). Key
	// cc-scheme. Default marking.
	CCScheme string
	// CCUplinkKbps paces routed requests at this uplink, in kbit/s, so that
	// the forwarding queue fills when more comes than it carries. Zero:
	// unpaced. Key cc-uplink-kbps.
	CCUplinkKbps int
	// CCFlood makes the node a load generator that routes this many
	// requests per second for random keys (benchmarks). Zero: none. Key
	// cc-flood.
	CCFlood float64
	// CCPayload is the bytes each generated request carries. Key
	// cc-payload. Default 100.
	CCPayload int
	// Redundancy is how blocks are stored by default: replicas or
	// fragments. Key redundancy. Default replicas.
	Redundancy string
	// Replicas is the whole copies per block (k). Key replicas. Default
	// dhash.DefaultConfig's.
	Replicas int
	// Fragments is the erasure coding m/l: any m of l fragments rebuild a
	// block. Key fragments. Default dhash.DefaultConfig's (7/14).
	Fragments string
	// MaxBlock is the largest block accepted, in bytes. Key max-block.
	// Default dhash.DefaultConfig's.
	MaxBlock int
	// WriteWindow is how many puts the node coordinates at once; more are
	// deferred (fault.ErrBusy). Key write-window. Default
	// dhash.DefaultConfig's.
	WriteWindow int
	// STP sends block copies through one congestion window across all
	// destinations (DHash++'s STP); false sends every copy at once. Key
	// stp. Default true.
	STP bool
	// CapacityMB is the disk space for blocks, in MiB. Zero: no limit but
	// the disk. Key capacity-mb.
	CapacityMB int64
	// MaxRetention is the longest a block may be kept: puts asking for more
	// are refused, and copies from other nodes are kept no longer. Key
	// max-retention. Default dhash.DefaultConfig's.
	MaxRetention time.Duration
	// Workers is how many goroutines run the node's blocking work (disk
	// reads and writes) at once. Key workers. Default 256.
	Workers int
	// SyncInterval is the storage engine's group-commit interval. Zero
	// commits back to back: a put waits about one fdatasync (0.1 ms here)
	// while concurrent puts still share it, where a timed interval adds a
	// timer's granularity to every put. Key sync-interval. Default zero.
	SyncInterval time.Duration
	// SyncPeriod, above zero, is periodic durability: the node
	// acknowledges a block copy once written to its files, and its group
	// commit makes the copies durable at most this long after
	// (dhash.Config.AckWritten, with the engine's interval set to it). A
	// power cut of the machine loses the copies of its last period. Key
	// sync-period. Default zero: durable before acknowledged.
	SyncPeriod time.Duration
	// Protocols are the protocols beyond the ring and the block store
	// this node may run (deploy.Extensions: Tapestry, D2), each turned on
	// by its flag (--tapestry, --d2; keys tapestry and d2) and set by its
	// own table (--tapestry-*, --d2-*). Default: all off. A copy of
	// Options shares them: Enable on a copy enables on the original too.
	Protocols []*deploy.Extension

	// IDs are the ring positions of a new node (a restart keeps its own);
	// nil derives them from Listen. With DeriveIDs they must be positions
	// derived from Listen, vnode 0 first (a deployment that places its
	// nodes itself, as triad up does: ring.Place), since peers refuse IDs
	// that are not derived.
	IDs []id.ID
	// DeriveIDs makes the node's IDs derive from its address and its peers'
	// be checked to (issue 27: no choosing where one sits on the ring).
	// Default true.
	DeriveIDs bool
	// Name is the status page's title. Empty: "node LISTEN".
	Name string
	// Bundle is the certificate bundle, in place of loading TLS.
	Bundle *pki.Bundle
}

// DefaultOptions is one vnode on 127.0.0.1:4001 with every protocol's
// defaults.
func DefaultOptions() Options {
	d := dhash.DefaultConfig()
	return Options{
		Listen:        "127.0.0.1:4001",
		JoinTimeout:   time.Minute,
		Vnodes:        1,
		MaxConns:      1024,
		Stabilize:     ring.DefaultConfig().StabilizeInterval,
		MaintInterval: maint.DefaultConfig().Interval,
		CCScheme:      "marking",
		CCPayload:     100,
		Redundancy:    "replicas",
		Replicas:      d.Replicas,
		Fragments:     fmt.Sprintf("%d/%d", d.DataFrags, d.TotalFrags),
		MaxBlock:      d.MaxBlock,
		WriteWindow:   d.WriteWindow,
		STP:           true,
		MaxRetention:  d.MaxRetention,
		Workers:       256,
		DeriveIDs:     true,
		Protocols:     deploy.Extensions(),
	}
}

// RegisterFlags defines the node's flags on fs, bound to o's fields and
// with o's values as their defaults.
func (o *Options) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.Listen, "listen", o.Listen, "TCP `address` to listen on (host:port)")
	fs.StringVar(&o.Join, "join", o.Join, "`address` of any running node to join through (none: start a ring, or rejoin from saved peers)")
	fs.DurationVar(&o.JoinTimeout, "join-timeout", o.JoinTimeout, "with --join: give up and exit non-zero if no other node of the ring is reached within this long (0: keep trying)")
	fs.IntVar(&o.Vnodes, "vnodes", o.Vnodes, "virtual servers (ring positions) in this process")
	fs.IntVar(&o.Positions, "positions", o.Positions, "a new node takes its vnodes among this many positions derived from --listen, those that even out the nodes' shares of the ring it joins (0: all it may use, its certificate's vnode count with --tls, 64 without; equal to --vnodes: the first ones)")
	fs.StringVar(&o.Data, "data", o.Data, "data `directory` (default ./triad-data/<port>)")
	fs.DurationVar(&o.WriteTimeout, "write-timeout", o.WriteTimeout, "the longest one write to a peer or client may stall before its connection is closed (0: 8s)")
	fs.IntVar(&o.MaxConns, "max-conns", o.MaxConns, "connections from peers and clients accepted at once; more are closed on arrival")
	fs.StringVar(&o.Machine, "machine", o.Machine, "machine `name` shared by the processes that store on one machine (one disk): no two of them get replicas of one block (default: an identity made once and kept under --data)")
	fs.DurationVar(&o.Stabilize, "stabilize", o.Stabilize, "mean time between stabilization rounds")
	fs.IntVar(&o.RepairBudgetKB, "repair-budget", o.RepairBudgetKB, "bytes per second, in KB, that maintenance may fetch and hand over, across the node's vnodes (0: no bound)")
	fs.DurationVar(&o.MaintInterval, "maint-interval", o.MaintInterval, "mean time between a vnode's maintenance rounds (Passing Tone: pull what its replica range lacks from its successor and predecessor); a neighbour change starts one at once; 0 turns maintenance off")
	fs.StringVar(&o.TLS, "tls", o.TLS, "mutual TLS on every connection with the bundle in this `directory` (from 'triad ca issue NAME --addr LISTEN'; none: plain TCP)")
	fs.StringVar(&o.HTTP, "http", o.HTTP, "serve the status page (/) and Prometheus metrics (/metrics) on this TCP `address` (host:port; none by default)")
	fs.StringVar(&o.TestLie, "test-lie", o.TestLie, "for tests only (triad chaos --ack-and-drop): the node's storage lies to its own code: `lying-tree` acknowledges puts and keeps only the keys, which its Merkle tree lists, ack-and-drop keeps nothing, forged returns forged bytes")
	fs.StringVar(&o.CCScheme, "cc-scheme", o.CCScheme, "congestion control of requests routed through the ring: marking, loss, backpressure, none, or off (not run)")
	fs.IntVar(&o.CCUplinkKbps, "cc-uplink-kbps", o.CCUplinkKbps, "pace routed requests at this uplink, in kbit/s, so that the forwarding queue fills when more comes than it carries (0: unpaced)")
	fs.Float64Var(&o.CCFlood, "cc-flood", o.CCFlood, "load generator: route this many requests per second for random keys from this node (for benchmarks; 0: none)")
	fs.IntVar(&o.CCPayload, "cc-payload", o.CCPayload, "bytes each generated request carries")
	fs.StringVar(&o.Redundancy, "redundancy", o.Redundancy, "how blocks are stored by default: `replicas` or fragments")
	fs.IntVar(&o.Replicas, "replicas", o.Replicas, "whole copies per block (k)")
	fs.StringVar(&o.Fragments, "fragments", o.Fragments, "erasure coding `m/l`: any m of l fragments rebuild a block")
	fs.IntVar(&o.MaxBlock, "max-block", o.MaxBlock, "largest block accepted, in `bytes`")
	fs.IntVar(&o.WriteWindow, "write-window", o.WriteWindow, "puts this node coordinates at once; more are deferred")
	fs.BoolVar(&o.STP, "stp", o.STP, "send block copies through one congestion window across all destinations (DHash++'s STP); --stp=false sends every copy at once")
	fs.Int64Var(&o.CapacityMB, "capacity-mb", o.CapacityMB, "disk space for blocks in MiB (0: no limit but the disk)")
	fs.DurationVar(&o.MaxRetention, "max-retention", o.MaxRetention, "the longest a block may be kept: puts asking for more are refused, and copies from other nodes are kept no longer")
	fs.IntVar(&o.Workers, "workers", o.Workers, "goroutines that run the node's blocking work (disk reads and writes) at once")
	fs.DurationVar(&o.SyncInterval, "sync-interval", o.SyncInterval, "the storage engine's group-commit interval; 0: commit back to back, so a put waits about one fdatasync while concurrent puts share it")
	fs.DurationVar(&o.SyncPeriod, "sync-period", o.SyncPeriod, "periodic durability: acknowledge block copies once written and make them durable within this `period` (a power cut loses this machine's copies of the last period); 0: every copy durable before it is acknowledged")
	for _, e := range o.Protocols {
		fs.BoolVar(&e.On, e.Name, e.On, e.Usage)
		for _, st := range e.Settings {
			addSetting(fs, st)
		}
	}
}

// Validate checks o, naming the flag (and configuration key) of a bad
// value.
func (o *Options) Validate() error {
	_, err := o.assembly()
	return err
}

// assembly is what Start builds from o: the host's protocols, the
// driver's and the engine's settings.
type assembly struct {
	deploy deploy.Options
	driver tcp.Config
	lie    lie.Lie
}

// assembly checks o and turns it into the settings of the parts.
func (o *Options) assembly() (assembly, error) {
	var a assembly
	// The numbers first, every wrong one said (triad config check).
	var bad []error
	check := func(wrong bool, format string, args ...any) {
		if wrong {
			bad = append(bad, fmt.Errorf(format, args...))
		}
	}
	check(o.Vnodes < 1 || o.Vnodes > ring.MaxVnodes, "--vnodes %d: want 1 to %d", o.Vnodes, ring.MaxVnodes)
	check(o.Positions != 0 && (o.Positions < o.Vnodes || o.Positions > ring.MaxVnodes), "--positions %d: want 0 (all the node may use) or %d (--vnodes) to %d", o.Positions, o.Vnodes, ring.MaxVnodes)
	check(o.WriteTimeout < 0, "--write-timeout %v: want 0 or more", o.WriteTimeout)
	check(o.MaxConns < 1, "--max-conns %d: want at least 1", o.MaxConns)
	check(o.Workers < 1, "--workers %d: want at least 1", o.Workers)
	check(o.JoinTimeout < 0, "--join-timeout %v: want 0 (keep trying) or a positive duration", o.JoinTimeout)
	check(o.Stabilize <= 0, "--stabilize %v: want a positive duration", o.Stabilize)
	blocks, err := o.blocks()
	bad = append(bad, err)
	if err := errors.Join(bad...); err != nil {
		return a, err
	}
	rc := ring.DefaultConfig()
	rc.StabilizeInterval, rc.VerifyIDs = o.Stabilize, o.DeriveIDs
	// A list that changed is checked again soon: a ring forming, or a
	// neighbour joining or leaving, settles in fractions of a second
	// rather than a round per entry.
	rc.QuickStabilize = o.Stabilize / 8
	if o.IDs != nil && o.DeriveIDs {
		for i, x := range o.IDs {
			if j, ok := ring.VnodeIndex(wire.NodeRef{ID: x, Addr: o.Listen}); !ok || (i == 0) != (j == 0) {
				return a, fmt.Errorf("noded: ID %d (%s) is not a position derived from %s (vnode 0 first): with DeriveIDs a node's IDs derive from its address", i, x.Short(), o.Listen)
			}
		}
	}
	a.deploy = deploy.Options{Vnodes: o.Vnodes, Positions: o.Positions, Bootstrap: o.Join, Host: host.DefaultConfig(), Ring: rc, Blocks: &blocks, Machine: MachineID(o.Machine)}
	if a.deploy.CC, err = o.cc(); err != nil {
		return a, err
	}
	if a.deploy.Maint, err = o.maint(); err != nil {
		return a, err
	}
	if o.TestLie != "" {
		if a.lie, err = lie.Parse(o.TestLie); err != nil {
			return a, fmt.Errorf("--test-lie: %v", err)
		}
	}
	data := o.Data
	if data == "" {
		_, port, _ := strings.Cut(o.Listen, ":")
		data = filepath.Join("triad-data", port)
	}
	if o.SyncInterval < 0 {
		return a, fmt.Errorf("--sync-interval %v: want 0 (back to back) or a positive duration", o.SyncInterval)
	}
	switch {
	case o.SyncPeriod < 0 || o.SyncPeriod > maxSyncPeriod:
		return a, fmt.Errorf("--sync-period %v: want 0 (durable before acknowledged) or up to %v", o.SyncPeriod, maxSyncPeriod)
	case o.SyncPeriod > 0 && o.SyncInterval > 0:
		return a, fmt.Errorf("--sync-period %v and --sync-interval %v: give one (the period is the group commit's interval)", o.SyncPeriod, o.SyncInterval)
	}
	extSync := o.SyncInterval // the other protocols' stores wait for their syncs
	if extSync == 0 {
		extSync = -1 // the engine's "back to back"
	}
	sync := extSync
	if o.SyncPeriod > 0 {
		sync = o.SyncPeriod
	}
	// Maintenance reads the Merkle tree node by node; a tree a second
	// behind the puts spares the feed a checkpoint for each node read.
	so := store.Options{Capacity: o.CapacityMB << 20, MaxObject: blocks.MaxBlock + 64, SyncInterval: sync, MaxRetention: blocks.MaxRetention,
		TreeLag: maintTreeLag}
	a.driver = tcp.Config{Listen: o.Listen, DataDir: data, Store: so, Workers: o.Workers, WriteTimeout: o.WriteTimeout, MaxConns: o.MaxConns, CheckVnodes: o.DeriveIDs}
	for _, e := range o.Protocols {
		stores, err := e.Apply(&a.deploy, o.CapacityMB<<20, extSync)
		if err != nil {
			return a, err
		}
		for name, so := range stores {
			if a.driver.Stores == nil {
				a.driver.Stores = map[string]store.Options{}
			}
			a.driver.Stores[name] = so
		}
	}
	return a, nil
}

// blocks is the block store's configuration.
func (o *Options) blocks() (dhash.Config, error) {
	d := dhash.DefaultConfig()
	switch o.Redundancy {
	case "replicas":
		d.Redundancy = wire.RedundancyReplicas
	case "fragments":
		d.Redundancy = wire.RedundancyFragments
	default:
		return d, fmt.Errorf("--redundancy %q: want replicas or fragments", o.Redundancy)
	}
	if _, err := fmt.Sscanf(o.Fragments, "%d/%d", &d.DataFrags, &d.TotalFrags); err != nil {
		return d, fmt.Errorf("--fragments %q: want m/l, like 7/14", o.Fragments)
	}
	if o.CapacityMB < 0 {
		return d, fmt.Errorf("--capacity-mb %d: must not be negative", o.CapacityMB)
	}
	d.Replicas, d.MaxBlock, d.WriteWindow, d.FixedWindow, d.MaxRetention = o.Replicas, o.MaxBlock, o.WriteWindow, !o.STP, o.MaxRetention
	d.AckWritten = o.SyncPeriod > 0
	if err := d.Validate(); err != nil {
		return d, fmt.Errorf("--replicas, --fragments, --max-block, --write-window, --max-retention: %v", err)
	}
	return d, nil
}

// cc is congestion control's configuration; nil with --cc-scheme off.
func (o *Options) cc() (*cc.Config, error) {
	if o.CCScheme == "off" {
		return nil, nil
	}
	c := cc.DefaultConfig()
	var err error
	if c.Scheme, err = cc.ParseScheme(o.CCScheme); err != nil {
		return nil, fmt.Errorf("--cc-scheme: %v", err)
	}
	c.UplinkBps, c.Offered, c.PayloadBytes = 1000*float64(o.CCUplinkKbps), o.CCFlood, o.CCPayload
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("--cc-uplink-kbps, --cc-flood, --cc-payload: %v", err)
	}
	return &c, nil
}

// maint is maintenance's configuration; nil with --maint-interval 0.
func (o *Options) maint() (*maint.Config, error) {
	switch {
	case o.MaintInterval < 0:
		return nil, fmt.Errorf("--maint-interval %v: want 0 (off) or a positive duration", o.MaintInterval)
	case o.MaintInterval == 0:
		return nil, nil
	case o.RepairBudgetKB < 0:
		return nil, fmt.Errorf("--repair-budget %d: want 0 (no bound) or more", o.RepairBudgetKB)
	}
	m := maint.DefaultConfig()
	m.Interval, m.Budget = o.MaintInterval, o.RepairBudgetKB*1000
	m.NoWait = o.SyncPeriod > 0 // periodic durability: repairs do not wait for a period's commit
	return &m, nil
}

// Enable turns on the protocol named name (deploy.Extension.Name), as
// its flag would.
func (o *Options) Enable(name string) error {
	for _, e := range o.Protocols {
		if e.Name == name {
			e.On = true
			return nil
		}
	}
	return fmt.Errorf("noded: no protocol %q to enable", name)
}

// addSetting offers a protocol's setting as a flag of its type.
func addSetting(fs *flag.FlagSet, st host.Setting) {
	switch v := st.Value.(type) {
	case *bool:
		fs.BoolVar(v, st.Key, *v, st.Usage)
	case *int:
		fs.IntVar(v, st.Key, *v, st.Usage)
	case *string:
		fs.StringVar(v, st.Key, *v, st.Usage)
	case *time.Duration:
		fs.DurationVar(v, st.Key, *v, st.Usage)
	case flag.Value:
		fs.Var(v, st.Key, st.Usage)
	default:
		panic(fmt.Sprintf("noded: setting %s has a value of type %T", st.Key, st.Value))
	}
}

// MachineID turns a machine name into a machine identity (0 for none).
func MachineID(name string) uint64 {
	if name == "" {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(name))
	return max(h.Sum64(), 1)
}

// maintTreeLag is how far behind the puts the store's Merkle tree may be
// when maintenance reads it (store.Options.TreeLag).
const maintTreeLag = time.Second

// maxSyncPeriod bounds --sync-period: the loss window an operator may
// choose (Cassandra's default period is 10 s).
const maxSyncPeriod = 10 * time.Second
