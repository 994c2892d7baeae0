package exp

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"triad/internal/deploy"
	"triad/internal/host"
	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/ring"
	"triad/internal/sim"
	"triad/internal/stats"
)

// RingConfig describes a `triad sim ring` run.
type RingConfig struct {
	Nodes  int     // hosts in the stable ring
	Vnodes int     // virtual servers per host
	Seed   uint64  // fixes the whole run
	Fail   float64 // fraction of hosts crashed at once after stabilization
	Churn  bool    // run lookups during churn (Tapestry's "churn 1")
	// Lookups is how many random lookups to measure. Default 10,000.
	Lookups int
	// JoinSpacing is the time between initial joins. Default 20ms.
	JoinSpacing time.Duration
	// ChurnInterarrival and ChurnLifetime are the means of the churn
	// process's exponential distributions. Defaults 20s and 4m.
	ChurnInterarrival, ChurnLifetime time.Duration
	// ChurnDuration is how long churn runs while lookups are measured.
	// Default 10m.
	ChurnDuration time.Duration
	// Ring configures every host.
	Ring ring.Config
	// Log, if set, receives progress lines.
	Log io.Writer
	// Check runs the invariant checker (Checker) where the ring is claimed
	// stable: after the first stabilization and after healing.
	Check bool
}

// DefaultRingConfig returns a 1,000-node run with seed 1.
func DefaultRingConfig() RingConfig {
	return RingConfig{
		Nodes: 1000, Vnodes: 1, Seed: 1, Lookups: 10000,
		JoinSpacing:       20 * time.Millisecond,
		ChurnInterarrival: 20 * time.Second, ChurnLifetime: 4 * time.Minute,
		ChurnDuration: 10 * time.Minute,
		Ring:          ring.DefaultConfig(),
	}
}

// RingResult is what a run measured; its JSON form is the final line of
// `triad sim ring --json`.
type RingResult struct {
	Nodes           int     `json:"nodes"`
	Vnodes          int     `json:"vnodes"`
	Seed            uint64  `json:"seed"`
	Fail            float64 `json:"fail"`
	Churn           bool    `json:"churn"`
	Lookups         int     `json:"lookups"`
	Correct         int     `json:"correct"`
	Failed          int     `json:"failed"`
	CorrectFraction float64 `json:"correct_fraction"`
	MeanHops        float64 `json:"mean_hops"`
	HopsPerLog2N    float64 `json:"hops_per_log2n"`
	// HopCounts[h] counts the correct lookups that took h hops.
	HopCounts       []int   `json:"hop_counts"`
	Fallbacks       uint64  `json:"iterative_fallbacks"`
	RPCTimeouts     uint64  `json:"rpc_timeouts"`
	PeersDeclared   uint64  `json:"peers_declared_dead"`
	LatencyP50Ms    float64 `json:"latency_p50_ms"`
	LatencyP99Ms    float64 `json:"latency_p99_ms"`
	RTTMedianMs     float64 `json:"rtt_median_ms"`
	StabilizeSecs   float64 `json:"stabilize_seconds"`
	RestabilizeSecs float64 `json:"restabilize_seconds,omitempty"`
	ChurnJoins      int     `json:"churn_joins,omitempty"`
	ChurnDeaths     int     `json:"churn_deaths,omitempty"`
	Messages        uint64  `json:"messages"`
	Events          uint64  `json:"events"`
	EventsPerSec    float64 `json:"events_per_sec"`
	VirtualSeconds  float64 `json:"virtual_seconds"`
	WallSeconds     float64 `json:"wall_seconds"`
	TraceHash       string  `json:"trace_hash"`
	// Checked is the invariant checker's verdict, with Check.
	Checked
}

// RunRing builds a ring of cfg.Nodes hosts on the synthetic topology, lets
// it stabilize, optionally crashes a fraction or churns it, and measures
// random lookups against the oracle.
func RunRing(cfg RingConfig) (RingResult, error) {
	if cfg.Nodes < 1 || cfg.Nodes > sim.MaxHosts/2 {
		return RingResult{}, fmt.Errorf("nodes %d not in [1, %d]", cfg.Nodes, sim.MaxHosts/2)
	}
	if cfg.Fail < 0 || cfg.Fail >= 1 {
		return RingResult{}, fmt.Errorf("fail fraction %v not in [0, 1)", cfg.Fail)
	}
	if cfg.Vnodes < 1 {
		cfg.Vnodes = 1
	}
	if err := cfg.Ring.Validate(); err != nil {
		return RingResult{}, err
	}
	r := newRingRun(cfg)
	if err := r.join(); err != nil {
		return r.res, err
	}
	if cfg.Fail > 0 {
		if err := r.crash(); err != nil {
			return r.res, err
		}
	}
	r.lookups()
	r.tally()
	return r.res, nil
}

// ringRun is one run of RunRing. Its steps run in this order: join (and
// stabilize), crash (with cfg.Fail), lookups (under churn with
// cfg.Churn), tally.
type ringRun struct {
	cfg   RingConfig
	wall  time.Time // when the run started
	s     *sim.Sim
	r     *rand.Rand // the simulator's: every choice of the run
	opts  deploy.Options
	chk   *Checker // nil without cfg.Check
	res   RingResult
	start time.Duration // when the lookups start, in virtual time

	// The lookups' results, as they come back.
	hops, lat   []float64
	outstanding int
	// The true successor, and the hosts up, as of membership generation
	// orcGen and upGen.
	orc    oracle
	orcGen uint64
	up     []*sim.Host
	upGen  uint64
}

func newRingRun(cfg RingConfig) *ringRun {
	wall := time.Now()
	topo := sim.NewTopology(cfg.Nodes, cfg.Seed)
	s := sim.New(sim.Config{Seed: cfg.Seed, Parallel: true}, topo)
	rr := &ringRun{cfg: cfg, wall: wall, s: s, r: s.Rand(), orcGen: ^uint64(0), upGen: ^uint64(0),
		opts: deploy.Options{Vnodes: cfg.Vnodes, Host: host.DefaultConfig(), Ring: cfg.Ring},
		res:  RingResult{Nodes: cfg.Nodes, Vnodes: cfg.Vnodes, Seed: cfg.Seed, Fail: cfg.Fail, Churn: cfg.Churn}}
	if cfg.Check {
		rr.chk = &Checker{Succs: cfg.Ring.Succs}
	}
	rr.res.RTTMedianMs = ms(topo.Stats(20000).Median)
	return rr
}

func (rr *ringRun) logf(format string, args ...any) {
	if rr.cfg.Log != nil {
		fmt.Fprintf(rr.cfg.Log, format+"\n", args...)
	}
}

// addHost joins a new host through a random running one.
func (rr *ringRun) addHost() (*sim.Host, error) {
	s := rr.s
	var boot node.Addr
	if up := upHosts(s, len(s.Hosts())); len(up) > 0 {
		boot = up[rr.r.IntN(len(up))].Addr
	}
	return s.AddHost(deploy.Factory(rr.opts, func() node.Addr { return boot }))
}

// join adds the hosts cfg.JoinSpacing apart, waits until the ring is
// right and lets the fingers settle.
func (rr *ringRun) join() error {
	cfg, s := rr.cfg, rr.s
	var joinErr error
	for i := 0; i < cfg.Nodes; i++ {
		s.At(time.Duration(i)*cfg.JoinSpacing, func() {
			if _, err := rr.addHost(); err != nil && joinErr == nil {
				joinErr = err
			}
		})
	}
	s.RunUntil(time.Duration(cfg.Nodes) * cfg.JoinSpacing)
	if joinErr != nil {
		return joinErr
	}
	rr.logf("sim ring: %d hosts joined by %.0fs virtual; stabilizing", cfg.Nodes, s.Now().Seconds())
	t0 := s.Now()
	if err := waitStable(s, 10*time.Minute); err != nil {
		return err
	}
	rr.res.StabilizeSecs = (s.Now() - t0).Seconds()
	s.RunFor(fingerSettle(cfg.Ring))
	rr.chk.CheckRing(s, fmt.Sprintf("settled at %v", s.Now()), true)
	rr.logf("sim ring: ring correct after %.0fs; fingers settled at %.0fs virtual", rr.res.StabilizeSecs, s.Now().Seconds())
	return nil
}

// crash crashes cfg.Fail of the hosts at once (never all) and waits for
// the ring to heal.
func (rr *ringRun) crash() error {
	cfg, s := rr.cfg, rr.s
	up := upHosts(s, cfg.Nodes)
	rr.r.Shuffle(len(up), func(i, j int) { up[i], up[j] = up[j], up[i] })
	kill := int(math.Round(cfg.Fail * float64(cfg.Nodes)))
	for _, h := range up[:min(kill, len(up)-1)] {
		s.Crash(h)
	}
	rr.logf("sim ring: crashed %d hosts at once; waiting for the ring to heal", kill)
	t1 := s.Now()
	if err := waitStable(s, 10*time.Minute); err != nil {
		return err
	}
	rr.res.RestabilizeSecs = (s.Now() - t1).Seconds()
	s.RunFor(fingerSettle(cfg.Ring))
	rr.chk.CheckRing(s, fmt.Sprintf("settled at %v", s.Now()), true)
	rr.logf("sim ring: healed after %.0fs", rr.res.RestabilizeSecs)
	return nil
}

// churn starts the churn process for window: hosts join at exponential
// intervals and live exponential lifetimes.
func (rr *ringRun) churn(window time.Duration) {
	cfg, s, r := rr.cfg, rr.s, rr.r
	end := s.Now() + window
	var arrive func()
	arrive = func() {
		if s.Now() >= end {
			return
		}
		h, err := rr.addHost()
		if err == nil {
			rr.res.ChurnJoins++
			life := expDuration(r, cfg.ChurnLifetime)
			s.At(s.Now()+life, func() {
				if h.Up() {
					s.Crash(h)
					rr.res.ChurnDeaths++
				}
			})
		}
		s.At(s.Now()+expDuration(r, cfg.ChurnInterarrival), arrive)
	}
	s.At(s.Now()+expDuration(r, cfg.ChurnInterarrival), arrive)
	rr.logf("sim ring: churn for %v (a join every %v, lifetime %v on average)", window, cfg.ChurnInterarrival, cfg.ChurnLifetime)
}

// lookups spreads cfg.Lookups random lookups over a window and runs until
// they are back (a minute past the window at most); with churn, the
// window is the churn period and only the stable hosts issue lookups.
func (rr *ringRun) lookups() {
	cfg, s := rr.cfg, rr.s
	window := time.Duration(cfg.Lookups) * 10 * time.Millisecond
	if cfg.Churn {
		window = cfg.ChurnDuration
		rr.churn(window)
	}
	rr.start = s.Now()
	for i := 0; i < cfg.Lookups; i++ {
		at := rr.start + time.Duration(float64(window)*float64(i)/float64(cfg.Lookups))
		if !cfg.Churn {
			// The hosts stay up: each lookup is an event of its origin's,
			// chosen now, and the hosts run on between lookups.
			h, key, from := rr.pick()
			rr.outstanding++
			s.DoAt(h, at, rr.lookup(h, key, from))
			continue
		}
		s.At(at, func() {
			h, key, from := rr.pick()
			rr.outstanding++
			s.Do(h, rr.lookup(h, key, from))
		})
	}
	s.RunUntil(rr.start + window)
	for deadline := s.Now() + time.Minute; rr.outstanding > 0 && s.Now() < deadline; {
		s.RunFor(time.Second)
	}
	rr.res.Lookups += rr.outstanding // lookups that never returned count as wrong
	rr.res.Failed += rr.outstanding
}

// pick chooses a lookup: a stable host up, a random key and a vnode.
func (rr *ringRun) pick() (*sim.Host, id.ID, int) {
	if g := rr.s.Membership(); g != rr.upGen {
		rr.up, rr.upGen = upHosts(rr.s, rr.cfg.Nodes), g
	}
	return rr.up[rr.r.IntN(len(rr.up))], id.Random(rr.r, id.Bytes), rr.r.IntN(rr.cfg.Vnodes)
}

// truth is the oracle's successor of key in the current membership.
func (rr *ringRun) truth(key id.ID) id.ID {
	if g := rr.s.Membership(); g != rr.orcGen {
		rr.orc, rr.orcGen = newOracle(rr.s), g
	}
	return rr.orc.successor(key)
}

// lookup is the event that looks key up from h's vnode from and counts
// the result against the oracle.
func (rr *ringRun) lookup(h *sim.Host, key id.ID, from int) func(env node.Env) {
	res := &rr.res
	return func(env node.Env) {
		chordOf(h).Lookup(env, key, ring.LookupOptions{From: from}, func(env node.Env, lr ring.Result) {
			rr.s.Later(h, func() { // hosts run on two goroutines
				rr.outstanding--
				res.Lookups++
				if lr.Err != nil || len(lr.Succs) == 0 {
					res.Failed++
					return
				}
				if lr.Succs[0].ID == rr.truth(key) {
					res.Correct++
				}
				if !lr.Iterative {
					rr.hops = append(rr.hops, float64(lr.Hops))
				}
				rr.lat = append(rr.lat, ms(lr.Latency))
			})
		})
	}
}

// tally fills in the result: the hosts' counters, the lookups' figures
// and the run's totals.
func (rr *ringRun) tally() {
	cfg, s, res := rr.cfg, rr.s, &rr.res
	for _, h := range s.Hosts() {
		if rh := chordOf(h); rh != nil {
			res.Fallbacks += rh.Stats.IterativeFallbacks
			res.RPCTimeouts += rh.Runtime().RPC().Timeouts
			res.PeersDeclared += rh.Runtime().Stats.PeersDeclaredDead
		}
	}
	if res.Lookups > 0 {
		res.CorrectFraction = float64(res.Correct) / float64(res.Lookups)
	}
	res.MeanHops = mean(rr.hops)
	for _, h := range rr.hops {
		for int(h) >= len(res.HopCounts) {
			res.HopCounts = append(res.HopCounts, 0)
		}
		res.HopCounts[int(h)]++
	}
	res.HopsPerLog2N = res.MeanHops / math.Log2(float64(cfg.Nodes*cfg.Vnodes))
	slices.Sort(rr.lat)
	res.LatencyP50Ms, res.LatencyP99Ms = stats.Quantile(rr.lat, 0.5), stats.Quantile(rr.lat, 0.99)
	res.Messages = s.Totals().Messages
	res.Events = s.Totals().Events
	res.VirtualSeconds = s.Now().Seconds()
	res.WallSeconds = time.Since(rr.wall).Seconds()
	res.EventsPerSec = float64(res.Events) / res.WallSeconds
	res.TraceHash = fmt.Sprintf("%016x", s.TraceHash())
	res.Checked = rr.chk.report()
}

// waitStable runs until every running vnode's successor and predecessor
// pointers are right (ring.Check), checking every 5 virtual seconds.
func waitStable(s *sim.Sim, limit time.Duration) error {
	deadline := s.Now() + limit
	for {
		bad := ring.Check(views(s), ring.Want{Succs: 1, Preds: 1})
		if len(bad) == 0 {
			return nil
		}
		if s.Now() >= deadline {
			return fmt.Errorf("ring not stable after %v: %d wrong successors or predecessors, first %s", limit, len(bad), bad[0])
		}
		s.RunFor(5 * time.Second)
	}
}

// fingerSettle is long enough for two full finger-table refreshes.
func fingerSettle(c ring.Config) time.Duration { return 40 * c.FixFingersInterval }

// upHosts lists the running hosts among the first n.
func upHosts(s *sim.Sim, n int) []*sim.Host {
	var out []*sim.Host
	for i, h := range s.Hosts() {
		if i < n && h.Up() {
			out = append(out, h)
		}
	}
	return out
}

func expDuration(r *rand.Rand, mean time.Duration) time.Duration {
	return time.Duration(r.ExpFloat64() * float64(mean))
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	t := 0.0
	for _, x := range xs {
		t += x
	}
	return t / float64(len(xs))
}
