package exp

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"triad/internal/id"
	"triad/internal/wire"
)

// The checker counts only what was acknowledged: a copy kept short of the
// acknowledged expiry, a whole copy where a fragment was acknowledged,
// other bytes than were put, or a key with no copy anywhere are each a
// violation, and a ring that kept its puts has none (issue 27: it counted
// any object under a key as a copy and never read a key back).
func TestCheckerCountsOnlyWhatWasAcknowledged(t *testing.T) {
	cfg := DefaultDHashConfig()
	cfg.Nodes, cfg.Seed, cfg.Settle = 16, 7, 10*time.Second
	s, err := buildDHash(cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(7, 8))
	honest := &Checker{}
	puts := putBlocks(s, r, 4, 2000, wire.RedundancyReplicas, honest)
	for i, p := range puts {
		if p.key.IsZero() || len(p.holders) != 2 {
			t.Fatalf("put %d: key %v, holders %v", i, p.key, p.holders)
		}
	}
	pick := func(n int) int { return r.IntN(n) }
	honest.CheckCopies("after the puts")
	honest.CheckReads(s, "after the puts", pick)
	if len(honest.Violations) != 0 {
		t.Fatalf("a ring that kept its puts: %v", honest.Violations)
	}

	// The same copies, held against acknowledgements they do not meet.
	a := honest.acked
	lying := &Checker{}
	lying.acked = []ackedPut{a[0], a[1], a[2], a[3]}
	lying.acked[0].expiry = a[0].expiry.Add(time.Hour)
	lying.acked[1].fragments = true
	lying.acked[2].data = append([]byte("other bytes"), a[2].data...)
	lying.acked[3].key = id.Key([]byte("stored nowhere"))
	lying.CheckCopies("against the lies")
	lying.CheckReads(s, "against the lies", pick)
	want := []string{
		"acknowledged copy of " + a[0].key.Short() + " missing on " + string(a[0].holders[0].Addr) + ": kept until",
		"acknowledged copy of " + a[1].key.Short() + " missing on " + string(a[1].holders[0].Addr) + ": a whole copy where a fragment was acknowledged",
		"acknowledged " + a[2].key.Short() + " reads back other bytes",
		"acknowledged copy of " + id.Key([]byte("stored nowhere")).Short() + " missing on",
		"acknowledged " + id.Key([]byte("stored nowhere")).Short() + " does not read back",
	}
	all := strings.Join(lying.Violations, "\n")
	for _, w := range want {
		if !strings.Contains(all, w) {
			t.Errorf("no violation %q among:\n%s", w, all)
		}
	}
}
