package exp

import (
	"os"
	"reflect"
	"testing"
)

// TestTapestryVsChordQuick runs vs-chord as CI's quick run does: both
// systems get every object for both sets of clients, the mesh passes the
// checker, and the figures are sane: no get beats one round trip to the
// nearer copy, each reaches at least the holder, and each set has its
// ratio. The same seed twice gives the same figures.
func TestTapestryVsChordQuick(t *testing.T) {
	t.Parallel() // a simulation on one goroutine: go test runs two at once on two cores
	cfg := TapestryConfig{Seed: 1, Experiment: "vs-chord", Quick: true}
	if testing.Verbose() {
		cfg.Log = os.Stderr
	}
	res, err := RunTapestry(cfg)
	if err != nil {
		t.Fatal(err)
	}
	v := res.TapestryVsChord
	if v.VsChordNodes != 256 || v.VsChordObjects != 300 || len(v.VsChordRows) != 6 {
		t.Fatalf("%d nodes, %d objects, %d rows: want 256, 300, 6", v.VsChordNodes, v.VsChordObjects, len(v.VsChordRows))
	}
	if res.Violations != 0 {
		t.Errorf("violations: %v", res.Violated)
	}
	direct := map[string]VsChordRow{}
	for _, r := range v.VsChordRows {
		if r.System == vsDirect {
			direct[r.Clients] = r
		}
	}
	for _, r := range v.VsChordRows {
		t.Logf("%s clients, %s: median %.0f ms, p90 %.0f ms, %.2f nodes, %d failed", r.Clients, r.System, r.MedianMs, r.P90Ms, r.Nodes, r.Failed)
		if r.Failed != 0 || r.Count != v.VsChordObjects {
			t.Errorf("%s clients, %s: %d got, %d failed: want all %d", r.Clients, r.System, r.Count, r.Failed, v.VsChordObjects)
		}
		if r.MedianMs < direct[r.Clients].MedianMs || r.P90Ms < r.MedianMs {
			t.Errorf("%s clients, %s: median %.1f ms, p90 %.1f ms: under the direct RTT's median %.1f, or p90 under median", r.Clients, r.System, r.MedianMs, r.P90Ms, direct[r.Clients].MedianMs)
		}
		if r.Nodes < 1 || r.Nodes > 12 {
			t.Errorf("%s clients, %s: %.2f nodes a get, want 1 to 12", r.Clients, r.System, r.Nodes)
		}
	}
	if v.VsChordRandomRatio == 0 || v.VsChordNearRatio == 0 || v.VsChordPointers < 2 {
		t.Errorf("ratios %.2f random, %.2f near, %.1f pointers per object: want both ratios, and at least the roots' two", v.VsChordRandomRatio, v.VsChordNearRatio, v.VsChordPointers)
	}
	cfg.Log = nil
	again, err := RunTapestry(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(v, again.TapestryVsChord) {
		t.Errorf("seed 1 twice gave two results:\n%+v\n%+v", v, again.TapestryVsChord)
	}
}
