package exp

import (
	"encoding/json"
	"os"
	"testing"
	"time"

	"triad/internal/d2/workload"
)

// tinyPerf is a perf run small enough for a test: 40 nodes, 4 users, 3
// minutes of their traces.
func tinyPerf(t *testing.T, seed uint64) D2Result {
	t.Helper()
	m, err := workload.Default()
	if err != nil {
		t.Fatal(err)
	}
	cfg := D2Config{Seed: seed, Experiment: "perf", manifest: m,
		perfSizes: &d2PerfSizes{Nodes: []int{40}, Users: 4, Period: 3 * time.Minute, MaxGroups: 6}}
	if testing.Verbose() {
		cfg.Log = os.Stderr
	}
	res, err := RunD2(cfg)
	if err != nil {
		t.Fatal(err)
	}
	res.WallSeconds = 0
	return res
}

// TestD2PerfTiny: a seed gives the same figures; every read either
// arrived, failed or timed out, and none failed, nor did a lookup that
// measures hops; d2's lookup cache misses
// less than block's in seq; groups take longer on slower links; the speedups and figures the checks read are
// there.
func TestD2PerfTiny(t *testing.T) {
	a := tinyPerf(t, 3)
	if testing.Verbose() {
		a.WriteText(os.Stderr)
	}
	p := a.Perf
	if p == nil || p.Reads == 0 || len(p.Scenarios) != 3*len(perfKbps)*len(perfModes) {
		t.Fatalf("perf detail %+v", p)
	}
	for _, h := range p.Hops {
		if h.Failed > 0 || h.Mean <= 0 {
			t.Errorf("%d nodes %s: %d lookups failed, mean hops %.2f", h.Nodes, h.Placement, h.Failed, h.Mean)
		}
	}
	for _, s := range p.Scenarios {
		if s.OK+s.Failed+s.TimedOut != p.Reads || s.Groups != p.Groups {
			t.Errorf("%d nodes %d kbps %s %s: %d ok + %d failed + %d timed out of %d reads, %d of %d groups",
				s.Nodes, s.Kbps, s.Mode, s.Placement, s.OK, s.Failed, s.TimedOut, p.Reads, s.Groups, p.Groups)
		}
		if s.Failed > 0 {
			t.Errorf("%d nodes %d kbps %s %s: %d reads failed", s.Nodes, s.Kbps, s.Mode, s.Placement, s.Failed)
		}
	}
	// The link class takes effect: reads one after another are slower at
	// 384 kbps than at 1,500.
	for _, place := range perfPlace {
		fast, slow := p.find(40, 1500, "seq", place.String()), p.find(40, 384, "seq", place.String())
		if !(slow.GroupSecondsMean > fast.GroupSecondsMean) {
			t.Errorf("%s seq: groups take %.2f s at 384 kbps, %.2f s at 1,500", place, slow.GroupSecondsMean, fast.GroupSecondsMean)
		}
	}
	// Seq only: in para a group's first reads all miss the empty cache at
	// once, each starting its own lookup, so d2 gains less there.
	if d2, block := a.CacheMissRate["d2/40/seq"], a.CacheMissRate["block/40/seq"]; !(d2 < block) {
		t.Errorf("seq: cache miss d2 %.3f, block %.3f: want d2's lower", d2, block)
	}
	if len(a.Speedup) != 2*len(perfKbps)*len(perfModes) || a.LookupMsgsRatio <= 0 || a.HopsMean["d2"] <= 0 || a.MeanRTTms <= 0 {
		t.Errorf("figures missing: speedup %v, lookup msgs ratio %v, hops %v, mean RTT %v", a.Speedup, a.LookupMsgsRatio, a.HopsMean, a.MeanRTTms)
	}
	b := tinyPerf(t, 3)
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if string(ja) != string(jb) {
		t.Errorf("seed 3 twice gave different runs:\n%s\n%s", ja, jb)
	}
}

// TestPerfWorkloadGroups: access groups are cut where a user thinks for
// over a second, hold reads only, and D2's positions cut the volumes at
// equal counts, in key order.
func TestPerfWorkloadGroups(t *testing.T) {
	m, err := workload.Default()
	if err != nil {
		t.Fatal(err)
	}
	w := newPerfWorkload(m, 5, 3, 10*time.Minute, 1000)
	if w.Groups() < 3 || w.Reads() <= w.Groups() {
		t.Fatalf("%d groups, %d reads: want more", w.Groups(), w.Reads())
	}
	for _, u := range w.Users {
		for i, g := range u.Groups {
			if i > 0 && g.Think <= workload.MaxGap || len(g.Reads) == 0 {
				t.Errorf("user %d group %d: think %v, %d reads", u.ID, i, g.Think, len(g.Reads))
			}
		}
	}
	pos := perfPositions(placeD2, w, 50, 5)
	for i := 1; i < len(pos); i++ {
		if pos[i-1].Cmp(pos[i]) >= 0 {
			t.Fatalf("positions %d and %d out of order", i-1, i)
		}
	}
	if last := w.Volume[len(w.Volume)-1].ID(); pos[len(pos)-1] != last {
		t.Errorf("the last position is not the volumes' last key")
	}
}
