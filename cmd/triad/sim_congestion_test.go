package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sim congestion without --scheme runs every figure's points and ends with
// the summary as JSON, with the keys the issue names; --plot draws them.
func TestSimCongestionPrintsTheSummary(t *testing.T) {
	var out bytes.Buffer
	plot := filepath.Join(t.TempDir(), "congestion.svg")
	args := []string{"--peers", "16", "--warmup", "500ms", "--measure", "1s", "--json", "-q", "--plot", plot}
	if err := runSimCongestion(args, &out, os.Stderr); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var sum map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil {
		t.Fatalf("last line is not JSON: %v\n%s", err, out.String())
	}
	for _, k := range []string{"collapse_ratio", "marking_min_over_peak", "marking_retransmit_fraction", "fairness_cut", "wall_seconds", "figure4", "figure5", "fairness"} {
		if _, ok := sum[k]; !ok {
			t.Errorf("the summary has no %s", k)
		}
	}
	if n := len(sum["figure4"].([]any)); n != 4*7 {
		t.Errorf("%d points in Figure 4, want 4 schemes at 7 loads", n)
	}
	if b, err := os.ReadFile(plot); err != nil || !bytes.Contains(b, []byte("<svg")) {
		t.Errorf("no figure drawn: %v", err)
	}
	for _, bad := range [][]string{{"--scheme", "tcp"}, {"--crossload", "0.95", "--scheme", "loss"}, {"--peers", "1"}, {"--threshold", "0"}, {"--threshold", "200"}, {"--threshold", "NaN"}, {"--min-rto", "0s"}} {
		if err := runSimCongestion(bad, &bytes.Buffer{}, &bytes.Buffer{}); err == nil {
			t.Errorf("%v: accepted", bad)
		}
	}
}
