package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"triad/internal/bench"
	"triad/internal/cc"
)

const benchFloodAbout = `
Starts --nodes real 'triad node' processes on 127.0.0.1 whose routed requests
(internal/cc) go through a forwarding queue paced at --uplink-kbps, and uses
their own load generators (set over the node protocol, from this machine
only) to route small requests for random keys recursively through the ring,
each acknowledged end to end by the node responsible for its key.

  ramp    the ring unflooded: each node offers each rate of --ramp in turn,
          and the best goodput (routed requests acknowledged per second, all
          nodes) is the peak;
  flood   each node offers --flood requests per second for --duration, far
          past what the ring carries; every 5 s the goodput is printed, every
          second the largest node's resident memory read from /proc, and
          every 200 ms a client looks a random key up through a node.

The ramp and the flood run on one ring (its capacity depends on where its
random IDs fell).

It passes when no node's memory passes --mem-cap-mb, the goodput over the
flood stays at 80% of the peak or more, and every lookup answers within 1 s;
it exits non-zero otherwise.`

func runBenchFlood(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench flood", "bench flood [--nodes N] [--uplink-kbps K] [--flood R] [--duration D] [--json]", benchFloodAbout, stderr)
	dir := fs.String("dir", os.TempDir(), "folder for the nodes' data")
	nodes := fs.Int("nodes", 8, "node processes")
	uplink := fs.Int("uplink-kbps", 400, "each node's paced uplink for routed requests, kbit/s")
	scheme := fs.String("scheme", "marking", "the nodes' congestion control: marking, loss, backpressure or none")
	ramp := fs.String("ramp", "20,40,80,160", "offered `rates` per node of the unflooded runs, requests/s")
	flood := fs.Float64("flood", 2000, "offered requests/s per node during the flood")
	duration := fs.Duration("duration", time.Minute, "length of the flood")
	measure := fs.Duration("measure", 10*time.Second, "length of each ramp step (after a third of it to warm up)")
	memCap := fs.Int("mem-cap-mb", 256, "no node's resident memory may pass this, MiB")
	asJSON := fs.Bool("json", false, "end with one JSON line of results")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErr(fs, "unexpected argument %q", fs.Arg(0))
	}
	if _, err := cc.ParseScheme(*scheme); err != nil {
		return usageErr(fs, "--scheme: %v", err)
	}
	var rates []float64
	for _, f := range strings.Split(*ramp, ",") {
		x, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || x <= 0 {
			return usageErr(fs, "--ramp: %q is not a positive rate", f)
		}
		rates = append(rates, x)
	}
	if *nodes < 2 || *nodes > 64 || *uplink < 1 || *flood <= 0 || *duration < 10*time.Second || *measure < 3*time.Second || *memCap < 1 {
		return usageErr(fs, "want 2-64 nodes, a positive uplink, flood rate and memory cap, a flood of at least 10s and steps of at least 3s")
	}
	bin, err := os.Executable()
	if err != nil {
		return err
	}
	relaxGC()
	res, err := bench.Flood(bench.FloodConfig{Binary: bin, Dir: *dir, Nodes: *nodes, UplinkKbps: *uplink, Scheme: *scheme, Ramp: rates,
		Flood: *flood, Duration: *duration, Measure: *measure, MemCapMB: *memCap,
		Log: func(format string, args ...any) { fmt.Fprintf(stderr, format+"\n", args...) }})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%d nodes on 127.0.0.1, routed requests paced at %d kbit/s per node, %s\n", res.Nodes, res.UplinkKbps, res.Scheme)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "offered/s per node\tacknowledged/s, all nodes\t")
	for _, s := range res.Ramp {
		fmt.Fprintf(tw, "%.0f\t%.0f\t\n", s.Offered, s.Goodput)
	}
	fmt.Fprintf(tw, "flood %.0f\t%.0f (%.2f of the peak; least 5 s window %.2f)\t\n", res.Flood, res.GoodputOverPeak*res.Peak, res.GoodputOverPeak, res.MinWindowOverPeak)
	tw.Flush()
	verdict := "PASS"
	if !res.Pass {
		verdict = "FAIL"
	}
	fmt.Fprintf(stdout, "flood of %.0f s: %.2f%% retransmitted, %d dropped in queues; largest node %.0f MiB (cap %d); %d lookups, %d failed, p99 %.1f ms, max %.1f ms: %s\n",
		res.Seconds, 100*res.Retransmitted, res.QueueDrops, res.MaxRSSMB, res.MemCapMB, res.Lookups, res.LookupsFailed, res.LookupP99Ms, res.LookupMaxMs, verdict)
	if *asJSON {
		if err := printJSON(stdout, res); err != nil {
			return err
		}
	}
	if !res.Pass {
		return fmt.Errorf("bench flood: the flood's goodput, memory or lookups missed their bounds")
	}
	return nil
}
