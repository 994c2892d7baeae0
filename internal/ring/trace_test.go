package ring_test

import (
	"testing"

	"github.com/cockroachdb/datadriven"

	"triad/internal/deploy"
	"triad/internal/deploy/deploytest"
)

// TestTrace replays the scripts in testdata/trace (directives: see
// deploytest.Cluster.Run) on hosts running the ring alone, one fresh
// cluster per script. Regenerate the expectations with
//
//	go test ./internal/ring -run TestTrace -rewrite
//
// and read the diff: a changed trace is a changed protocol.
func TestTrace(t *testing.T) {
	datadriven.Walk(t, "testdata/trace", func(t *testing.T, path string) {
		opts := deploy.DefaultOptions()
		opts.Blocks = nil
		c := deploytest.New(opts, 1)
		datadriven.RunTestAny(t, path, c.Run)
	})
}
