package main

import (
	"io"
	"os"

	"triad/internal/bench"
)

func runChaos(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("chaos", "chaos [--nodes 6] [--duration 1h] [--seed S] [--ack-and-drop N] [--json]", bench.ChaosHelp, stderr)
	cfg := bench.DefaultChaosConfig()
	cfg.RegisterFlags(fs)
	asJSON := fs.Bool("json", false, "end with one JSON line of results")
	if err := parseConfig(fs, args, &cfg); err != nil {
		return err
	}
	var err error
	if cfg.Binary, err = os.Executable(); err != nil {
		return err
	}
	cfg.Log = logTo(stderr)
	res, err := bench.Chaos(cfg)
	if err != nil {
		return err
	}
	res.WriteText(stdout)
	if err := maybeJSON(stdout, *asJSON, res); err != nil {
		return err
	}
	return res.Err()
}
