package main

import (
	"io"

	"triad/internal/bench"
)

func runBenchLimits(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench limits", "bench limits [--idle 5000] [--articles 200000] [--json]", bench.LimitsHelp, stderr)
	cfg := bench.DefaultLimitsConfig()
	cfg.RegisterFlags(fs)

	return runLoop(fs, args, &cfg, &cfg.Binary, &cfg.Log, stdout, stderr, func() (outcome, error) { return bench.Limits(cfg) })
}
