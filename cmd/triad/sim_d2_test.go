package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sim d2 --plot writes the figures of the experiments that ran, SVG or PNG
// by the extension, and says so; a path it could not write is refused
// before the run.
func TestSimD2Plot(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"d2.svg", "d2.png"} {
		plot := filepath.Join(dir, name)
		var out bytes.Buffer
		if err := runSimD2([]string{"--experiment", "locality", "--quick", "--seed", "1", "-q", "--plot", plot}, &out, os.Stderr); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), "figure written to "+plot) {
			t.Errorf("the run does not say where the figure went:\n%s", out.String())
		}
		b, err := os.ReadFile(plot)
		if err != nil || len(b) < 2_000 {
			t.Fatalf("%s: %d bytes, %v", plot, len(b), err)
		}
		if strings.HasSuffix(name, ".svg") && !bytes.Contains(b, []byte("Fig. 2: ")) {
			t.Errorf("%s has no Fig. 2", plot)
		}
		if strings.HasSuffix(name, ".png") && !bytes.HasPrefix(b, []byte("\x89PNG")) {
			t.Errorf("%s is not a PNG", plot)
		}
	}
	var out, errb bytes.Buffer
	err := runSimD2([]string{"--experiment", "locality", "--quick", "--plot", filepath.Join(dir, "nope", "d2.png")}, &out, &errb)
	if err == nil || !strings.Contains(err.Error()+errb.String(), "no folder") || out.Len() != 0 {
		t.Errorf("--plot into a missing folder: %v, stdout %.200q", err, out.String())
	}
}

// sim d2 --experiment chaos runs the chaos experiment (not part of all):
// its figures, then a JSON line with --json; --check fails exactly when
// an invariant was violated. The workload, trace and plot flags, which it
// does not use, are refused before a run, and --help describes it.
func TestSimD2Chaos(t *testing.T) {
	var out, errb bytes.Buffer
	err := runSimD2([]string{"--experiment", "chaos", "--quick", "--seed", "3", "-q", "--json", "--check"}, &out, &errb)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var res struct {
		Experiment string `json:"experiment"`
		Acked      int    `json:"acked"`
		Violations int    `json:"violations"`
	}
	if jerr := json.Unmarshal([]byte(lines[len(lines)-1]), &res); jerr != nil {
		t.Fatalf("the last line is not the JSON figures: %v\n%s", jerr, out.String())
	}
	if res.Experiment != "chaos" || res.Acked == 0 || !strings.Contains(out.String(), "violations: ") {
		t.Errorf("chaos run: %+v\n%s", res, out.String())
	}
	if (err != nil) != (res.Violations > 0) {
		t.Errorf("--check returned %v with %d violations", err, res.Violations)
	}
	for _, args := range [][]string{
		{"--experiment", "chaos", "--quick", "--tree", "."},
		{"--experiment", "chaos", "--quick", "--plot", filepath.Join(t.TempDir(), "chaos.png")},
		{"--experiment", "nope"},
	} {
		out.Reset()
		if err := runSimD2(args, &out, &errb); err == nil || out.Len() != 0 {
			t.Errorf("%v: %v, stdout %.200q", args, err, out.String())
		}
	}
	errb.Reset()
	if err := runSimD2([]string{"--help"}, &out, &errb); !strings.Contains(errb.String(), "--experiment chaos") || !strings.Contains(errb.String(), "all, or chaos") {
		t.Errorf("--help (%v) does not describe chaos:\n%s", err, errb.String())
	}
}
