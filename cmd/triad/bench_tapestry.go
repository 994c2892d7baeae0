package main

import (
	"fmt"
	"io"
	"os"

	"triad/internal/bench"
)

func runBenchTapestry(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench tapestry", "bench tapestry [--size B] [--count N] [--window W] [--rounds R] [--json]", bench.TapestryHelp, stderr)
	cfg := bench.DefaultTapestryConfig()
	cfg.RegisterFlags(fs)
	asJSON := fs.Bool("json", false, "end with one JSON line of results")
	if err := parseConfig(fs, args, &cfg); err != nil {
		return err
	}
	var err error
	if cfg.Binary, err = os.Executable(); err != nil {
		return err
	}
	relaxGC()
	cfg.Log = logTo(stderr)
	res, err := bench.Tapestry(cfg)
	if err != nil {
		return err
	}
	res.WriteText(stdout)
	if err := maybeJSON(stdout, *asJSON, res); err != nil {
		return err
	}
	if !res.Pass {
		return fmt.Errorf("bench tapestry: the median rate %.0f/s missed the target %.0f/s (or a message failed)", res.Median, res.Target)
	}
	return nil
}
