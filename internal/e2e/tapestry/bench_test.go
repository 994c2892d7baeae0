package tapestry_test

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"triad/internal/e2e"
)

// TestBenchTapestry: two real nodes route and acknowledge every message
// of a short run, and the figures the README quotes are printed.
func TestBenchTapestry(t *testing.T) {
	if testing.Short() {
		t.Skip("starts node processes")
	}
	bin := e2e.Build(t)
	port := e2e.ConsecutiveFreePorts(t, 2)
	out, err := exec.Command(bin, "bench", "tapestry", "--count", "20000", "--rounds", "1", "--target", "1", "--dir", t.TempDir(), "--json", "--port", fmt.Sprint(port)).Output()
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var res struct {
		Rounds []struct {
			PerSecond float64 `json:"messages_per_s"`
			Failed    uint64  `json:"failed"`
		} `json:"rounds"`
		Idle  float64  `json:"idle_hop_rtt_p50_ms"`
		Pass  bool     `json:"pass"`
		Nodes []string `json:"nodes"`
	}
	if jerr := json.Unmarshal([]byte(lines[len(lines)-1]), &res); jerr != nil {
		t.Fatalf("last line is not JSON (%v): %s", jerr, out)
	}
	if err != nil || !res.Pass || len(res.Rounds) != 1 || res.Rounds[0].Failed != 0 || res.Rounds[0].PerSecond <= 0 || res.Idle <= 0 {
		t.Errorf("bench tapestry: %v\n%s", err, out)
	}
	// --port sets the nodes' ports (issue 47: they could not be set).
	if want := []string{fmt.Sprintf("127.0.0.1:%d", port), fmt.Sprintf("127.0.0.1:%d", port+1)}; !slices.Equal(res.Nodes, want) {
		t.Errorf("bench tapestry --port %d ran nodes on %v, want %v", port, res.Nodes, want)
	}
	t.Logf("%.0f messages/s, idle hop round trip %.3f ms", res.Rounds[0].PerSecond, res.Idle)
}
