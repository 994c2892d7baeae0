package exp

import (
	"slices"
	"time"
)

// TapestrySeries is the data behind the paper's figures of a `triad sim
// tapestry` run, for `--plot` (internal/figure draws it). It stays out of
// the JSON line, which carries the summary only. A figure whose
// experiment did not run has no data.
type TapestrySeries struct {
	// NodeRDP is one point per pair of nodes routed both ways: the pair's
	// RTT and the round trip through the overlay over it (Fig. 13).
	NodeRDP []TapRDP
	// ObjectRDP is one point per successful locate of the rdp experiment:
	// the one-way latency to the server and the one-way RDP (Fig. 14).
	ObjectRDP []TapRDP
	// OptBase and Opt are the optim experiment's locates without and with
	// the extra pointers (k, l, m) = (1, 1, 1) (Fig. 15).
	OptBase, Opt []TapRDP
	// Massive is the success of routes around the massive failure and the
	// massive join (Figs. 19-20); Churn, under churn 1 and churn 2 (Figs.
	// 21-22). Nil if the experiment did not run.
	Massive, Churn *TapSuccess
}

// TapRDP is one route's stretch: Ms is the direct latency it is measured
// against (the RTT for a node, the one-way latency for an object).
type TapRDP struct{ Ms, RDP float64 }

// TapRDPBin is the RDPs of the routes whose direct latency falls in
// [Ms, Ms + the bin's width).
type TapRDPBin struct {
	Ms               float64
	Routes           int
	Min, Median, P90 float64
}

// TapRDPBins sorts pts into bins widthMs wide by direct latency and takes
// each non-empty bin's minimum, median and 90th percentile, as the paper
// plots them (§V-B2: "collected into 5-ms bins, with 90th percentile and
// median values calculated per bin").
func TapRDPBins(pts []TapRDP, widthMs float64) []TapRDPBin {
	byBin := map[int][]float64{}
	for _, p := range pts {
		b := int(p.Ms / widthMs)
		byBin[b] = append(byBin[b], p.RDP)
	}
	keys := make([]int, 0, len(byBin))
	for b := range byBin {
		keys = append(keys, b)
	}
	slices.Sort(keys)
	out := make([]TapRDPBin, 0, len(keys))
	for _, b := range keys {
		rdps := byBin[b]
		out = append(out, TapRDPBin{Ms: float64(b) * widthMs, Routes: len(rdps), Min: slices.Min(rdps),
			Median: percentile(rdps, 0.5), P90: percentile(rdps, 0.9)})
	}
	return out
}

// TapSuccess is the probe's routes of an experiment, per bucket of start
// time, with the events that the figure marks.
type TapSuccess struct {
	Bucket  time.Duration
	Buckets []TapBucket
	Events  []TapEvent
}

// TapBucket counts the routes started in [At, At + Bucket), At from the
// first bucket's start: those sent and those correct, to nodes and to
// objects.
type TapBucket struct {
	At                   time.Duration
	NodeOK, NodeSent     int
	ObjectOK, ObjectSent int
}

// TapEvent is a change of membership (a failure, a join, a churn phase)
// at At, on the buckets' clock.
type TapEvent struct {
	At    time.Duration
	Label string
}

// tapRDPs is the successful locates' points.
func tapRDPs(ls []locate) []TapRDP {
	var out []TapRDP
	for _, l := range ls {
		if l.ok {
			out = append(out, TapRDP{Ms: l.oneWayMs, RDP: l.rdp})
		}
	}
	return out
}

// success is the probe's counts over the buckets [from, to), with the
// events at the virtual times given.
func (p *probe) success(from, to int64, events []TapEvent) *TapSuccess {
	s := &TapSuccess{Bucket: p.bucket}
	start := time.Duration(from) * p.bucket
	for b := from; b < to; b++ {
		tb := TapBucket{At: time.Duration(b)*p.bucket - start}
		if c := p.node[b]; c != nil {
			tb.NodeOK, tb.NodeSent = c[0], c[1]
		}
		if c := p.obj[b]; c != nil {
			tb.ObjectOK, tb.ObjectSent = c[0], c[1]
		}
		s.Buckets = append(s.Buckets, tb)
	}
	for _, e := range events {
		s.Events = append(s.Events, TapEvent{At: e.At - start, Label: e.Label})
	}
	return s
}

// TapestryDraws reports whether experiment (a TapestryConfig.Experiment)
// runs one that `--plot` draws: rdp, optim, massive or churn.
func TapestryDraws(experiment string) bool {
	return experiment == "all" || slices.Contains([]string{"rdp", "optim", "massive", "churn"}, experiment)
}
