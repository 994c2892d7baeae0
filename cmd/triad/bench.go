package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"triad/internal/bench"
)

var benchAbout = help("bench")

func runBench(args []string, stdout, stderr io.Writer) error {
	return runGroup("bench", benchAbout, map[string]func([]string, io.Writer, io.Writer) error{"store": runBenchStore, "dhash": runBenchDHash, "nntp": runBenchNNTP, "limits": runBenchLimits, "pin": runBenchPin, "sync": runBenchSync, "flood": runBenchFlood, "tapestry": runBenchTapestry, "fs": runBenchFS}, args, stdout, stderr)
}

// minProcs is the least GOMAXPROCS bench store runs with.
const minProcs = 4

func runBenchStore(args []string, stdout, stderr io.Writer) error {
	// Reads of cold objects block an OS thread each, holding a P until the
	// scheduler takes it back; on small machines that leaves cores idle that
	// checksums could use. A few more Ps than cores keep them busy.
	if _, set := os.LookupEnv("GOMAXPROCS"); !set && runtime.GOMAXPROCS(0) < minProcs {
		runtime.GOMAXPROCS(minProcs)
	}
	fs := newFlags("bench store", "bench store [--dir D] [--size BYTES] [--objects N] [--reopen N] [--json]", bench.StoreHelp, stderr)
	cfg := bench.DefaultStoreConfig()
	cfg.RegisterFlags(fs)
	asJSON := fs.Bool("json", false, "print a final JSON line")
	cpuProfile := addProfileFlag(fs, "the run")
	if err := parse(fs, args); err != nil {
		return err
	}
	stopProfile, err := cpuProfile.start()
	if err != nil {
		return err
	}
	defer stopProfile()
	if cfg.Reopen > 0 && !flagGiven(fs, "size") {
		cfg.Size = 100
	}
	if err := checkConfig(fs, &cfg); err != nil {
		return err
	}
	tmp, err := bench.ScratchDir(cfg.Dir, "bench-store-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	cfg.Dir, cfg.Progress = tmp, progressTo(stderr)
	abs, _ := filepath.Abs(tmp)
	fmt.Fprintf(stderr, "benchmarking the storage engine in %s\n", abs)
	res, err := bench.Store(cfg)
	if err != nil {
		return err
	}
	res.WriteText(stdout)
	return maybeJSON(stdout, *asJSON, res)
}

// flagGiven reports whether the flag name was set on the command line.
func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// progressTo returns progress bars on w when it is a terminal, else none.
func progressTo(w io.Writer) func(string, int64) bench.Progress {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	return func(phase string, total int64) bench.Progress {
		return bar{progressbar.NewOptions64(total,
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetDescription(phase),
			progressbar.OptionShowCount(),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish(),
		)}
	}
}

type bar struct{ *progressbar.ProgressBar }

func (b bar) Add(n int) { b.ProgressBar.Add(n) }
func (b bar) Finish()   { b.ProgressBar.Finish() }

func runBenchDHash(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench dhash", "bench dhash [--nodes N | --nodes N,N,...] [--cpu-per-node CORES] [--size BYTES] [--concurrency C] [--ops N] [--json]", bench.DHashHelp, stderr)
	cfg := bench.DefaultDHashConfig()
	cfg.RegisterFlags(fs)
	withTLS := fs.Bool("tls", false, "run again with every connection mutual TLS 1.3 (a CA made for the run) and print what TLS costs")
	rounds := fs.Int("rounds", 3, "with --tls or --compare-stp: runs of each way, in turns; the result is the ratio of their medians")
	compareSTP := fs.Bool("compare-stp", false, "run with every block copy sent at once (the nodes' --stp=false) and with STP's window, in turns, and print the difference")
	asJSON := fs.Bool("json", false, "end with one JSON line of results")
	if err := parseConfig(fs, args, &cfg); err != nil {
		return err
	}
	if *rounds < 1 || *rounds > 50 {
		return usageErr(fs, "--rounds %d: want 1 to 50", *rounds)
	}
	if *withTLS && *compareSTP {
		return usageErr(fs, "--tls and --compare-stp: compare one thing at a time")
	}
	if len(cfg.Scale) > 1 {
		if *withTLS || *compareSTP {
			return usageErr(fs, "--nodes %s with --tls or --compare-stp: compare one thing at a time", fs.Lookup("nodes").Value)
		}
		if !flagGiven(fs, "concurrency") {
			cfg.Concurrency = 0 // bench.DHashScale's, growing with the nodes
		}
	}
	if cfg.Ops == 0 {
		cfg.Ops = 20000
		if cfg.Size > 16<<10 {
			cfg.Ops = 2000
		}
	}
	bin, err := os.Executable()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return err
	}
	relaxGC()
	stopProfile := func() {}
	if cfg.ProfileDir != "" {
		if err := os.MkdirAll(cfg.ProfileDir, 0o755); err != nil {
			return err
		}
		if stopProfile, err = startCPUProfile(filepath.Join(cfg.ProfileDir, "client.cpu")); err != nil {
			return err
		}
	}
	defer stopProfile()
	cfg.Binary, cfg.Log, cfg.Progress = bin, logTo(stderr), progressTo(stderr)
	if len(cfg.Scale) > 1 {
		s, err := bench.DHashScale(cfg, func(res bench.DHashResult) { res.WriteText(stdout) })
		if err != nil {
			return err
		}
		s.WriteText(stdout)
		return maybeJSON(stdout, *asJSON, s)
	}
	if !*withTLS && !*compareSTP {
		res, err := bench.DHash(cfg)
		if err != nil {
			return err
		}
		res.WriteText(stdout)
		return maybeJSON(stdout, *asJSON, res)
	}
	variant := bench.VariantTLS
	if *compareSTP {
		variant = bench.VariantSTP
	}
	cmp, err := bench.CompareDHash(cfg, variant, *rounds, func(res bench.DHashResult) { res.WriteText(stdout) })
	if err != nil {
		return err
	}
	cmp.WriteText(stdout)
	return maybeJSON(stdout, *asJSON, cmp.JSON())
}

// logTo is a benchmark's log: lines on w.
func logTo(w io.Writer) func(format string, args ...any) {
	return func(format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) }
}
