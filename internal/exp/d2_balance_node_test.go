package exp

import (
	"bytes"
	"testing"

	"triad/internal/d2/workload"
)

// TestNodeBalanceLowersImbalance: on internal/d2's node code, balancing
// moves nodes and lowers d2's storage imbalance well below the same ring's
// without balancing (where the volume's narrow key range sits on a node
// or two), and no stored block is lost. A small tree: the first 1,200
// entries of Go's src on 16 nodes over 3 hours.
func TestNodeBalanceLowersImbalance(t *testing.T) {
	if testing.Short() {
		t.Skip("hours of simulated time on three rings")
	}
	full, err := workload.Default()
	if err != nil {
		t.Fatal(err)
	}
	m := &workload.Manifest{Entries: full.Entries[:1200]} // a prefix of a depth-first walk is a tree
	cfg := D2Config{Seed: 1, Experiment: "balance", nodeBalance: &d2NodeBalanceSizes{Nodes: 16, Users: 1, Hours: 3, Warmup: 1}}
	var r D2Result
	if err := r.nodeBalance(cfg, m); err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	r.writeNodeBalance(&text)
	t.Log(text.String())
	nb := r.NodeBalance
	if nb.Blocks < 1000 {
		t.Fatalf("%d blocks: too few to balance", nb.Blocks)
	}
	if nb.WarmupMoves+nb.Moves == 0 {
		t.Error("no node moved")
	}
	on, off := nb.Imbalance["d2"], nb.Imbalance["d2-no-balancing"]
	if !(on < off/2) {
		t.Errorf("imbalance with balancing %.3f, without %.3f: want under half", on, off)
	}
	if nb.Violations > 0 {
		t.Errorf("%d stored blocks held by none of their successors: %v", nb.Violations, nb.violated)
	}
	if len(r.Checks) != 4 {
		t.Errorf("%d checks, want the 4 of the node-code balance run", len(r.Checks))
	}
}
