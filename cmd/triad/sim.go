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
