package main

import (
	"fmt"
	"io"
	"os"

	"triad/internal/bench"
)

func runBenchFlood(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench flood", "bench flood [--nodes N] [--uplink-kbps K] [--flood R] [--duration D] [--json]", bench.FloodHelp, stderr)
	cfg := bench.DefaultFloodConfig()
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
	res, err := bench.Flood(cfg)
	if err != nil {
		return err
	}
	res.WriteText(stdout)
	if err := maybeJSON(stdout, *asJSON, res); err != nil {
		return err
	}
	if !res.Pass {
		return fmt.Errorf("bench flood: the flood's goodput, memory or lookups missed their bounds")
	}
	return nil
}
