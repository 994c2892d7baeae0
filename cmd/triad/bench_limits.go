package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

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
	dir := fs.String("dir", os.TempDir(), "folder for the server's data")
	idle := fs.Int("idle", 5000, "idle connections held open")
	articles := fs.Int("articles", 200000, "articles in the group before the scenario")
	normal := fs.Duration("normal", 5*time.Second, "how long the normal client runs")
	asJSON := fs.Bool("json", false, "end with one JSON line of results")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErr(fs, "unexpected argument %q", fs.Arg(0))
	}
	if *idle < 0 || *idle > 20000 || *articles < 1 || *articles > 2000000 {
		return usageErr(fs, "want 0-20000 idle connections and 1-2000000 articles")
	}
	bin, err := os.Executable()
	if err != nil {
		return err
	}
	res, err := bench.Limits(bench.LimitsConfig{Binary: bin, Dir: *dir, Idle: *idle, Articles: *articles, Normal: *normal,
		Log: func(format string, args ...any) { fmt.Fprintf(stderr, format+"\n", args...) }})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "server: %s\n", res.ServerVersion)
	fmt.Fprintf(stdout, "idle connections:   %d open (%d refused)\n", res.Idle, res.IdleRefused)
	fmt.Fprintf(stdout, "OVER 1-1000000:     %d lines read in %.2fs by one reader; the other read nothing (dropped by the server: %v)\n", res.OverLines, res.OverSeconds, res.SlowDropped)
	fmt.Fprintf(stdout, "normal client:      %d answers, %d failed; p50 %.2f ms, p99 %.2f ms, max %.2f ms\n", res.NormalOps, res.NormalFailed, res.NormalP50Ms, res.NormalP99Ms, res.NormalMaxMs)
	fmt.Fprintf(stdout, "server memory:      %.0f MB resident with the idle connections, %.0f MB peak (VmHWM) in the scenario; the feed before it peaked at %.0f MB in its own process\n", res.IdleRSSMB, res.PeakRSSMB, res.FeedRSSMB)
	fmt.Fprintf(stdout, "  of which, sampled: up to %.0f MB anonymous (heap, stacks), up to %.0f MB of mapped files (the overview database)\n", res.PeakAnonMB, res.PeakFileMB)
	if *asJSON {
		if err := printJSON(stdout, res); err != nil {
			return err
		}
	}
	var bad []string
	if res.PeakRSSMB >= 512 {
		bad = append(bad, fmt.Sprintf("peak memory %.0f MB, want under 512", res.PeakRSSMB))
	}
	if res.NormalFailed > 0 || res.NormalOps == 0 {
		bad = append(bad, fmt.Sprintf("the normal client had %d failures of %d (%s)", res.NormalFailed, res.NormalOps+res.NormalFailed, res.FirstError))
	}
	if res.NormalMaxMs >= 100 {
		bad = append(bad, fmt.Sprintf("the slowest normal answer took %.1f ms, want under 100", res.NormalMaxMs))
	}
	if res.OverLines != res.Articles {
		bad = append(bad, fmt.Sprintf("the OVER reader got %d lines of %d", res.OverLines, res.Articles))
	}
	if len(bad) > 0 {
		return fmt.Errorf("bench limits: %s", strings.Join(bad, "; "))
	}
	fmt.Fprintln(stdout, "PASS: peak under 512 MB, every normal answer under 100 ms")
	return nil
}
