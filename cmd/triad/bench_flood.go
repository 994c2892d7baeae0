package main

import (
	"io"

	"triad/internal/bench"
)

func runBenchFlood(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench flood", "bench flood [--nodes N] [--uplink-kbps K] [--flood R] [--duration D] [--json]", bench.FloodHelp, stderr)
	cfg := bench.DefaultFloodConfig()
	cfg.RegisterFlags(fs)
	relaxGC()
	return runLoop(fs, args, &cfg, &cfg.Binary, &cfg.Log, stdout, stderr, func() (outcome, error) { return bench.Flood(cfg) })
}
