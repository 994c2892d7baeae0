package main

import (
	"fmt"
	"io"
	"os"

	"triad/internal/d2/workload"
	"triad/internal/exp"
	"triad/internal/figure"
)

func runSimD2(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("sim d2", "sim d2 --seed S [--experiment locality|avail|balance|perf|all] [--tree DIR | --manifest FILE] [--trace FILE] [--quick] [--check] [--json] [--plot FILE]  |  sim d2 --tree DIR --write-manifest FILE", exp.D2Help, stderr)
	cfg := exp.DefaultD2Config()
	cfg.RegisterFlags(fs)
	check := fs.Bool("check", false, "exit non-zero if a threshold of issue 30 fails (the failures are printed)")
	writeManifest := fs.String("write-manifest", "", "write the manifest of --tree to this `file` (gzipped) and stop")
	sf := addSimFlags(fs, "end with one JSON line of every figure", "draw the paper's figures of the experiments that ran (Figs. 2, 6, 7-9, 11, Table 2) to this `file` (.png, .svg or .pdf)", true)
	stopProfile, err := sf.parse(fs, args, &cfg)
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
