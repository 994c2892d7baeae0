package figure

import (
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"triad/internal/exp"
)

// Each figure is drawn, in the format its file's extension names, from a
// result shaped like the simulator's; an empty result is an error, not an
// empty picture.
func TestFiguresDraw(t *testing.T) {
	dir := t.TempDir()
	draws := map[string]func(string) error{
		"ring.png": func(p string) error {
			return RingHops(exp.RingResult{Nodes: 1000, Vnodes: 1, HopCounts: []int{1, 40, 300, 900, 1200, 800, 200, 20}, MeanHops: 4.6}, p)
		},
		"dhash.png": func(p string) error {
			return DHashLatency(exp.DHashResult{Nodes: 2048, Rows: []exp.LatencyRow{{Name: "recursive, no PNS", MedianMs: 300, P90Ms: 450}, {Name: "get", MedianMs: 50, P90Ms: 90}}}, p)
		},
		"copies.png": func(p string) error {
			return ReplicaCDF(exp.TraceResult{Replicas: 2, SimDays: 365, ReplicaCDF: []float64{0, 0.006, 0.038, 0.3, 1}}, p)
		},
		"congestion.png": func(p string) error {
			pts := []exp.CongestionPoint{{Scheme: "none", Offered: 20, Throughput: 20}, {Scheme: "none", Offered: 80, Throughput: 31}, {Scheme: "marking", Offered: 20, Throughput: 20}, {Scheme: "marking", Offered: 80, Throughput: 66}}
			cross := []exp.CongestionPoint{{Scheme: "loss", CrossLoad: 0, Throughput: 80, DelayMs: 260}, {Scheme: "loss", CrossLoad: 0.1, Throughput: 34, RetransmitFraction: 0.08, DelayMs: 326}}
			return Congestion(exp.Congestion{Figure4: pts, Figure5: cross}, p)
		},
		"scenarios.svg": func(p string) error {
			return Scenarios([]exp.ScenarioResult{{Scenario: "transient", BytesMoved: 0, BytesNeeded: 0}, {Scenario: "wipe", BytesMoved: 1294336, BytesNeeded: 1081344}}, p)
		},
	}
	for name, draw := range draws {
		path := filepath.Join(dir, name)
		if err := draw(path); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if strings.HasSuffix(name, ".png") {
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			img, err := png.Decode(f)
			f.Close()
			if err != nil || img.Bounds().Dx() < 300 {
				t.Errorf("%s: %v, %v", name, err, img)
			}
		} else if b, err := os.ReadFile(path); err != nil || !strings.Contains(string(b), "<svg") {
			t.Errorf("%s is not SVG: %v", name, err)
		}
	}
	if err := RingHops(exp.RingResult{}, filepath.Join(dir, "x.png")); err == nil {
		t.Error("drew a ring with no lookups")
	}
	if err := Congestion(exp.Congestion{}, filepath.Join(dir, "z.png")); err == nil {
		t.Error("drew congestion with no runs")
	}
	if err := ReplicaCDF(exp.TraceResult{}, filepath.Join(dir, "y.png")); err == nil {
		t.Error("drew copies of no objects")
	}
}

// Draw picks the figure by the result's type, and has none for a type it
// does not know.
func TestDrawPicksTheFigure(t *testing.T) {
	dir := t.TempDir()
	if err := Draw(exp.Congestion{Figure4: []exp.CongestionPoint{{Scheme: "none", Offered: 20, Throughput: 20}}}, filepath.Join(dir, "c.svg")); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "c.svg")); err != nil || !strings.Contains(string(b), "<svg") {
		t.Errorf("no congestion figure: %v", err)
	}
	// An empty result is the figure's own error, not Draw's.
	for _, res := range []any{exp.RingResult{}, exp.TraceResult{}, exp.Congestion{}} {
		if err := Draw(res, filepath.Join(dir, "x.png")); err == nil || strings.Contains(err.Error(), "no figure of") {
			t.Errorf("%T: %v", res, err)
		}
	}
	if err := Draw(exp.D2ChaosResult{}, filepath.Join(dir, "y.png")); err == nil || !strings.Contains(err.Error(), "no figure of a exp.D2ChaosResult") {
		t.Errorf("a result without a figure: %v", err)
	}
}
