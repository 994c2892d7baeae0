package tapestry_test

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"triad/internal/e2e"
)

// TestChaosTapestry runs `triad chaos --tapestry` for 30 s of churn (a
// kill or a start every 5 s, lifetimes of 60 s on average: Fig. 23)
// among 16 real node processes under 20 locates a second: at least 95%
// of the locates succeed (§VII: "~5% of queries fail" on PlanetLab), and
// within 60 s of the churn's end every node locates every object. The
// command holds itself to both and exits 1 past either; the test also
// reads its JSON line, so a run that churned nothing cannot pass.
func TestChaosTapestry(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 16 processes and churns them for 30 s; skipped in -short mode")
	}
	cmd := exec.Command(e2e.Build(t), "chaos", "--tapestry", "--duration", "30s", "--dir", t.TempDir(), "--json")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	t.Logf("triad chaos --tapestry --duration 30s:\n%s", out)
	if err != nil {
		t.Fatalf("triad chaos --tapestry: %v\n%s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var res struct {
		Kills, Locates  int
		Success         float64
		Recovered       bool
		RecoverySeconds float64 `json:"recovery_seconds"`
		Loops           uint64
		Pass            bool
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
		t.Fatalf("last line is not JSON: %v", err)
	}
	switch {
	case res.Kills == 0 || res.Locates < 300:
		t.Errorf("%d kills and %d locates in 30 s: the loop did not churn under load", res.Kills, res.Locates)
	case res.Success < 0.95:
		t.Errorf("%.2f%% of %d locates succeeded during the churn, want >= 95%%", 100*res.Success, res.Locates)
	case !res.Recovered || res.RecoverySeconds > 60:
		t.Errorf("every object located from every node %.1fs after the churn (recovered %v), want within 60 s", res.RecoverySeconds, res.Recovered)
	case res.Loops > 0:
		t.Errorf("%d routes looped", res.Loops)
	case !res.Pass:
		t.Errorf("the run says it did not pass")
	}
}
