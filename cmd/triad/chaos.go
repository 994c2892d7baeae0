package main

import (
	"flag"
	"io"
	"slices"
	"strings"

	"triad/internal/bench"
)

// chaosCommands are `triad chaos`'s loops: the ring's, and those --d2 and
// --tapestry pick, each with flags and defaults of its own.
func chaosCommands() (ring, d2, tapestry benchCommand) {
	ring = benchCommand{"chaos", "chaos [--nodes 6] [--duration 1h] [--seed S] [--ack-and-drop N] [--json]\n       triad chaos --d2 [--nodes 8] [--duration 10m] [--wipe-every 4] [--cold-restarts 2] [--ack-and-drop N] [--seed S] [--json]\n       triad chaos --tapestry [--nodes 16] [--servers 4] [--objects 200] [--duration 2m] [--rate 20] [--seed S] [--json]",
		bench.ChaosHelp, "", "", false, func(fs *flag.FlagSet) bench.Command {
			fs.Bool("tapestry", false, "churn Tapestry nodes under locates instead (Fig. 23; see below)")
			fs.Bool("d2", false, "kill D2 nodes under a D2-FS writer instead (see 'triad chaos --d2 --help')")
			return new(bench.DefaultChaosConfig())
		}}
	d2 = benchCommand{"chaos", "chaos --d2 [--nodes 8] [--duration 10m] [--wipe-every 4] [--cold-restarts 2] [--ack-and-drop N] [--seed S] [--json]", bench.ChaosD2Help, "", "", false, func(fs *flag.FlagSet) bench.Command {
		fs.Bool("d2", true, "kill D2 nodes under a D2-FS writer (this loop)")
		return new(bench.DefaultChaosD2Config())
	}}
	tapestry = benchCommand{"chaos", "chaos --tapestry [--nodes 16] [--servers 4] [--objects 200] [--duration 2m] [--rate 20] [--seed S] [--json]", bench.ChaosTapestryHelp, "", "", false, func(fs *flag.FlagSet) bench.Command {
		fs.Bool("tapestry", true, "churn Tapestry nodes under locates (this loop)")
		return new(bench.DefaultChaosTapestryConfig())
	}}
	return ring, d2, tapestry
}

func runChaos(args []string, stdout, stderr io.Writer) error {
	ring, d2, tapestry := chaosCommands()
	switch {
	case slices.ContainsFunc(args, turnsOn("tapestry")):
		return tapestry.run(args, stdout, stderr)
	case slices.ContainsFunc(args, turnsOn("d2")):
		return d2.run(args, stdout, stderr)
	}
	return ring.run(args, stdout, stderr)
}

// turnsOn returns whether an argument turns the boolean flag name on
// (--name, -name, --name=true, --name=1), before the flags are parsed.
func turnsOn(name string) func(arg string) bool {
	return func(arg string) bool {
		arg, ok := strings.CutPrefix(arg, "-")
		arg = strings.TrimPrefix(arg, "-")
		return ok && (arg == name || arg == name+"=true" || arg == name+"=1")
	}
}
