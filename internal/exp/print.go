package exp

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// WriteText writes the run's table, and the invariant checker's verdict
// with Check, as `triad sim ring` prints them.
func (r RingResult) WriteText(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k string, v any) { fmt.Fprintf(tw, "%s\t%v\n", k, v) }
	row("nodes (hosts x vnodes)", fmt.Sprintf("%d x %d", r.Nodes, r.Vnodes))
	row("seed", r.Seed)
	if r.Fail > 0 {
		row("crashed at once", fmt.Sprintf("%.0f%%, ring healed in %.0fs", 100*r.Fail, r.RestabilizeSecs))
	}
	if r.Churn {
		row("churn", fmt.Sprintf("%d joins, %d deaths", r.ChurnJoins, r.ChurnDeaths))
	}
	row("initial stabilization", fmt.Sprintf("%.0fs", r.StabilizeSecs))
	row("lookups", r.Lookups)
	row("correct", fmt.Sprintf("%d (%.4f%%), %d failed", r.Correct, 100*r.CorrectFraction, r.Failed))
	row("mean hops", fmt.Sprintf("%.2f (%.2f x log2 N)", r.MeanHops, r.HopsPerLog2N))
	row("lookup latency p50 / p99", fmt.Sprintf("%.0f ms / %.0f ms (median RTT %.0f ms)", r.LatencyP50Ms, r.LatencyP99Ms, r.RTTMedianMs))
	row("iterative fallbacks", r.Fallbacks)
	row("events", fmt.Sprintf("%d (%.0f/s)", r.Events, r.EventsPerSec))
	row("virtual / wall time", fmt.Sprintf("%.0fs / %.1fs", r.VirtualSeconds, r.WallSeconds))
	row("trace hash", r.TraceHash)
	tw.Flush()
	r.Checked.writeText(w)
}

// Err is the invariant checker's verdict as an error: nil without Check or
// without a violation.
func (c Checked) Err() error {
	if c.Violations != nil && *c.Violations > 0 {
		return fmt.Errorf("the invariant checker found %d violations", *c.Violations)
	}
	return nil
}

// writeText writes the checker's verdict, if it ran: the line
// "violations: N" and each violation found.
func (c Checked) writeText(w io.Writer) {
	if c.Violations == nil {
		return
	}
	fmt.Fprintf(w, "invariant checks: %d\nviolations: %d\n", c.Checks, len(c.Violated))
	for _, v := range c.Violated {
		fmt.Fprintf(w, "  %s\n", v)
	}
}

// WriteText writes the latency table and the claims' verdicts, as `triad
// sim dhash` prints them.
func (r DHashResult) WriteText(w io.Writer) {
	fmt.Fprintf(w, "%d nodes, seed %d, median RTT between nodes %.0f ms\n\n", r.Nodes, r.Seed, r.RTTMedianMs)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "mode\tmedian ms\tp90 ms\thops\tcount\tfailed\t")
	for _, row := range r.Rows {
		hops := ""
		if row.MeanHops > 0 {
			hops = fmt.Sprintf("%.2f", row.MeanHops)
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%s\t%d\t%d\t\n", row.Name, row.MedianMs, row.P90Ms, hops, row.Count, row.Failed)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nrecursive / iterative       %.2f  (want <= 0.70)  %s\n", r.RecursiveOverIter, verdict(r.RecursiveOverIter > 0 && r.RecursiveOverIter <= 0.7))
	if _, ok := r.Row("recursive, no PNS"); ok {
		fmt.Fprintf(w, "PNS 16 cut vs no PNS        %.0f%%   (want >= 30%%)   %s\n", 100*r.PNS16Cut, verdict(r.PNS16Cut >= 0.3))
	} else {
		fmt.Fprintln(w, "PNS 16 cut vs no PNS        not measured (--pns has no 1)")
	}
	fmt.Fprintf(w, "PNS+integration / direct    %.2f  (want <= 1.50)  %s\n", r.IntegratedOverDirect, verdict(r.IntegratedOverDirect > 0 && r.IntegratedOverDirect <= 1.5))
	d := r.Durability
	fmt.Fprintf(w, "crash/restart of every holder of %d keys (%d hosts): lost: %d  (want 0)  %s\n", d.CrashKeys, d.CrashedHosts, d.Lost, verdict(d.Lost == 0))
	fmt.Fprintf(w, "disk failure of every holder of %d keys (%d hosts): %d gone  (no maintenance here: want them gone)  %s\n", d.WipedKeys, d.WipedHosts, d.WipedLost, verdict(d.WipedLost > 0))
	fmt.Fprintf(w, "wall time %.0fs, %d events\n", r.WallSeconds, r.Events)
	r.Checked.writeText(w)
}

// verdict is a check's word in a table: ok or FAIL.
func verdict(ok bool) string {
	if ok {
		return "ok"
	}
	return "FAIL"
}

// WriteText writes the scenario's line (bytes moved against needed, the
// time to whole, the verdict) and the checker's verdict, as `triad sim
// passingtone --scenario` prints them.
func (r ScenarioResult) WriteText(w io.Writer) {
	allows := ""
	if r.BudgetSecs > 0 {
		allows = fmt.Sprintf(" (the budget allows %.0fs, +%.0fs slack)", r.BudgetSecs, r.SlackSecs)
	}
	fmt.Fprintf(w, "%-9s moved %d bytes, needed %d (%.2fx): %s; every object at 2 copies %.0fs after%s; %d under at the end  %s\n",
		r.Scenario, r.BytesMoved, r.BytesNeeded, r.MovedRatio, r.Note, r.WholeAfterSecs, allows, r.UnderReplicated, verdict(r.Pass))
	if len(r.Violated) > 0 {
		r.Checked.writeText(w)
	}
}

// WriteText writes the trace's statistics, source saying where it came
// from.
func (st TraceStats) WriteText(w io.Writer, source string) {
	fmt.Fprintf(w, "trace (%s): %d hosts over %.0f days, %d transient failures, %d disk failures, %d hosts never lose a disk, %d never fail, %.1f online on average, at most %d disk failures within 8 hours\n",
		source, st.Hosts, st.Days, st.TransientFailures, st.DiskFailures, st.HostsNoDisk, st.HostsNoFailure, st.AvgOnline, st.MaxDiskIn8h)
}

// WriteText writes what the trace run found, as `triad sim passingtone`
// prints it after the trace's statistics.
func (r TraceResult) WriteText(w io.Writer) {
	fmt.Fprintf(w, "run: %d objects of %d MiB (64-byte stand-ins), k = %d, repair budget %d KiB/s per host, local maintenance every %v, global every %v, %.0f days simulated\n",
		r.Objects, r.ObjectBytes>>20, r.Replicas, r.Budget>>10, time.Duration(r.IntervalSec)*time.Second, time.Duration(r.SweepSec)*time.Second, r.SimDays)
	fmt.Fprintf(w, "membership: %s\n", r.Membership)
	fmt.Fprintf(w, "objects lost: %d\n", r.ObjectsLost)
	fmt.Fprintf(w, "expired repairs: %d (copies of the %d objects that expired during the run found on a disk that did not hold them at their expiry); %d expired before their repair's turn and were not fetched\n",
		r.ExpiredRepairs, r.ObjectsExpired, r.ExpiredNotRepaired)
	fmt.Fprintf(w, "durable copies per live object at the end (fraction with at most n):")
	for n, f := range r.ReplicaCDF {
		fmt.Fprintf(w, " %d:%.3f", n, f)
	}
	fmt.Fprintf(w, "\nrepaired: %d objects, %.1f GiB (%d handed over by global maintenance); %.1f repairs per disk failure; %d rounds, %d synchronizations\n",
		r.ObjectsRepaired, float64(r.BytesRepaired)/(1<<30), r.HandedOver, r.RepairsPerDisk, r.Rounds, r.Syncs)
	fmt.Fprintf(w, "wall time: %.0f s\n", r.WallSeconds)
}

// WriteText writes the points of a congestion run as tables, one per
// figure that ran.
func (r Congestion) WriteText(w io.Writer) {
	for _, t := range []struct {
		title string
		pts   []CongestionPoint
	}{{"Figure 4: 600 kbit/s peers, 20 ms apart", r.Figure4}, {"Figure 5: 600-1000 kbit/s, 5-15 ms, cross-load", r.Figure5}, {"Fairness: marking, 600-1000 kbit/s, 5-15 ms", r.Fairness}} {
		if len(t.pts) == 0 {
			continue
		}
		fmt.Fprintf(w, "%s\n", t.title)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "scheme\toffered/s\tcross-load\tgamma\treq/s per peer\tretransmitted\tdelay ms\tin flight\trate deviation\tdropped\t")
		for _, p := range t.pts {
			fmt.Fprintf(tw, "%s\t%.0f\t%.0f%%\t%.0f\t%.1f\t%.3f%%\t%.0f\t%.1f\t%.3f\t%d\t\n", p.Scheme, p.Offered, 100*p.CrossLoad, p.Gamma, p.Throughput,
				100*p.RetransmitFraction, p.DelayMs, p.Outstanding, p.RateDeviation, p.Dropped)
		}
		tw.Flush()
	}
}

// WriteText writes the summary of the whole experiment.
func (s CongestionSummary) WriteText(w io.Writer) {
	fmt.Fprintf(w, "\nsummary: without control, throughput at %.0f req/s per peer is %.2f of the peak (collapse_ratio)\n", DefaultLoads[len(DefaultLoads)-1], s.CollapseRatio)
	fmt.Fprintf(w, "         marking past the peak keeps %.2f of it, with %.3f%% retransmitted\n", s.MarkingMinOverPeak, 100*s.MarkingRetransmitFraction)
	fmt.Fprintf(w, "         at 10%% cross-load: marking carries %.2fx what loss does; back-pressure's delay is %.2fx marking's\n", s.MarkingOverLossThroughput, s.BackpressureOverMarkingDelay)
	fmt.Fprintf(w, "         gamma 16 cuts the mean deviation of the sources' rates by %.0f%% against gamma 0 (fairness_cut)\n", 100*s.FairnessCut)
	fmt.Fprintf(w, "         %.0f s of wall time\n", s.WallSeconds)
}

// SummaryJSON is the whole experiment's --json line: the summary's fields
// at the top, then the points.
func (r Congestion) SummaryJSON() any {
	return struct {
		CongestionSummary
		Figure4  []CongestionPoint `json:"figure4"`
		Figure5  []CongestionPoint `json:"figure5"`
		Fairness []CongestionPoint `json:"fairness"`
	}{r.Summary, r.Figure4, r.Figure5, r.Fairness}
}

// WriteText writes the figures of the experiments that ran and each
// threshold's verdict, as `triad sim tapestry` prints them.
func (r TapestryResult) WriteText(w io.Writer) {
	fmt.Fprintf(w, "sim tapestry, seed %d, experiment %s, quick %v\n", r.Seed, r.Experiment, r.Quick)
	if r.RDPNodes > 0 {
		fmt.Fprintf(w, "rdp: %d nodes, %d pairs routed both ways (%d failed): median RDP %.2f, far %.2f, near %.2f\n",
			r.RDPNodes, r.RDPNodePairs, r.RDPNodeFailed, r.RDPNodeMedian, r.RDPNodeMedianFar, r.RDPNodeMedianNear)
		fmt.Fprintf(w, "rdp: %d locates of objects on one server (%d failed): median one-way RDP %.2f wide area, %.2f local\n",
			r.RDPObjectLocates, r.RDPObjectFailed, r.RDPObjectMedianWide, r.RDPObjectMedianLocal)
	}
	if r.OptNodes > 0 {
		fmt.Fprintf(w, "optim: %d nodes: median RDP %.2f base, %.2f with (1,1,1); local p90 %.2f base, %.2f with; pointers per object %.1f base, %.1f with; %d locates failed\n",
			r.OptNodes, r.RDPObjectMedianBase, r.RDPObjectMedianOpt, r.RDPObjectP90LocalBase, r.RDPObjectP90LocalOpt, r.BasePointersPerObject, r.OptPointersPerObject, r.OptLocatesFailed)
	}
	for i, n := range r.InsertN {
		fmt.Fprintf(w, "insert: N = %d: %.0f bytes, %.2f s per insertion\n", n, r.InsertBytes[i], r.InsertSeconds[i])
	}
	for i, f := range r.ParallelFractions {
		fmt.Fprintf(w, "parallel: %.0f%% joining at once: median %.1f s, p90 %.1f s to converge\n", 100*f, r.ParallelMedianSeconds[i], r.ParallelP90Seconds[i])
	}
	if r.ParallelRuns > 0 {
		fmt.Fprintf(w, "parallel: %d runs, %d unconverged after 2 minutes\n", r.ParallelRuns, r.ParallelUnconverged)
	}
	if r.MassiveNodes > 0 {
		fmt.Fprintf(w, "massive: %d nodes: recovered in %v s (fail: node, object; join: node, object), lowest bucket success %.3f\n", r.MassiveNodes, r.MassiveRecover, r.MassiveMinSuccess)
	}
	if len(r.ChurnDetail) > 0 {
		fmt.Fprintf(w, "churn: success churn1 node %.4f object %.4f, churn2 node %.4f object %.4f\n", r.ChurnDetail[0], r.ChurnDetail[1], r.ChurnDetail[2], r.ChurnDetail[3])
	}
	r.TapestryVsChord.writeText(w)
	r.TapestryRogue.writeText(w)
	if r.BloomNegativeLookups > 0 {
		fmt.Fprintf(w, "bloom: %.4f false positives over %d lookups of absent keys\n", r.BloomFalsePositive, r.BloomNegativeLookups)
	}
	fmt.Fprintf(w, "violations: %d\n", r.Violations)
	for _, v := range r.Violated {
		fmt.Fprintf(w, "  %s\n", v)
	}
	for _, c := range r.Checks {
		fmt.Fprintf(w, "%-28s %10.3f  (want %s)  %s\n", c.Name, c.Value, c.Want, verdict(c.Pass))
	}
	fmt.Fprintf(w, "wall time %.0fs\n", r.WallSeconds)
}
