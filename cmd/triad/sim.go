package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"golang.org/x/term"

	"triad/internal/exp"
	"triad/internal/figure"
	"triad/internal/files"
)

var simAbout = help("sim")

// simCommand is one `triad sim` experiment: its usage line and help, what
// its --json and --plot write, whether --cpuprofile profiles it, and its
// flags (exp.Sim) with their defaults.
type simCommand struct {
	name, usage, about, json, plot string
	profiled                       bool
	sim                            exp.Sim
}

const jsonResults = "end with one JSON line of results"

// sims are `triad sim`'s experiments.
func sims() []simCommand {
	return []simCommand{
		{"ring", "sim ring --nodes N --seed S [--fail FRACTION] [--churn] [--check] [--json]", exp.RingHelp, jsonResults,
			"draw the lookups' path lengths (the paper's figure) to this `file` (.png, .svg or .pdf)", true, new(exp.DefaultRingConfig())},
		{"dhash", "sim dhash --nodes N --seed S [--check] [--json] [--plot FILE]", exp.DHashHelp, jsonResults,
			"draw the latency comparisons (median and 90th percentile of each) to this `file` (.png, .svg or .pdf)", true, new(exp.DefaultDHashConfig())},
		{"passingtone", "sim passingtone [--trace FILE] [--seed S] [--json]  |  sim passingtone --scenario restart|transient|addition|wipe|partition|liars|all", exp.PassingToneHelp, "one JSON line per run",
			"draw the figure to this `file` (.png, .svg or .pdf): the trace's copies per object at the end (Figure 5), or the scenarios' bytes moved and needed", false, new(exp.DefaultPassingToneFlags())},
		{"congestion", "sim congestion [--seed S] [--scheme none|loss|backpressure|marking] [--crossload P] [--gamma G] [--threshold T] [--min-rto D] [--json] [--plot FILE]", exp.CongestionHelp, "end with one JSON line: the summary, and the points",
			"draw Figures 4 and 5 to this `file` (.png, .svg or .pdf)", false, new(exp.DefaultCongestionFlags())},
		{"tapestry", "sim tapestry [--seed S] [--experiment rdp|optim|insert|parallel|massive|churn|vs-chord|rogue|all] [--nodes N] [--quick] [--check] [--json] [--plot FILE]", exp.TapestryHelp, jsonResults,
			"draw the paper's figures of the experiments that ran (Figs. 13-15, 19-22) to this `file` (.png, .svg or .pdf)", true, &exp.TapestryFlags{TapestryConfig: exp.DefaultTapestryConfig()}},
		{"d2", "sim d2 --seed S [--experiment locality|avail|balance|perf|all|chaos] [--tree DIR | --manifest FILE] [--trace FILE] [--quick] [--check] [--json] [--plot FILE]  |  sim d2 --tree DIR --write-manifest FILE", exp.D2Help + "\n" + exp.D2ChaosHelp, "end with one JSON line of every figure",
			"draw the paper's figures of the experiments that ran (Figs. 2, 6, 7-9, 11, Table 2) to this `file` (.png, .svg or .pdf)", true, &exp.D2Flags{D2Config: exp.DefaultD2Config()}},
	}
}

func runSim(args []string, stdout, stderr io.Writer) error {
	// A simulation's live heap is small next to what it allocates per
	// event; collecting less often leaves both cores to the hosts.
	relaxGC()
	subs := map[string]func([]string, io.Writer, io.Writer) error{}
	for _, c := range sims() {
		subs[c.name] = c.run
	}
	return runGroup("sim", simAbout, subs, args, stdout, stderr)
}

// runSimNamed runs `triad sim NAME`, as the tests call it.
func runSimNamed(name string, args []string, stdout, stderr io.Writer) error {
	for _, c := range sims() {
		if c.name == name {
			return c.run(args, stdout, stderr)
		}
	}
	panic("triad: no sim " + name)
}

func runSimD2(args []string, stdout, stderr io.Writer) error {
	return runSimNamed("d2", args, stdout, stderr)
}

func runSimTapestry(args []string, stdout, stderr io.Writer) error {
	return runSimNamed("tapestry", args, stdout, stderr)
}

func runSimCongestion(args []string, stdout, stderr io.Writer) error {
	return runSimNamed("congestion", args, stdout, stderr)
}

// run parses the experiment's flags and those every experiment takes,
// refuses a --plot path the figure could not be written to (before a long
// run, not at its end), and runs it.
func (c simCommand) run(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("sim "+c.name, c.usage, c.about, stderr)
	c.sim.RegisterFlags(fs)
	asJSON := fs.Bool("json", false, c.json)
	quiet := fs.Bool("q", false, "no progress on stderr (there is none when stderr is not a terminal)")
	plotTo := fs.String("plot", "", c.plot)
	profile := profileFlag{new("")}
	if c.profiled {
		profile = addProfileFlag(fs, "the simulation")
	}
	if err := parse(fs, args); err != nil {
		return err
	}
	if path := *plotTo; path != "" {
		if err := figure.CheckFormat(path); err != nil {
			return usageErr(fs, "--plot: %v", err)
		}
		if err := files.CheckOutput(path); err != nil {
			return usageErr(fs, "--plot: %v", err)
		}
	}
	if err := checkConfig(fs, c.sim); err != nil {
		return err
	}
	stopProfile, err := profile.start()
	if err != nil {
		return err
	}
	defer stopProfile()
	out := exp.Output{Text: stdout, Given: func(name string) bool { return flagGiven(fs, name) }}
	if !*quiet && isTerminal(stderr) {
		out.Log = stderr
	}
	if *asJSON {
		out.JSON = func(v any) error { return printJSON(stdout, v) }
	}
	if path := *plotTo; path != "" {
		out.Plot = func(res any) error {
			if err := figure.Draw(res, path); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "figure written to %s\n", path)
			return nil
		}
	}
	err = c.sim.Run(out)
	if ue := (exp.UsageError{}); errors.As(err, &ue) {
		return usageErr(fs, "%v", ue.Err)
	}
	return err
}

// isTerminal reports whether w is a terminal, where progress may go.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// validator is a command's configuration, which checks its flags' values.
type validator interface{ Validate() error }

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

// flagGiven reports whether the flag name was set on the command line.
func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}
