package main

import (
	"fmt"
	"io"
	"os"

	"triad/internal/bench"
)

func runBenchLimits(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench limits", "bench limits [--idle 5000] [--articles 200000] [--json]", bench.LimitsHelp, stderr)
	cfg := bench.DefaultLimitsConfig()
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
	res, err := bench.Limits(cfg)
	if err != nil {
		return err
	}
	res.WriteText(stdout)
	if err := maybeJSON(stdout, *asJSON, res); err != nil {
		return err
	}
	if err := res.Err(); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "PASS: peak under 512 MB, every normal answer under 100 ms")
	return nil
}
