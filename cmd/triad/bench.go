package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"triad/internal/bench"
	"triad/internal/dhash"
)

const benchAbout = `
Measures a part of triad on this machine, next to the machine's own limits
measured in the same run.

Benchmarks:
  store   the storage engine: write and random-read throughput against the
          disk's raw sequential bandwidth, and reopening time.
  dhash   the block store: put and get throughput and latency of real node
          processes on 127.0.0.1.
  nntp    an NNTP server on loopback (triad's or INN): TAKETHIS and POST
          ingest, ARTICLE, BODY and OVER reads.
  limits  the news server's bounded totals: 5,000 idle connections, a stalled
          reader and a long OVER at once; peak memory and a normal client's
          latency.
  sync    what one maintenance synchronization costs between two stores of
          1,000,000 equal keys: tree queries and bytes.
  flood   congestion control of routed requests on real node processes: every
          node floods the ring; goodput against the unflooded peak, memory,
          and a normal client's lookup latency.

Run 'triad bench <name> --help' for its flags.`

func runBench(args []string, stdout, stderr io.Writer) error {
	return runGroup("bench", benchAbout, map[string]func([]string, io.Writer, io.Writer) error{"store": runBenchStore, "dhash": runBenchDHash, "nntp": runBenchNNTP, "limits": runBenchLimits, "sync": runBenchSync, "flood": runBenchFlood}, args, stdout, stderr)
}

const benchStoreAbout = `
Writes --objects objects of --size bytes to a fresh storage engine from
--writers goroutines (each put waits until its object is durable), then reads
them all back in random order from --readers goroutines, every read checked
against its record checksums. Puts are made as DHash makes them, after it has
checked each block against its key; --check-keys has the store hash them too
(about one core per GB/s here). In the same run it writes the same bytes to one
plain file, with an fdatasync every --sync interval as the engine's group
commit does, and reads that file sequentially: the ratios compare the engine
with the disk itself. Before the read phases both the file and the segments
are dropped from the page cache, so both reads come from the disk.

With --reopen N it instead builds a store of N small objects, closes it, and
times opening it again.

Files go to a temporary folder under --dir, removed at the end. Progress goes
to stderr when it is a terminal; the table to stdout, and with --json a final
JSON line.`

// minProcs is the least GOMAXPROCS bench store runs with.
const minProcs = 4

func runBenchStore(args []string, stdout, stderr io.Writer) error {
	// Reads of cold objects block an OS thread each, holding a P until the
	// scheduler takes it back; on small machines that leaves cores idle that
	// checksums could use. A few more Ps than cores keep them busy.
	if _, set := os.LookupEnv("GOMAXPROCS"); !set && runtime.GOMAXPROCS(0) < minProcs {
		runtime.GOMAXPROCS(minProcs)
	}
	fs := newFlags("bench store", "bench store [--dir D] [--size BYTES] [--objects N] [--reopen N] [--json]", benchStoreAbout, stderr)
	dir := fs.String("dir", "triad-data", "folder for the benchmark's files (on the disk to measure)")
	size := fs.Int("size", 200000, "object size in bytes (100 with --reopen)")
	objects := fs.Int("objects", 0, "objects to write (default: 1 GB worth, at most 200,000)")
	writers := fs.Int("writers", 64, "concurrent writers")
	readers := fs.Int("readers", 16, "concurrent readers")
	sync := fs.Duration("sync", time.Millisecond, "group commit interval")
	reopen := fs.Int("reopen", 0, "build a store of N keys and time reopening it")
	checkKeys := fs.Bool("check-keys", false, "have the store hash every object written (DHash hashes them before storing, so by default the store is told it need not)")
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
	sizeSet := false
	fs.Visit(func(f *flag.Flag) { sizeSet = sizeSet || f.Name == "size" })
	if *reopen > 0 && !sizeSet {
		*size = 100
	}
	switch {
	case fs.NArg() > 0:
		return usageErr(fs, "unexpected argument %q", fs.Arg(0))
	case *size < 8 || *size > 64<<20:
		return usageErr(fs, "--size must be between 8 bytes and 64 MiB")
	case *objects < 0 || *reopen < 0:
		return usageErr(fs, "--objects and --reopen cannot be negative")
	case *writers < 1 || *readers < 1:
		return usageErr(fs, "--writers and --readers must be at least 1")
	case *sync <= 0:
		return usageErr(fs, "--sync must be positive")
	}
	if *objects == 0 {
		*objects = min(200_000, max(100, 1_000_000_000 / *size))
	}
	tmp, err := scratchDir(*dir, "bench-store-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	cfg := bench.StoreConfig{
		Dir: tmp, Size: *size, Objects: *objects, Writers: *writers, Readers: *readers,
		SyncInterval: *sync, Reopen: *reopen, CheckKeys: *checkKeys, Progress: progressTo(stderr),
	}
	abs, _ := filepath.Abs(tmp)
	fmt.Fprintf(stderr, "benchmarking the storage engine in %s\n", abs)
	res, err := bench.Store(cfg)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	if *reopen > 0 {
		fmt.Fprintf(tw, "reopen\t%d keys\t%.3f s\t\n", res.ReopenKeys, res.ReopenSeconds)
	} else {
		fmt.Fprintf(tw, "%d objects of %d bytes\twriters %d\treaders %d\tsync every %v\tstore hashes keys: %v\t\n", res.Objects, res.Size, res.Writers, res.Readers, *sync, *checkKeys)
		fmt.Fprintf(tw, "\tMB/s\tobjects/s\tof raw disk\t\n")
		fmt.Fprintf(tw, "raw sequential write\t%.0f\t\t\t\n", res.RawWriteMBps)
		fmt.Fprintf(tw, "store write\t%.0f\t%.0f\t%.0f%%\t\n", res.WriteMBps, res.WriteObjs, 100*res.WriteRatio)
		fmt.Fprintf(tw, "raw sequential read\t%.0f\t\t\t\n", res.RawReadMBps)
		fmt.Fprintf(tw, "store random read\t%.0f\t%.0f\t%.0f%%\t\n", res.ReadMBps, res.ReadObjs, 100*res.ReadRatio)
		fmt.Fprintf(tw, "index catch-up\t%.3f s\t\t\t\n", res.IndexCatchUp)
		fmt.Fprintf(tw, "reopen\t%.3f s\t%d keys\t\t\n", res.ReopenSeconds, res.ReopenKeys)
	}
	tw.Flush()
	if *asJSON {
		b, _ := json.Marshal(res)
		fmt.Fprintln(stdout, string(b))
	}
	return nil
}

// scratchDir makes a new folder for a benchmark's files under dir (made
// if missing); the caller removes it.
func scratchDir(dir, prefix string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return os.MkdirTemp(dir, prefix)
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

const benchDHashAbout = `
Starts --nodes real 'triad node' processes on 127.0.0.1 (this same binary, each
with its own data folder under --dir and the default block-store settings:
2 replicas, every put durable on disk before it is acknowledged), waits until
their ring is consistent, then from this process:

  put   --ops distinct random blocks of --size bytes, with --concurrency
        operations in flight in all;
  get   each block back, checking every byte.

Operations go to the nodes in turn, as a client that knows any node sends them
(gets through a different node than the put), and that node looks the key up:
the lookup is part of the cost. With --holder-direct they go straight to the
node holding the key's first copy, as the Go client's Cluster does (it learns
the ring from the nodes), and the output says so.

A phase with failed operations prints how many and the first errors, and the
comparison scripts give it no ratio.

It prints operations per second, MB/s (10^6 bytes) and p50/p99 latency of each
phase, then stops the nodes and removes their data. A deferred put (full write
window) is retried after 1 ms and counted. Each phase is bounded by --max-phase.
Use the same --nodes, --size and --concurrency as the OpenDHT anchor
(../shared/anchors/opendht) to compare; scripts/compare-opendht.sh does both.`

func runBenchDHash(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench dhash", "bench dhash [--nodes N] [--size BYTES] [--concurrency C] [--ops N] [--json]", benchDHashAbout, stderr)
	dir := fs.String("dir", os.TempDir(), "folder for the nodes' data (on the disk to measure)")
	nodes := fs.Int("nodes", 8, "node processes")
	size := fs.Int("size", 100, "block size in bytes")
	conc := fs.Int("concurrency", 16, "operations in flight")
	ops := fs.Int("ops", 0, "blocks to put and get (default: 20,000, or 2,000 for blocks over 16 KB)")
	maxPhase := fs.Duration("max-phase", time.Minute, "time bound of each phase")
	withTLS := fs.Bool("tls", false, "run again with every connection mutual TLS 1.3 (a CA made for the run) and print what TLS costs")
	rounds := fs.Int("rounds", 3, "with --tls or --compare-stp: runs of each way, in turns; the result is the ratio of their medians")
	compareSTP := fs.Bool("compare-stp", false, "run with every block copy sent at once (the nodes' --stp=false) and with STP's window, in turns, and print the difference")
	holderDirect := fs.Bool("holder-direct", false, "send each operation straight to the key's holder, skipping the lookup (labelled in the output)")
	asJSON := fs.Bool("json", false, "end with one JSON line of results")
	profile := fs.String("profile", "", "write CPU profiles of every node (node<i>.cpu) and of this client (client.cpu) into this `directory`")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		// Flags after the first argument would be silently ignored.
		return usageErr(fs, "unexpected argument %q", fs.Arg(0))
	}
	if *nodes < 1 || *nodes > 64 || *size < 1 || *size > dhash.DefaultConfig().MaxBlock || *conc < 1 || *conc > 4096 || *ops < 0 {
		return usageErr(fs, "want 1-64 nodes, a size of 1 byte to 1 MiB, concurrency 1-4096")
	}
	if *rounds < 1 || *rounds > 50 {
		return usageErr(fs, "--rounds %d: want 1 to 50", *rounds)
	}
	if *ops == 0 {
		*ops = 20000
		if *size > 16<<10 {
			*ops = 2000
		}
	}
	bin, err := os.Executable()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		return err
	}
	relaxGC()
	stopProfile := func() {}
	if *profile != "" {
		if err := os.MkdirAll(*profile, 0o755); err != nil {
			return err
		}
		if stopProfile, err = startCPUProfile(filepath.Join(*profile, "client.cpu")); err != nil {
			return err
		}
	}
	cfg := bench.DHashConfig{
		Binary: bin, Dir: *dir, Nodes: *nodes, Size: *size, Ops: *ops, Concurrency: *conc, MaxPhase: *maxPhase, HolderDirect: *holderDirect, ProfileDir: *profile,
		Log:      func(format string, args ...any) { fmt.Fprintf(stderr, format+"\n", args...) },
		Progress: progressTo(stderr),
	}
	if *withTLS && *compareSTP {
		stopProfile()
		return usageErr(fs, "--tls and --compare-stp: compare one thing at a time")
	}
	if !*withTLS && !*compareSTP {
		res, err := bench.DHash(cfg)
		stopProfile()
		if err != nil {
			return err
		}
		printDHash(stdout, res)
		if *asJSON {
			return printJSON(stdout, res)
		}
		return nil
	}
	// Two ways, in turns (ABBA...: drift in the disk or the machine falls
	// on both), and their medians' ratio: plain against mutual TLS (what
	// TLS costs), or every copy at once against STP's window.
	cmp := dhashComparison{base: "plain", variant: "tls", set: func(c *bench.DHashConfig, on bool) { c.TLS = on },
		say: func(name string, base, variant float64) string {
			return fmt.Sprintf("TLS cost, %s: %.1f%% of MB/s (medians of %d rounds: %.2f plain, %.2f with TLS)", name, 100*(1-variant/base), *rounds, base, variant)
		}}
	if *compareSTP {
		cmp = dhashComparison{base: "fixed", variant: "stp", set: func(c *bench.DHashConfig, on bool) { c.FixedWindow = !on },
			say: func(name string, base, variant float64) string {
				return fmt.Sprintf("STP against every copy at once, %s: %+.1f%% of MB/s (medians of %d rounds: %.2f at once, %.2f with STP)", name, 100*(variant/base-1), *rounds, base, variant)
			}}
	}
	runs := map[bool][]bench.DHashResult{}
	for r := range *rounds {
		for _, on := range []bool{r%2 == 1, r%2 == 0} {
			cmp.set(&cfg, on)
			res, err := bench.DHash(cfg)
			if err != nil {
				stopProfile()
				return err
			}
			printDHash(stdout, res)
			runs[on] = append(runs[on], res)
		}
	}
	stopProfile()
	out := map[string]any{"rounds": *rounds, cmp.base: runs[false], cmp.variant: runs[true]}
	for _, p := range []struct {
		name  string
		phase func(bench.DHashResult) bench.PhaseResult
	}{{"put", func(r bench.DHashResult) bench.PhaseResult { return r.Put }}, {"get", func(r bench.DHashResult) bench.PhaseResult { return r.Get }}} {
		bm, bok := medianMBps(runs[false], p.phase)
		vm, vok := medianMBps(runs[true], p.phase)
		if !bok || !vok || bm == 0 {
			fmt.Fprintf(stdout, "%s %s: no figure (a phase had failures)\n", cmp.variant, p.name)
			continue
		}
		fmt.Fprintln(stdout, cmp.say(p.name, bm, vm))
		if *withTLS {
			out["tls_cost_"+p.name] = 1 - vm/bm
		} else {
			out["stp_gain_"+p.name] = vm/bm - 1
		}
	}
	if *asJSON {
		return printJSON(stdout, out)
	}
	return nil
}

// dhashComparison is what bench dhash compares: a base and a variant of
// the run, set on the configuration, and how its result reads.
type dhashComparison struct {
	base, variant string
	set           func(c *bench.DHashConfig, variant bool)
	say           func(phase string, base, variant float64) string
}

// medianMBps is the median MB/s of one phase over runs; false if a run of
// it had failures.
func medianMBps(runs []bench.DHashResult, phase func(bench.DHashResult) bench.PhaseResult) (float64, bool) {
	var v []float64
	for _, r := range runs {
		ph := phase(r)
		if ph.Failed > 0 {
			return 0, false
		}
		v = append(v, ph.MBps)
	}
	slices.Sort(v)
	if len(v) == 0 {
		return 0, false
	}
	if len(v)%2 == 1 {
		return v[len(v)/2], true
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2, true
}

// printDHash prints one run of bench dhash as a table, and its failures.
func printDHash(stdout io.Writer, res bench.DHashResult) {
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	transport := "plain TCP"
	if res.TLS {
		transport = "mutual TLS 1.3"
	}
	window := "copies through STP's window"
	if res.FixedWindow {
		window = "every copy at once"
	}
	fmt.Fprintf(stdout, "%d nodes on 127.0.0.1, %d-byte blocks, %d in flight, sent to %s, over %s, %s\n", res.Nodes, res.Size, res.Concurrency, res.Route, transport, window)
	fmt.Fprintln(tw, "phase\tdone\tfailed\tops/s\tMB/s\tp50 ms\tp99 ms\t")
	phases := []struct {
		name string
		r    bench.PhaseResult
	}{{"put", res.Put}, {"get", res.Get}}
	for _, p := range phases {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.0f\t%.2f\t%.2f\t%.2f\t\n", p.name, p.r.Done, p.r.Failed, p.r.OpsPerS, p.r.MBps, p.r.P50Ms, p.r.P99Ms)
	}
	tw.Flush()
	for _, p := range phases {
		if p.r.Failed > 0 {
			fmt.Fprintf(stdout, "%s: %d failed (figures not comparable); first errors:\n", p.name, p.r.Failed)
			for _, e := range p.r.Errors {
				fmt.Fprintf(stdout, "  %s\n", e)
			}
		}
	}
}
