package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"triad/internal/bench"
)

var benchFSAbout = help("bench-fs")

func runBenchFS(args []string, stdout, stderr io.Writer) error {
	flags := newFlags("bench fs", "bench fs [--addr A,B] [--tree DIR] [--local-dir DIR] [--tasks N] [--metrics URLS] [--no-copy] [--json]", benchFSAbout, stderr)
	ff := addFSFlags(flags)
	tree := flags.String("tree", "", "the `folder` to copy (default: $(go env GOROOT)/src)")
	localDir := flags.String("local-dir", os.TempDir(), "the local disk's copy goes in a new folder under this `folder`")
	asJSON := flags.Bool("json", false, "end with one JSON line of results")
	tasks := flags.Int("tasks", 20, "`directories` read as tasks under each placement (0: none)")
	metrics := flags.String("metrics", "", "comma-separated `URLs` of the gateways' metrics pages (http://HOST:PORT/metrics), to count lookups per task")
	noCopy := flags.Bool("no-copy", false, "skip the copy and read-back (and FUSE): only the tasks")
	if err := parse(flags, args); err != nil {
		return err
	}
	if flags.NArg() > 0 {
		return usageErr(flags, "unexpected argument %q", flags.Arg(0))
	}
	if *tasks < 0 || *noCopy && *tasks == 0 {
		return usageErr(flags, "--tasks must be positive with --no-copy, and never negative")
	}
	if *tree == "" {
		out, err := exec.Command("go", "env", "GOROOT").Output()
		if err != nil {
			return fmt.Errorf("no --tree, and go env GOROOT: %w", err)
		}
		*tree = filepath.Join(strings.TrimSpace(string(out)), "src")
	}
	res, err := bench.FS(bench.FSConfig{Open: ff.blocksWith, Tree: *tree, LocalDir: *localDir, Tasks: *tasks,
		Metrics: splitList(*metrics), NoCopy: *noCopy, Log: stderr})
	if err != nil {
		return ff.explain(err)
	}
	if err := bench.PrintFS(stdout, res, *ff.addrs, *localDir, !*noCopy); err != nil {
		return err
	}
	return maybeJSON(stdout, *asJSON, res)
}
