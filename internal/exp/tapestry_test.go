package exp

import (
	"reflect"
	"testing"
)

// TestTapestryRDPSmall: a small mesh routes every pair and every locate,
// with no violation, and the same seed gives the same figures.
func TestTapestryRDPSmall(t *testing.T) {
	cfg := TapestryConfig{Seed: 3, Experiment: "rdp", Nodes: 48, Quick: true}
	a, err := RunTapestry(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if a.RDPNodePairs == 0 || a.RDPNodeFailed != 0 || a.RDPObjectLocates == 0 || a.RDPObjectFailed != 0 || a.Violations != 0 {
		t.Errorf("%d pairs (%d failed), %d locates (%d failed), violations %v", a.RDPNodePairs, a.RDPNodeFailed, a.RDPObjectLocates, a.RDPObjectFailed, a.Violated)
	}
	if a.RDPNodeMedian < 1 {
		t.Errorf("median route-to-node RDP %.2f: below 1, the measure is wrong", a.RDPNodeMedian)
	}
	b, err := RunTapestry(cfg)
	if err != nil {
		t.Fatal(err)
	}
	a.WallSeconds, b.WallSeconds = 0, 0
	if !reflect.DeepEqual(a, b) {
		t.Errorf("seed 3 twice gave two results:\n%+v\n%+v", a, b)
	}
}

// TestTapestryConfigValidate refuses an unknown experiment and a tiny mesh.
func TestTapestryConfigValidate(t *testing.T) {
	for _, c := range []TapestryConfig{{Experiment: "nope"}, {Experiment: "rdp", Nodes: 3}} {
		if c.Validate() == nil {
			t.Errorf("%+v validated", c)
		}
	}
	if err := DefaultTapestryConfig().Validate(); err != nil {
		t.Error(err)
	}
}

// TestTapestryRogue: insiders that forge pointers and removals mislead no
// locate on a small mesh: every locate of a real object ends at its
// server, none of a key nobody serves ends found, no list names a forged
// server, and the honest nodes counted the forged pointers they dropped.
func TestTapestryRogue(t *testing.T) {
	res, err := RunTapestry(TapestryConfig{Seed: 2, Experiment: "rogue", Nodes: 64, Quick: true})
	if err != nil {
		t.Fatal(err)
	}
	r := res.TapestryRogue
	if r.RogueLocates == 0 || r.RogueFound != r.RogueLocates || r.RogueNobodyFound != 0 || r.RogueListedForged != 0 || r.RogueLists == 0 {
		t.Errorf("found %d of %d, %d of %d of nobody's keys found, %d of %d lists with forged servers", r.RogueFound, r.RogueLocates,
			r.RogueNobodyFound, r.RogueNobodyLocates, r.RogueListedForged, r.RogueLists)
	}
	if r.RoguePointersForged == 0 || r.RogueRemovesRefused == 0 {
		t.Errorf("the honest nodes dropped %d forged pointers and refused %d removals", r.RoguePointersForged, r.RogueRemovesRefused)
	}
	if failed := res.Failed(); len(failed) > 0 {
		t.Errorf("checks failed: %+v", failed)
	}
	// The same seed, the same run: the pointer checks go out in an
	// order of their own, not a map's.
	again, err := RunTapestry(TapestryConfig{Seed: 2, Experiment: "rogue", Nodes: 64, Quick: true})
	if err != nil {
		t.Fatal(err)
	}
	if again.TapestryRogue != r {
		t.Errorf("seed 2 twice gave two runs:\n%+v\n%+v", r, again.TapestryRogue)
	}
}
