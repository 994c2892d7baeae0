package main

import (
	"io"
	"os"

	"triad/internal/bench"
)

func runBenchSync(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench sync", "bench sync [--keys 1000000] [--outside 100000] [--dir D] [--json]", bench.SyncHelp, stderr)
	cfg := bench.DefaultSyncConfig()
	cfg.RegisterFlags(fs)
	asJSON := fs.Bool("json", false, "print a final JSON line")
	if err := parseConfig(fs, args, &cfg); err != nil {
		return err
	}
	tmp, err := bench.ScratchDir(cfg.Dir, "bench-sync-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	cfg.Dir, cfg.Progress = tmp, progressTo(stderr)
	res, err := bench.Sync(cfg)
	if err != nil {
		return err
	}
	return report(stdout, *asJSON, res)
}
