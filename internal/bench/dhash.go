package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"triad/internal/client"
	"triad/internal/dhash"
	"triad/internal/fault"
	"triad/internal/id"
	"triad/internal/pki"
	"triad/internal/proc"
	"triad/internal/ring"
	"triad/internal/wire"
)

// DHashConfig is one run of the block-store benchmark: real `triad node`
// processes on 127.0.0.1 and one client process driving them.
type DHashConfig struct {
	Binary      string // the triad executable
	Dir         string // parent of the nodes' data folders; must exist
	Nodes       int    // processes
	Size        int    // block size in bytes
	Ops         int    // puts, then as many gets
	Concurrency int    // operations in flight, across all nodes
	Port        int    // node i's port, Port+i (0: each node picks a free one)
	MaxPhase    time.Duration
	NodeArgs    []string   // extra `triad node` flags
	PerNodeArgs [][]string // more flags for node i, if given
	ProfileDir  string     // if set, each node writes a CPU profile here (node<i>.cpu)
	// HolderDirect sends each operation straight to the node holding the
	// key's first copy (client.Cluster learns the ring from the nodes), so
	// the lookup is skipped. By default operations go to the nodes in turn,
	// as a client that knows any node would send them, and the node looks
	// the key up: the lookup is part of the cost.
	HolderDirect bool
	// TLS runs the nodes with --tls and the client with a certificate,
	// from a CA made for the run: every connection is mutual TLS 1.3.
	TLS bool
	// FixedWindow runs the nodes with --stp=false: every block copy goes
	// out at once rather than through STP's window.
	FixedWindow bool
	// CPUPerNode, above 0, runs each node in a CPU cgroup of its own with
	// a quota of this many cores (OpenCPUCgroups: it takes root), as if
	// each had a small machine to itself; this client stays outside. 0:
	// the nodes share the machine's cores.
	CPUPerNode float64
	// Scale, with two or more node counts, is a scaling run (DHashScale):
	// the benchmark once per count, each on a fresh cluster. Nodes is then
	// the first count.
	Scale []int
	// Explain counts what each put and get cost the nodes and this
	// process (PhaseResult.Explain) and the least a put needs
	// (DHashResult.Floor); the nodes then serve /metrics on free ports.
	Explain bool
	Log     func(format string, args ...any)
	// Progress, if set, receives each phase's advance (a terminal's bar).
	Progress func(phase string, total int64) Progress
}

// Routes of DHashResult: how operations reach the key's holder.
const (
	RouteAnyNode      = "any node, with the lookup (a block of 16 KiB or more then moved to or from its holders)"
	RouteHolderDirect = "holder-direct, lookup skipped"
)

// PhaseResult is one phase's figures; MB is 10^6 bytes. Failed operations
// are counted in Failed and listed (up to a few) in Errors; a phase with
// failures is no basis for a comparison.
type PhaseResult struct {
	Done     int      `json:"done"`
	Failed   int      `json:"failed"`
	Errors   []string `json:"errors,omitempty"`
	Deferred int      `json:"deferred"`
	OpsPerS  float64  `json:"ops_per_sec"`
	MBps     float64  `json:"mbps"`
	P50Ms    float64  `json:"p50_ms"`
	P99Ms    float64  `json:"p99_ms"`
	Seconds  float64  `json:"seconds"`
	// NodeCPUSecs is the CPU time each node used during the phase, and
	// ClientCPUSecs this load generator's; empty where /proc is not.
	NodeCPUSecs   []float64 `json:"node_cpu_seconds,omitempty"`
	ClientCPUSecs float64   `json:"client_cpu_seconds,omitempty"`
	// Explain is the phase's use per operation, with DHashConfig.Explain.
	Explain *Explain `json:"explain,omitempty"`
}

// DHashResult holds a run's figures.
type DHashResult struct {
	Nodes       int         `json:"nodes"`
	Size        int         `json:"size"`
	Concurrency int         `json:"concurrency"`
	Route       string      `json:"route"`
	TLS         bool        `json:"tls"`
	FixedWindow bool        `json:"fixed_window"`
	CPUPerNode  float64     `json:"cpu_per_node,omitempty"` // each node's cgroup quota in cores; 0: none
	NodeFlags   []string    `json:"node_flags,omitempty"`   // DHashConfig.NodeArgs
	Replicas    int         `json:"replicas,omitempty"`     // copies per block (k); 0: the nodes' default
	Put         PhaseResult `json:"put"`
	Get         PhaseResult `json:"get"`
	StartupSecs float64     `json:"startup_seconds"`
	Floor       *Floor      `json:"floor,omitempty"` // with DHashConfig.Explain
}

// DHash starts the cluster, waits until its ring is consistent, puts
// cfg.Ops blocks round-robin through the nodes, gets each back through a
// different node than the one it was put through (checking its bytes), and
// stops the cluster.
func DHash(cfg DHashConfig) (res DHashResult, err error) {
	if cfg.Nodes < 1 || cfg.Size < 1 || cfg.Ops < 1 || cfg.Concurrency < 1 {
		return res, errors.New("bench: nodes, size, ops and concurrency must be positive")
	}
	if cfg.MaxPhase <= 0 {
		cfg.MaxPhase = time.Minute
	}
	logf := cfg.Log
	if logf == nil {
		logf = func(string, ...any) {}
	}
	cfg.Log = logf
	res = DHashResult{Nodes: cfg.Nodes, Size: cfg.Size, Concurrency: cfg.Concurrency, Route: RouteAnyNode, TLS: cfg.TLS, FixedWindow: cfg.FixedWindow, CPUPerNode: cfg.CPUPerNode, NodeFlags: cfg.NodeArgs}
	if cfg.HolderDirect {
		res.Route = RouteHolderDirect
	}
	dir, err := os.MkdirTemp(cfg.Dir, "triad-bench-dhash-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	if cfg.Explain {
		// Before the nodes start: nothing else runs while it is timed.
		if res.Floor, err = putFloor(replicasArg(cfg.NodeArgs), cfg.Nodes, cfg.Concurrency, !cfg.HolderDirect && cfg.Size >= client.DirectMin); err != nil {
			return res, err
		}
	}

	start := time.Now()
	c, err := startCluster(cfg, dir)
	defer c.stop(logf)
	if err != nil {
		return res, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := c.waitRing(ctx); err != nil {
		return res, err
	}
	cs, err := c.dial(ctx)
	defer cs.close()
	if err != nil {
		return res, err
	}
	res.StartupSecs = time.Since(start).Seconds()
	logf("bench dhash: %d nodes up and consistent in %.1fs", cfg.Nodes, res.StartupSecs)

	// Before the clock starts: hashing them during the phase cost this
	// load generator a quarter of its CPU at 64 KB.
	blocks := randomBlocks(cfg.Ops, cfg.Size)
	want := make([]id.ID, cfg.Ops)
	for i, b := range blocks {
		want[i] = id.Key(b)
	}
	keys := make([]id.ID, cfg.Ops)
	res.Put, err = c.measure(cfg, "put", func(ctx context.Context, i int) error {
		var key id.ID
		var err error
		if cfg.HolderDirect {
			key, _, err = cs.cluster.Put(ctx, blocks[i], client.PutOptions{Expire: time.Hour})
		} else {
			key, _, err = cs.cluster.PutVia(ctx, c.addrs[i%len(c.addrs)], blocks[i], client.PutOptions{Expire: time.Hour})
		}
		if err == nil && key != want[i] {
			err = fmt.Errorf("block %d stored under %v, not its content hash", i, key)
		}
		keys[i] = key
		return err
	})
	if err != nil {
		return res, err
	}
	logf("bench dhash: put %d x %d B: %.0f ops/s, %.1f MB/s, p50 %.2f ms, p99 %.2f ms", res.Put.Done, cfg.Size, res.Put.OpsPerS, res.Put.MBps, res.Put.P50Ms, res.Put.P99Ms)
	logf("bench dhash: nodes idle again after %.1fs (index checkpoints); measuring gets", c.settle(15*time.Second).Seconds())
	res.Get, err = c.measure(cfg, "get", func(ctx context.Context, i int) error {
		if keys[i].IsZero() {
			return errSkipped
		}
		var data []byte
		var err error
		if cfg.HolderDirect {
			data, _, err = cs.cluster.Get(ctx, keys[i])
		} else {
			data, _, err = cs.cluster.GetVia(ctx, c.addrs[(i+1)%len(c.addrs)], keys[i], cfg.Size >= client.DirectMin)
		}
		if err == nil && string(data) != string(blocks[i]) {
			err = fmt.Errorf("block %d came back different", i)
		}
		return err
	})
	if err != nil {
		return res, err
	}
	logf("bench dhash: get %d x %d B: %.0f ops/s, %.1f MB/s, p50 %.2f ms, p99 %.2f ms", res.Get.Done, cfg.Size, res.Get.OpsPerS, res.Get.MBps, res.Get.P50Ms, res.Get.P99Ms)
	if res.Put.Done == 0 || res.Get.Done == 0 {
		return res, fmt.Errorf("bench: nothing succeeded (put %d, get %d): see the node logs", res.Put.Done, res.Get.Done)
	}
	return res, nil
}

// randomBlocks makes n distinct random blocks of size bytes.
func randomBlocks(n, size int) [][]byte {
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	blocks := make([][]byte, n)
	for i := range blocks {
		b := make([]byte, size)
		for j := 0; j+8 <= len(b); j += 8 {
			v := r.Uint64()
			for k := 0; k < 8; k++ {
				b[j+k] = byte(v >> (8 * k))
			}
		}
		for j := len(b) &^ 7; j < len(b); j++ {
			b[j] = byte(r.Uint32())
		}
		blocks[i] = b
	}
	return blocks
}

var errSkipped = errors.New("skipped")

// maxErrors bounds the failures a phase lists.
const maxErrors = 5

// runPhase runs op for 0..Ops-1 with Concurrency workers, each operation
// bounded by the phase's time limit. A deferred put is retried after a
// short pause, as a front-end would.
func runPhase(cfg DHashConfig, name string, op func(ctx context.Context, i int) error) PhaseResult {
	ctx, cancel := context.WithTimeout(context.Background(), cfg.MaxPhase)
	defer cancel()
	var (
		next             atomic.Int64
		mu               sync.Mutex
		lat              []time.Duration
		failed, deferred int
		errs             []string
		wg               sync.WaitGroup
	)
	t0 := time.Now()
	bar := startProgress(cfg.Progress, name, cfg.Ops)
	defer bar.Finish()
	for w := 0; w < cfg.Concurrency; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= cfg.Ops {
					return
				}
				s := time.Now()
				err := op(ctx, i)
				for tries := 0; errors.Is(err, fault.ErrBusy) && tries < 100 && ctx.Err() == nil; tries++ {
					mu.Lock()
					deferred++
					mu.Unlock()
					time.Sleep(time.Millisecond)
					err = op(ctx, i)
				}
				d := time.Since(s)
				bar.Add(1)
				mu.Lock()
				switch {
				case err == nil:
					lat = append(lat, d)
				case errors.Is(err, errSkipped):
				default:
					failed++
					if len(errs) < maxErrors {
						errs = append(errs, fmt.Sprintf("%s %d: %v", name, i, err))
					}
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	secs := time.Since(t0).Seconds()
	if failed > 0 {
		cfg.Log("bench dhash: %s: %d failed; first errors:\n  %s", name, failed, strings.Join(errs, "\n  "))
	}
	slices.Sort(lat)
	n := len(lat)
	return PhaseResult{Done: n, Failed: failed, Errors: errs, Deferred: deferred, OpsPerS: float64(n) / secs,
		MBps: float64(n) * float64(cfg.Size) / secs / 1e6, P50Ms: quantileMs(lat, 0.5), P99Ms: quantileMs(lat, 0.99), Seconds: secs}
}

// measure runs a phase (runPhase) and records the CPU time the nodes and
// this process used in it, and with cfg.Explain what Explain counts; the
// explain meter's readings and scrapes fall outside the CPU meter's.
func (c *cluster) measure(cfg DHashConfig, name string, op func(ctx context.Context, i int) error) (PhaseResult, error) {
	var ex *explainMeter
	if cfg.Explain {
		var err error
		if ex, err = c.startExplain(); err != nil {
			return PhaseResult{}, err
		}
	}
	cpu := c.cpuMeter()
	p := runPhase(cfg, name, op)
	p.NodeCPUSecs, p.ClientCPUSecs = cpu()
	if ex == nil {
		return p, nil
	}
	var err error
	p.Explain, err = ex.stop(p.Done)
	return p, err
}

// conns are the load generator's connections: a Cluster, through which
// an operation goes to a node named (PutVia, GetVia) or to its key's
// holder (Put, Get), with a connection to each node.
type conns struct {
	cluster *client.Cluster
}

// dial connects to every node, as a Cluster; the conns made are returned
// even with an error, for close.
func (c *cluster) dial(ctx context.Context) (*conns, error) {
	cs := &conns{}
	opt := client.Options{TLS: c.tls}
	var err error
	if cs.cluster, err = client.DialClusterOptions(ctx, opt, c.addrs...); err != nil {
		return cs, err
	}
	for _, a := range c.addrs {
		// Each node is reached before the clock starts.
		if err := cs.cluster.Reach(ctx, a); err != nil {
			return cs, err
		}
	}
	return cs, nil
}

// close closes the connections, the run being measured by then.
func (cs *conns) close() {
	if cs.cluster != nil {
		cs.cluster.Close()
	}
}

// cluster is a set of `triad node` processes.
type cluster struct {
	nodes []*proc.Proc
	addrs []string
	http  []string    // the nodes' metrics addresses, with DHashConfig.Explain
	tls   *pki.Bundle // the client's, with DHashConfig.TLS
	cg    *CPUCgroups // the nodes' cgroups, with DHashConfig.CPUPerNode
}

// nodeStartLimit bounds the wait for a node to say where it listens.
const nodeStartLimit = 30 * time.Second

func startCluster(cfg DHashConfig, dir string) (*cluster, error) {
	c := &cluster{}
	var ca *pki.CA
	if cfg.TLS {
		var err error
		if ca, err = newRunCA(dir); err != nil {
			return c, err
		}
		if c.tls, err = issueRun(ca, dir, "bench-client", ""); err != nil {
			return c, err
		}
	}
	if cfg.CPUPerNode > 0 {
		// Before any node starts: without root or a controller, nothing
		// runs.
		var err error
		if c.cg, err = OpenCPUCgroups(); err != nil {
			return c, err
		}
	}
	var env []string
	if _, set := os.LookupEnv("GOMAXPROCS"); !set {
		// Many nodes share this machine's cores: one P each (or the
		// cores' fair share) keeps their schedulers from spinning
		// against each other, which here halved throughput. In a cgroup,
		// a node has its quota's cores.
		procs := max(1, runtime.NumCPU()/cfg.Nodes)
		if cfg.CPUPerNode > 0 {
			procs = min(runtime.NumCPU(), int(math.Ceil(cfg.CPUPerNode)))
		}
		env = []string{fmt.Sprintf("GOMAXPROCS=%d", procs)}
	}
	for i := 0; i < cfg.Nodes; i++ {
		args, err := c.nodeArgs(cfg, dir, i, ca)
		if err != nil {
			return c, err
		}
		p, err := proc.Start(proc.Config{Binary: cfg.Binary, Args: args, Env: env, Log: filepath.Join(dir, fmt.Sprintf("node%d.log", i)), Name: fmt.Sprintf("node %d", i)})
		if err != nil {
			return c, err
		}
		c.nodes = append(c.nodes, p)
		if err := c.confine(cfg, i, p.Pid()); err != nil {
			return c, err
		}
		// The node names the address it bound.
		line, err := p.WaitLine("triad node: listening on ", nodeStartLimit)
		if err != nil {
			return c, fmt.Errorf("node %d did not start: %w", i, err)
		}
		addr, _, _ := strings.Cut(strings.TrimPrefix(line, "triad node: listening on "), ",")
		c.addrs = append(c.addrs, addr)
	}
	return c, nil
}

// confine moves node i (process pid) into a CPU cgroup of its own, with
// DHashConfig.CPUPerNode; it starts outside, which costs its start-up
// nothing that is measured.
func (c *cluster) confine(cfg DHashConfig, i, pid int) error {
	if c.cg == nil {
		return nil
	}
	dir, err := c.cg.Make(fmt.Sprintf("triad-bench-%d-node%d", os.Getpid(), i), cfg.CPUPerNode)
	if err != nil {
		return err
	}
	return c.cg.Add(dir, pid)
}

// nodeArgs is the command line of node i: on a port of its own, joining
// node 0, with its certificate when ca is set.
func (c *cluster) nodeArgs(cfg DHashConfig, dir string, i int, ca *pki.CA) ([]string, error) {
	listen := "127.0.0.1:0"
	if cfg.Port != 0 {
		listen = fmt.Sprintf("127.0.0.1:%d", cfg.Port+i)
	}
	var tlsArgs []string
	if ca != nil {
		// A certificate names its node's address: pick the port first.
		var err error
		if listen, err = nodeAddr(cfg.Port, i); err != nil {
			return nil, err
		}
		name := fmt.Sprintf("node%d", i)
		if _, err := issueRun(ca, dir, name, listen); err != nil {
			return nil, err
		}
		tlsArgs = []string{"--tls", filepath.Join(dir, "bundles", name)}
	}
	args := []string{"node", "--listen", listen, "--data", filepath.Join(dir, fmt.Sprintf("node%d", i))}
	args = append(args, tlsArgs...)
	if i > 0 {
		args = append(args, "--join", c.addrs[0])
	}
	args = append(args, cfg.NodeArgs...)
	if cfg.FixedWindow {
		args = append(args, "--stp=false")
	}
	if i < len(cfg.PerNodeArgs) {
		args = append(args, cfg.PerNodeArgs[i]...)
	}
	if cfg.ProfileDir != "" {
		args = append(args, "--cpuprofile", filepath.Join(cfg.ProfileDir, fmt.Sprintf("node%d.cpu", i)))
	}
	if cfg.Explain {
		addr, err := freeLoopbackAddr()
		if err != nil {
			return nil, err
		}
		c.http = append(c.http, addr)
		args = append(args, "--http", addr)
	}
	return args, nil
}

// waitRing polls every node until each vnode's successor is the next vnode
// clockwise (ring.Check of the successor pointers).
func (c *cluster) waitRing(ctx context.Context) error {
	for {
		views, err := c.views(ctx)
		if err == nil && len(ring.Check(views, ring.Want{Succs: 1})) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("bench: ring of %d nodes not consistent in time", len(c.addrs))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// views asks every node for its vnodes' ring state (RingInfo).
func (c *cluster) views(ctx context.Context) ([]wire.VnodeInfo, error) {
	var all []wire.VnodeInfo
	for _, a := range c.addrs {
		m, err := client.Call(ctx, a, &wire.GetRingInfo{}, client.Options{TLS: c.tls})
		if err != nil {
			return nil, err
		}
		info, ok := m.(*wire.RingInfo)
		if !ok {
			return nil, fmt.Errorf("bench: %s answered GetRingInfo with %T", a, m)
		}
		all = append(all, info.Vnodes...)
	}
	return all, nil
}

// cpuMeter starts measuring the CPU time of every node and of this
// process; the function it returns says how much each has used since (no
// nodes' where /proc cannot say).
func (c *cluster) cpuMeter() func() (nodes []float64, self float64) {
	read := func() ([]time.Duration, time.Duration) {
		var nodes []time.Duration
		for _, p := range c.nodes {
			st, err := ReadProcStat(p.Pid())
			if err != nil {
				nodes = nil
				break
			}
			nodes = append(nodes, st.CPU)
		}
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			return nodes, 0
		}
		return nodes, time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	nodes0, self0 := read()
	return func() ([]float64, float64) {
		nodes1, self1 := read()
		var used []float64
		if len(nodes0) == len(c.nodes) && len(nodes1) == len(c.nodes) {
			for i := range nodes1 {
				used = append(used, (nodes1[i] - nodes0[i]).Seconds())
			}
		}
		return used, (self1 - self0).Seconds()
	}
}

// stopWait bounds a node's leaving after SIGTERM.
const stopWait = 10 * time.Second

// stop asks every node to leave (SIGTERM) and waits, killing stragglers;
// it logs what goes wrong, the run being measured by then.
func (c *cluster) stop(logf func(string, ...any)) {
	for _, p := range c.nodes {
		if err := p.Signal(syscall.SIGTERM); err != nil {
			logf("bench: %v", err)
		}
	}
	for _, p := range c.nodes {
		if err := p.Wait(stopWait); errors.Is(err, proc.ErrRunning) {
			if err := p.Kill(); err != nil {
				logf("bench: %v", err)
			}
		}
	}
	if c.cg != nil {
		if err := c.cg.RemoveAll(); err != nil {
			logf("bench: %v", err)
		}
	}
}

// settle waits, up to limit, until the nodes have used almost no CPU for
// 1.2 s, longer than the engine's checkpoint interval: the writes of a put phase leave index checkpoints behind
// (one a second), and a get phase measured while they run says more about
// the checkpoints than about gets. It reads the nodes' CPU times from
// /proc; where there is none it returns at once.
func (c *cluster) settle(limit time.Duration) time.Duration {
	start := time.Now()
	cpu := func() (time.Duration, bool) {
		var total time.Duration
		for _, p := range c.nodes {
			st, err := ReadProcStat(p.Pid())
			if err != nil {
				return 0, false
			}
			total += st.CPU
		}
		return total, true
	}
	last, ok := cpu()
	quiet := 0
	for ok && quiet < 12 && time.Since(start) < limit {
		time.Sleep(100 * time.Millisecond)
		var now time.Duration
		if now, ok = cpu(); !ok {
			break
		}
		// Clock ticks are 10 ms; stabilization rounds cost a tick now and
		// then, so allow one per poll across all nodes.
		if now-last <= time.Second/clockTicks {
			quiet++
		} else {
			quiet = 0
		}
		last = now
	}
	return time.Since(start)
}

// newRunCA makes a CA for one run in dir/ca.
func newRunCA(dir string) (*pki.CA, error) {
	caDir := filepath.Join(dir, "ca")
	if err := pki.InitCA(caDir, "bench run", 24*time.Hour); err != nil {
		return nil, err
	}
	return pki.LoadCA(caDir)
}

// issueRun issues name (a node at addr, or a client) a bundle in
// dir/bundles/name and loads it.
func issueRun(ca *pki.CA, dir, name, addr string) (*pki.Bundle, error) {
	out := filepath.Join(dir, "bundles", name)
	if err := ca.Issue(pki.Identity{Name: name, Site: "bench", Addr: addr}, 24*time.Hour, out); err != nil {
		return nil, err
	}
	return pki.LoadBundle(out)
}

// scaleInFlightPerNode is a scaling run's operations in flight per node
// when the caller sets no concurrency: the load grows with the nodes, as
// the paper's Table 2 ran one client per server, so that every count is
// driven to its limit rather than to a fixed offered load.
const scaleInFlightPerNode = 16

// DHashScaling is a scaling run (UsenetDHT §6.5, Table 2): the block-store
// benchmark once per node count, each on a fresh cluster, and the
// aggregate throughput of each against the first count's.
type DHashScaling struct {
	Size          int           `json:"size"`
	Ops           int           `json:"ops"`
	CPUPerNode    float64       `json:"cpu_per_node,omitempty"`
	CgroupVersion int           `json:"cgroup_version,omitempty"`
	Route         string        `json:"route"`
	Replicas      int           `json:"replicas"` // k at every count
	Runs          []DHashResult `json:"runs"`
	PutSpeedup    []float64     `json:"put_speedup"` // each run's put MB/s over the first run's
	GetSpeedup    []float64     `json:"get_speedup"`
}

// DHashScale runs DHash once for each count in cfg.Scale, in order, and
// calls each with every run as it ends. Every count stores the same k
// copies of a block: the nodes' default (2), or the smallest count if
// that is less, since a put wants k live hosts and fails short of them;
// equal k keeps the counts' work per put the same. A cfg.Concurrency of
// 0 is scaleInFlightPerNode per node; a cfg.ProfileDir gets a folder per
// count (nodes<N>).
func DHashScale(cfg DHashConfig, each func(DHashResult)) (DHashScaling, error) {
	if len(cfg.Scale) == 0 {
		return DHashScaling{}, errors.New("bench: a scaling run wants node counts")
	}
	k := scaleReplicas(cfg.Scale)
	s := DHashScaling{Size: cfg.Size, Ops: cfg.Ops, CPUPerNode: cfg.CPUPerNode, Route: RouteAnyNode, Replicas: k}
	if cfg.HolderDirect {
		s.Route = RouteHolderDirect
	}
	if cfg.CPUPerNode > 0 {
		// Fail before the first cluster starts, not at it.
		cg, err := OpenCPUCgroups()
		if err != nil {
			return s, err
		}
		s.CgroupVersion = cg.Version()
	}
	inFlight, profiles := cfg.Concurrency, cfg.ProfileDir
	cfg.NodeArgs = append(slices.Clip(cfg.NodeArgs), "--replicas", strconv.Itoa(k))
	for _, n := range cfg.Scale {
		cfg.Nodes, cfg.Concurrency = n, inFlight
		if inFlight == 0 {
			cfg.Concurrency = scaleInFlightPerNode * n
		}
		if profiles != "" {
			cfg.ProfileDir = filepath.Join(profiles, fmt.Sprintf("nodes%d", n))
			if err := os.MkdirAll(cfg.ProfileDir, 0o755); err != nil {
				return s, err
			}
		}
		res, err := DHash(cfg)
		res.Replicas = k
		if err != nil {
			return s, fmt.Errorf("bench: %d nodes: %w", n, err)
		}
		each(res)
		s.Runs = append(s.Runs, res)
		s.PutSpeedup = append(s.PutSpeedup, ratio(res.Put.MBps, s.Runs[0].Put.MBps))
		s.GetSpeedup = append(s.GetSpeedup, ratio(res.Get.MBps, s.Runs[0].Get.MBps))
	}
	return s, nil
}

// scaleReplicas is the k of a scaling run over counts: the nodes'
// default, or the smallest count if that is less.
func scaleReplicas(counts []int) int {
	return min(dhash.DefaultConfig().Replicas, slices.Min(counts))
}

// ratio is a/b, or 0 when b is.
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// WriteText writes the scaling table: per count, the aggregate put and get
// throughput, the failures and the speed-up over the first count.
func (s DHashScaling) WriteText(w io.Writer) {
	box := "the nodes sharing this machine's cores"
	if s.CPUPerNode > 0 {
		box = fmt.Sprintf("each node in a CPU cgroup of %g cores (cgroup v%d), the load generator outside", s.CPUPerNode, s.CgroupVersion)
	}
	fmt.Fprintf(w, "scaling: %d-byte blocks, %d puts then gets per count, fresh cluster each, %s; sent to %s\n", s.Size, s.Ops, box, s.Route)
	fmt.Fprintf(w, "durability: k=%d copies of every block, on distinct nodes, at every count", s.Replicas)
	if d := dhash.DefaultConfig().Replicas; s.Replicas < d {
		fmt.Fprintf(w, ": %d node cannot hold the nodes' default of %d (a put wants k live hosts and fails short of them), and the same k at every count keeps the copies per put equal", s.Replicas, d)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "nodes\tk\tin flight\tput ops/s\tput MB/s\tget ops/s\tget MB/s\tfailed\tput speed-up\tget speed-up\tput: node CPU µs/op\tbusiest node\tclient µs/op\t")
	for i, r := range s.Runs {
		perOp, busiest := r.Put.nodeCPU()
		fmt.Fprintf(tw, "%d\t%d\t%d\t%.0f\t%.2f\t%.0f\t%.2f\t%d\t%.2fx\t%.2fx\t%.0f\t%.2f cores\t%.0f\t\n", r.Nodes, s.Replicas, r.Concurrency, r.Put.OpsPerS, r.Put.MBps, r.Get.OpsPerS, r.Get.MBps,
			r.Put.Failed+r.Get.Failed, s.PutSpeedup[i], s.GetSpeedup[i], perOp, busiest, 1e6*r.Put.ClientCPUSecs/float64(max(1, r.Put.Done)))
	}
	tw.Flush()
	fmt.Fprintln(w, "node CPU µs/op: all nodes' CPU time over the put phase per put; busiest node: the most one node used, in cores over the phase (its cgroup's quota bounds it)")
	for _, r := range s.Runs {
		if r.Put.Failed+r.Get.Failed > 0 {
			fmt.Fprintf(w, "%d nodes: %d puts and %d gets failed: its figures are no basis for a comparison\n", r.Nodes, r.Put.Failed, r.Get.Failed)
		}
	}
}

// nodeCPU is the nodes' CPU time per operation done, in µs, and the
// busiest node's use of CPU over the phase, in cores.
func (p PhaseResult) nodeCPU() (perOpMicros, busiestCores float64) {
	var total, most float64
	for _, c := range p.NodeCPUSecs {
		total += c
		most = max(most, c)
	}
	if p.Done > 0 {
		perOpMicros = 1e6 * total / float64(p.Done)
	}
	if p.Seconds > 0 {
		busiestCores = most / p.Seconds
	}
	return perOpMicros, busiestCores
}
