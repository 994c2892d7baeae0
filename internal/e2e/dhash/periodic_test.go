package dhash_test

import (
	"testing"
	"time"

	"triad/internal/e2e"
	"triad/internal/wire"
)

// TestPeriodicDurabilitySurvivesKills runs 4 nodes with periodic
// durability and a period far longer than the test (--sync-period 10s): a
// node acknowledges copies once written, before any group commit. A
// SIGKILL of every node at once, right after the puts, keeps them all:
// the kernel holds what was written (only a power cut loses the last
// period; TestPowerLossWithPeriodicSync in internal/store/disk). Every
// block is read back through every node after all restart. The puts, one
// after another, take far less than one period: none waited for a commit.
func TestPeriodicDurabilitySurvivesKills(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 4 processes; skipped in -short mode")
	}
	d := e2e.StartDHash(t, 4, "--sync-period", "10s")
	r := e2e.NewRand(t)
	var blocks []e2e.Block
	puts := time.Now()
	for i := range 40 {
		blocks = append(blocks, d.Put(d.Nodes[i%4], e2e.RandomBytes(r, 100+r.IntN(4000)), wire.RedundancyReplicas))
	}
	if took := time.Since(puts); took >= 10*time.Second {
		t.Fatalf("40 puts one after another took %v: they waited for the 10 s group commit", took)
	}
	start := time.Now()
	for _, p := range d.Nodes {
		p.Crash(t)
	}
	t.Logf("%d blocks put; every node SIGKILLed %v after the last put", len(blocks), time.Since(start).Round(time.Millisecond))
	for i := range d.Nodes {
		d.Restart(i)
	}
	d.WaitLists("after all restarted", 30*time.Second)
	d.MustGetAll("after every node was killed at once", d.Nodes, blocks)
}
