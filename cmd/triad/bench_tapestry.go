package main

import (
	"io"

	"triad/internal/bench"
)

func runBenchTapestry(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench tapestry", "bench tapestry [--size B] [--count N] [--window W] [--rounds R] [--json]", bench.TapestryHelp, stderr)
	cfg := bench.DefaultTapestryConfig()
	cfg.RegisterFlags(fs)
	relaxGC()
	return runLoop(fs, args, &cfg, &cfg.Binary, &cfg.Log, stdout, stderr, func() (outcome, error) { return bench.Tapestry(cfg) })
}
