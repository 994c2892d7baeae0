package bench

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"triad/internal/client"
	"triad/internal/fault"
	"triad/internal/id"
	"triad/internal/proc"
	"triad/internal/tapestry"
	"triad/internal/wire"
)

// ChaosTapestryConfig is `triad chaos --tapestry`: churn as on PlanetLab
// (Tapestry's Fig. 23) among real `triad node --tapestry` processes on
// 127.0.0.1, under a stream of locates. A few stable nodes serve the
// objects and are never killed; the others churn: every Event the killer
// SIGKILLs a churning node whose lifetime is over or starts a dead one
// again. Then every node is started again and every object must be
// located from every node within RecoveryLimit.
type ChaosTapestryConfig struct {
	Binary   string
	Dir      string        // parent of the nodes' data folders; must exist
	Port     int           // node i's port, Port+i (0: free ports)
	Nodes    int           // node processes (16)
	Servers  int           // of them, stable: never killed, each publishing its share of the objects (4)
	Objects  int           // objects published (200)
	Duration time.Duration // of the churn (2m)
	Seed     uint64        // the lifetimes, the events and the objects
	Rate     float64       // locates per second during the churn (20)
	// Event is the time between the killer's events, a kill or a start
	// (5 s, Fig. 23: "interarrival times of 5 s").
	Event time.Duration
	// Lifetime is the mean of a churning node's lifetime, drawn
	// exponential at every start (60 s, Fig. 23).
	Lifetime time.Duration
	// RecoveryLimit bounds the time from the churn's end until every
	// object is located from every node (60 s).
	RecoveryLimit time.Duration
	// MinSuccess is the fraction of the churn's locates that must
	// succeed, failing over to another node when the first is gone (0.95,
	// §VII: "~5% of queries fail" on PlanetLab).
	MinSuccess float64
	// Republish and Beacon are the nodes' --tapestry-republish and
	// --tapestry-beacon (20 s and 5 s: a pointer lives 40 s, a dead link
	// is found within seconds).
	Republish, Beacon time.Duration
	Log               func(format string, args ...any)
}

// DefaultChaosTapestryConfig is 16 nodes, 4 of them servers of 200
// objects, 2 minutes of churn at Fig. 23's rates, 20 locates a second.
func DefaultChaosTapestryConfig() ChaosTapestryConfig {
	return ChaosTapestryConfig{Dir: os.TempDir(), Nodes: 16, Servers: 4, Objects: 200, Duration: 2 * time.Minute, Seed: 1, Rate: 20,
		Event: 5 * time.Second, Lifetime: time.Minute, RecoveryLimit: time.Minute, MinSuccess: 0.95,
		Republish: 20 * time.Second, Beacon: 5 * time.Second}
}

// RegisterFlags defines `triad chaos --tapestry`'s flags.
func (c *ChaosTapestryConfig) RegisterFlags(fs *flag.FlagSet) {
	fs.IntVar(&c.Nodes, "nodes", c.Nodes, "node processes")
	fs.IntVar(&c.Servers, "servers", c.Servers, "of them, stable nodes that publish the objects and are never killed")
	fs.IntVar(&c.Objects, "objects", c.Objects, "objects published")
	fs.DurationVar(&c.Duration, "duration", c.Duration, "how long to churn")
	fs.Uint64Var(&c.Seed, "seed", c.Seed, "the lifetimes, the events and the objects")
	fs.Float64Var(&c.Rate, "rate", c.Rate, "locates per second during the churn")
	fs.StringVar(&c.Dir, "dir", c.Dir, "folder for the nodes' data")
	addPortFlag(fs, &c.Port)
}

// Validate checks c's counts, rates and durations.
func (c ChaosTapestryConfig) Validate() error {
	switch {
	case c.Nodes < 4 || c.Nodes > 32 || c.Servers < 1 || c.Servers > c.Nodes-2:
		return errors.New("want 4-32 nodes, of them 1 to all but two servers")
	case c.Objects < 1 || c.Objects > 10_000 || c.Rate <= 0 || c.Rate > 1000:
		return errors.New("want 1-10000 objects and 0-1000 locates a second")
	case c.Duration <= 0 || c.Duration > 24*time.Hour || c.Event <= 0 || c.Lifetime <= 0 || c.RecoveryLimit <= 0:
		return errors.New("want a churn of up to 24h and positive event, lifetime and recovery times")
	case c.Republish <= 0 || c.Beacon <= 0 || c.MinSuccess < 0 || c.MinSuccess > 1:
		return errors.New("want positive republish and beacon intervals and a success fraction of 0 to 1")
	}
	return checkPort(c.Port, c.Nodes)
}

// ChaosTapestryHelp is what `triad chaos --tapestry` --help says of the run.
const ChaosTapestryHelp = `
Churn as on PlanetLab (Tapestry, Fig. 23) among real 'triad node --tapestry'
processes on 127.0.0.1, under a stream of locates:

  - --nodes nodes start (this same binary, data under --dir, with
    --tapestry-republish 20s and --tapestry-beacon 5s: a location pointer
    lives 40 s, a dead link is found within seconds) and join the mesh;
  - the first --servers of them (stable: never killed) publish --objects
    objects of 200 random bytes, and every node must locate every one;
  - for --duration the others churn: every 5 s the killer SIGKILLs the
    churning node whose lifetime (exponential, mean 60 s, drawn at every
    start) is most overdue, or, if none is, starts a dead one again on its
    own data (the same node ID); meanwhile --rate locates a second, of
    random objects, each go to a random node up (16 in flight at most; a
    tick finding all 16 busy is skipped and counted; a node started again
    counts up once it has joined the mesh, or after 4 s: a slow join).
    A locate succeeds when it finds the object's server within 15 s. One
    whose node is gone (connection refused or closed) tries another node
    up, at most 3 in all;
  - then every dead node is started again, and full sweeps (every object
    from every node) run until one finds all.

It prints the kills and starts, the locates, how many succeeded at the first
node asked and with failover, the failures by kind, and the time from the
churn's end to the first full sweep without a failure. It fails when fewer
than 95% of the locates succeed with failover (the end user's query; §VII:
"~5% of queries fail" on PlanetLab) or when that time passes 60 s.`

// ChaosTapestryResult is what a run did and found.
type ChaosTapestryResult struct {
	Nodes     int     `json:"nodes"`
	Servers   int     `json:"servers"`
	Objects   int     `json:"objects"`
	Republish string  `json:"tapestry_republish"`
	Beacon    string  `json:"tapestry_beacon"`
	Seed      uint64  `json:"seed"`
	Seconds   float64 `json:"churn_seconds"`
	Event     float64 `json:"event_seconds"`
	Lifetime  float64 `json:"mean_lifetime_seconds"`
	Kills     int     `json:"kills"`
	Starts    int     `json:"starts"`
	MinUp     int     `json:"min_nodes_up"`
	// SlowJoins counts starts after which the node had not joined the
	// mesh in time: within 4 s during the churn, joinWait after it (it
	// was counted up all the same).
	SlowJoins int `json:"slow_joins"`
	locateTally
	SuccessFirstTry float64 `json:"success_first_try"`
	Success         float64 `json:"success"` // with failover: the threshold's
	LatencyP50Ms    float64 `json:"latency_p50_ms"`
	LatencyP99Ms    float64 `json:"latency_p99_ms"`
	// RecoverySeconds is from the churn's end (dead nodes not yet
	// started again) to the end of the first full sweep without a failure;
	// Recovered is whether there was one within twice the limit.
	RecoverySeconds float64 `json:"recovery_seconds"`
	Recovered       bool    `json:"recovered"`
	SweepLocates    int     `json:"sweep_locates"`
	LastProblem     string  `json:"last_problem,omitempty"` // of the last sweep that failed
	Loops           uint64  `json:"loops"`                  // routes dropped past the hop bound, by the nodes' counters at the end
	MinSuccess      float64 `json:"min_success"`
	RecoveryLimit   float64 `json:"recovery_limit_seconds"`
	WallSeconds     float64 `json:"wall_seconds"`
	Pass            bool    `json:"pass"`
}

// locateTally counts the churn's locates.
type locateTally struct {
	Locates   int `json:"locates"`
	Skipped   int `json:"skipped"` // pacer ticks that found every worker busy
	FirstTry  int `json:"succeeded_first_try"`
	Succeeded int `json:"succeeded"` // with failover
	Failovers int `json:"failovers"` // tries sent to another node
	// FirstFailures and Failures count the locates that failed, by kind,
	// at the first node asked and in the end.
	FirstFailures map[string]int `json:"failures_first_try"`
	Failures      map[string]int `json:"failures"`
}

// Kinds of failed locates.
const (
	failNodeGone    = "node gone"    // refused or dropped the connection: failed over
	failTimeout     = "timeout"      // no answer within tapLocateTimeout
	failNoRoute     = "no route"     // the node's route had no outcome within its timeout
	failNotFound    = "not found"    // the route ended at a root that knows no server
	failWrongServer = "wrong server" // found somewhere else than at its server
	failNoNode      = "no node up"   // none left to fail over to
)

// Bounds of the locates.
const (
	tapLocateTimeout = 15 * time.Second // a node's route timeout is 10 s
	tapLocateWorkers = 16               // locates in flight at most
	tapLocateTries   = 3                // nodes asked by one locate, failing over
	tapMaxSamples    = 1 << 20          // latencies kept
	joinWait         = 20 * time.Second // for a started node to join the mesh
)

// tapChaosNode is one node of the loop, restarted on the same command
// line (the same data and node ID) after every kill.
type tapChaosNode struct {
	addr   string
	p      *proc.Proc
	stable bool
	// up and epoch (incremented at every start, so a client of an
	// earlier incarnation is dialled again) are guarded by tapChaos.mu.
	up    bool
	epoch int
	dies  time.Time // the end of its lifetime; the killer's own
}

// tapObject is an object published by the run.
type tapObject struct {
	key    id.ID
	server string // the address of the node that serves it
}

// tapChaos is one run. Its steps run in this order: startNodes, publish,
// a first sweep, churn (the killer, with the locate stream), recover;
// stopNodes ends it.
type tapChaos struct {
	cfg     ChaosTapestryConfig
	res     ChaosTapestryResult
	nodes   []*tapChaosNode
	objects []tapObject

	mu  sync.Mutex // guards the nodes' up and epoch, the tally and lat
	lat []time.Duration
}

// ChaosTapestry runs the loop and stops the nodes.
func ChaosTapestry(cfg ChaosTapestryConfig) (ChaosTapestryResult, error) {
	if cfg.Log == nil {
		cfg.Log = func(string, ...any) {}
	}
	began := time.Now()
	run := &tapChaos{cfg: cfg}
	run.res = ChaosTapestryResult{Nodes: cfg.Nodes, Servers: cfg.Servers, Objects: cfg.Objects, Seed: cfg.Seed,
		Event: cfg.Event.Seconds(), Lifetime: cfg.Lifetime.Seconds(), Republish: cfg.Republish.String(), Beacon: cfg.Beacon.String(), MinSuccess: cfg.MinSuccess, RecoveryLimit: cfg.RecoveryLimit.Seconds(),
		locateTally: locateTally{FirstFailures: map[string]int{}, Failures: map[string]int{}}}
	if err := cfg.Validate(); err != nil {
		return run.res, err
	}
	dir, err := os.MkdirTemp(cfg.Dir, "triad-chaos-tapestry-")
	if err != nil {
		return run.res, err
	}
	defer os.RemoveAll(dir)
	defer run.stopNodes()
	if err := run.prepare(dir); err != nil {
		return run.res, err
	}
	if err := run.churn(); err != nil {
		return run.res, err
	}
	run.res.Loops = run.loops()
	run.res.WallSeconds = time.Since(began).Seconds()
	run.res.Pass = run.res.Success >= cfg.MinSuccess && run.res.Recovered && run.res.RecoverySeconds <= cfg.RecoveryLimit.Seconds()
	return run.res, nil
}

// prepare starts the nodes, publishes the objects and checks that every
// node locates every one.
func (run *tapChaos) prepare(dir string) error {
	cfg := run.cfg
	if err := run.startNodes(dir); err != nil {
		return err
	}
	if err := run.publish(); err != nil {
		return err
	}
	// Publishing returns once the server holds the object; its pointers
	// are on their way to the root.
	took, ok, problem := run.sweepUntil(time.Now(), 30*time.Second)
	if !ok {
		return fmt.Errorf("chaos --tapestry: not every object located from every node 30 s after publishing: %s", problem)
	}
	cfg.Log("chaos --tapestry: %d objects published from %d servers; every node locates every one (%.1fs)", cfg.Objects, cfg.Servers, took.Seconds())
	return nil
}

// startNodes starts every node on a port of its own, all joining
// through the first, one at a time: each has joined the mesh before the
// next starts (the churn is under test here, not simultaneous joins).
func (run *tapChaos) startNodes(dir string) error {
	cfg := run.cfg
	// Many nodes share this machine's cores: one P each keeps their
	// schedulers from spinning against each other (as startCluster does).
	var env []string
	if _, set := os.LookupEnv("GOMAXPROCS"); !set {
		env = []string{"GOMAXPROCS=1"}
	}
	for i := range cfg.Nodes {
		addr, err := nodeAddr(cfg.Port, i)
		if err != nil {
			return err
		}
		args := []string{"node", "--listen", addr, "--data", filepath.Join(dir, fmt.Sprintf("node%d", i)), "--tapestry",
			"--tapestry-republish", cfg.Republish.String(), "--tapestry-beacon", cfg.Beacon.String(), "--maint-interval", "0", "--cc-scheme", "off"}
		if i > 0 {
			args = append(args, "--join", run.nodes[0].addr)
		}
		n := &tapChaosNode{addr: addr, stable: i < cfg.Servers,
			p: proc.New(proc.Config{Binary: cfg.Binary, Args: args, Env: env, Log: filepath.Join(dir, fmt.Sprintf("node%d.log", i)), Name: "node " + addr})}
		run.nodes = append(run.nodes, n)
		if err := n.p.Start(); err != nil {
			return err
		}
		if err := n.p.WaitPort(addr, nodeStartLimit); err != nil {
			return err
		}
		if !run.waitJoined(n, joinWait) {
			return fmt.Errorf("chaos --tapestry: %s did not join the mesh within %v", n.addr, joinWait)
		}
		n.up = true
	}
	run.res.MinUp = cfg.Nodes
	cfg.Log("chaos --tapestry: %d nodes up and joined", cfg.Nodes)
	return nil
}

// waitJoined polls n's table until it says it has joined the mesh, for
// at most wait, and reports whether it did.
func (run *tapChaos) waitJoined(n *tapChaosNode, wait time.Duration) bool {
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		m, err := client.Call(ctx, n.addr, &wire.TapGetTable{}, client.Options{})
		cancel()
		if t, ok := m.(*wire.TapTable); err == nil && ok && t.Joined {
			return true
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false
}

// publish publishes the objects from the stable nodes in turn, 16 at a
// time.
func (run *tapChaos) publish() error {
	cfg := run.cfg
	r := rand.New(rand.NewPCG(cfg.Seed, 0x9b1))
	data := make([][]byte, cfg.Objects)
	for i := range data {
		data[i] = make([]byte, 200)
		for j := range data[i] {
			data[i][j] = byte(r.Uint32())
		}
	}
	run.objects = make([]tapObject, cfg.Objects)
	errs := make([]error, tapLocateWorkers)
	var wg sync.WaitGroup
	for w := range tapLocateWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < cfg.Objects && errs[w] == nil; i += tapLocateWorkers {
				run.objects[i], errs[w] = run.publishOne(run.nodes[i%cfg.Servers].addr, data[i])
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// publishOne has the node at addr store and publish data.
func (run *tapChaos) publishOne(addr string, data []byte) (tapObject, error) {
	ctx, cancel := context.WithTimeout(context.Background(), tapLocateTimeout)
	defer cancel()
	m, err := client.Call(ctx, addr, &wire.TapPublish{Data: data, App: tapestry.AppDOLR}, client.Options{})
	if err != nil {
		return tapObject{}, fmt.Errorf("chaos --tapestry: publish through %s: %w", addr, err)
	}
	p, ok := m.(*wire.TapPublishDone)
	if !ok || p.Key != id.Key(data) {
		return tapObject{}, fmt.Errorf("chaos --tapestry: publish through %s answered %v, want the key %s", addr, m, id.Key(data))
	}
	return tapObject{key: p.Key, server: addr}, nil
}

// stopNodes asks the nodes still up to leave (SIGTERM) and waits, killing
// stragglers; it logs what goes wrong, the run being measured by then.
func (run *tapChaos) stopNodes() {
	for _, n := range run.nodes {
		if n.p.Running() {
			if err := n.p.Signal(syscall.SIGTERM); err != nil {
				run.cfg.Log("chaos --tapestry: %v", err)
			}
		}
	}
	for _, n := range run.nodes {
		if err := n.p.Wait(stopWait); errors.Is(err, proc.ErrRunning) {
			if err := n.p.Kill(); err != nil {
				run.cfg.Log("chaos --tapestry: %v", err)
			}
		}
	}
}

// loops sums the routes the nodes dropped past the hop bound (each
// node's counter since its last start).
func (run *tapChaos) loops() uint64 {
	var sum uint64
	for _, n := range run.nodes {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		m, err := client.Call(ctx, n.addr, &wire.TapGetTable{}, client.Options{})
		cancel()
		t, ok := m.(*wire.TapTable)
		if err != nil || !ok {
			run.cfg.Log("chaos --tapestry: counters of %s: %v", n.addr, err)
			continue
		}
		for _, c := range t.Counters {
			if c.Name == "loops" {
				sum += c.Value
			}
		}
	}
	return sum
}

// sortedKinds lists m's kinds, most frequent first, for printing.
func sortedKinds(m map[string]int) []string {
	kinds := make([]string, 0, len(m))
	for k := range m {
		kinds = append(kinds, k)
	}
	slices.SortFunc(kinds, func(a, b string) int {
		if m[a] != m[b] {
			return m[b] - m[a]
		}
		if a < b {
			return -1
		}
		return 1
	})
	return kinds
}

// churn runs the killer for cfg.Duration with the locate stream beside
// it, then starts the dead nodes again and sweeps until every node
// locates every object.
func (run *tapChaos) churn() error {
	cfg := run.cfg
	r := rand.New(rand.NewPCG(cfg.Seed, 0xc4a05))
	t0 := time.Now()
	for _, n := range run.nodes {
		if !n.stable {
			n.dies = t0.Add(run.lifetime(r))
		}
	}
	cfg.Log("chaos --tapestry: churning %d of %d nodes for %v under %.0f locates/s", cfg.Nodes-cfg.Servers, cfg.Nodes, cfg.Duration, cfg.Rate)
	stop := make(chan struct{})
	done := run.stream(stop)
	var err error
	for k := 1; err == nil && time.Duration(k)*cfg.Event <= cfg.Duration; k++ {
		time.Sleep(time.Until(t0.Add(time.Duration(k) * cfg.Event)))
		err = run.event(r)
	}
	if err == nil {
		time.Sleep(time.Until(t0.Add(cfg.Duration)))
	}
	close(stop)
	ended := time.Now()
	run.res.Seconds = ended.Sub(t0).Seconds()
	if err == nil {
		err = run.recover(ended)
	}
	<-done // the locates in flight at the churn's end, counted with it
	run.summarize()
	return err
}

// lifetime draws a churning node's lifetime: exponential, mean
// cfg.Lifetime.
func (run *tapChaos) lifetime(r *rand.Rand) time.Duration {
	return time.Duration(r.ExpFloat64() * float64(run.cfg.Lifetime))
}

// event is one of the killer's: it kills the churning node up whose
// lifetime is most overdue, or, if none is, starts a random dead one.
func (run *tapChaos) event(r *rand.Rand) error {
	now := time.Now()
	var due *tapChaosNode
	var dead []*tapChaosNode
	for _, n := range run.nodes {
		switch {
		case n.stable:
		case !n.up:
			dead = append(dead, n)
		case !n.dies.After(now) && (due == nil || n.dies.Before(due.dies)):
			due = n
		}
	}
	switch {
	case due != nil:
		return run.kill(due)
	case len(dead) > 0:
		n := dead[r.IntN(len(dead))]
		if err := run.start(n); err != nil {
			return err
		}
		n.dies = time.Now().Add(run.lifetime(r))
		run.res.Starts++
		run.cfg.Log("chaos --tapestry: started %s again; %d nodes up", n.addr, run.countUp())
	}
	return nil
}

// kill marks n down, then kills it with SIGKILL.
func (run *tapChaos) kill(n *tapChaosNode) error {
	run.mu.Lock()
	n.up = false
	run.mu.Unlock()
	if err := n.p.Kill(); err != nil {
		return err
	}
	run.res.Kills++
	up := run.countUp()
	run.res.MinUp = min(run.res.MinUp, up)
	run.cfg.Log("chaos --tapestry: killed %s; %d nodes up", n.addr, up)
	return nil
}

// start starts n again and marks it up once it has joined the mesh, or
// once most of an event's interval has passed (a slow join, counted), so
// that the killer keeps its pace.
func (run *tapChaos) start(n *tapChaosNode) error {
	if err := n.p.Start(); err != nil {
		return err
	}
	return run.finishStart(n, run.cfg.Event*4/5)
}

// finishStart waits until n, started, listens and has joined (for at
// most wait), and marks it up.
func (run *tapChaos) finishStart(n *tapChaosNode, wait time.Duration) error {
	if err := n.p.WaitPort(n.addr, nodeStartLimit); err != nil {
		return err
	}
	joined := run.waitJoined(n, wait)
	run.mu.Lock()
	defer run.mu.Unlock()
	if !joined {
		run.res.SlowJoins++
		run.cfg.Log("chaos --tapestry: %s had not joined the mesh %v after its start; counted up all the same", n.addr, wait)
	}
	n.up = true
	n.epoch++
	return nil
}

// countUp is the number of nodes up.
func (run *tapChaos) countUp() int {
	return len(run.upNodes(nil))
}

// upNodes lists the nodes up but those at the addresses in skip, with
// their epochs.
func (run *tapChaos) upNodes(skip []string) (nodes []*tapChaosNode) {
	run.mu.Lock()
	defer run.mu.Unlock()
	for _, n := range run.nodes {
		if n.up && !slices.Contains(skip, n.addr) {
			nodes = append(nodes, n)
		}
	}
	return nodes
}

// recover starts every dead node again (all at once) and sweeps until
// every node up locates every object, for at most twice the limit, to
// say how long it took past it.
func (run *tapChaos) recover(ended time.Time) error {
	var dead []*tapChaosNode
	for _, n := range run.nodes {
		if !n.up {
			if err := n.p.Start(); err != nil {
				return err
			}
			dead = append(dead, n)
		}
	}
	errs := make([]error, len(dead))
	var wg sync.WaitGroup
	for i, n := range dead {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = run.finishStart(n, joinWait)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	run.cfg.Log("chaos --tapestry: churn over; %d dead nodes started again (%.1fs); sweeping", len(dead), time.Since(ended).Seconds())
	took, ok, problem := run.sweepUntil(ended, 2*run.cfg.RecoveryLimit)
	run.res.RecoverySeconds, run.res.Recovered, run.res.LastProblem = took.Seconds(), ok, problem
	return nil
}

// stream runs the churn's locates until stop is closed: a pacer hands a
// locate to one of tapLocateWorkers workers cfg.Rate times a second, and
// counts a tick that finds them all busy as skipped. The channel it
// returns is closed once the last locate has ended.
func (run *tapChaos) stream(stop <-chan struct{}) <-chan struct{} {
	jobs := make(chan struct{})
	var wg sync.WaitGroup
	for w := range tapLocateWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(run.cfg.Seed, uint64(100+w)))
			cc := tapClients{conns: clientCache{}, epochs: map[string]int{}}
			defer cc.conns.close()
			for range jobs {
				run.locate(r, cc)
			}
		}()
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Duration(float64(time.Second) / run.cfg.Rate))
		defer tick.Stop()
		for {
			select {
			case <-stop:
				close(jobs)
				wg.Wait()
				return
			case <-tick.C:
				select {
				case jobs <- struct{}{}:
				default:
					run.mu.Lock()
					run.res.Skipped++
					run.mu.Unlock()
				}
			}
		}
	}()
	return done
}

// locate locates a random object through a random node up; when that
// node is gone, through another, up to tapLocateTries nodes in all. It
// counts the outcome at the first node and in the end.
func (run *tapChaos) locate(r *rand.Rand, cc tapClients) {
	o := run.objects[r.IntN(len(run.objects))]
	began := time.Now()
	var asked []string
	first, kind := failNoNode, failNoNode
	for len(asked) < tapLocateTries {
		up := run.upNodes(asked)
		if len(up) == 0 {
			break
		}
		n := up[r.IntN(len(up))]
		run.mu.Lock()
		epoch := n.epoch
		run.mu.Unlock()
		asked = append(asked, n.addr)
		if kind = cc.locate(n.addr, epoch, o); len(asked) == 1 {
			first = kind
		}
		if kind != failNodeGone {
			break
		}
	}
	took := time.Since(began)
	run.mu.Lock()
	defer run.mu.Unlock()
	t := &run.res.locateTally
	t.Locates++
	t.Failovers += max(0, len(asked)-1)
	if first == "" {
		t.FirstTry++
	} else {
		t.FirstFailures[first]++
	}
	if kind == "" {
		t.Succeeded++
		if len(run.lat) < tapMaxSamples {
			run.lat = append(run.lat, took)
		}
	} else {
		t.Failures[kind]++
	}
}

// summarize computes the churn's fractions and latencies.
func (run *tapChaos) summarize() {
	run.mu.Lock()
	defer run.mu.Unlock()
	res := &run.res
	if res.Locates > 0 {
		res.SuccessFirstTry = float64(res.FirstTry) / float64(res.Locates)
		res.Success = float64(res.Succeeded) / float64(res.Locates)
	}
	if len(run.lat) > 0 {
		slices.Sort(run.lat)
		res.LatencyP50Ms, res.LatencyP99Ms = quantileMs(run.lat, 0.5), quantileMs(run.lat, 0.99)
	}
}

// sweepUntil sweeps until a sweep finds every object from every node, or
// limit has passed since from. It returns the time from from to the end
// of that sweep, whether there was one, and the last failure seen.
func (run *tapChaos) sweepUntil(from time.Time, limit time.Duration) (took time.Duration, ok bool, problem string) {
	for {
		done, p := run.sweep()
		run.res.SweepLocates += done
		if p == "" {
			return time.Since(from), true, problem
		}
		problem = p
		if time.Since(from) > limit {
			return time.Since(from), false, problem
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// sweep locates every object from every node up, tapLocateWorkers at a
// time, and stops at the first failure. It returns the locates done and
// that failure ("" if none).
func (run *tapChaos) sweep() (done int, problem string) {
	nodes := run.upNodes(nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type job struct {
		n *tapChaosNode
		o tapObject
	}
	jobs := make(chan job)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range tapLocateWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cc := tapClients{conns: clientCache{}, epochs: map[string]int{}}
			defer cc.conns.close()
			for j := range jobs {
				kind, why := cc.locateWhy(j.n.addr, 0, j.o)
				mu.Lock()
				done++
				if kind != "" && problem == "" {
					problem = fmt.Sprintf("%s from %s: %s%s", j.o.key.Short(), j.n.addr, kind, why)
					cancel()
				}
				mu.Unlock()
			}
		}()
	}
	feed(ctx, jobs, nodes, run.objects, func(n *tapChaosNode, o tapObject) job { return job{n, o} })
	close(jobs)
	wg.Wait()
	return done, problem
}

// feed sends jobs every (node, object) pair until ctx is done.
func feed[J any](ctx context.Context, jobs chan<- J, nodes []*tapChaosNode, objects []tapObject, mk func(*tapChaosNode, tapObject) J) {
	for _, n := range nodes {
		for _, o := range objects {
			select {
			case jobs <- mk(n, o):
			case <-ctx.Done():
				return
			}
		}
	}
}

// tapClients keeps one client per node, dialled again when the node has
// been started again since (its epoch). One goroutine uses it.
type tapClients struct {
	conns  clientCache
	epochs map[string]int
}

// locate locates o through the node at addr (in its epoch) and returns
// the kind of failure, "" on success: found at o's server.
func (cc tapClients) locate(addr string, epoch int, o tapObject) string {
	kind, _ := cc.locateWhy(addr, epoch, o)
	return kind
}

// locateWhy is locate, with what the node said of a failure: for an
// object not found, the root the locate ended at, its hops and path (a
// persistent failure after the churn is a routing table that disagrees
// with the server's publish path).
func (cc tapClients) locateWhy(addr string, epoch int, o tapObject) (kind, detail string) {
	if cc.epochs[addr] != epoch {
		cc.conns.drop(addr)
	}
	c, err := cc.conns.get(addr)
	if err != nil {
		return failNodeGone, ""
	}
	cc.epochs[addr] = epoch
	ctx, cancel := context.WithTimeout(context.Background(), tapLocateTimeout)
	m, err := c.Call(ctx, &wire.TapLocate{Key: o.key, App: tapestry.AppDOLR})
	cancel()
	var we *wire.Error
	switch {
	case errors.As(err, &we) && we.Code == fault.CodeNoRoute:
		return failNoRoute, ""
	case errors.As(err, &we):
		return "refused: " + we.Code.String(), ""
	case errors.Is(err, context.DeadlineExceeded):
		return failTimeout, ""
	case err != nil:
		cc.conns.drop(addr)
		return failNodeGone, ""
	}
	l, ok := m.(*wire.TapLocateDone)
	switch {
	case !ok:
		return fmt.Sprintf("answered %T", m), ""
	case !l.Found:
		var path []string
		for _, r := range l.Path {
			path = append(path, r.Addr)
		}
		return failNotFound, fmt.Sprintf(" (at root %s after %d hops, path %s; published by %s)", l.Root.Addr, l.Hops, strings.Join(path, " > "), o.server)
	case len(l.Servers) == 0 || l.Servers[0].Addr != o.server:
		return failWrongServer, ""
	}
	return "", ""
}

// WriteText prints the result.
func (r ChaosTapestryResult) WriteText(w io.Writer) {
	fmt.Fprintf(w, "chaos --tapestry: %d node processes on 127.0.0.1 (--tapestry-republish %s --tapestry-beacon %s), %d stable servers of %d objects, %d churning; seed %d\n",
		r.Nodes, r.Republish, r.Beacon, r.Servers, r.Objects, r.Nodes-r.Servers, r.Seed)
	fmt.Fprintf(w, "churn %.0fs (a kill or a start every %.0f s, lifetimes exponential with mean %.0f s: Fig. 23): %d kills (SIGKILL), %d starts, %d to %d nodes up, %d slow joins\n",
		r.Seconds, r.Event, r.Lifetime, r.Kills, r.Starts, r.MinUp, r.Nodes, r.SlowJoins)
	fmt.Fprintf(w, "locates during the churn: %d (%d ticks skipped, every worker busy), latency p50 %.1f ms p99 %.1f ms\n", r.Locates, r.Skipped, r.LatencyP50Ms, r.LatencyP99Ms)
	fmt.Fprintf(w, "  at the first node asked: %d succeeded (%.2f%%)%s\n", r.FirstTry, 100*r.SuccessFirstTry, kindsText(r.FirstFailures))
	fmt.Fprintf(w, "  failing over to another node up when one is gone (%d failovers): %d succeeded (%.2f%%, the threshold's: >= %.0f%%)%s\n",
		r.Failovers, r.Succeeded, 100*r.Success, 100*r.MinSuccess, kindsText(r.Failures))
	after := fmt.Sprintf("every object located from every node %.1fs after the churn stopped", r.RecoverySeconds)
	if !r.Recovered {
		after = fmt.Sprintf("not every object located from every node %.0fs after the churn stopped", r.RecoverySeconds)
	}
	fmt.Fprintf(w, "after the churn (every node started again): %s (limit %.0fs; %d sweep locates)\n", after, r.RecoveryLimit, r.SweepLocates)
	if r.LastProblem != "" {
		fmt.Fprintf(w, "  last failure in a sweep: %s\n", r.LastProblem)
	}
	verdict := "PASS"
	if !r.Pass {
		verdict = "FAIL"
	}
	fmt.Fprintf(w, "routes looped: %d; wall time %.0fs; %s\n", r.Loops, r.WallSeconds, verdict)
}

// kindsText lists failures by kind, most frequent first.
func kindsText(m map[string]int) string {
	if len(m) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("; failures:")
	for i, k := range sortedKinds(m) {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, " %s %d", k, m[k])
	}
	return b.String()
}

// Err is the run's verdict: nil if enough locates succeeded during the
// churn and every object was located from every node in time after it.
func (r ChaosTapestryResult) Err() error {
	if r.Success < r.MinSuccess {
		return fmt.Errorf("chaos --tapestry: %.2f%% of %d locates succeeded during the churn, want >= %.0f%%", 100*r.Success, r.Locates, 100*r.MinSuccess)
	}
	if !r.Recovered || r.RecoverySeconds > r.RecoveryLimit {
		return fmt.Errorf("chaos --tapestry: not every object located from every node within %.0fs after the churn (last: %s)", r.RecoveryLimit, r.LastProblem)
	}
	return nil
}
