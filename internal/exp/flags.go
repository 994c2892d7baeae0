package exp

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"triad/internal/cc"
)

// RegisterFlags defines `triad sim ring`'s flags on fs, bound to c's
// fields and with c's values as their defaults.
func (c *RingConfig) RegisterFlags(fs *flag.FlagSet) {
	fs.IntVar(&c.Nodes, "nodes", c.Nodes, "hosts in the ring")
	fs.Uint64Var(&c.Seed, "seed", c.Seed, "random seed; fixes the whole run")
	fs.IntVar(&c.Vnodes, "vnodes", c.Vnodes, "virtual servers per host")
	fs.Float64Var(&c.Fail, "fail", c.Fail, "fraction of hosts to crash at once, in [0, 1)")
	fs.BoolVar(&c.Churn, "churn", c.Churn, "measure lookups during churn")
	fs.IntVar(&c.Lookups, "lookups", c.Lookups, "random lookups to measure")
	fs.DurationVar(&c.ChurnDuration, "churn-duration", c.ChurnDuration, "how long churn runs")
	fs.BoolVar(&c.Check, "check", c.Check, "run the invariant checker where the ring is claimed stable; exit non-zero on a violation")
	fs.DurationVar(&c.Ring.QuickStabilize, "quick-stabilize", c.Ring.QuickStabilize, "extra stabilization rounds this far apart while a vnode's lists change, as real nodes run them (1s/8); 0 for the papers' fixed rounds")
}

// Validate checks what the flags set, naming the flag of a bad value.
func (c RingConfig) Validate() error {
	if c.Nodes < 1 || c.Vnodes < 1 || c.Lookups < 1 {
		return errors.New("--nodes, --vnodes and --lookups must be positive")
	}
	if c.Fail < 0 || c.Fail >= 1 {
		return fmt.Errorf("--fail %v: want a fraction in [0, 1)", c.Fail)
	}
	if c.Ring.QuickStabilize < 0 {
		return fmt.Errorf("--quick-stabilize %v: want 0 or a positive duration", c.Ring.QuickStabilize)
	}
	return nil
}

// RegisterFlags defines `triad sim dhash`'s flags on fs, bound to c's
// fields and with c's values as their defaults.
func (c *DHashConfig) RegisterFlags(fs *flag.FlagSet) {
	fs.IntVar(&c.Nodes, "nodes", c.Nodes, "hosts in each ring")
	fs.Uint64Var(&c.Seed, "seed", c.Seed, "random seed; fixes the whole run")
	fs.IntVar(&c.Lookups, "lookups", c.Lookups, "lookups per measured mode")
	fs.IntVar(&c.Blocks, "blocks", c.Blocks, "blocks put and fetched per redundancy mode")
	fs.BoolVar(&c.Check, "check", c.Check, "run the invariant checker (ring pointers once stable, copies of every acknowledged put); exit non-zero on a violation")
	fs.Var((*samples)(&c.Samples), "pns", "comma-separated PNS sample `counts`, one ring each")
}

// samples is the --pns flag: PNS sample counts, comma-separated.
type samples []int

func (s *samples) String() string {
	var f []string
	for _, n := range *s {
		f = append(f, strconv.Itoa(n))
	}
	return strings.Join(f, ",")
}

func (s *samples) Set(list string) error {
	*s = nil
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return errors.New("want sample counts from 1 to 1024")
		}
		*s = append(*s, n)
	}
	return nil
}

// Validate checks what the flags set, naming the flag of a bad value.
func (c DHashConfig) Validate() error {
	for _, n := range c.Samples {
		if n < 1 || n > 1024 {
			return fmt.Errorf("--pns %q: want sample counts from 1 to 1024", (*samples)(&c.Samples).String())
		}
	}
	if c.Nodes < 16 || c.Lookups < 1 || c.Blocks < 1 {
		return errors.New("want --nodes >= 16 and positive --lookups and --blocks")
	}
	return nil
}

// PassingToneFlags are `triad sim passingtone`'s flags: without Scenario
// the durability experiment over a failure trace (TraceConfig), with it
// one scenario or all (PassingToneConfig).
type PassingToneFlags struct {
	// Scenario is one of Scenarios, or "all"; empty runs the trace.
	Scenario string
	Seed     uint64
	// TraceFile is a failure trace to read instead of a synthetic one, and
	// WriteTrace where to write the trace run (empty: neither).
	TraceFile, WriteTrace string
	// Days stops the trace there (0: the whole trace).
	Days float64
	// Sweep is global maintenance's period on the trace. Default 1h.
	Sweep time.Duration
	// BudgetKiB is the repair budget per host, KiB/s: the trace's (default
	// 150), and the scenarios' only where BudgetGiven (else each
	// scenario's own, WipeBudget for wipe and none for the others).
	BudgetKiB   int
	BudgetGiven bool
	// Hosts and Size are the scenarios' ring and object size.
	Hosts, Size int
	// Objects is the objects put (0: 50,000 on the trace, 1,000 in a
	// scenario); Interval the local maintenance period (0: 10m on the
	// trace, 2m in a scenario).
	Objects  int
	Interval time.Duration
}

// DefaultPassingToneFlags are the flags' defaults.
func DefaultPassingToneFlags() PassingToneFlags {
	return PassingToneFlags{Seed: 1, Sweep: time.Hour, BudgetKiB: 150, Hosts: 25, Size: 8 << 10}
}

// RegisterFlags defines the flags on fs, bound to f's fields and with f's
// values as their defaults. Run sets BudgetGiven from Output.Given.
func (f *PassingToneFlags) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&f.Scenario, "scenario", f.Scenario, "run one scenario on a small ring instead of the trace: restart, transient, addition, wipe, partition, liars or all")
	fs.Uint64Var(&f.Seed, "seed", f.Seed, "random seed; fixes the whole run (and the synthetic trace)")
	fs.StringVar(&f.TraceFile, "trace", f.TraceFile, "trace: read this failure trace instead of making a synthetic one")
	fs.StringVar(&f.WriteTrace, "write-trace", f.WriteTrace, "trace: write the trace it runs to this file")
	fs.Float64Var(&f.Days, "days", f.Days, "trace: stop after this many days (0: the whole trace)")
	fs.DurationVar(&f.Sweep, "sweep-interval", f.Sweep, "trace: global maintenance period")
	fs.IntVar(&f.BudgetKiB, "repair-budget", f.BudgetKiB, "repair bandwidth per host, KiB/s (scenarios: only where given, and 16 for wipe)")
	fs.IntVar(&f.Hosts, "hosts", f.Hosts, "scenario: hosts in the ring (25: each holds about 8% of the copies)")
	fs.IntVar(&f.Objects, "objects", f.Objects, "objects (trace: 50,000 inserted at the start; scenario: 1,000 put before the event)")
	fs.IntVar(&f.Size, "size", f.Size, "scenario: bytes per object")
	fs.DurationVar(&f.Interval, "interval", f.Interval, "local maintenance period (trace: 10m; scenario: 2m)")
}

// Validate checks what the flags set, naming the flag of a bad value.
func (f PassingToneFlags) Validate() error {
	switch {
	case f.Scenario == "" && (f.Days < 0 || f.BudgetKiB < 1 || f.Objects < 0 || f.Interval < 0 || f.Sweep <= 0):
		return errors.New("--days, --objects and --interval must not be negative, --repair-budget and --sweep-interval must be positive")
	case f.Scenario != "" && f.BudgetKiB < 0: // not the default: given
		return errors.New("--repair-budget must not be negative")
	}
	return nil
}

// Scenarios are the scenario runs the flags ask for, in order.
func (f PassingToneFlags) Scenarios() []PassingToneConfig {
	budget := 0 // each scenario's own default
	if f.BudgetGiven {
		budget = f.BudgetKiB << 10
	}
	cfg := PassingToneConfig{Seed: f.Seed, Hosts: f.Hosts, Objects: f.Objects, Size: f.Size, Interval: f.Interval, Budget: budget}
	if cfg.Interval == 0 {
		cfg.Interval = 2 * time.Minute
	}
	if cfg.Objects == 0 {
		cfg.Objects = 1000
	}
	list := []string{f.Scenario}
	if f.Scenario == "all" {
		list = Scenarios
	}
	var out []PassingToneConfig
	for _, sc := range list {
		cfg.Scenario = sc
		out = append(out, cfg)
	}
	return out
}

// Trace is the trace run the flags ask for, with a description of its
// trace's source: it reads TraceFile or makes the synthetic trace, and
// writes it to WriteTrace.
func (f PassingToneFlags) Trace() (TraceConfig, string, error) {
	cfg := TraceConfig{Seed: f.Seed, Objects: f.Objects, Budget: f.BudgetKiB << 10, Interval: f.Interval, SweepInterval: f.Sweep,
		Until: time.Duration(f.Days * 24 * float64(time.Hour))}
	source := fmt.Sprintf("synthetic, with the statistics of PlanetLab's 2005-2006 trace, seed %d", f.Seed)
	if f.TraceFile != "" {
		r, err := os.Open(f.TraceFile)
		if err != nil {
			return cfg, "", err
		}
		cfg.Trace, err = ParseFailureTrace(r)
		r.Close()
		if err != nil {
			return cfg, "", fmt.Errorf("sim passingtone: %s: %w", f.TraceFile, err)
		}
		source = f.TraceFile
	} else {
		t, err := SyntheticTrace(PlanetLabShape(), f.Seed)
		if err != nil {
			return cfg, "", err
		}
		cfg.Trace = t
	}
	if f.WriteTrace != "" {
		w, err := os.Create(f.WriteTrace)
		if err != nil {
			return cfg, "", err
		}
		_, err = cfg.Trace.WriteTo(w)
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return cfg, "", err
		}
	}
	return cfg, source, nil
}

// CongestionFlags are `triad sim congestion`'s flags: the experiment's
// configuration and, with Scheme, the one curve or point to run instead.
type CongestionFlags struct {
	CongestionConfig
	// Scheme runs only this scheme (cc.ParseScheme's names); empty: the
	// whole experiment.
	Scheme string
	// CrossLoad, with Scheme and not negative, runs one point of Figure 5
	// at this cross-load instead of the scheme's Figure 4 curve.
	CrossLoad float64
	// Gamma is marking's fairness parameter with Scheme (the whole
	// experiment compares 0 with 16).
	Gamma float64
}

// DefaultCongestionFlags runs the whole experiment with seed 1 on
// CongestionPeers peers, 5 s of warm-up and 15 s measured per point, and
// cc.DefaultConfig's threshold and timeout floor.
func DefaultCongestionFlags() CongestionFlags {
	def := cc.DefaultConfig()
	return CongestionFlags{CongestionConfig: CongestionConfig{Seed: 1, Peers: CongestionPeers, Warmup: 5 * time.Second, Measure: 15 * time.Second,
		Threshold: def.Threshold, MinRTO: def.MinRTO}, CrossLoad: -1}
}

// RegisterFlags defines the flags on fs, bound to f's fields and with f's
// values as their defaults.
func (f *CongestionFlags) RegisterFlags(fs *flag.FlagSet) {
	def := cc.DefaultConfig()
	fs.Uint64Var(&f.Seed, "seed", f.Seed, "random seed; fixes the whole run")
	fs.StringVar(&f.Scheme, "scheme", f.Scheme, "run only this scheme: none, loss, backpressure or marking")
	fs.Float64Var(&f.CrossLoad, "crossload", f.CrossLoad, "with --scheme: one point of Figure 5 at this cross-load (0 to 0.9), instead of Figure 4")
	fs.Float64Var(&f.Gamma, "gamma", f.Gamma, "fairness parameter of marking (the full run also compares 0 with 16)")
	fs.Float64Var(&f.Threshold, "threshold", f.Threshold, fmt.Sprintf("marking's feedback threshold t: the average queue length at which every request is marked (under the queue's %d)", def.QueueCap))
	fs.DurationVar(&f.MinRTO, "min-rto", f.MinRTO, fmt.Sprintf("the sources' floor on their retransmission timeout (at most the largest timeout, %v)", def.MaxRTO))
	fs.IntVar(&f.Peers, "peers", f.Peers, "peers in the ring")
	fs.DurationVar(&f.Warmup, "warmup", f.Warmup, "simulated time before measuring, per point")
	fs.DurationVar(&f.Measure, "measure", f.Measure, "simulated time measured, per point")
}

// Validate checks what the flags set, naming the flag of a bad value.
func (f CongestionFlags) Validate() error {
	def := cc.DefaultConfig()
	if f.Peers < 2 || f.Peers > 4096 || f.Warmup < 0 || f.Measure < time.Second || f.Gamma < 0 || f.CrossLoad >= 0.9 {
		return errors.New("want 2 to 4,096 peers, a measurement of at least 1s, gamma >= 0 and a cross-load under 0.9")
	}
	if !(f.Threshold > 0 && f.Threshold < float64(def.QueueCap)) || f.MinRTO <= 0 || f.MinRTO > def.MaxRTO {
		return fmt.Errorf("want 0 < --threshold < %d (the queue's capacity) and 0 < --min-rto <= %v (the largest timeout)", def.QueueCap, def.MaxRTO)
	}
	if f.Scheme != "" {
		if _, err := cc.ParseScheme(f.Scheme); err != nil {
			return err
		}
	}
	return nil
}

// run runs what the flags ask for: the whole experiment, or one scheme's
// Figure 4 curve or Figure 5 point.
func (f CongestionFlags) run() (Congestion, error) {
	if f.Scheme == "" {
		return RunCongestionExperiment(f.CongestionConfig)
	}
	s, err := cc.ParseScheme(f.Scheme)
	if err != nil {
		return Congestion{}, err
	}
	var res Congestion
	runs := []CongestionRun{}
	if f.CrossLoad >= 0 {
		runs = append(runs, CongestionRun{Setup: Mixed, Scheme: s, Offered: ElasticLoad, CrossLoad: f.CrossLoad, Gamma: f.Gamma})
	} else {
		for _, x := range DefaultLoads {
			runs = append(runs, CongestionRun{Setup: Uniform, Scheme: s, Offered: x, Gamma: f.Gamma})
		}
	}
	for _, r := range runs {
		r.Seed, r.Peers, r.Warmup, r.Measure = f.Seed, f.Peers, f.Warmup, f.Measure
		r.Threshold, r.MinRTO = f.Threshold, f.MinRTO
		p, err := RunCongestion(r)
		if err != nil {
			return res, err
		}
		if f.CrossLoad >= 0 {
			res.Figure5 = append(res.Figure5, p)
		} else {
			res.Figure4 = append(res.Figure4, p)
		}
		if f.Log != nil {
			fmt.Fprintf(f.Log, "congestion: %s offered %.0f: %.1f req/s per peer\n", p.Scheme, p.Offered, p.Throughput)
		}
	}
	return res, nil
}

// RegisterFlags defines `triad sim tapestry`'s flags on fs, bound to c's
// fields and with c's values as their defaults.
func (c *TapestryConfig) RegisterFlags(fs *flag.FlagSet) {
	fs.Uint64Var(&c.Seed, "seed", c.Seed, "random seed; fixes the whole run")
	fs.StringVar(&c.Experiment, "experiment", c.Experiment, "rdp, optim, insert, parallel, massive, churn or all")
	fs.IntVar(&c.Nodes, "nodes", c.Nodes, "nodes in the rdp, massive and churn meshes (0: 400, 830, 830; 256 with --quick)")
	fs.BoolVar(&c.Quick, "quick", c.Quick, "smaller meshes and fewer runs (all in a few minutes)")
}
