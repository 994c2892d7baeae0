package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/term"

	"triad/internal/exp"
	"triad/internal/figure"
)

var simAbout = help("sim")

func runSim(args []string, stdout, stderr io.Writer) error {
	// A simulation's live heap is small next to what it allocates per
	// event; collecting less often leaves both cores to the hosts.
	relaxGC()
	return runGroup("sim", simAbout, map[string]func([]string, io.Writer, io.Writer) error{"ring": runSimRing, "dhash": runSimDHash, "passingtone": runSimPassingTone, "congestion": runSimCongestion, "tapestry": runSimTapestry, "d2": runSimD2}, args, stdout, stderr)
}

func runSimRing(args []string, stdout, stderr io.Writer) error {
	cfg := exp.DefaultRingConfig()
	fs := newFlags("sim ring", "sim ring --nodes N --seed S [--fail FRACTION] [--churn] [--check] [--json]", exp.RingHelp, stderr)
	cfg.RegisterFlags(fs)
	sf := addSimFlags(fs, "end with one JSON line of results", "draw the lookups' path lengths (the paper's figure) to this `file` (.png, .svg or .pdf)", true)
	stopProfile, err := sf.parse(fs, args, &cfg)
	if err != nil {
		return err
	}
	defer stopProfile()
	if sf.progress(stderr) {
		cfg.Log = stderr
	}
	res, err := exp.RunRing(cfg)
	if err != nil {
		return err
	}
	if err := sf.plot(stdout, func(path string) error { return figure.RingHops(res, path) }); err != nil {
		return err
	}
	res.WriteText(stdout)
	if err := sf.json(stdout, res); err != nil {
		return err
	}
	return res.Checked.Err()
}

func runSimDHash(args []string, stdout, stderr io.Writer) error {
	cfg := exp.DefaultDHashConfig()
	fs := newFlags("sim dhash", "sim dhash --nodes N --seed S [--check] [--json] [--plot FILE]", exp.DHashHelp, stderr)
	cfg.RegisterFlags(fs)
	sf := addSimFlags(fs, "end with one JSON line of results", "draw the latency comparisons (median and 90th percentile of each) to this `file` (.png, .svg or .pdf)", true)
	stopProfile, err := sf.parse(fs, args, &cfg)
	if err != nil {
		return err
	}
	defer stopProfile()
	if sf.progress(stderr) {
		cfg.Log = stderr
	}
	res, err := exp.RunDHash(cfg)
	if err != nil {
		return err
	}
	res.WriteText(stdout)
	if err := sf.plot(stdout, func(path string) error { return figure.DHashLatency(res, path) }); err != nil {
		return err
	}
	if err := sf.json(stdout, res); err != nil {
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

func runSimPassingTone(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("sim passingtone", "sim passingtone [--trace FILE] [--seed S] [--json]  |  sim passingtone --scenario restart|transient|addition|wipe|partition|liars|all", exp.PassingToneHelp, stderr)
	flags := exp.DefaultPassingToneFlags()
	flags.RegisterFlags(fs)
	sf := addSimFlags(fs, "one JSON line per run", "draw the figure to this `file` (.png, .svg or .pdf): the trace's copies per object at the end (Figure 5), or the scenarios' bytes moved and needed", false)
	if _, err := sf.parse(fs, args, &flags); err != nil {
		return err
	}
	flags.BudgetGiven = flagGiven(fs, "repair-budget")
	if flags.Scenario == "" {
		return runTrace(flags, sf, stdout, stderr)
	}
	failed := 0
	var results []exp.ScenarioResult
	list := flags.Scenarios()
	for _, cfg := range list {
		if sf.progress(stderr) {
			cfg.Log = stderr
		}
		res, err := exp.RunPassingTone(cfg)
		if err != nil {
			return usageErr(fs, "%v", err)
		}
		results = append(results, res)
		if !res.Pass {
			failed++
		}
		res.WriteText(stdout)
		if err := sf.json(stdout, res); err != nil {
			return err
		}
	}
	if err := sf.plot(stdout, func(path string) error { return figure.Scenarios(results, path) }); err != nil {
		return err
	}
	if failed > 0 {
		return fmt.Errorf("sim passingtone: %d of %d scenarios failed", failed, len(list))
	}
	return nil
}

// runTrace is `triad sim passingtone` without a scenario: the durability
// experiment over a failure trace.
func runTrace(flags exp.PassingToneFlags, sf simFlags, stdout, stderr io.Writer) error {
	cfg, source, err := flags.Trace()
	if err != nil {
		return err
	}
	cfg.Trace.Stats().WriteText(stdout, source)
	if sf.progress(stderr) {
		cfg.Progress = func(p exp.TraceProgress) {
			fmt.Fprintf(stderr, "sim passingtone: day %.0f of %.0f, %s wall, %d objects repaired so far, %d lost\n",
				p.Virtual.Hours()/24, p.Total.Hours()/24, p.Wall.Round(time.Second), p.Repaired, p.Lost)
		}
	}
	res, err := exp.RunTrace(cfg)
	if err != nil {
		return err
	}
	if err := sf.plot(stdout, func(path string) error { return figure.ReplicaCDF(res, path) }); err != nil {
		return err
	}
	res.WriteText(stdout)
	if err := sf.json(stdout, res); err != nil {
		return err
	}
	if res.ObjectsLost > 0 || res.ExpiredRepairs > 0 {
		return fmt.Errorf("sim passingtone: %d objects lost, %d expired objects repaired", res.ObjectsLost, res.ExpiredRepairs)
	}
	return nil
}

func runSimCongestion(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("sim congestion", "sim congestion [--seed S] [--scheme none|loss|backpressure|marking] [--crossload P] [--gamma G] [--threshold T] [--min-rto D] [--json] [--plot FILE]", exp.CongestionHelp, stderr)
	cfg := exp.DefaultCongestionFlags()
	cfg.RegisterFlags(fs)
	sf := addSimFlags(fs, "end with one JSON line: the summary, and the points", "draw Figures 4 and 5 to this `file` (.png, .svg or .pdf)", false)
	if _, err := sf.parse(fs, args, &cfg); err != nil {
		return err
	}
	if sf.progress(stderr) {
		cfg.Log = stderr
	}
	res, err := cfg.Run()
	if err != nil {
		return err
	}
	res.WriteText(stdout)
	if cfg.Scheme == "" {
		res.Summary.WriteText(stdout)
	}
	if err := sf.plot(stdout, func(path string) error { return figure.Congestion(res, path) }); err != nil {
		return err
	}
	if cfg.Scheme == "" {
		return sf.json(stdout, res.SummaryJSON())
	}
	return sf.json(stdout, res)
}

func runSimTapestry(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("sim tapestry", "sim tapestry [--seed S] [--experiment rdp|optim|insert|parallel|massive|churn|vs-chord|rogue|all] [--nodes N] [--quick] [--check] [--json] [--plot FILE]", exp.TapestryHelp, stderr)
	cfg := exp.DefaultTapestryConfig()
	cfg.RegisterFlags(fs)
	check := fs.Bool("check", false, "exit non-zero if a threshold of issue 29 fails (the failures are printed)")
	sf := addSimFlags(fs, "end with one JSON line of results", "draw the paper's figures of the experiments that ran (Figs. 13-15, 19-22) to this `file` (.png, .svg or .pdf)", true)
	stopProfile, err := sf.parse(fs, args, &cfg)
	if err != nil {
		return err
	}
	defer stopProfile()
	if *sf.plotTo != "" && !exp.TapestryDraws(cfg.Experiment) {
		return usageErr(fs, "--plot: --experiment %s draws no figure (rdp, optim, massive and churn do)", cfg.Experiment)
	}
	if sf.progress(stderr) {
		cfg.Log = stderr
	}
	res, err := exp.RunTapestry(cfg)
	if err != nil {
		return err
	}
	res.WriteText(stdout)
	if err := sf.plot(stdout, func(path string) error { return figure.Tapestry(res, path) }); err != nil {
		return err
	}
	if err := sf.json(stdout, res); err != nil {
		return err
	}
	if failed := res.Failed(); *check && len(failed) > 0 {
		return fmt.Errorf("sim tapestry: %d thresholds of issue 29 missed (FAIL above)", len(failed))
	}
	return nil
}

// simFlags are the flags every experiment takes beside its
// configuration's: --json, -q, --plot and (where profiled) --cpuprofile.
type simFlags struct {
	asJSON, quiet *bool
	plotTo        *string
	profile       *profileFlag
}

// addSimFlags defines the flags on fs, --cpuprofile if profiled.
func addSimFlags(fs *flag.FlagSet, jsonUsage, plotUsage string, profiled bool) simFlags {
	sf := simFlags{
		asJSON: fs.Bool("json", false, jsonUsage),
		quiet:  fs.Bool("q", false, "no progress on stderr (there is none when stderr is not a terminal)"),
		plotTo: fs.String("plot", "", plotUsage),
	}
	if profiled {
		p := addProfileFlag(fs, "the simulation")
		sf.profile = &p
	}
	return sf
}

// parse parses args, refuses a --plot path the figure could not be
// written to (before a long run, not at its end) and validates cfg; then
// it starts the profile, if one was asked for.
func (sf simFlags) parse(fs *flag.FlagSet, args []string, cfg validator) (stopProfile func(), err error) {
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	if path := *sf.plotTo; path != "" {
		if err := figure.CheckFormat(path); err != nil {
			return nil, usageErr(fs, "--plot: %v", err)
		}
		if err := checkOutputPath(path); err != nil {
			return nil, usageErr(fs, "--plot: %v", err)
		}
	}
	if err := checkConfig(fs, cfg); err != nil {
		return nil, err
	}
	if sf.profile == nil {
		return func() {}, nil
	}
	return sf.profile.start()
}

// progress reports whether the run shows progress on stderr: on a
// terminal, unless -q.
func (sf simFlags) progress(stderr io.Writer) bool {
	f, ok := stderr.(*os.File)
	return !*sf.quiet && ok && term.IsTerminal(int(f.Fd()))
}

// plot draws the figure with draw if --plot was given, and says so.
func (sf simFlags) plot(stdout io.Writer, draw func(path string) error) error {
	if *sf.plotTo == "" {
		return nil
	}
	if err := draw(*sf.plotTo); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "figure written to %s\n", *sf.plotTo)
	return nil
}

// json writes v as the final JSON line, with --json.
func (sf simFlags) json(stdout io.Writer, v any) error { return maybeJSON(stdout, *sf.asJSON, v) }

// maybeJSON writes v as the final JSON line if asked to.
func maybeJSON(stdout io.Writer, asked bool, v any) error {
	if !asked {
		return nil
	}
	return printJSON(stdout, v)
}

// validator is a command's configuration, which checks its flags' values.
type validator interface{ Validate() error }

// parseConfig parses args and checks them as checkConfig does.
func parseConfig(fs *flag.FlagSet, args []string, cfg validator) error {
	if err := parse(fs, args); err != nil {
		return err
	}
	return checkConfig(fs, cfg)
}

// checkConfig refuses positional arguments and a configuration that does
// not validate, with the usage.
func checkConfig(fs *flag.FlagSet, cfg validator) error {
	if fs.NArg() > 0 {
		return usageErr(fs, "unexpected argument %q", fs.Arg(0))
	}
	if err := cfg.Validate(); err != nil {
		return usageErr(fs, "%v", err)
	}
	return nil
}
