package d2_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"triad/internal/d2"
	"triad/internal/deploy"
	"triad/internal/deploy/deploytest"
)

// TestTrace replays the scripts in testdata/trace (directives: see
// deploytest.Cluster.Run, and its d2-* ones) on hosts running D2 alone,
// driven by hand, one fresh cluster per script. D2 runs with its defaults
// (r = 3, stabilization every 30 s, sync every 5 minutes) but no load
// balancing, so that nodes stay at the positions the script gives them,
// except in the balance*.txt scripts, which show it (t = 4).
// Regenerate the expectations with
//
//	go test ./internal/d2 -run TestTrace -rewrite
//
// and read the diff: a changed trace is a changed protocol.
func TestTrace(t *testing.T) {
	datadriven.Walk(t, "testdata/trace", func(t *testing.T, path string) {
		o := traceOptions()
		if strings.HasPrefix(filepath.Base(path), "balance") {
			// The balance scripts run the load balancing (§6) they show.
			cfg := *o.D2
			cfg.Threshold = d2.DefaultConfig().Threshold
			o.D2 = &cfg
		}
		c := deploytest.New(o, 1)
		datadriven.RunTestAny(t, path, c.Run)
	})
}

// traceOptions are hosts that run D2 alone, without the ring, the block
// store or load balancing, whose owners take their hosts' own unsigned
// puts.
func traceOptions() deploy.Options {
	o := deploy.DefaultOptions()
	o.NoRing, o.Blocks = true, nil
	cfg := d2.DefaultConfig()
	cfg.Threshold = 0
	cfg.CheckPeers = false // the traces' puts are the hosts' own, unsigned
	o.D2 = &cfg
	return o
}
