package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sim tapestry --plot writes the figures of the experiments that ran and
// says so; the JSON line stays the last; an experiment with no figure is
// refused with --plot before it runs.
func TestSimTapestryPlot(t *testing.T) {
	dir := t.TempDir()
	plot := filepath.Join(dir, "rdp.svg")
	var out bytes.Buffer
	args := []string{"--experiment", "rdp", "--quick", "--nodes", "48", "--seed", "3", "--json", "-q", "--plot", plot}
	if err := runSimTapestry(args, &out, os.Stderr); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "figure written to "+plot) {
		t.Errorf("the run does not say where the figure went:\n%s", out.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var res map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
		t.Fatalf("last line is not JSON: %v", err)
	}
	if _, ok := res["Series"]; ok {
		t.Error("the series reached the JSON line")
	}
	b, err := os.ReadFile(plot)
	if err != nil || !bytes.Contains(b, []byte("<svg")) || !bytes.Contains(b, []byte("Fig. 13: ")) || bytes.Contains(b, []byte("Fig. 19: ")) {
		t.Errorf("%s: not an SVG of Figs. 13-14 only: %v", plot, err)
	}
	out.Reset()
	var errb bytes.Buffer
	err = runSimTapestry([]string{"--experiment", "insert", "--plot", filepath.Join(dir, "insert.png")}, &out, &errb)
	if err == nil || !strings.Contains(err.Error()+errb.String(), "draws no figure") || out.Len() != 0 {
		t.Errorf("--experiment insert --plot: %v, stdout %.200q", err, out.String())
	}
}
