package exp

import (
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"triad/internal/d2/workload"
)

// Sim is one `triad sim` experiment as its command sees it: the flags its
// configuration takes, their check and the run, which prints its results
// to an Output. cmd/triad keeps one table of them and adds the flags
// every experiment takes (--json, --plot, -q).
type Sim interface {
	// RegisterFlags defines the experiment's flags on fs, bound to its
	// fields and with their values as the defaults.
	RegisterFlags(fs *flag.FlagSet)
	// Validate checks what the flags set, naming the flag of a bad value.
	Validate() error
	// Run runs the experiment, writes its results to o and returns its
	// verdict: an error when a check it was asked for failed.
	Run(o Output) error
}

// Output is where a Sim's run goes, in the order the experiment gives it.
type Output struct {
	// Text gets the tables for people.
	Text io.Writer
	// Log, if set, gets progress lines.
	Log io.Writer
	// Plot, if set (--plot), draws a result's figure (figure.Draw) and
	// says where it went.
	Plot func(result any) error
	// JSON, if set (--json), writes v as a JSON line.
	JSON func(v any) error
	// Given, if set, reports whether a flag was on the command line: a
	// default that depends on other flags yields to a given value.
	Given func(flag string) bool
}

func (o Output) plot(res any) error {
	if o.Plot == nil {
		return nil
	}
	return o.Plot(res)
}

// writeChecked writes res's table, figure and JSON line, in that order;
// with check, a run that missed failed thresholds fails with the message
// format (given the count).
func (o Output) writeChecked(res interface{ WriteText(io.Writer) }, check bool, failed int, format string) error {
	res.WriteText(o.Text)
	if err := o.plot(res); err != nil {
		return err
	}
	if err := o.json(res); err != nil {
		return err
	}
	if check && failed > 0 {
		return fmt.Errorf(format, failed)
	}
	return nil
}

func (o Output) json(v any) error {
	if o.JSON == nil {
		return nil
	}
	return o.JSON(v)
}

// UsageError is a Run's refusal of its flags, which it finds only once it
// started: the command prints Err with its usage.
type UsageError struct{ Err error }

func (e UsageError) Error() string { return e.Err.Error() }

// Run runs the ring experiment (RunRing): its figure, then its table.
func (c *RingConfig) Run(o Output) error {
	c.Log = o.Log
	res, err := RunRing(*c)
	if err != nil {
		return err
	}
	if err := o.plot(res); err != nil {
		return err
	}
	res.WriteText(o.Text)
	if err := o.json(res); err != nil {
		return err
	}
	return res.Checked.Err()
}

// Run runs the DHash++ comparisons (RunDHash); it fails if a claim does
// not hold.
func (c *DHashConfig) Run(o Output) error {
	c.Log = o.Log
	res, err := RunDHash(*c)
	if err != nil {
		return err
	}
	res.WriteText(o.Text)
	if err := o.plot(res); err != nil {
		return err
	}
	if err := o.json(res); err != nil {
		return err
	}
	if err := res.Checked.Err(); err != nil {
		return err
	}
	if !res.Pass {
		return fmt.Errorf("the DHash++ claims do not hold on this run (see the table)")
	}
	return nil
}

// Run runs the scenarios (RunPassingTone), each printed as it ends, or
// without Scenario the trace (RunTrace); it fails if a scenario failed or
// the trace lost an object.
func (f *PassingToneFlags) Run(o Output) error {
	f.BudgetGiven = f.BudgetGiven || o.Given != nil && o.Given("repair-budget")
	if f.Scenario == "" {
		return f.runTrace(o)
	}
	failed := 0
	var results []ScenarioResult
	list := f.Scenarios()
	for _, cfg := range list {
		cfg.Log = o.Log
		res, err := RunPassingTone(cfg)
		if err != nil {
			return UsageError{err}
		}
		results = append(results, res)
		if !res.Pass {
			failed++
		}
		res.WriteText(o.Text)
		if err := o.json(res); err != nil {
			return err
		}
	}
	if err := o.plot(results); err != nil {
		return err
	}
	if failed > 0 {
		return fmt.Errorf("sim passingtone: %d of %d scenarios failed", failed, len(list))
	}
	return nil
}

// runTrace is the durability experiment over a failure trace.
func (f PassingToneFlags) runTrace(o Output) error {
	cfg, source, err := f.Trace()
	if err != nil {
		return err
	}
	cfg.Trace.Stats().WriteText(o.Text, source)
	if o.Log != nil {
		cfg.Progress = func(p TraceProgress) {
			fmt.Fprintf(o.Log, "sim passingtone: day %.0f of %.0f, %s wall, %d objects repaired so far, %d lost\n",
				p.Virtual.Hours()/24, p.Total.Hours()/24, p.Wall.Round(time.Second), p.Repaired, p.Lost)
		}
	}
	res, err := RunTrace(cfg)
	if err != nil {
		return err
	}
	if err := o.plot(res); err != nil {
		return err
	}
	res.WriteText(o.Text)
	if err := o.json(res); err != nil {
		return err
	}
	if res.ObjectsLost > 0 || res.ExpiredRepairs > 0 {
		return fmt.Errorf("sim passingtone: %d objects lost, %d expired objects repaired", res.ObjectsLost, res.ExpiredRepairs)
	}
	return nil
}

// Run runs the congestion experiment, or the one scheme: the whole
// experiment ends with its summary, whose JSON line is the summary's.
func (f *CongestionFlags) Run(o Output) error {
	f.Log = o.Log
	res, err := f.run()
	if err != nil {
		return err
	}
	res.WriteText(o.Text)
	if f.Scheme == "" {
		res.Summary.WriteText(o.Text)
	}
	if err := o.plot(res); err != nil {
		return err
	}
	if f.Scheme == "" {
		return o.json(res.SummaryJSON())
	}
	return o.json(res)
}

// TapestryFlags are `triad sim tapestry`'s flags: the experiments, and
// whether their thresholds decide the exit status.
type TapestryFlags struct {
	TapestryConfig
	// Check fails the run when a threshold of issue 29 is missed.
	Check bool
}

// RegisterFlags defines the flags on fs, bound to f's fields and with f's
// values as their defaults.
func (f *TapestryFlags) RegisterFlags(fs *flag.FlagSet) {
	f.TapestryConfig.RegisterFlags(fs)
	fs.BoolVar(&f.Check, "check", f.Check, "exit non-zero if a threshold of issue 29 fails (the failures are printed)")
}

// Run runs the experiments (RunTapestry); a figure is refused before the
// run when none of them draws one.
func (f *TapestryFlags) Run(o Output) error {
	if o.Plot != nil && !TapestryDraws(f.Experiment) {
		return UsageError{fmt.Errorf("--plot: --experiment %s draws no figure (rdp, optim, massive and churn do)", f.Experiment)}
	}
	f.Log = o.Log
	res, err := RunTapestry(f.TapestryConfig)
	if err != nil {
		return err
	}
	return o.writeChecked(res, f.Check, len(res.Failed()), "sim tapestry: %d thresholds of issue 29 missed (FAIL above)")
}

// D2Flags are `triad sim d2`'s flags: the experiments (RunD2), or the
// chaos experiment (RunD2Chaos, also with Scenario), or with
// WriteManifest only the manifest of Tree.
type D2Flags struct {
	D2Config
	// Check fails the run when a threshold of issue 30 is missed, or in
	// the chaos experiment an invariant is violated.
	Check bool
	// Scenario "rogue" runs the chaos experiment with an insider.
	Scenario string
	// WriteManifest is where to write Tree's manifest instead of a run.
	WriteManifest string
}

// RegisterFlags defines the flags on fs, bound to f's fields and with f's
// values as their defaults.
func (f *D2Flags) RegisterFlags(fs *flag.FlagSet) {
	f.D2Config.RegisterFlags(fs)
	fs.Lookup("experiment").Usage = "locality, avail, balance, perf, all, or chaos (invariants under failures; not part of all)"
	fs.BoolVar(&f.Check, "check", f.Check, "exit non-zero if a threshold of issue 30 fails, or with chaos if an invariant is violated (the failures are printed)")
	fs.StringVar(&f.Scenario, "scenario", f.Scenario, "`rogue`: the chaos experiment with an insider that aims its position at a volume and acknowledges puts it neither stores nor replicates (issue 44); implies --experiment chaos")
	fs.StringVar(&f.WriteManifest, "write-manifest", f.WriteManifest, "write the manifest of --tree to this `file` (gzipped) and stop")
}

// Validate checks the flags: chaos, which RunD2 does not run, takes no
// workload or trace.
func (f D2Flags) Validate() error {
	if f.Experiment != D2Chaos && f.Experiment != "all" && !slices.Contains(D2Experiments, f.Experiment) {
		return fmt.Errorf("--experiment %q: want one of %v, all or %s", f.Experiment, D2Experiments, D2Chaos)
	}
	if f.Experiment != D2Chaos {
		return f.D2Config.Validate()
	}
	if f.Tree != "" || f.Manifest != "" || f.TraceFile != "" {
		return fmt.Errorf("--experiment chaos takes no --tree, --manifest or --trace: its writer puts blocks of its own")
	}
	return nil
}

// Run writes the manifest, or runs the chaos experiment, or the others.
func (f *D2Flags) Run(o Output) error {
	if f.WriteManifest != "" {
		return writeManifest(f.Tree, f.WriteManifest, o.Text)
	}
	f.Log = o.Log
	switch f.Scenario {
	case "":
	case "rogue":
		return f.runChaos(o, true)
	default:
		return UsageError{fmt.Errorf("--scenario %q: want rogue", f.Scenario)}
	}
	if f.Experiment == D2Chaos {
		return f.runChaos(o, false)
	}
	res, err := RunD2(f.D2Config)
	if err != nil {
		return err
	}
	return o.writeChecked(res, f.Check, len(res.Failed()), "sim d2: %d thresholds of issue 30 missed (FAIL above)")
}

// runChaos runs the chaos experiment, which draws no figure.
func (f D2Flags) runChaos(o Output, rogue bool) error {
	if o.Plot != nil {
		return fmt.Errorf("sim d2: --experiment chaos draws no figure (--plot)")
	}
	res, err := RunD2Chaos(D2ChaosConfig{Seed: f.Seed, Quick: f.Quick, Log: f.Log, Rogue: rogue})
	if err != nil {
		return err
	}
	res.WriteText(o.Text)
	if err := o.json(res); err != nil {
		return err
	}
	if f.Check && res.Violations > 0 {
		return fmt.Errorf("sim d2 chaos: %d invariant violations (above)", res.Violations)
	}
	return nil
}

// writeManifest lists tree's paths and sizes into file, gzipped, and says
// how much it listed.
func writeManifest(tree, file string, w io.Writer) error {
	if tree == "" {
		return fmt.Errorf("sim d2: --write-manifest needs --tree")
	}
	m, err := workload.ReadTree(tree)
	if err != nil {
		return err
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := m.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	c := m.Counts()
	fmt.Fprintf(w, "%s: %d files, %d directories, %d bytes\n", file, c.Files, c.Dirs, c.Bytes)
	return nil
}
