package main

import (
	"flag"
	"io"
	"os"
	"slices"

	"triad/internal/bench"
)

func runChaos(args []string, stdout, stderr io.Writer) error {
	if slices.ContainsFunc(args, isTapestryFlag) {
		return runChaosTapestry(args, stdout, stderr)
	}
	if slices.ContainsFunc(args, isD2Flag) {
		return runChaosD2(args, stdout, stderr)
	}
	fs := newFlags("chaos", "chaos [--nodes 6] [--duration 1h] [--seed S] [--ack-and-drop N] [--json]\n       triad chaos --d2 [--nodes 8] [--duration 10m] [--wipe-every 4] [--cold-restarts 2] [--ack-and-drop N] [--seed S] [--json]\n       triad chaos --tapestry [--nodes 16] [--servers 4] [--objects 200] [--duration 2m] [--rate 20] [--seed S] [--json]",
		bench.ChaosHelp, stderr)
	cfg := bench.DefaultChaosConfig()
	cfg.RegisterFlags(fs)
	fs.Bool("tapestry", false, "churn Tapestry nodes under locates instead (Fig. 23; see below)")
	fs.Bool("d2", false, "kill D2 nodes under a D2-FS writer instead (see 'triad chaos --d2 --help')")
	return runLoop(fs, args, &cfg, &cfg.Binary, &cfg.Log, stdout, stderr, func() (outcome, error) { return bench.Chaos(cfg) })
}

// isTapestryFlag reports whether arg turns --tapestry on, which selects
// another loop with flags and defaults of its own.
func isTapestryFlag(arg string) bool {
	switch arg {
	case "--tapestry", "-tapestry", "--tapestry=true", "-tapestry=true", "--tapestry=1", "-tapestry=1":
		return true
	}
	return false
}

// isD2Flag reports whether arg turns --d2 on.
func isD2Flag(arg string) bool {
	switch arg {
	case "--d2", "-d2", "--d2=true", "-d2=true", "--d2=1", "-d2=1":
		return true
	}
	return false
}

func runChaosD2(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("chaos", "chaos --d2 [--nodes 8] [--duration 10m] [--wipe-every 4] [--cold-restarts 2] [--ack-and-drop N] [--seed S] [--json]", bench.ChaosD2Help, stderr)
	cfg := bench.DefaultChaosD2Config()
	cfg.RegisterFlags(fs)
	fs.Bool("d2", true, "kill D2 nodes under a D2-FS writer (this loop)")
	return runLoop(fs, args, &cfg, &cfg.Binary, &cfg.Log, stdout, stderr, func() (outcome, error) { return bench.ChaosD2(cfg) })
}

func runChaosTapestry(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("chaos", "chaos --tapestry [--nodes 16] [--servers 4] [--objects 200] [--duration 2m] [--rate 20] [--seed S] [--json]", bench.ChaosTapestryHelp, stderr)
	cfg := bench.DefaultChaosTapestryConfig()
	cfg.RegisterFlags(fs)
	fs.Bool("tapestry", true, "churn Tapestry nodes under locates (this loop)")
	return runLoop(fs, args, &cfg, &cfg.Binary, &cfg.Log, stdout, stderr, func() (outcome, error) { return bench.ChaosTapestry(cfg) })
}

// runLoop is the rest of a real-process loop's command once its flags
// are on fs: --json, the flags parsed into cfg and checked, this binary
// as the one the loop starts (bin) and stderr as its log, then the run
// and its report.
func runLoop(fs *flag.FlagSet, args []string, cfg validator, bin *string, log *func(string, ...any), stdout, stderr io.Writer, run func() (outcome, error)) error {
	asJSON := fs.Bool("json", false, "end with one JSON line of results")
	if err := parseConfig(fs, args, cfg); err != nil {
		return err
	}
	var err error
	if *bin, err = os.Executable(); err != nil {
		return err
	}
	*log = logTo(stderr)
	res, err := run()
	if err != nil {
		return err
	}
	return report(stdout, *asJSON, res)
}

// outcome is a run that prints itself and has a verdict.
type outcome interface {
	WriteText(io.Writer)
	Err() error
}

// report writes a run's text, and its JSON line if asked, and returns its
// verdict.
func report(stdout io.Writer, asJSON bool, res outcome) error {
	res.WriteText(stdout)
	if err := maybeJSON(stdout, asJSON, res); err != nil {
		return err
	}
	return res.Err()
}
