package main

import (
	"fmt"
	"io"
	"os"

	"triad/internal/bench"
)

const benchLimitsAbout = `
The news server's bounded totals, measured on a real 'triad nntp' process on
127.0.0.1 (this same binary, a fresh data folder under --dir):

  1. --articles small articles are fed to one group (TAKETHIS, 4 connections);
  2. --idle connections are opened and left idle;
  3. at once: a reader sends OVER 1-1000000 and reads none of the reply, a
     second reader reads the whole OVER, and a normal client runs GROUP, STAT
     and ARTICLE for --normal, timing every answer.

It prints the server's peak resident memory (VmHWM), the normal client's
latencies and what the OVER reader got, and fails unless the peak stays under
512 MB and every normal answer comes in under 100 ms.`

func runBenchLimits(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench limits", "bench limits [--idle 5000] [--articles 200000] [--json]", benchLimitsAbout, stderr)
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
