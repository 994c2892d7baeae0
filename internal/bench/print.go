package bench

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"
)

// The tables `triad bench NAME` and `triad chaos` print, beside the
// results they print.

// WriteText writes the run's table: the engine against the raw disk, or
// the reopening time of a --reopen run.
func (r StoreResult) WriteText(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	if r.Writers == 0 {
		fmt.Fprintf(tw, "reopen\t%d keys\t%.3f s\t\n", r.ReopenKeys, r.ReopenSeconds)
	} else {
		sync := time.Duration(r.SyncIntervalMS * 1e6)
		fmt.Fprintf(tw, "%d objects of %d bytes\twriters %d\treaders %d\tsync every %v\tstore hashes keys: %v\t\n", r.Objects, r.Size, r.Writers, r.Readers, sync, r.CheckKeys)
		fmt.Fprintf(tw, "\tMB/s\tobjects/s\tof raw disk\t\n")
		fmt.Fprintf(tw, "raw sequential write\t%.0f\t\t\t\n", r.RawWriteMBps)
		fmt.Fprintf(tw, "store write\t%.0f\t%.0f\t%.0f%%\t\n", r.WriteMBps, r.WriteObjs, 100*r.WriteRatio)
		fmt.Fprintf(tw, "raw sequential read\t%.0f\t\t\t\n", r.RawReadMBps)
		fmt.Fprintf(tw, "store random read\t%.0f\t%.0f\t%.0f%%\t\n", r.ReadMBps, r.ReadObjs, 100*r.ReadRatio)
		fmt.Fprintf(tw, "index catch-up\t%.3f s\t\t\t\n", r.IndexCatchUp)
		fmt.Fprintf(tw, "reopen\t%.3f s\t%d keys\t\t\n", r.ReopenSeconds, r.ReopenKeys)
	}
	tw.Flush()
}

// WriteText writes one run of the block-store benchmark as a table, and
// its failures.
func (r DHashResult) WriteText(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	transport := "plain TCP"
	if r.TLS {
		transport = "mutual TLS 1.3"
	}
	window := "copies through STP's window"
	if r.FixedWindow {
		window = "every copy at once"
	}
	var extra string
	if r.Replicas > 0 {
		extra += fmt.Sprintf(", k=%d copies", r.Replicas)
	}
	if r.CPUPerNode > 0 {
		extra += fmt.Sprintf(", each node in a CPU cgroup of %g cores", r.CPUPerNode)
	}
	if len(r.NodeFlags) > 0 {
		extra += ", nodes started with " + strings.Join(r.NodeFlags, " ")
	}
	fmt.Fprintf(w, "%d nodes on 127.0.0.1, %d-byte blocks, %d in flight, sent to %s, over %s, %s%s\n", r.Nodes, r.Size, r.Concurrency, r.Route, transport, window, extra)
	fmt.Fprintln(tw, "phase\tdone\tfailed\tops/s\tMB/s\tp50 ms\tp99 ms\t")
	phases := []struct {
		name string
		r    PhaseResult
	}{{"put", r.Put}, {"get", r.Get}}
	for _, p := range phases {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.0f\t%.2f\t%.2f\t%.2f\t\n", p.name, p.r.Done, p.r.Failed, p.r.OpsPerS, p.r.MBps, p.r.P50Ms, p.r.P99Ms)
	}
	tw.Flush()
	for _, p := range phases {
		if p.r.Failed > 0 {
			fmt.Fprintf(w, "%s: %d failed (figures not comparable); first errors:\n", p.name, p.r.Failed)
			for _, e := range p.r.Errors {
				fmt.Fprintf(w, "  %s\n", e)
			}
		}
	}
	r.writeExplain(w)
}

// costRow is a line of the explain table.
type costRow struct {
	name, format string
	of           func(Cost) float64
	client       bool // the load generator counts it too
}

// costRows are the explain table's lines: the kernel's counts, then the
// nodes' own counters and the allocations.
var costRows = []costRow{
	{"CPU µs", "%.1f", func(c Cost) float64 { return c.CPUMicros }, true},
	{"  of which in the kernel", "%.1f", func(c Cost) float64 { return c.SysMicros }, true},
	{"read-like syscalls", "%.2f", func(c Cost) float64 { return c.ReadSyscalls }, true},
	{"write-like syscalls", "%.2f", func(c Cost) float64 { return c.WriteSyscalls }, true},
	{"wake-ups (voluntary switches)", "%.2f", func(c Cost) float64 { return c.Wakeups }, true},
	{"preemptions", "%.2f", func(c Cost) float64 { return c.Preemptions }, true},
	{"network frames sent", "%.2f", func(c Cost) float64 { return c.FramesSent }, false},
	{"lookup hops", "%.2f", func(c Cost) float64 { return c.LookupHops }, false},
	{"fdatasyncs (block store)", "%.3f", func(c Cost) float64 { return c.Syncs }, false},
	{"heap allocations", "%.0f", func(c Cost) float64 { return c.Mallocs }, true},
}

// writeExplain writes the phases' use per operation, then the floor of
// a put; nothing for a run without --explain.
func (r DHashResult) writeExplain(w io.Writer) {
	put, get := r.Put.Explain, r.Get.Explain
	if put == nil || get == nil {
		return
	}
	fmt.Fprintf(w, "explain: per operation done, the %d node processes summed, and this load generator apart\n", r.Nodes)
	label := 0
	for _, row := range costRows {
		label = max(label, utf8.RuneCountInString(row.name))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%-*s\tput: nodes\tclient\tget: nodes\tclient\t\n", label, "")
	for _, row := range costRows {
		fmt.Fprintf(tw, "%-*s", label, row.name)
		for i, c := range []Cost{put.Nodes, put.Client, get.Nodes, get.Client} {
			cell := "-"
			if i%2 == 0 || row.client {
				cell = fmt.Sprintf(row.format, row.of(c))
			}
			fmt.Fprintf(tw, "\t%s", cell)
		}
		fmt.Fprintln(tw, "\t")
	}
	tw.Flush()
	if r.Floor != nil {
		r.Floor.writeFloor(w)
	}
}

// WriteText writes the table of the phases that ran, the OVER figures and
// each phase's first error.
func (r NNTPResult) WriteText(w io.Writer) {
	fmt.Fprintf(w, "NNTP server %s (%s), group %s, %d-byte articles, read by %s\n", r.Addr, r.Greeting, r.Group, r.SizeBytes, r.ReadBy)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "phase\tconns\tdone\tof\tfailed\tchecked\tart/s\tMB/s\tp50 ms\tp99 ms\t")
	for _, p := range r.Phases {
		name := p.Name
		if !p.QuickAck {
			name += " (no quickack)"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%.0f\t%.2f\t%.3f\t%.3f\t\n", name, p.Conns, p.Done, p.Offered, p.Failed, p.Checked, p.OpsPerS, p.MBps, p.P50Ms, p.P99Ms)
	}
	tw.Flush()
	if r.ReadAddr != "" {
		fmt.Fprintf(w, "reads from %s, which listed every article %s took %.3f s after the last was acknowledged\n", r.ReadAddr, r.Addr, r.ListedAfterSec)
	}
	if o := r.Over; o != nil {
		fmt.Fprintf(w, "OVER of the group: %d lines, %d bytes in %.4f s (median of %d): %.0f lines/s, %.1f MB/s\n", o.Lines, o.Bytes, o.MedianSeconds, o.Repeats, o.LinesPerS, o.MBps)
	}
	for _, p := range r.Phases {
		if p.FirstError != "" {
			fmt.Fprintf(w, "%s, %d conns: first error: %s\n", p.Name, p.Conns, p.FirstError)
		}
	}
}

// WriteText writes the ramp's and the flood's goodput and the verdict.
func (r FloodResult) WriteText(w io.Writer) {
	fmt.Fprintf(w, "%d nodes on 127.0.0.1, routed requests paced at %d kbit/s per node, %s\n", r.Nodes, r.UplinkKbps, r.Scheme)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "offered/s per node\tacknowledged/s, all nodes\t")
	for _, s := range r.Ramp {
		fmt.Fprintf(tw, "%.0f\t%.0f\t\n", s.Offered, s.Goodput)
	}
	fmt.Fprintf(tw, "flood %.0f\t%.0f (%.2f of the peak; least 5 s window %.2f)\t\n", r.Flood, r.GoodputOverPeak*r.Peak, r.GoodputOverPeak, r.MinWindowOverPeak)
	tw.Flush()
	verdict := "PASS"
	if !r.Pass {
		verdict = "FAIL"
	}
	fmt.Fprintf(w, "flood of %.0f s: %.2f%% retransmitted, %d dropped in queues; largest node %.0f MiB (cap %d); %d lookups, %d failed, p99 %.1f ms, max %.1f ms: %s\n",
		r.Seconds, 100*r.Retransmitted, r.QueueDrops, r.MaxRSSMB, r.MemCapMB, r.Lookups, r.LookupsFailed, r.LookupP99Ms, r.LookupMaxMs, verdict)
}

// Err is the flood's verdict: nil if it passed (goodput at least 80% of
// the unflooded peak, memory under the cap, no lookup failed or took
// over 1 s).
func (r FloodResult) Err() error {
	if !r.Pass {
		return fmt.Errorf("bench flood: the flood's goodput, memory or lookups missed their bounds")
	}
	return nil
}

// WriteText writes what the scenario measured.
func (r LimitsResult) WriteText(w io.Writer) {
	fmt.Fprintf(w, "server: %s\n", r.ServerVersion)
	fmt.Fprintf(w, "idle connections:   %d open (%d refused)\n", r.Idle, r.IdleRefused)
	fmt.Fprintf(w, "OVER 1-1000000:     %d lines read in %.2fs by one reader; the other read nothing (dropped by the server: %v)\n", r.OverLines, r.OverSeconds, r.SlowDropped)
	fmt.Fprintf(w, "normal client:      %d answers, %d failed; p50 %.2f ms, p99 %.2f ms, max %.2f ms\n", r.NormalOps, r.NormalFailed, r.NormalP50Ms, r.NormalP99Ms, r.NormalMaxMs)
	fmt.Fprintf(w, "server memory:      %.0f MB resident with the idle connections, %.0f MB peak (VmHWM) in the scenario; the feed before it peaked at %.0f MB in its own process\n", r.IdleRSSMB, r.PeakRSSMB, r.FeedRSSMB)
	fmt.Fprintf(w, "  of which, sampled: up to %.0f MB anonymous (heap, stacks), up to %.0f MB of mapped files (the overview database)\n", r.PeakAnonMB, r.PeakFileMB)
	if r.Err() == nil {
		fmt.Fprintln(w, "PASS: peak under 512 MB, every normal answer under 100 ms")
	}
}

// Err is the scenario's verdict: nil if the peak memory stayed under 512
// MB, every normal answer came in under 100 ms and the OVER reader got
// every line; else what missed.
func (r LimitsResult) Err() error {
	var bad []string
	if r.PeakRSSMB >= 512 {
		bad = append(bad, fmt.Sprintf("peak memory %.0f MB, want under 512", r.PeakRSSMB))
	}
	if r.NormalFailed > 0 || r.NormalOps == 0 {
		bad = append(bad, fmt.Sprintf("the normal client had %d failures of %d (%s)", r.NormalFailed, r.NormalOps+r.NormalFailed, r.FirstError))
	}
	if r.NormalMaxMs >= 100 {
		bad = append(bad, fmt.Sprintf("the slowest normal answer took %.1f ms, want under 100", r.NormalMaxMs))
	}
	if r.OverLines != r.Articles {
		bad = append(bad, fmt.Sprintf("the OVER reader got %d lines of %d", r.OverLines, r.Articles))
	}
	if len(bad) > 0 {
		return fmt.Errorf("bench limits: %s", strings.Join(bad, "; "))
	}
	return nil
}

// WriteText writes the build time and each case's cost.
func (r SyncResult) WriteText(w io.Writer) {
	fmt.Fprintf(w, "two stores built in %.1f s\n", r.BuildSeconds)
	for _, c := range r.Cases {
		fmt.Fprintf(w, "%-60s %6d queries %10d bytes  %d missing\n", c.Name, c.Queries, c.Bytes, c.Missing)
	}
}

// Err is the cases' verdict: nil if the agreeing cases found nothing
// missing within 512 queries and 1 MiB and the last found exactly its
// one key; else the cases out of bounds.
func (r SyncResult) Err() error {
	var bad []string
	for i, c := range r.Cases {
		last := i == len(r.Cases)-1
		switch {
		case !last && (c.Missing != 0 || c.Queries > 512 || c.Bytes > 1<<20):
			bad = append(bad, c.Name)
		case last && c.Missing != 1:
			bad = append(bad, c.Name)
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("bench sync: out of bounds: %q", bad)
	}
	return nil
}

// WriteText writes the kills, the puts and what read back.
func (r ChaosResult) WriteText(w io.Writer) {
	fmt.Fprintf(w, "chaos: %d nodes, %.0fs, %d kills (SIGKILL) and restarts\n", r.Nodes, r.Seconds, r.Kills)
	fmt.Fprintf(w, "puts: %d acknowledged, %d not (the writer moved on)\n", r.Acked, r.PutsFailed)
	fmt.Fprintf(w, "read back: %d of %d acknowledged blocks in %.1fs; lost: %d\n", r.Read, r.Acked, r.RecoverySeconds, r.Lost)
}

// Err is the run's verdict: nil if something was acknowledged and
// nothing acknowledged was lost.
func (r ChaosResult) Err() error {
	if r.Lost > 0 {
		return fmt.Errorf("chaos: %d acknowledged blocks lost (first %s)", r.Lost, r.FirstLost)
	}
	if r.Acked == 0 {
		return fmt.Errorf("chaos: no put was acknowledged")
	}
	return nil
}
