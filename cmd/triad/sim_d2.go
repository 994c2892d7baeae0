package main

import (
	"fmt"
	"io"
	"os"
	"slices"

	"triad/internal/d2/workload"
	"triad/internal/exp"
	"triad/internal/figure"
)

func runSimD2(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("sim d2", "sim d2 --seed S [--experiment locality|avail|balance|perf|all|chaos] [--tree DIR | --manifest FILE] [--trace FILE] [--quick] [--check] [--json] [--plot FILE]  |  sim d2 --tree DIR --write-manifest FILE", exp.D2Help+"\n"+exp.D2ChaosHelp, stderr)
	cfg := exp.DefaultD2Config()
	cfg.RegisterFlags(fs)
	fs.Lookup("experiment").Usage = "locality, avail, balance, perf, all, or chaos (invariants under failures; not part of all)"
	check := fs.Bool("check", false, "exit non-zero if a threshold of issue 30 fails, or with chaos if an invariant is violated (the failures are printed)")
	scenario := fs.String("scenario", "", "`rogue`: the chaos experiment with an insider that aims its position at a volume and acknowledges puts it neither stores nor replicates (issue 44); implies --experiment chaos")
	writeManifest := fs.String("write-manifest", "", "write the manifest of --tree to this `file` (gzipped) and stop")
	sf := addSimFlags(fs, "end with one JSON line of every figure", "draw the paper's figures of the experiments that ran (Figs. 2, 6, 7-9, 11, Table 2) to this `file` (.png, .svg or .pdf)", true)
	stopProfile, err := sf.parse(fs, args, simD2Config{&cfg})
	if err != nil {
		return err
	}
	defer stopProfile()
	if *writeManifest != "" {
		return writeD2Manifest(cfg.Tree, *writeManifest, stdout)
	}
	if sf.progress(stderr) {
		cfg.Log = stderr
	}
	switch *scenario {
	case "":
	case "rogue":
		return runSimD2Chaos(cfg, sf, *check, true, stdout)
	default:
		return usageErr(fs, "--scenario %q: want rogue", *scenario)
	}
	if cfg.Experiment == exp.D2Chaos {
		return runSimD2Chaos(cfg, sf, *check, false, stdout)
	}
	res, err := exp.RunD2(cfg)
	if err != nil {
		return err
	}
	res.WriteText(stdout)
	if err := sf.plot(stdout, func(path string) error { return figure.D2(res, path) }); err != nil {
		return err
	}
	if err := sf.json(stdout, res); err != nil {
		return err
	}
	if failed := res.Failed(); *check && len(failed) > 0 {
		return fmt.Errorf("sim d2: %d thresholds of issue 30 missed (FAIL above)", len(failed))
	}
	return nil
}

// simD2Config validates `sim d2`'s flags: chaos, which RunD2 does not
// run, takes no workload, trace or figure.
type simD2Config struct{ *exp.D2Config }

func (c simD2Config) Validate() error {
	if c.Experiment != exp.D2Chaos && c.Experiment != "all" && !slices.Contains(exp.D2Experiments, c.Experiment) {
		return fmt.Errorf("--experiment %q: want one of %v, all or %s", c.Experiment, exp.D2Experiments, exp.D2Chaos)
	}
	if c.Experiment != exp.D2Chaos {
		return c.D2Config.Validate()
	}
	if c.Tree != "" || c.Manifest != "" || c.TraceFile != "" {
		return fmt.Errorf("--experiment chaos takes no --tree, --manifest or --trace: its writer puts blocks of its own")
	}
	return nil
}

// runSimD2Chaos runs the chaos experiment (exp.RunD2Chaos).
func runSimD2Chaos(cfg exp.D2Config, sf simFlags, check, rogue bool, stdout io.Writer) error {
	if *sf.plotTo != "" {
		return fmt.Errorf("sim d2: --experiment chaos draws no figure (--plot)")
	}
	res, err := exp.RunD2Chaos(exp.D2ChaosConfig{Seed: cfg.Seed, Quick: cfg.Quick, Log: cfg.Log, Rogue: rogue})
	if err != nil {
		return err
	}
	res.WriteText(stdout)
	if err := sf.json(stdout, res); err != nil {
		return err
	}
	if check && res.Violations > 0 {
		return fmt.Errorf("sim d2 chaos: %d invariant violations (above)", res.Violations)
	}
	return nil
}

// writeD2Manifest lists tree's paths and sizes into file.
func writeD2Manifest(tree, file string, stdout io.Writer) error {
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
	fmt.Fprintf(stdout, "%s: %d files, %d directories, %d bytes\n", file, c.Files, c.Dirs, c.Bytes)
	return nil
}
