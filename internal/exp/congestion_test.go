package exp

import (
	"testing"
	"time"

	"triad/internal/cc"
)

func congestionPoint(t *testing.T, r CongestionRun) CongestionPoint {
	t.Helper()
	r.Seed, r.Warmup, r.Measure = 1, 4*time.Second, 8*time.Second
	p, err := RunCongestion(r)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%-12s offered %3.0f cross-load %2.0f%%: %5.1f req/s per peer, %.3f%% retransmitted, %6.0f ms, %d dropped in queues",
		p.Scheme, p.Offered, 100*p.CrossLoad, p.Throughput, 100*p.RetransmitFraction, p.DelayMs, p.Dropped)
	return p
}

// The congestion paper's Figure 4 on its 128-peer setup: without control
// the ring carries what is offered up to its capacity and less past it
// (the sources' retransmissions crowd out the requests already half way);
// with marking it stays near the peak past the capacity, with next to no
// retransmissions; back-pressure drops nothing.
func TestCongestionCollapseAndMarking(t *testing.T) {
	t.Parallel() // a simulation on one goroutine: go test runs two at once on two cores
	if testing.Short() {
		t.Skip("simulates 128 peers for 12 s per point")
	}
	peak := congestionPoint(t, CongestionRun{Scheme: cc.None, Offered: 60})
	over := congestionPoint(t, CongestionRun{Scheme: cc.None, Offered: 90})
	if peak.Throughput < 55 || over.Throughput > 0.6*peak.Throughput {
		t.Errorf("without control: %.1f at 60, %.1f at 90 requests/s per peer: no collapse", peak.Throughput, over.Throughput)
	}
	m := congestionPoint(t, CongestionRun{Scheme: cc.Marking, Offered: 90})
	if m.Throughput < 0.9*peak.Throughput || m.RetransmitFraction > 0.002 || m.Marked == 0 {
		t.Errorf("marking at 90: %.1f (peak %.1f), %.3f%% retransmitted, %d marked", m.Throughput, peak.Throughput, 100*m.RetransmitFraction, m.Marked)
	}
	b := congestionPoint(t, CongestionRun{Scheme: cc.BackPressure, Offered: 90})
	if b.Dropped != 0 || b.Throughput < 0.9*peak.Throughput {
		t.Errorf("back-pressure at 90: %d dropped, %.1f (peak %.1f)", b.Dropped, b.Throughput, peak.Throughput)
	}
	// The fairness term evens the sources' rates out on mixed links
	// (§V-D): γ = 16 cuts their mean deviation by 40% or more.
	fair0 := congestionPoint(t, CongestionRun{Setup: Mixed, Scheme: cc.Marking, Offered: ElasticLoad})
	fair16 := congestionPoint(t, CongestionRun{Setup: Mixed, Scheme: cc.Marking, Offered: ElasticLoad, Gamma: 16})
	if cut := 1 - fair16.RateDeviation/fair0.RateDeviation; cut < 0.4 {
		t.Errorf("gamma 16 cut the rates' deviation by %.0f%% (%.3f against %.3f)", 100*cut, fair16.RateDeviation, fair0.RateDeviation)
	}
	// Under cross-load, back-pressure holds requests in the queues far
	// longer than marking lets them wait (Figure 5(c)).
	mc := congestionPoint(t, CongestionRun{Setup: Mixed, Scheme: cc.Marking, Offered: ElasticLoad, CrossLoad: 0.1})
	bc := congestionPoint(t, CongestionRun{Setup: Mixed, Scheme: cc.BackPressure, Offered: ElasticLoad, CrossLoad: 0.1})
	if bc.DelayMs < 2*mc.DelayMs || bc.Outstanding < 2*mc.Outstanding {
		t.Errorf("10%% cross-load: back-pressure %.0f ms and %.1f in flight, marking %.0f ms and %.1f", bc.DelayMs, bc.Outstanding, mc.DelayMs, mc.Outstanding)
	}
}

// A seed fixes a run: the same point twice gives the same figures.
func TestCongestionIsReproducible(t *testing.T) {
	r := CongestionRun{Seed: 7, Setup: Mixed, Scheme: cc.Marking, Offered: 90, CrossLoad: 0.05, Peers: 32, Warmup: time.Second, Measure: 2 * time.Second}
	a, err := RunCongestion(r)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := RunCongestion(r)
	if a != b {
		t.Fatalf("two runs of seed 7:\n%+v\n%+v", a, b)
	}
	if a.Throughput == 0 {
		t.Fatal("nothing acknowledged")
	}
}

// The run's threshold and timeout floor reach every peer: a higher t marks
// fewer requests (a quarter fewer at least), and a higher floor times fewer of the requests a paused
// peer holds out.
func TestCongestionThresholdAndMinRTO(t *testing.T) {
	r := CongestionRun{Seed: 3, Setup: Mixed, Scheme: cc.Marking, Offered: ElasticLoad, CrossLoad: 0.1, Peers: 128, Warmup: 2 * time.Second, Measure: 4 * time.Second}
	base, err := RunCongestion(r)
	if err != nil {
		t.Fatal(err)
	}
	r.Threshold = 100
	high, err := RunCongestion(r)
	if err != nil {
		t.Fatal(err)
	}
	r.Threshold, r.MinRTO = 0, 5*time.Second
	slow, err := RunCongestion(r)
	if err != nil {
		t.Fatal(err)
	}
	if base.Threshold != 20 || high.Threshold != 100 || slow.MinRTOMs != 5000 || base.MinRTOMs != 1000 {
		t.Errorf("points record t %g, %g and floors %d, %d ms", base.Threshold, high.Threshold, base.MinRTOMs, slow.MinRTOMs)
	}
	t.Logf("t 20, 1 s: %d marked, %.2f%% retransmitted; t 100: %d marked; 5 s floor: %.2f%% retransmitted",
		base.Marked, 100*base.RetransmitFraction, high.Marked, 100*slow.RetransmitFraction)
	if 4*high.Marked >= 3*base.Marked {
		t.Errorf("t = 100 marked %d requests, t = 20 %d", high.Marked, base.Marked)
	}
	if base.RetransmitFraction < 0.01 || slow.RetransmitFraction >= base.RetransmitFraction/2 {
		t.Errorf("a 5 s floor retransmitted %.3f, a 1 s floor %.3f", slow.RetransmitFraction, base.RetransmitFraction)
	}
}
