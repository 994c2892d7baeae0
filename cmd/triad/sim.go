package main

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"triad/internal/exp"
)

const simAbout = `
Runs a simulation experiment: many instances of the real node code under
virtual time on a synthetic wide-area topology, reproducible from --seed.

Experiments:
  ring   Chord: join N nodes, stabilize, measure 10,000 random lookups against
         the true ring; optionally after a mass failure (--fail) or during
         churn (--churn).

Run 'triad sim ring --help' for its flags.`

func runSim(args []string, stdout, stderr io.Writer) error {
	return runGroup("sim", simAbout, map[string]func([]string, io.Writer, io.Writer) error{"ring": runSimRing}, args, stdout, stderr)
}

const simRingAbout = `
Builds a Chord ring of --nodes hosts on a synthetic wide-area topology (regions,
median RTT around 140 ms, heavy-tailed access links, per-host bandwidth), lets it
stabilize, and measures --lookups random lookups against the true ring.

  --fail F   after stabilization, crash a fraction F of the hosts at once, wait
             for the ring to heal, then measure.
  --churn    measure during churn: new hosts join with exponential interarrival
             times (mean 20 s) and live for an exponential time (mean 4 min),
             as in the Tapestry paper's "churn 1"; lookups start at the stable
             hosts.

The same --seed gives the same run (same trace_hash). Progress goes to stderr;
the results table to stdout, and with --json a final JSON line.`

func runSimRing(args []string, stdout, stderr io.Writer) error {
	cfg := exp.DefaultRingConfig()
	fs := newFlags("sim ring", "sim ring --nodes N --seed S [--fail FRACTION] [--churn] [--json]", simRingAbout, stderr)
	fs.IntVar(&cfg.Nodes, "nodes", cfg.Nodes, "hosts in the ring")
	fs.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "random seed; fixes the whole run")
	fs.IntVar(&cfg.Vnodes, "vnodes", cfg.Vnodes, "virtual servers per host")
	fs.Float64Var(&cfg.Fail, "fail", 0, "fraction of hosts to crash at once, in [0, 1)")
	fs.BoolVar(&cfg.Churn, "churn", false, "measure lookups during churn")
	fs.IntVar(&cfg.Lookups, "lookups", cfg.Lookups, "random lookups to measure")
	fs.DurationVar(&cfg.ChurnDuration, "churn-duration", cfg.ChurnDuration, "how long churn runs")
	asJSON := fs.Bool("json", false, "end with one JSON line of results")
	quiet := fs.Bool("q", false, "no progress on stderr")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErr(fs, "unexpected argument %q", fs.Arg(0))
	}
	if cfg.Nodes < 1 || cfg.Vnodes < 1 || cfg.Lookups < 1 {
		return usageErr(fs, "--nodes, --vnodes and --lookups must be positive")
	}
	if cfg.Fail < 0 || cfg.Fail >= 1 {
		return usageErr(fs, "--fail %v: want a fraction in [0, 1)", cfg.Fail)
	}
	if !*quiet {
		cfg.Log = stderr
	}
	res, err := exp.RunRing(cfg)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	row := func(k string, v any) { fmt.Fprintf(tw, "%s\t%v\n", k, v) }
	row("nodes (hosts x vnodes)", fmt.Sprintf("%d x %d", res.Nodes, res.Vnodes))
	row("seed", res.Seed)
	if res.Fail > 0 {
		row("crashed at once", fmt.Sprintf("%.0f%%, ring healed in %.0fs", 100*res.Fail, res.RestabilizeSecs))
	}
	if res.Churn {
		row("churn", fmt.Sprintf("%d joins, %d deaths", res.ChurnJoins, res.ChurnDeaths))
	}
	row("initial stabilization", fmt.Sprintf("%.0fs", res.StabilizeSecs))
	row("lookups", res.Lookups)
	row("correct", fmt.Sprintf("%d (%.4f%%), %d failed", res.Correct, 100*res.CorrectFraction, res.Failed))
	row("mean hops", fmt.Sprintf("%.2f (%.2f x log2 N)", res.MeanHops, res.HopsPerLog2N))
	row("lookup latency p50 / p99", fmt.Sprintf("%.0f ms / %.0f ms (median RTT %.0f ms)", res.LatencyP50Ms, res.LatencyP99Ms, res.RTTMedianMs))
	row("iterative fallbacks", res.Fallbacks)
	row("events", fmt.Sprintf("%d (%.0f/s)", res.Events, res.EventsPerSec))
	row("virtual / wall time", fmt.Sprintf("%.0fs / %.1fs", res.VirtualSeconds, res.WallSeconds))
	row("trace hash", res.TraceHash)
	tw.Flush()
	if *asJSON {
		b, err := json.Marshal(res)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, string(b))
	}
	return nil
}
