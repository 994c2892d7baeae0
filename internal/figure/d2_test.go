package figure

import (
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"triad/internal/exp"
)

// d2Result is a made-up run of avail and balance (locality and perf have
// unexported types), with d2 never failing a task at inter 1 s (a zero on
// Fig. 6's log axis).
func d2Result() exp.D2Result {
	res := exp.D2Result{Trials: 2, InterSeconds: []float64{1, 10, 60},
		Unavail:         map[string][]float64{"block": {0.004, 0.006, 0.01}, "file": {0.003, 0.005, 0.009}, "d2": {0, 0.0001, 0.0002}},
		GroupsPerTask:   map[string][]float64{"block": {11, 17, 42}, "d2": {1, 1, 1.05}},
		ImbalanceHourly: map[string][]float64{"d2": {0.2, 0.19, 0.18}, "block": {0.5, 0.52, 0.54}, "file": {0.6, 0.6, 0.6}, "block+balancing": {0.22, 0.21, 0.2}},
	}
	return res
}

// A run is drawn as SVG with a panel per figure of the experiments that
// ran, Fig. 6 on a log axis saying where its zero is drawn; with a seeded
// quick locality run's Fig. 2 added, as a PNG of two rows; a locality
// run alone as Fig. 2 alone; and a run with nothing to draw is refused.
func TestD2Figures(t *testing.T) {
	dir := t.TempDir()
	res := d2Result()
	path := filepath.Join(dir, "d2.svg")
	if err := D2(res, path); err != nil {
		t.Fatal(err)
	}
	texts := svgTexts(t, path)
	for prefix, want := range map[string]int{"Fig. 2:": 0, "Fig. 6:": 1, "Table 2:": 1, "Fig. 11:": 1, "Figs. 7-8:": 0, "Fig. 9:": 0,
		"block+balancing": 1, "fraction of tasks failed (log scale)": 1} {
		if got := countPrefix(texts, prefix); got != want {
			t.Errorf("%q appears %d times, want %d (texts %q)", prefix, got, want, texts)
		}
	}
	if countPrefix(texts, "Fig. 6: task unavailability (2 trials) [0 drawn at the floor, 1e-05]") != 1 {
		t.Errorf("Fig. 6's title does not say where d2's zero is drawn: %q", texts)
	}

	loc, err := exp.RunD2(exp.D2Config{Seed: 1, Experiment: "locality", Quick: true})
	if err != nil {
		t.Fatal(err)
	}
	res.Locality = loc.Locality
	png := filepath.Join(dir, "d2.png")
	if err := D2(res, png); err != nil {
		t.Fatal(err)
	}
	checkPNG(t, png, 900, 700) // two rows of two panels
	if err := D2(loc, path); err != nil {
		t.Fatal(err)
	}
	if texts := svgTexts(t, path); countPrefix(texts, "Fig. 2: nodes met per user-hour (60 users)") != 1 || countPrefix(texts, "Fig. 6:") != 0 {
		t.Errorf("a locality run's figure is not Fig. 2 alone: %q", texts)
	}

	if err := D2(exp.D2Result{}, filepath.Join(dir, "none.svg")); err == nil {
		t.Error("drew a run with no experiment")
	}
}

// checkPNG fails unless path is a PNG at least w by h pixels.
func checkPNG(t *testing.T, path string, w, h int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if img.Bounds().Dx() < w || img.Bounds().Dy() < h {
		t.Errorf("%s is %v, want at least %dx%d", path, img.Bounds(), w, h)
	}
}
