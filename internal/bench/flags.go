package bench

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"triad/internal/cc"
	"triad/internal/dhash"
)

// The flags of `triad bench NAME` and `triad chaos`: each config's
// RegisterFlags binds its fields to fs with its values as the defaults,
// and Validate names the flag of a bad value. Binary, logs and progress
// are the command's to set.

// DefaultStoreConfig is 200 KB objects (1 GB worth) from 64 writers and
// 16 readers, a group commit every millisecond, under triad-data.
func DefaultStoreConfig() StoreConfig {
	return StoreConfig{Dir: "triad-data", Size: 200000, Writers: 64, Readers: 16, SyncInterval: time.Millisecond}
}

// RegisterFlags defines `triad bench store`'s flags. Dir is the folder
// under which the command makes the run's own.
func (c *StoreConfig) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Dir, "dir", c.Dir, "folder for the benchmark's files (on the disk to measure)")
	fs.IntVar(&c.Size, "size", c.Size, "object size in bytes (100 with --reopen)")
	fs.IntVar(&c.Objects, "objects", c.Objects, "objects to write (default: 1 GB worth, at most 200,000)")
	fs.IntVar(&c.Writers, "writers", c.Writers, "concurrent writers")
	fs.IntVar(&c.Readers, "readers", c.Readers, "concurrent readers")
	fs.DurationVar(&c.SyncInterval, "sync", c.SyncInterval, "group commit interval")
	fs.IntVar(&c.Reopen, "reopen", c.Reopen, "build a store of N keys and time reopening it")
	fs.BoolVar(&c.CheckKeys, "check-keys", c.CheckKeys, "have the store hash every object written (DHash hashes them before storing, so by default the store is told it need not)")
}

// Validate checks c's sizes and counts.
func (c StoreConfig) Validate() error {
	switch {
	case c.Size < 8 || c.Size > 64<<20:
		return errors.New("--size must be between 8 bytes and 64 MiB")
	case c.Objects < 0 || c.Reopen < 0:
		return errors.New("--objects and --reopen cannot be negative")
	case c.Writers < 1 || c.Readers < 1:
		return errors.New("--writers and --readers must be at least 1")
	case c.SyncInterval <= 0:
		return errors.New("--sync must be positive")
	}
	return nil
}

// DefaultDHashConfig is 8 nodes under the system's temporary folder, 100
// byte blocks, 16 operations in flight and phases of at most a minute.
func DefaultDHashConfig() DHashConfig {
	return DHashConfig{Dir: os.TempDir(), Nodes: 8, Size: 100, Concurrency: 16, MaxPhase: time.Minute}
}

// RegisterFlags defines `triad bench dhash`'s flags.
func (c *DHashConfig) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Dir, "dir", c.Dir, "folder for the nodes' data (on the disk to measure)")
	fs.Var(&nodeCounts{c}, "nodes", "node processes; a comma-separated `list` of counts (1,2,4,6) runs once per count and prints how throughput scales")
	fs.IntVar(&c.Size, "size", c.Size, "block size in bytes")
	fs.IntVar(&c.Concurrency, "concurrency", c.Concurrency, "operations in flight, across all nodes (scaling run: default 16 per node)")
	fs.Float64Var(&c.CPUPerNode, "cpu-per-node", c.CPUPerNode, "run each node in a CPU cgroup of this many `cores` (takes root; 0: no cgroups)")
	fs.IntVar(&c.Ops, "ops", c.Ops, "blocks to put and get (default: 20,000, or 2,000 for blocks over 16 KB)")
	fs.DurationVar(&c.MaxPhase, "max-phase", c.MaxPhase, "time bound of each phase")
	fs.BoolVar(&c.HolderDirect, "holder-direct", c.HolderDirect, "send each operation straight to the key's holder, skipping the lookup (labelled in the output)")
	fs.StringVar(&c.ProfileDir, "profile", c.ProfileDir, "write CPU profiles of every node (node<i>.cpu) and of this client (client.cpu) into this `directory`")
	fs.Func("node-flags", "more `flags` for every `triad node`, space-separated (as \"--sync-interval 1ms\"); printed with the results", func(v string) error {
		c.NodeArgs = strings.Fields(v)
		return nil
	})
	fs.BoolVar(&c.Explain, "explain", c.Explain, "also print what each put and get cost the nodes and this client (CPU, syscalls, context switches, frames, fdatasyncs, allocations) and the least a put needs")
}

// Validate checks c's counts and sizes.
func (c DHashConfig) Validate() error {
	if c.Nodes < 1 || c.Nodes > 64 || c.Size < 1 || c.Size > dhash.DefaultConfig().MaxBlock || c.Concurrency < 1 || c.Concurrency > 4096 || c.Ops < 0 {
		return errors.New("want 1-64 nodes, a size of 1 byte to 1 MiB, concurrency 1-4096")
	}
	for _, n := range c.Scale {
		if n < 1 || n > 64 {
			return fmt.Errorf("--nodes: %d nodes, want 1-64", n)
		}
	}
	if c.CPUPerNode != 0 {
		if _, err := QuotaMicros(c.CPUPerNode, runtime.NumCPU()); err != nil {
			return fmt.Errorf("--cpu-per-node: %v", err)
		}
	}
	return nil
}

// nodeCounts is the --nodes flag: one count, or a list of two or more
// for a scaling run (DHashConfig.Scale), whose first is also Nodes.
type nodeCounts struct{ c *DHashConfig }

func (f *nodeCounts) String() string {
	if f.c == nil {
		return ""
	}
	if len(f.c.Scale) > 1 {
		return (&list[int]{items: &f.c.Scale}).String()
	}
	return strconv.Itoa(f.c.Nodes)
}

func (f *nodeCounts) Set(v string) error {
	var counts []int
	if err := (&list[int]{&counts, atoi("a node count")}).Set(v); err != nil {
		return err
	}
	if len(counts) == 0 {
		return errors.New("no node count")
	}
	f.c.Nodes, f.c.Scale = counts[0], nil
	if len(counts) > 1 {
		f.c.Scale = counts
	}
	return nil
}

// DefaultNNTPConfig is 10,000 articles of 2,450 bytes fed over one
// connection to triad.bench, every phase, reads by number, each phase
// bounded by 5 minutes.
func DefaultNNTPConfig() NNTPConfig {
	return NNTPConfig{SizeBytes: 2450, Conns: 1, Group: "triad.bench", MaxPhase: 300 * time.Second, Phases: strings.Split(NNTPPhases, ","),
		ReadBy: "number", PostConns: []int{1}}
}

// RegisterFlags defines `triad bench nntp`'s flags.
func (c *NNTPConfig) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Addr, "addr", c.Addr, "the NNTP server's `HOST:PORT`, on loopback (required)")
	fs.IntVar(&c.SizeBytes, "size", c.SizeBytes, "wire size of each article in `bytes`")
	fs.IntVar(&c.Conns, "conns", c.Conns, "TAKETHIS connections")
	fs.IntVar(&c.Articles, "articles", c.Articles, "articles to feed and read back (default 10,000, or 1,000 when --size is over 16 KiB)")
	fs.StringVar(&c.Group, "group", c.Group, "the newsgroup to feed and read; must exist on the server")
	fs.Var((*seconds)(&c.MaxPhase), "max-seconds", "time bound of every single phase, in `seconds`")
	fs.Var(&list[string]{&c.Phases, func(s string) (string, error) { return s, nil }}, "phases", "comma-separated `list` of phases to run")
	fs.StringVar(&c.ReadBy, "read-by", c.ReadBy, "`how` reads name articles: number (after GROUP) or id (message-id)")
	fs.StringVar(&c.User, "user", c.User, "AUTHINFO USER on every connection")
	fs.StringVar(&c.Pass, "pass", c.Pass, "AUTHINFO PASS, if the server asks for one")
	fs.StringVar(&c.ReadAddr, "read-addr", c.ReadAddr, "read phases go to this `HOST:PORT`, another site of the same ring (waits until it lists what --addr took)")
	fs.Var(&list[int]{&c.PostConns, atoi("a number")}, "post-conns", "comma-separated posting connection `counts`; each is a post phase of its own")
	fs.Var(&list[int]{&c.CPUPids, atoi("a process id")}, "cpu-pids", "comma-separated server process `ids`: print the CPU time they spend (together) per article taken by takethis and post")
}

// seconds is a duration flag given in seconds, as the anchors' scripts
// give it.
type seconds time.Duration

func (s *seconds) String() string {
	return strconv.FormatFloat(time.Duration(*s).Seconds(), 'g', -1, 64)
}

func (s *seconds) Set(v string) error {
	x, err := strconv.ParseFloat(v, 64)
	if err != nil || !(x > 0 && x <= 86400) {
		return errors.New("must be above 0 and at most a day")
	}
	*s = seconds(x * float64(time.Second))
	return nil
}

// list is a flag of comma-separated items, empty ones dropped.
type list[T any] struct {
	items *[]T
	parse func(string) (T, error)
}

func (l *list[T]) String() string {
	if l.items == nil {
		return ""
	}
	var f []string
	for _, x := range *l.items {
		f = append(f, fmt.Sprint(x))
	}
	return strings.Join(f, ",")
}

func (l *list[T]) Set(v string) error {
	*l.items = nil
	for _, f := range strings.Split(v, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		x, err := l.parse(f)
		if err != nil {
			return err
		}
		*l.items = append(*l.items, x)
	}
	return nil
}

// atoi parses an integer item, what naming what it must be.
func atoi(what string) func(string) (int, error) {
	return func(s string) (int, error) {
		n, err := strconv.Atoi(s)
		if err != nil {
			return 0, fmt.Errorf("%q is not %s", s, what)
		}
		return n, nil
	}
}

// DefaultFloodConfig is 8 nodes paced at 400 kbit/s under marking, a ramp
// of 20 to 160 requests/s per node in steps of 10 s, a flood of 2,000 for
// a minute, and a memory cap of 256 MiB.
func DefaultFloodConfig() FloodConfig {
	return FloodConfig{Dir: os.TempDir(), Nodes: 8, UplinkKbps: 400, Scheme: "marking", Ramp: []float64{20, 40, 80, 160},
		Flood: 2000, Duration: time.Minute, Measure: 10 * time.Second, MemCapMB: 256}
}

// RegisterFlags defines `triad bench flood`'s flags.
func (c *FloodConfig) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Dir, "dir", c.Dir, "folder for the nodes' data")
	fs.IntVar(&c.Nodes, "nodes", c.Nodes, "node processes")
	fs.IntVar(&c.UplinkKbps, "uplink-kbps", c.UplinkKbps, "each node's paced uplink for routed requests, kbit/s")
	fs.StringVar(&c.Scheme, "scheme", c.Scheme, "the nodes' congestion control: marking, loss, backpressure or none")
	fs.Var(&list[float64]{&c.Ramp, positive}, "ramp", "offered `rates` per node of the unflooded runs, requests/s")
	fs.Float64Var(&c.Flood, "flood", c.Flood, "offered requests/s per node during the flood")
	fs.DurationVar(&c.Duration, "duration", c.Duration, "length of the flood")
	fs.DurationVar(&c.Measure, "measure", c.Measure, "length of each ramp step (after a third of it to warm up)")
	fs.IntVar(&c.MemCapMB, "mem-cap-mb", c.MemCapMB, "no node's resident memory may pass this, MiB")
}

// positive parses a positive rate.
func positive(s string) (float64, error) {
	x, err := strconv.ParseFloat(s, 64)
	if err != nil || x <= 0 {
		return 0, fmt.Errorf("%q is not a positive rate", s)
	}
	return x, nil
}

// Validate checks c's scheme, counts and lengths.
func (c FloodConfig) Validate() error {
	if _, err := cc.ParseScheme(c.Scheme); err != nil {
		return fmt.Errorf("--scheme: %v", err)
	}
	if c.Nodes < 2 || c.Nodes > 64 || c.UplinkKbps < 1 || c.Flood <= 0 || c.Duration < 10*time.Second || c.Measure < 3*time.Second || c.MemCapMB < 1 || len(c.Ramp) == 0 {
		return errors.New("want 2-64 nodes, a positive uplink, flood rate and memory cap, a flood of at least 10s and steps of at least 3s")
	}
	return nil
}

// DefaultLimitsConfig is 200,000 articles, 5,000 idle connections and a
// normal client for 5 s.
func DefaultLimitsConfig() LimitsConfig {
	return LimitsConfig{Dir: os.TempDir(), Idle: 5000, Articles: 200000, Normal: 5 * time.Second}
}

// RegisterFlags defines `triad bench limits`'s flags.
func (c *LimitsConfig) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Dir, "dir", c.Dir, "folder for the server's data")
	fs.IntVar(&c.Idle, "idle", c.Idle, "idle connections held open")
	fs.IntVar(&c.Articles, "articles", c.Articles, "articles in the group before the scenario")
	fs.DurationVar(&c.Normal, "normal", c.Normal, "how long the normal client runs")
}

// Validate checks c's counts.
func (c LimitsConfig) Validate() error {
	if c.Idle < 0 || c.Idle > 20000 || c.Articles < 1 || c.Articles > 2000000 {
		return errors.New("want 0-20000 idle connections and 1-2000000 articles")
	}
	return nil
}

// DefaultSyncConfig is 1,000,000 keys in the range and 100,000 past it,
// under triad-data.
func DefaultSyncConfig() SyncConfig {
	return SyncConfig{Dir: "triad-data", Keys: 1_000_000, Outside: 100_000}
}

// RegisterFlags defines `triad bench sync`'s flags. Dir is the folder
// under which the command makes the run's own.
func (c *SyncConfig) RegisterFlags(fs *flag.FlagSet) {
	fs.IntVar(&c.Keys, "keys", c.Keys, "keys in the replica range, on both stores")
	fs.IntVar(&c.Outside, "outside", c.Outside, "keys the neighbour also holds past the range")
	fs.StringVar(&c.Dir, "dir", c.Dir, "folder for the two stores (removed after)")
}

// Validate checks c's counts.
func (c SyncConfig) Validate() error {
	switch {
	case c.Keys < 1 || c.Keys > 100_000_000:
		return errors.New("--keys must be between 1 and 100,000,000")
	case c.Outside < 0 || c.Outside > 100_000_000:
		return errors.New("--outside must be between 0 and 100,000,000")
	}
	return nil
}

// DefaultChaosConfig is 6 nodes for an hour with seed 1.
func DefaultChaosConfig() ChaosConfig {
	return ChaosConfig{Dir: os.TempDir(), Nodes: 6, Duration: time.Hour, Seed: 1}
}

// RegisterFlags defines `triad chaos`'s flags.
func (c *ChaosConfig) RegisterFlags(fs *flag.FlagSet) {
	fs.IntVar(&c.Nodes, "nodes", c.Nodes, "node processes")
	fs.DurationVar(&c.Duration, "duration", c.Duration, "how long to write and kill")
	fs.Uint64Var(&c.Seed, "seed", c.Seed, "which nodes die when, and the blocks written")
	fs.StringVar(&c.Dir, "dir", c.Dir, "folder for the nodes' data")
	fs.IntVar(&c.AckAndDrop, "ack-and-drop", c.AckAndDrop, "for tests: run the last `N` nodes as liars that acknowledge puts and keep only the keys, their disks wiped at every restart")
	addPortFlag(fs, &c.Port)
}

// Validate checks c's counts and duration.
func (c ChaosConfig) Validate() error {
	if c.Nodes < 3 || c.Nodes > 32 || c.Duration <= 0 || c.Duration > 24*time.Hour {
		return errors.New("want 3-32 nodes and a duration up to 24h")
	}
	if c.AckAndDrop < 0 || c.AckAndDrop > (c.Nodes-1)/3 {
		return fmt.Errorf("--ack-and-drop %d: want 0 to %d of %d nodes", c.AckAndDrop, (c.Nodes-1)/3, c.Nodes)
	}
	return checkPort(c.Port, c.Nodes)
}
