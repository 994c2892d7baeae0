package exp

import "testing"

// Every scenario holds on three seeds: a clean restart moves nothing, a
// returning host receives only what was written to its range while it was
// down (at most 1.2x), a new host pulls no more than its range, a wiped
// host's copies and new range are made again within the time its repair
// budget allows (plus the time to notice and settle), and after a partition every
// object is back at 2 copies on its replica set.
func TestPassingToneScenarios(t *testing.T) {
	t.Parallel() // a simulation on one goroutine: go test runs two at once on two cores
	if testing.Short() {
		t.Skip("about 10 s")
	}
	for seed := uint64(1); seed <= 3; seed++ {
		for _, sc := range Scenarios {
			res, err := RunPassingTone(PassingToneConfig{Scenario: sc, Seed: seed})
			if err != nil {
				t.Fatal(err)
			}
			if !res.Pass {
				t.Errorf("seed %d, %s: moved %d bytes, needed %d, %d objects under 2 copies, whole after %.0fs (budget allows %.0fs + %.0fs)",
					seed, sc, res.BytesMoved, res.BytesNeeded, res.UnderReplicated, res.WholeAfterSecs, res.BudgetSecs, res.SlackSecs)
			}
		}
	}
}

// The liars scenario fails without audits: the liars' neighbours trust
// their trees, the objects they acknowledged stay at one honest copy, and
// the disk failure beside the first liar loses some (issue 27).
func TestLiarsScenarioNeedsAudits(t *testing.T) {
	t.Parallel() // a simulation on one goroutine: go test runs two at once on two cores
	if testing.Short() {
		t.Skip("about 10 s")
	}
	res, err := RunPassingTone(PassingToneConfig{Scenario: "liars", Seed: 1, Objects: 400, Audits: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("without audits: %d lost, %d under 2 honest copies at the end", res.Lost, res.UnderReplicated)
	if res.Pass || res.Lost == 0 {
		t.Errorf("the liars scenario loses nothing without audits (%d under at the end)", res.UnderReplicated)
	}
}
