package exp

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
)

// perfChecks holds the perf figures to issue 30's thresholds, those the
// run's sizes allow: a threshold at 1,000 nodes needs a 1,000-node run,
// one across sizes needs 200 and 1,000 (--quick runs 200 only: it checks
// para at 1,500 kbps, d2's seq miss rate, the lookup messages, and hops at
// its own size against log2 N and uniform keys).
func (r *D2Result) perfChecks() {
	p := r.Perf
	has := func(n int) bool { return slices.Contains(p.Nodes, n) }
	if has(1000) {
		for _, kbps := range perfKbps {
			for _, mode := range perfModes {
				name := fmt.Sprintf("block/1000/%d/%s", kbps, mode)
				v := r.Speedup[name]
				r.check("speedup "+name, v, ">= 1.3", v >= 1.3)
			}
		}
		v := r.Speedup["block/1000/1500/seq"]
		r.check("speedup block/1000/1500/seq", v, ">= 1.9", v >= 1.9)
	}
	for _, n := range p.Nodes {
		name := fmt.Sprintf("block/%d/1500/para", n)
		v := r.Speedup[name]
		r.check("speedup "+name, v, "> 1", v > 1)
	}
	for _, n := range p.Nodes {
		name := fmt.Sprintf("d2/%d/seq", n)
		v := r.CacheMissRate[name]
		r.check("cache_miss "+name, v, "<= 0.2", v <= 0.2)
	}
	if has(200) && has(1000) {
		d := math.Abs(r.CacheMissRate["d2/1000/seq"] - r.CacheMissRate["d2/200/seq"])
		r.check("cache_miss d2 seq 1000 - 200", d, "|x| <= 0.05", d <= 0.05)
		v := r.CacheMissRate["block/1000/seq"]
		r.check("cache_miss block/1000/seq", v, ">= 0.4", v >= 0.4)
		rising := 1.0
		for i := 1; i < len(p.Nodes); i++ {
			a, b := r.CacheMissRate[fmt.Sprintf("block/%d/seq", p.Nodes[i-1])], r.CacheMissRate[fmt.Sprintf("block/%d/seq", p.Nodes[i])]
			rising = min(rising, b-a)
		}
		r.check("cache_miss block seq rise (least step)", rising, "> 0", rising > 0)
	}
	r.check("lookup_msgs_ratio", r.LookupMsgsRatio, ">= 10", r.LookupMsgsRatio >= 10)
	top := p.Nodes[len(p.Nodes)-1]
	log2 := math.Log2(float64(top))
	h := r.HopsMean["d2"]
	r.check(fmt.Sprintf("hops_mean d2 at %d", top), h, fmt.Sprintf("<= log2 N = %.2f", log2), h <= log2)
	r.check(fmt.Sprintf("hops_mean d2 / uniform at %d", top), h/math.Max(r.HopsMean["uniform"], 1e-9), "<= 1.5", h <= 1.5*r.HopsMean["uniform"])
}

// writePerf prints the perf run for people.
func (r D2Result) writePerf(w io.Writer) {
	p := r.Perf
	fmt.Fprintf(w, "perf: internal/d2 in the simulator, r = %d, nodes %v, %d users, %.0f min each (%d groups, %d reads), 10 s timeouts, %d transfers per para client; mean RTT %.0f ms at %d nodes (paper 90 ms)\n",
		perfReplicas, p.Nodes, p.Users, p.PeriodMinutes, p.Groups, p.Reads, perfMaxInFlight, r.MeanRTTms, p.Nodes[len(p.Nodes)-1])
	fmt.Fprintf(w, "perf: puts short of %d copies per size and placement %v\n", perfReplicas, p.StoreShort)
	for _, s := range p.Scenarios {
		fmt.Fprintf(w, "perf: %4d nodes %4d kbps %-4s %-5s groups %4d, mean %6.2f s; reads ok %5d failed %d timed out %d; cache miss %.3f (%d reads the gateway owned; without them %.3f); lookups %d, lookup msgs %d\n",
			s.Nodes, s.Kbps, s.Mode, s.Placement, s.Groups, s.GroupSecondsMean, s.OK, s.Failed, s.TimedOut,
			missRate(&s), s.Local, remoteMissRate(&s), s.Lookups, s.LookupMsgs)
		for _, e := range slices.Sorted(maps.Keys(s.Errors)) {
			fmt.Fprintf(w, "perf:   %d failed: %s\n", s.Errors[e], e)
		}
	}
	for _, n := range p.Nodes {
		for _, kbps := range perfKbps {
			fmt.Fprintf(w, "perf: speedup %4d nodes %4d kbps:", n, kbps)
			for _, mode := range perfModes {
				for _, base := range []string{"block", "file"} {
					fmt.Fprintf(w, "  %s/%s %.2f", mode, base, r.Speedup[fmt.Sprintf("%s/%d/%d/%s", base, n, kbps, mode)])
				}
			}
			fmt.Fprintln(w)
		}
	}
	fmt.Fprintf(w, "perf: cache miss, both links (without reads the gateway owned):")
	for _, n := range p.Nodes {
		for _, mode := range perfModes {
			for _, place := range perfPlace {
				name := fmt.Sprintf("%s/%d/%s", place, n, mode)
				fmt.Fprintf(w, " %s %.3f (%.3f)", name, r.CacheMissRate[name], r.CacheMissRemote[name])
			}
		}
	}
	for _, h := range p.Hops {
		fmt.Fprintf(w, "\nperf: %4d nodes %-5s mean lookup hops %.2f (%d lookups failed)", h.Nodes, h.Placement, h.Mean, h.Failed)
	}
	fmt.Fprintf(w, "\nperf: lookup messages block/d2 %.1f in seq, %.1f in all; mean hops at %d nodes d2 %.2f, uniform %.2f\n",
		r.LookupMsgsRatio, r.LookupMsgsRatioAll, p.Nodes[len(p.Nodes)-1], r.HopsMean["d2"], r.HopsMean["uniform"])
}
