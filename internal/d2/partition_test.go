package d2_test

import (
	"testing"
	"time"
)

// TestPartitionHeals (issue 43): a partition splits the ring in two, each
// side closes its ring without the other; once the network heals, the
// two rings become one again (before, nothing merged them: two rings,
// each answering for every key, for good).
func TestPartitionHeals(t *testing.T) {
	for _, seed := range []uint64{71, 72, 73} {
		c := newCluster(t, seed, 12, still(), uniform)
		var a, b []int
		for i := range c.hosts {
			if i%2 == 0 {
				a = append(a, i)
			} else {
				b = append(b, i)
			}
		}
		c.s.Partition(a, b)
		c.s.RunFor(5 * time.Minute) // each side declares the other dead
		c.s.Heal()
		c.s.RunFor(20 * c.cfg.Stabilize)
		c.checkRing()
		if t.Failed() {
			t.Fatalf("seed %d: the ring is not whole %v after the partition healed", seed, 20*c.cfg.Stabilize)
		}
	}
}
