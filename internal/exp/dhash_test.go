package exp

import (
	"testing"
	"time"
)

// TestDHashLatencyShape runs the DHash++ comparisons on a 300-node ring (the
// 2,048-node run is `triad sim dhash`, in CI) and checks the three
// claims hold there too, with no failed lookup or get.
func TestDHashLatencyShape(t *testing.T) {
	cfg := DefaultDHashConfig()
	cfg.Nodes = 300
	cfg.Samples = []int{1, 16}
	cfg.Lookups = 500
	cfg.Blocks = 100
	cfg.Settle = 2 * time.Minute
	res, err := RunDHash(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range res.Rows {
		if row.Failed > 0 || row.Count == 0 {
			t.Errorf("%s: %d measured, %d failed", row.Name, row.Count, row.Failed)
		}
	}
	if res.RecursiveOverIter > 0.7 {
		t.Errorf("recursive lookups take %.2f of iterative ones, want <= 0.7", res.RecursiveOverIter)
	}
	if res.PNS16Cut < 0.3 {
		t.Errorf("PNS 16 cuts median lookup latency by %.0f%%, want >= 30%%", 100*res.PNS16Cut)
	}
	if res.IntegratedOverDirect > 1.5 {
		t.Errorf("PNS + integration lookups take %.2f x the direct RTT, want <= 1.5", res.IntegratedOverDirect)
	}
	if !res.Pass {
		t.Errorf("result not marked as passing: %+v", res)
	}
}
