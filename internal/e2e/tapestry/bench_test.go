package tapestry_test

import (
	"encoding/json"
	"os/exec"
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
	out, err := exec.Command(bin, "bench", "tapestry", "--count", "20000", "--rounds", "1", "--target", "1", "--dir", t.TempDir(), "--json").Output()
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var res struct {
		Rounds []struct {
			PerSecond float64 `json:"messages_per_s"`
			Failed    uint64  `json:"failed"`
		} `json:"rounds"`
		Idle float64 `json:"idle_hop_rtt_p50_ms"`
		Pass bool    `json:"pass"`
	}
	if jerr := json.Unmarshal([]byte(lines[len(lines)-1]), &res); jerr != nil {
		t.Fatalf("last line is not JSON (%v): %s", jerr, out)
	}
	if err != nil || !res.Pass || len(res.Rounds) != 1 || res.Rounds[0].Failed != 0 || res.Rounds[0].PerSecond <= 0 || res.Idle <= 0 {
		t.Errorf("bench tapestry: %v\n%s", err, out)
	}
	t.Logf("%.0f messages/s, idle hop round trip %.3f ms", res.Rounds[0].PerSecond, res.Idle)
}
