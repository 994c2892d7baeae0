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

// TestSettledRingSendsNoProbes: the lookups that look for another ring
// (probeOtherRing) stop once each peer asked through is found on the
// node's own ring; sent every link round through the node's bootstrap, as
// before, 200 nodes spent 4.5 times the lookup messages of their reads
// on them, and sim d2's perf experiment missed its lookup-messages
// threshold (issue 30's 10x fell to 2.6x).
func TestSettledRingSendsNoProbes(t *testing.T) {
	c := newCluster(t, 74, 16, still(), uniform)
	probes := func() (n uint64) {
		for _, h := range c.hosts {
			n += c.node(h).Stats.RingProbeMsgs
		}
		return n
	}
	c.s.RunFor(10 * c.cfg.FixLinks)
	before := probes()
	c.s.RunFor(20 * c.cfg.FixLinks)
	if after := probes(); after != before {
		t.Errorf("a settled ring sent %d ring probes in 20 link rounds, want 0", after-before)
	}
}
