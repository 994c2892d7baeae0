package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"golang.org/x/term"

	"triad/internal/cc"
	"triad/internal/exp"
	"triad/internal/figure"
)

const simAbout = `
Runs a simulation experiment: many instances of the real node code under
virtual time on a synthetic wide-area topology, reproducible from --seed.

Experiments:
  ring   Chord: join N nodes, stabilize, measure 10,000 random lookups against
         the true ring; optionally after a mass failure (--fail) or during
         churn (--churn).
  dhash  DHash++: recursive vs iterative lookups, proximity neighbour
         selection with 1/4/16/64 samples, replicas vs 7-of-14 fragments,
         with and without integration, on 2,048 nodes.
  passingtone
         Passing Tone (UsenetDHT): a year of PlanetLab-like failures on 632
         hosts with the real maintenance code (objects lost, the CDF of
         durable copies), or --scenario transient|addition|wipe|partition
         on a small ring (bytes moved against bytes needed).
  congestion
         Congestion control for routed requests on 128 peers: collapse without
         control and the loss, back-pressure and marking schemes against
         offered load (Figure 4), cross-load (Figure 5) and fairness.

Run 'triad sim <name> --help' for an experiment's flags.`

func runSim(args []string, stdout, stderr io.Writer) error {
	// A simulation's live heap is small next to what it allocates per
	// event; collecting less often leaves both cores to the hosts.
	relaxGC()
	return runGroup("sim", simAbout, map[string]func([]string, io.Writer, io.Writer) error{"ring": runSimRing, "dhash": runSimDHash, "passingtone": runSimPassingTone, "congestion": runSimCongestion}, args, stdout, stderr)
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
	fs := newFlags("sim ring", "sim ring --nodes N --seed S [--fail FRACTION] [--churn] [--check] [--json]", simRingAbout, stderr)
	fs.IntVar(&cfg.Nodes, "nodes", cfg.Nodes, "hosts in the ring")
	fs.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "random seed; fixes the whole run")
	fs.IntVar(&cfg.Vnodes, "vnodes", cfg.Vnodes, "virtual servers per host")
	fs.Float64Var(&cfg.Fail, "fail", 0, "fraction of hosts to crash at once, in [0, 1)")
	fs.BoolVar(&cfg.Churn, "churn", false, "measure lookups during churn")
	fs.IntVar(&cfg.Lookups, "lookups", cfg.Lookups, "random lookups to measure")
	fs.DurationVar(&cfg.ChurnDuration, "churn-duration", cfg.ChurnDuration, "how long churn runs")
	fs.BoolVar(&cfg.Check, "check", false, "run the invariant checker where the ring is claimed stable; exit non-zero on a violation")
	asJSON := fs.Bool("json", false, "end with one JSON line of results")
	quiet := fs.Bool("q", false, "no progress on stderr (there is none when stderr is not a terminal)")
	plotTo := fs.String("plot", "", "draw the lookups' path lengths (the paper's figure) to this `file` (.png, .svg or .pdf)")
	profile := addProfileFlag(fs, "the simulation")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := checkPlot(fs, *plotTo); err != nil {
		return err
	}
	stopProfile, err := profile.start()
	if err != nil {
		return err
	}
	defer stopProfile()
	if fs.NArg() > 0 {
		return usageErr(fs, "unexpected argument %q", fs.Arg(0))
	}
	if cfg.Nodes < 1 || cfg.Vnodes < 1 || cfg.Lookups < 1 {
		return usageErr(fs, "--nodes, --vnodes and --lookups must be positive")
	}
	if cfg.Fail < 0 || cfg.Fail >= 1 {
		return usageErr(fs, "--fail %v: want a fraction in [0, 1)", cfg.Fail)
	}
	if showProgress(stderr, *quiet) {
		cfg.Log = stderr
	}
	res, err := exp.RunRing(cfg)
	if err != nil {
		return err
	}
	if *plotTo != "" {
		if err := figure.RingHops(res, *plotTo); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "figure written to %s\n", *plotTo)
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
	if res.Violations != nil {
		printViolations(stdout, res.Checks, res.Violated)
	}
	if *asJSON {
		if err := printJSON(stdout, res); err != nil {
			return err
		}
	}
	if res.Violations != nil && *res.Violations > 0 {
		return fmt.Errorf("the invariant checker found %d violations", *res.Violations)
	}
	return nil
}

// printViolations prints the invariant checker's verdict: the line
// "violations: N" and each violation found.
func printViolations(w io.Writer, checks int, violated []string) {
	fmt.Fprintf(w, "invariant checks: %d\nviolations: %d\n", checks, len(violated))
	for _, v := range violated {
		fmt.Fprintf(w, "  %s\n", v)
	}
}

const simDHashAbout = `
Reproduces the DHash++ latency comparisons ("Designing a DHT for low latency and
high throughput", NSDI 2004) on the synthetic wide-area topology. For each PNS
setting (--pns, default 1,4,16,64) it builds a ring of --nodes block-store
hosts, lets it stabilize and its fingers and Vivaldi coordinates settle, and
measures --lookups random recursive lookups. On the PNS 16 ring it also
measures iterative lookups, lookups with integration (stopping at a node that
knows 2 successors of the key), and gets of 8 KiB blocks stored as 2 replicas
and as 7-of-14 fragments, against the direct RTT from the client to the key's
first holder.

Then comes a crash phase on that ring: every holder of some keys crashes at
once and restarts a minute later (a transient failure: disks kept), and every
holder of a few other keys loses its disk. Every crashed key must read back
("lost: 0"); the wiped ones are gone, as this experiment runs without
maintenance (sim passingtone runs it).

It checks the issue's claims: recursive <= 0.7 x iterative; PNS 16 cuts the
median by >= 30% (when --pns includes 1); PNS + integration <= 1.5 x the
direct RTT; nothing lost in the crash phase. --check also runs the invariant
checker and prints "violations: N". The table goes to stdout; --json adds one
JSON line; --plot writes an SVG bar chart. It exits non-zero when a check
fails.`

func runSimDHash(args []string, stdout, stderr io.Writer) error {
	cfg := exp.DefaultDHashConfig()
	fs := newFlags("sim dhash", "sim dhash --nodes N --seed S [--check] [--json] [--plot FILE]", simDHashAbout, stderr)
	fs.IntVar(&cfg.Nodes, "nodes", cfg.Nodes, "hosts in each ring")
	fs.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "random seed; fixes the whole run")
	fs.IntVar(&cfg.Lookups, "lookups", cfg.Lookups, "lookups per measured mode")
	fs.IntVar(&cfg.Blocks, "blocks", cfg.Blocks, "blocks put and fetched per redundancy mode")
	fs.BoolVar(&cfg.Check, "check", false, "run the invariant checker (ring pointers once stable, copies of every acknowledged put); exit non-zero on a violation")
	pns := fs.String("pns", "1,4,16,64", "comma-separated PNS sample counts, one ring each")
	asJSON := fs.Bool("json", false, "end with one JSON line of results")
	plot := fs.String("plot", "", "draw the latency comparisons (median and 90th percentile of each) to this `file` (.png, .svg or .pdf)")
	quiet := fs.Bool("q", false, "no progress on stderr (there is none when stderr is not a terminal)")
	profile := addProfileFlag(fs, "the simulation")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := checkPlot(fs, *plot); err != nil {
		return err
	}
	stopProfile, err := profile.start()
	if err != nil {
		return err
	}
	defer stopProfile()
	if fs.NArg() > 0 {
		return usageErr(fs, "unexpected argument %q", fs.Arg(0))
	}
	cfg.Samples = nil
	for _, f := range strings.Split(*pns, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 1024 {
			return usageErr(fs, "--pns %q: want sample counts from 1 to 1024", *pns)
		}
		cfg.Samples = append(cfg.Samples, n)
	}
	if cfg.Nodes < 16 || cfg.Lookups < 1 || cfg.Blocks < 1 {
		return usageErr(fs, "want --nodes >= 16 and positive --lookups and --blocks")
	}
	if showProgress(stderr, *quiet) {
		cfg.Log = stderr
	}
	res, err := exp.RunDHash(cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%d nodes, seed %d, median RTT between nodes %.0f ms\n\n", res.Nodes, res.Seed, res.RTTMedianMs)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "mode\tmedian ms\tp90 ms\thops\tcount\tfailed\t")
	for _, r := range res.Rows {
		hops := ""
		if r.MeanHops > 0 {
			hops = fmt.Sprintf("%.2f", r.MeanHops)
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%s\t%d\t%d\t\n", r.Name, r.MedianMs, r.P90Ms, hops, r.Count, r.Failed)
	}
	tw.Flush()
	verdict := func(ok bool) string {
		if ok {
			return "ok"
		}
		return "FAIL"
	}
	fmt.Fprintf(stdout, "\nrecursive / iterative       %.2f  (want <= 0.70)  %s\n", res.RecursiveOverIter, verdict(res.RecursiveOverIter > 0 && res.RecursiveOverIter <= 0.7))
	if _, ok := res.Row("recursive, no PNS"); ok {
		fmt.Fprintf(stdout, "PNS 16 cut vs no PNS        %.0f%%   (want >= 30%%)   %s\n", 100*res.PNS16Cut, verdict(res.PNS16Cut >= 0.3))
	} else {
		fmt.Fprintln(stdout, "PNS 16 cut vs no PNS        not measured (--pns has no 1)")
	}
	fmt.Fprintf(stdout, "PNS+integration / direct    %.2f  (want <= 1.50)  %s\n", res.IntegratedOverDirect, verdict(res.IntegratedOverDirect > 0 && res.IntegratedOverDirect <= 1.5))
	d := res.Durability
	fmt.Fprintf(stdout, "crash/restart of every holder of %d keys (%d hosts): lost: %d  (want 0)  %s\n", d.CrashKeys, d.CrashedHosts, d.Lost, verdict(d.Lost == 0))
	fmt.Fprintf(stdout, "disk failure of every holder of %d keys (%d hosts): %d gone  (no maintenance here: want them gone)  %s\n", d.WipedKeys, d.WipedHosts, d.WipedLost, verdict(d.WipedLost > 0))
	fmt.Fprintf(stdout, "wall time %.0fs, %d events\n", res.WallSeconds, res.Events)
	if res.Violations != nil {
		printViolations(stdout, res.Checks, res.Violated)
	}
	if *plot != "" {
		if err := figure.DHashLatency(res, *plot); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "figure written to %s\n", *plot)
	}
	if *asJSON {
		if err := printJSON(stdout, res); err != nil {
			return err
		}
	}
	if res.Violations != nil && *res.Violations > 0 {
		return fmt.Errorf("the invariant checker found %d violations", *res.Violations)
	}
	if !res.Pass {
		return fmt.Errorf("the DHash++ claims do not hold on this run (see the table)")
	}
	return nil
}

const simPassingToneAbout = `
Passing Tone's maintenance (internal/maint, the real code) in the simulator.

Without --scenario it runs the paper's durability experiment (UsenetDHT
§6.2): a failure trace (by default a synthetic year with the statistics of
the paper's PlanetLab trace: 632 hosts, 21,255 transient and 219 disk
failures, 466 hosts that never lose a disk, 56 that never fail, about 490
online, up to 9 disk failures within 8 hours; or --trace FILE, format in
docs/maint.md), 50,000 objects of 20 MiB inserted at the start on their
first 2 successors (every fifth expires during the run, at a random time,
to check that no expired object is repaired), and 150 KiB/s of repair
bandwidth per host. Objects are
64-byte stand-ins whose every byte maintenance counts as 20 MiB/64 against
the budget and in the bytes it reports. The ring's membership is
idealized (lists and lookups come from the true set of hosts up); the
maintenance, its messages and the stores are the real code. It prints
objects lost, the CDF of durable copies per object at the end (the paper's
Figure 5), bytes repaired and repairs per disk failure, and exits non-zero
if an object was lost or an expired one repaired.

With --scenario, a ring of --hosts hosts: --objects objects of --size bytes
as 2 replicas, maintenance every --interval, then one event:

  restart    a host restarts within a second with its disk: nothing may move
  transient  a host fails for 15 minutes while writes go on, then returns
             with its disk: the bytes it receives back must be at most 1.2x
             the bytes written to its range while it was down
  addition   a host joins: it must pull exactly its range's bytes
  wipe       a host's disk fails and it returns empty at new positions: the
             copies lost and its new range are made again (at most 1.2x),
             with a repair budget of 16 KiB/s per host unless
             --repair-budget is given, within the time that budget allows
             (the most one host had to fetch, over the budget) plus 15 s
  partition  the hosts split in two for 3 maintenance periods while writes go
             on, then heal
  liars      two hosts spaced around the ring turn Byzantine (one
             acknowledges stores but keeps only the keys its Merkle tree
             lists, one returns forged bytes); the first forges Leaves in
             an honest host's name, which must be refused; half as many
             objects again are put, then the disk of the first liar's
             honest successor fails: audits must find the liars out, with
             no acknowledged object lost ("lost: 0"), every object at 2
             honest copies within 3 periods, and the invariant checker
             (copies, reads through honest hosts, placement) silent
  all        each in turn

Each prints bytes moved against bytes needed, how long until every object
was back at 2 copies on its replica set, and whether it passed; it exits
non-zero when one failed. Scenarios other than wipe run with no repair
budget (a LAN's default) unless --repair-budget is given.`

func runSimPassingTone(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("sim passingtone", "sim passingtone [--trace FILE] [--seed S] [--json]  |  sim passingtone --scenario restart|transient|addition|wipe|partition|liars|all", simPassingToneAbout, stderr)
	scenario := fs.String("scenario", "", "run one scenario on a small ring instead of the trace: restart, transient, addition, wipe, partition, liars or all")
	seed := fs.Uint64("seed", 1, "random seed; fixes the whole run (and the synthetic trace)")
	traceFile := fs.String("trace", "", "trace: read this failure trace instead of making a synthetic one")
	writeTrace := fs.String("write-trace", "", "trace: write the trace it runs to this file")
	days := fs.Float64("days", 0, "trace: stop after this many days (0: the whole trace)")
	sweep := fs.Duration("sweep-interval", time.Hour, "trace: global maintenance period")
	budget := fs.Int("repair-budget", 150, "repair bandwidth per host, KiB/s (scenarios: only where given, and 16 for wipe)")
	hosts := fs.Int("hosts", 25, "scenario: hosts in the ring (25: each holds about 8% of the copies)")
	objects := fs.Int("objects", 0, "objects (trace: 50,000 inserted at the start; scenario: 1,000 put before the event)")
	size := fs.Int("size", 8<<10, "scenario: bytes per object")
	interval := fs.Duration("interval", 0, "local maintenance period (trace: 10m; scenario: 2m)")
	asJSON := fs.Bool("json", false, "one JSON line per run")
	quiet := fs.Bool("q", false, "no progress on stderr (there is none when stderr is not a terminal)")
	plotTo := fs.String("plot", "", "draw the figure to this `file` (.png, .svg or .pdf): the trace's copies per object at the end (Figure 5), or the scenarios' bytes moved and needed")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := checkPlot(fs, *plotTo); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErr(fs, "unexpected argument %q", fs.Arg(0))
	}
	if *scenario == "" {
		return runTrace(fs, stdout, stderr, traceRun{seed: *seed, file: *traceFile, write: *writeTrace, days: *days, sweep: *sweep,
			budget: *budget, objects: *objects, interval: *interval, json: *asJSON, quiet: !showProgress(stderr, *quiet), plot: *plotTo})
	}
	if *interval == 0 {
		*interval = 2 * time.Minute
	}
	scenarioBudget := 0 // each scenario's own default
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "repair-budget" {
			scenarioBudget = *budget << 10
		}
	})
	if scenarioBudget < 0 {
		return usageErr(fs, "--repair-budget must not be negative")
	}
	if *objects == 0 {
		*objects = 1000
	}
	list := []string{*scenario}
	if *scenario == "all" {
		list = exp.Scenarios
	}
	failed := 0
	var results []exp.ScenarioResult
	for _, sc := range list {
		cfg := exp.PassingToneConfig{Scenario: sc, Seed: *seed, Hosts: *hosts, Objects: *objects, Size: *size, Interval: *interval, Budget: scenarioBudget}
		if showProgress(stderr, *quiet) {
			cfg.Log = stderr
		}
		res, err := exp.RunPassingTone(cfg)
		if err != nil {
			return usageErr(fs, "%v", err)
		}
		results = append(results, res)
		verdict := "ok"
		if !res.Pass {
			verdict = "FAIL"
			failed++
		}
		allows := ""
		if res.BudgetSecs > 0 {
			allows = fmt.Sprintf(" (the budget allows %.0fs, +%.0fs slack)", res.BudgetSecs, res.SlackSecs)
		}
		fmt.Fprintf(stdout, "%-9s moved %d bytes, needed %d (%.2fx): %s; every object at 2 copies %.0fs after%s; %d under at the end  %s\n",
			sc, res.BytesMoved, res.BytesNeeded, res.MovedRatio, res.Note, res.WholeAfterSecs, allows, res.UnderReplicated, verdict)
		if len(res.Violated) > 0 {
			printViolations(stdout, res.Checks, res.Violated)
		}
		if *asJSON {
			if err := printJSON(stdout, res); err != nil {
				return err
			}
		}
	}
	if *plotTo != "" {
		if err := figure.Scenarios(results, *plotTo); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "figure written to %s\n", *plotTo)
	}
	if failed > 0 {
		return fmt.Errorf("sim passingtone: %d of %d scenarios failed", failed, len(list))
	}
	return nil
}

type traceRun struct {
	seed            uint64
	file, write     string
	days            float64
	sweep, interval time.Duration
	budget, objects int
	json, quiet     bool
	plot            string
}

// runTrace is `triad sim passingtone` without a scenario: the durability
// experiment over a failure trace.
func runTrace(fs *flag.FlagSet, stdout, stderr io.Writer, o traceRun) error {
	if o.days < 0 || o.budget < 1 || o.objects < 0 || o.interval < 0 || o.sweep <= 0 {
		return usageErr(fs, "--days, --objects and --interval must not be negative, --repair-budget and --sweep-interval must be positive")
	}
	cfg := exp.TraceConfig{Seed: o.seed, Objects: o.objects, Budget: o.budget << 10, Interval: o.interval, SweepInterval: o.sweep,
		Until: time.Duration(o.days * 24 * float64(time.Hour))}
	source := fmt.Sprintf("synthetic, with the statistics of PlanetLab's 2005-2006 trace, seed %d", o.seed)
	if o.file != "" {
		f, err := os.Open(o.file)
		if err != nil {
			return err
		}
		cfg.Trace, err = exp.ParseFailureTrace(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("sim passingtone: %s: %w", o.file, err)
		}
		source = o.file
	} else {
		t, err := exp.SyntheticTrace(exp.PlanetLabShape(), o.seed)
		if err != nil {
			return err
		}
		cfg.Trace = t
	}
	if o.write != "" {
		f, err := os.Create(o.write)
		if err != nil {
			return err
		}
		_, err = cfg.Trace.WriteTo(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	st := cfg.Trace.Stats()
	fmt.Fprintf(stdout, "trace (%s): %d hosts over %.0f days, %d transient failures, %d disk failures, %d hosts never lose a disk, %d never fail, %.1f online on average, at most %d disk failures within 8 hours\n",
		source, st.Hosts, st.Days, st.TransientFailures, st.DiskFailures, st.HostsNoDisk, st.HostsNoFailure, st.AvgOnline, st.MaxDiskIn8h)
	if !o.quiet {
		cfg.Progress = func(p exp.TraceProgress) {
			fmt.Fprintf(stderr, "sim passingtone: day %.0f of %.0f, %s wall, %d objects repaired so far, %d lost\n",
				p.Virtual.Hours()/24, p.Total.Hours()/24, p.Wall.Round(time.Second), p.Repaired, p.Lost)
		}
	}
	res, err := exp.RunTrace(cfg)
	if err != nil {
		return err
	}
	if o.plot != "" {
		if err := figure.ReplicaCDF(res, o.plot); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "figure written to %s\n", o.plot)
	}
	fmt.Fprintf(stdout, "run: %d objects of %d MiB (64-byte stand-ins), k = %d, repair budget %d KiB/s per host, local maintenance every %v, global every %v, %.0f days simulated\n",
		res.Objects, res.ObjectBytes>>20, res.Replicas, res.Budget>>10, time.Duration(res.IntervalSec)*time.Second, o.sweep, res.SimDays)
	fmt.Fprintf(stdout, "membership: %s\n", res.Membership)
	fmt.Fprintf(stdout, "objects lost: %d\n", res.ObjectsLost)
	fmt.Fprintf(stdout, "expired repairs: %d (copies of the %d objects that expired during the run found on a disk that did not hold them at their expiry); %d expired before their repair's turn and were not fetched\n",
		res.ExpiredRepairs, res.ObjectsExpired, res.ExpiredNotRepaired)
	fmt.Fprintf(stdout, "durable copies per live object at the end (fraction with at most n):")
	for n, f := range res.ReplicaCDF {
		fmt.Fprintf(stdout, " %d:%.3f", n, f)
	}
	fmt.Fprintf(stdout, "\nrepaired: %d objects, %.1f GiB (%d handed over by global maintenance); %.1f repairs per disk failure; %d rounds, %d synchronizations\n",
		res.ObjectsRepaired, float64(res.BytesRepaired)/(1<<30), res.HandedOver, res.RepairsPerDisk, res.Rounds, res.Syncs)
	fmt.Fprintf(stdout, "wall time: %.0f s\n", res.WallSeconds)
	if o.json {
		if err := printJSON(stdout, res); err != nil {
			return err
		}
	}
	if res.ObjectsLost > 0 || res.ExpiredRepairs > 0 {
		return fmt.Errorf("sim passingtone: %d objects lost, %d expired objects repaired", res.ObjectsLost, res.ExpiredRepairs)
	}
	return nil
}

// showProgress reports whether a simulation shows progress on stderr: on a
// terminal, unless -q.
func showProgress(stderr io.Writer, quiet bool) bool {
	f, ok := stderr.(*os.File)
	return !quiet && ok && term.IsTerminal(int(f.Fd()))
}

const simCongestionAbout = `
Reproduces "Handling Very Large Numbers Of Messages In DHTs" (congestion
paper, §V) with the real cc protocol: 128 peers route requests for random
keys recursively on a Chord ring (evenly spaced IDs), each request
acknowledged end to end; each peer forwards through one queue of 200
served at its uplink. Without --scheme it runs everything:

  Figure 4   600 kbit/s peers 20 ms apart; each peer offers 5 to 80
             requests/s; throughput of each scheme (none, loss,
             backpressure, marking) against the offered load.
  Figure 5   links of 600-1000 kbit/s and 5-15 ms; peers pause forwarding
             for exponential intervals (mean 500 ms) 0-20% of the time;
             the application offers more than the ring carries; throughput,
             retransmissions, delay and requests in flight per scheme.
  Fairness   marking on the mixed links (no cross-load) with gamma 0 and 16:
             the mean deviation of the sources' rates.

--scheme runs one scheme's Figure 4 curve, or with --crossload P one point of
Figure 5. Each point simulates --warmup then measures for --measure. The
last --json line of a full run is the summary: collapse_ratio,
marking_min_over_peak, marking_retransmit_fraction, fairness_cut and the
cross-load comparisons, and wall_seconds. The same --seed gives the same
figures.`

func runSimCongestion(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("sim congestion", "sim congestion [--seed S] [--scheme none|loss|backpressure|marking] [--crossload P] [--gamma G] [--threshold T] [--min-rto D] [--json] [--plot FILE]", simCongestionAbout, stderr)
	seed := fs.Uint64("seed", 1, "random seed; fixes the whole run")
	scheme := fs.String("scheme", "", "run only this scheme: none, loss, backpressure or marking")
	crossload := fs.Float64("crossload", -1, "with --scheme: one point of Figure 5 at this cross-load (0 to 0.9), instead of Figure 4")
	gamma := fs.Float64("gamma", 0, "fairness parameter of marking (the full run also compares 0 with 16)")
	def := cc.DefaultConfig()
	threshold := fs.Float64("threshold", def.Threshold, fmt.Sprintf("marking's feedback threshold t: the average queue length at which every request is marked (under the queue's %d)", def.QueueCap))
	minRTO := fs.Duration("min-rto", def.MinRTO, fmt.Sprintf("the sources' floor on their retransmission timeout (at most the largest timeout, %v)", def.MaxRTO))
	peers := fs.Int("peers", exp.CongestionPeers, "peers in the ring")
	warmup := fs.Duration("warmup", 5*time.Second, "simulated time before measuring, per point")
	measure := fs.Duration("measure", 15*time.Second, "simulated time measured, per point")
	asJSON := fs.Bool("json", false, "end with one JSON line: the summary, and the points")
	quiet := fs.Bool("q", false, "no progress on stderr (there is none when stderr is not a terminal)")
	plotTo := fs.String("plot", "", "draw Figures 4 and 5 to this `file` (.png, .svg or .pdf)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := checkPlot(fs, *plotTo); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErr(fs, "unexpected argument %q", fs.Arg(0))
	}
	if *peers < 2 || *peers > 4096 || *warmup < 0 || *measure < time.Second || *gamma < 0 || *crossload >= 0.9 {
		return usageErr(fs, "want 2 to 4,096 peers, a measurement of at least 1s, gamma >= 0 and a cross-load under 0.9")
	}
	if !(*threshold > 0 && *threshold < float64(def.QueueCap)) || *minRTO <= 0 || *minRTO > def.MaxRTO {
		return usageErr(fs, "want 0 < --threshold < %d (the queue's capacity) and 0 < --min-rto <= %v (the largest timeout)", def.QueueCap, def.MaxRTO)
	}
	var log io.Writer
	if showProgress(stderr, *quiet) {
		log = stderr
	}
	if *scheme != "" {
		s, err := cc.ParseScheme(*scheme)
		if err != nil {
			return usageErr(fs, "%v", err)
		}
		var res exp.Congestion
		runs := []exp.CongestionRun{}
		if *crossload >= 0 {
			runs = append(runs, exp.CongestionRun{Setup: exp.Mixed, Scheme: s, Offered: exp.ElasticLoad, CrossLoad: *crossload, Gamma: *gamma})
		} else {
			for _, x := range exp.DefaultLoads {
				runs = append(runs, exp.CongestionRun{Setup: exp.Uniform, Scheme: s, Offered: x, Gamma: *gamma})
			}
		}
		for _, r := range runs {
			r.Seed, r.Peers, r.Warmup, r.Measure = *seed, *peers, *warmup, *measure
			r.Threshold, r.MinRTO = *threshold, *minRTO
			p, err := exp.RunCongestion(r)
			if err != nil {
				return err
			}
			if *crossload >= 0 {
				res.Figure5 = append(res.Figure5, p)
			} else {
				res.Figure4 = append(res.Figure4, p)
			}
			if log != nil {
				fmt.Fprintf(log, "congestion: %s offered %.0f: %.1f req/s per peer\n", p.Scheme, p.Offered, p.Throughput)
			}
		}
		printCongestion(stdout, res)
		if err := plotCongestion(stdout, res, *plotTo); err != nil {
			return err
		}
		if *asJSON {
			return printJSON(stdout, res)
		}
		return nil
	}
	res, err := exp.RunCongestionExperiment(exp.CongestionConfig{Seed: *seed, Peers: *peers, Warmup: *warmup, Measure: *measure,
		Threshold: *threshold, MinRTO: *minRTO, Log: log})
	if err != nil {
		return err
	}
	printCongestion(stdout, res)
	sum := res.Summary
	fmt.Fprintf(stdout, "\nsummary: without control, throughput at %.0f req/s per peer is %.2f of the peak (collapse_ratio)\n", exp.DefaultLoads[len(exp.DefaultLoads)-1], sum.CollapseRatio)
	fmt.Fprintf(stdout, "         marking past the peak keeps %.2f of it, with %.3f%% retransmitted\n", sum.MarkingMinOverPeak, 100*sum.MarkingRetransmitFraction)
	fmt.Fprintf(stdout, "         at 10%% cross-load: marking carries %.2fx what loss does; back-pressure's delay is %.2fx marking's\n", sum.MarkingOverLossThroughput, sum.BackpressureOverMarkingDelay)
	fmt.Fprintf(stdout, "         gamma 16 cuts the mean deviation of the sources' rates by %.0f%% against gamma 0 (fairness_cut)\n", 100*sum.FairnessCut)
	fmt.Fprintf(stdout, "         %.0f s of wall time\n", sum.WallSeconds)
	if err := plotCongestion(stdout, res, *plotTo); err != nil {
		return err
	}
	if *asJSON {
		out := struct {
			exp.CongestionSummary
			Figure4  []exp.CongestionPoint `json:"figure4"`
			Figure5  []exp.CongestionPoint `json:"figure5"`
			Fairness []exp.CongestionPoint `json:"fairness"`
		}{sum, res.Figure4, res.Figure5, res.Fairness}
		return printJSON(stdout, out)
	}
	return nil
}

func plotCongestion(stdout io.Writer, res exp.Congestion, path string) error {
	if path == "" {
		return nil
	}
	if err := figure.Congestion(res, path); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "figure written to %s\n", path)
	return nil
}

// printCongestion prints the points of a congestion run as tables.
func printCongestion(stdout io.Writer, res exp.Congestion) {
	for _, t := range []struct {
		title string
		pts   []exp.CongestionPoint
	}{{"Figure 4: 600 kbit/s peers, 20 ms apart", res.Figure4}, {"Figure 5: 600-1000 kbit/s, 5-15 ms, cross-load", res.Figure5}, {"Fairness: marking, 600-1000 kbit/s, 5-15 ms", res.Fairness}} {
		if len(t.pts) == 0 {
			continue
		}
		fmt.Fprintf(stdout, "%s\n", t.title)
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "scheme\toffered/s\tcross-load\tgamma\treq/s per peer\tretransmitted\tdelay ms\tin flight\trate deviation\tdropped\t")
		for _, p := range t.pts {
			fmt.Fprintf(tw, "%s\t%.0f\t%.0f%%\t%.0f\t%.1f\t%.3f%%\t%.0f\t%.1f\t%.3f\t%d\t\n", p.Scheme, p.Offered, 100*p.CrossLoad, p.Gamma, p.Throughput,
				100*p.RetransmitFraction, p.DelayMs, p.Outstanding, p.RateDeviation, p.Dropped)
		}
		tw.Flush()
	}
}

// checkPlot refuses, before a run starts, a --plot path the figure could
// not be written to, so that a long run is not thrown away at its end.
func checkPlot(fs *flag.FlagSet, path string) error {
	if path == "" {
		return nil
	}
	if err := figure.CheckFormat(path); err != nil {
		return usageErr(fs, "--plot: %v", err)
	}
	if err := checkOutputPath(path); err != nil {
		return usageErr(fs, "--plot: %v", err)
	}
	return nil
}
