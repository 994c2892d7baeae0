package exp

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	"triad/internal/d2/workload"
)

// D2Experiments are `triad sim d2 --experiment`'s values, in the order
// "all" runs them.
var D2Experiments = []string{"locality", "avail", "balance", "perf"}

// D2Config is one `triad sim d2` run: issue 30's locality, availability
// and balance experiments on a workload made from a real tree.
type D2Config struct {
	Seed uint64
	// Experiment is one of D2Experiments, or "all".
	Experiment string
	// Tree, if set, is a directory whose tree the users copy; Manifest, if
	// set, a manifest file; neither: Go 1.26.8's src, embedded.
	Tree, Manifest string
	// TraceFile, if set, is a failure trace (docs/maint.md's format) in
	// place of the synthetic week.
	TraceFile string
	// Quick runs smaller: 200 hosts, fewer users, two days, two trials.
	Quick bool
	// Log, if set, receives progress lines.
	Log io.Writer

	// Set by tests: the manifest (else loaded from Tree, Manifest or the
	// default), and sizes that override Quick's and the full run's (sizes
	// without perfSizes: no perf run; without nodeBalance: no balance run
	// on the node code).
	manifest    *workload.Manifest
	sizes       *d2Sizes
	perfSizes   *d2PerfSizes
	nodeBalance *d2NodeBalanceSizes
}

// d2Sizes is how big a run is.
type d2Sizes struct {
	LocalityUsers  int
	LocalityLength time.Duration
	Hosts, Users   int
	Length         time.Duration // of the trace after warm-up
	Warmup         time.Duration
	Trials         int
}

func (c D2Config) size() d2Sizes {
	switch {
	case c.sizes != nil:
		return *c.sizes
	case c.Quick:
		return d2Sizes{LocalityUsers: 60, LocalityLength: 12 * time.Hour, Hosts: 200, Users: 12, Length: 7 * 24 * time.Hour, Warmup: 3 * 24 * time.Hour, Trials: 2}
	}
	return d2Sizes{LocalityUsers: 200, LocalityLength: 24 * time.Hour, Hosts: 247, Users: 24, Length: 7 * 24 * time.Hour, Warmup: 3 * 24 * time.Hour, Trials: 5}
}

// DefaultD2Config runs every experiment at full size from seed 1.
func DefaultD2Config() D2Config { return D2Config{Seed: 1, Experiment: "all"} }

// Validate checks what the flags set, naming the flag of a bad value.
func (c D2Config) Validate() error {
	if c.Experiment != "all" && !slices.Contains(D2Experiments, c.Experiment) {
		return fmt.Errorf("--experiment %q: want one of %v or all", c.Experiment, D2Experiments)
	}
	if c.Tree != "" && c.Manifest != "" {
		return errors.New("--tree and --manifest: give one")
	}
	return nil
}

func (c D2Config) runs(name string) bool { return c.Experiment == "all" || c.Experiment == name }

// The model's constants (§6, §8.1).
const (
	d2NodeBytes   = 250 << 20 // Fig. 2: 250 MB per node
	d2HostBytes   = 336 << 20 // §8.1: Harvard's 83 GB over 247 hosts
	d2Replicas    = 3
	d2Probe       = 10 * time.Minute
	d2T           = 4
	d2PointerHold = time.Hour
	d2MigrateBps  = 750_000
	d2WriteBps    = 1_500_000
)

// D2Inters are the task inter-arrival thresholds of Fig. 6.
var D2Inters = []time.Duration{time.Second, 10 * time.Second, 60 * time.Second}

// D2Check is one threshold of issue 30 against this run.
type D2Check = TapestryCheck

// D2Result is what `triad sim d2` measured; the figures of an experiment
// that did not run are zero.
type D2Result struct {
	Seed       uint64          `json:"seed"`
	Experiment string          `json:"experiment"`
	Quick      bool            `json:"quick"`
	Tree       workload.Counts `json:"tree"`

	Locality          *d2Locality `json:"locality,omitempty"`
	LocalityRatio     float64     `json:"locality_ratio"`
	LocalityOverBound float64     `json:"locality_over_bound"`

	Hosts             int                  `json:"hosts"`
	Users             int                  `json:"users"`
	BackgroundVolumes int                  `json:"background_volumes"`
	Trials            int                  `json:"trials"`
	TraceSource       string               `json:"trace_source,omitempty"`
	InterSeconds      []float64            `json:"inter_seconds,omitempty"`
	Unavail           map[string][]float64 `json:"unavail,omitempty"`       // placement: fraction of tasks failed, per inter (all trials)
	TasksFailed       map[string][]int     `json:"tasks_failed,omitempty"`  // placement: tasks failed, per inter
	Tasks             map[string][]int     `json:"tasks,omitempty"`         // placement: tasks, per inter
	UnavailRatio      []float64            `json:"unavail_ratio,omitempty"` // block / d2 per inter, d2's failures floored at one
	UnavailRatioMin   float64              `json:"unavail_ratio_min"`
	GroupsPerTask     map[string][]float64 `json:"replica_groups_per_task_by_inter,omitempty"`
	ReplicaGroups     map[string]float64   `json:"replica_groups_per_task,omitempty"` // placement: worst inter's mean

	Imbalance map[string]float64 `json:"imbalance,omitempty"` // d2, block, file, block+balancing
	// ImbalanceHourly is Fig. 11's series behind Imbalance: each hour's
	// imbalance after warm-up, the mean over the trials, for --plot; it
	// stays out of the JSON line.
	ImbalanceHourly  map[string][]float64 `json:"-"`
	MaxMinPrimaryP95 float64              `json:"max_min_primary_p95"`
	// LBBytes and LBBytesNoPointers are d2's bytes migrated over the whole
	// run, warm-up included (where most moves are), with and without
	// block pointers; LBOverWritten is after warm-up only: migrated over
	// written by users (every copy on both sides); WithInitial counts the
	// whole run against the initial volumes and the users' writes.
	LBBytes                  int64   `json:"lb_bytes"`
	LBBytesNoPointers        int64   `json:"lb_bytes_no_pointers"`
	LBBytesAfterWarmup       int64   `json:"lb_bytes_after_warmup"`
	WrittenBytes             int64   `json:"written_bytes"`
	InitialBytes             int64   `json:"initial_bytes"`
	LBOverWritten            float64 `json:"lb_over_written"`
	LBOverWrittenWithInitial float64 `json:"lb_over_written_with_initial"`
	Moves                    int     `json:"moves"`
	WarmupMoves              int     `json:"warmup_moves"`

	// Perf's figures (§9): speedup keyed placement/nodes/kbps/mode (block
	// or file against d2); cache_miss keyed placement/nodes/mode, both
	// link classes pooled; lookup messages block over d2 (seq);
	// mean lookup hops at the largest size, d2's and uniform keys' (block's
	// ring); the mean RTT of the largest size's topology.
	Perf          *d2Perf            `json:"perf,omitempty"`
	Speedup       map[string]float64 `json:"speedup,omitempty"`
	CacheMissRate map[string]float64 `json:"cache_miss,omitempty"`
	// CacheMissRemote leaves out the reads of keys the gateway owned.
	CacheMissRemote map[string]float64 `json:"cache_miss_remote,omitempty"`
	LookupMsgsRatio float64            `json:"lookup_msgs_ratio"` // seq
	// LookupMsgsRatioAll counts para too, where a group's first reads miss
	// the empty cache together, each with its own lookup.
	LookupMsgsRatioAll float64            `json:"lookup_msgs_ratio_all"`
	HopsMean           map[string]float64 `json:"hops_mean,omitempty"`
	MeanRTTms          float64            `json:"mean_rtt_ms"`
	PerfTimeouts       int                `json:"perf_timeouts"`
	PerfFailed         int                `json:"perf_failed"`

	// NodeBalance is the balance experiment on internal/d2's node code
	// (d2_balance_node.go), beside the model's figures above.
	NodeBalance *d2NodeBalance `json:"node_balance,omitempty"`

	Violations  int       `json:"violations"`
	Violated    []string  `json:"violated,omitempty"`
	Checks      []D2Check `json:"checks"`
	WallSeconds float64   `json:"wall_seconds"`
}

func (r *D2Result) check(name string, v float64, want string, pass bool) {
	r.Checks = append(r.Checks, D2Check{Name: name, Value: v, Want: want, Pass: pass})
}

// Failed is the thresholds this run missed.
func (r D2Result) Failed() []D2Check {
	var out []D2Check
	for _, c := range r.Checks {
		if !c.Pass {
			out = append(out, c)
		}
	}
	return out
}

// loadManifest is the tree the users copy.
func (c D2Config) loadManifest() (*workload.Manifest, error) {
	switch {
	case c.manifest != nil:
		return c.manifest, nil
	case c.Tree != "":
		return workload.ReadTree(c.Tree)
	case c.Manifest != "":
		return workload.Load(c.Manifest)
	}
	return workload.Default()
}

// RunD2 runs the experiments cfg asks for.
func RunD2(cfg D2Config) (D2Result, error) {
	if err := cfg.Validate(); err != nil {
		return D2Result{}, err
	}
	wall := time.Now()
	res := D2Result{Seed: cfg.Seed, Experiment: cfg.Experiment, Quick: cfg.Quick}
	m, err := cfg.loadManifest()
	if err != nil {
		return res, err
	}
	res.Tree = m.Counts()
	if cfg.runs("locality") {
		t0 := time.Now()
		res.locality(cfg, m)
		logf(cfg.Log, "sim d2: locality done in %.0fs of wall time", time.Since(t0).Seconds())
	}
	if cfg.runs("avail") || cfg.runs("balance") {
		if err := res.availBalance(cfg, m); err != nil {
			return res, err
		}
	}
	if cfg.runs("balance") && cfg.nodeBalanceSize().Nodes > 0 {
		t0 := time.Now()
		if err := res.nodeBalance(cfg, m); err != nil {
			return res, err
		}
		logf(cfg.Log, "sim d2: balance on the node code done in %.0fs of wall time", time.Since(t0).Seconds())
	}
	if cfg.runs("perf") && len(cfg.perfSize().Nodes) > 0 {
		t0 := time.Now()
		if err := res.perf(cfg, m); err != nil {
			return res, err
		}
		logf(cfg.Log, "sim d2: perf done in %.0fs of wall time", time.Since(t0).Seconds())
	}
	res.check("violations", float64(res.Violations), "= 0", res.Violations == 0)
	res.WallSeconds = time.Since(wall).Seconds()
	return res, nil
}

func (r *D2Result) locality(cfg D2Config, m *workload.Manifest) {
	sz := cfg.size()
	wc := workload.DefaultConfig()
	wc.Seed, wc.Users, wc.Duration = cfg.Seed, sz.LocalityUsers, sz.LocalityLength
	l := runD2Locality(m, wc, d2NodeBytes)
	r.Locality = &l
	r.LocalityRatio = l.Traditional / l.Ordered
	r.LocalityOverBound = l.Ordered / l.LowerBound
	r.check("locality_ratio", r.LocalityRatio, ">= 5", r.LocalityRatio >= 5)
	r.check("locality_over_bound", r.LocalityOverBound, "<= 10", r.LocalityOverBound <= 10)
}

// ratioFloor is block's unavailability over d2's, counting d2 at one
// failed task at least so that a run where d2 never fails still gives a
// (lower-bound) ratio.
func ratioFloor(blockFailed, blockTasks, d2Failed, d2Tasks int) float64 {
	if blockTasks == 0 || d2Tasks == 0 {
		return 0
	}
	return (float64(blockFailed) / float64(blockTasks)) / (float64(max(d2Failed, 1)) / float64(d2Tasks))
}

func finite(x float64) float64 {
	if math.IsInf(x, 0) || math.IsNaN(x) {
		return 0
	}
	return x
}

// RegisterFlags defines `triad sim d2`'s flags on fs, bound to c's fields
// and with c's values as their defaults.
func (c *D2Config) RegisterFlags(fs *flag.FlagSet) {
	fs.Uint64Var(&c.Seed, "seed", c.Seed, "random seed; fixes the whole run")
	fs.StringVar(&c.Experiment, "experiment", c.Experiment, "locality, avail, balance, perf or all")
	fs.StringVar(&c.Tree, "tree", c.Tree, "a `directory` whose tree each user copies (default: Go 1.26.8's src, embedded)")
	fs.StringVar(&c.Manifest, "manifest", c.Manifest, "a manifest `file` of the tree each user copies")
	fs.StringVar(&c.TraceFile, "trace", c.TraceFile, "a failure trace `file` (docs/maint.md) in place of the synthetic week")
	fs.BoolVar(&c.Quick, "quick", c.Quick, "a smaller run (200 hosts, 16 users, 2 days, 2 trials), for CI")
}
