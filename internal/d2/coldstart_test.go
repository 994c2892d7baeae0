package d2_test

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"time"

	"triad/internal/d2"
)

// TestColdRestart (issue 43): every node stops at once and comes back on
// the same disks, all together or one after another in a random order.
// Each has saved peers and none of them is on the ring, so before the
// cold-start rule none ever joined ("not on the ring yet", for good).
// Now the lowest reachable address founds the ring again and the others
// join it: within a few stabilization rounds of the last start every node
// is on one ring, exactly one founded it, and every block reads back.
func TestColdRestart(t *testing.T) {
	for _, staggered := range []bool{false, true} {
		for seed := uint64(61); seed < 64; seed++ {
			c := newCluster(t, seed, 12, still(), uniform)
			r := rand.New(rand.NewPCG(seed, 61))
			var blocks []block
			for i := 0; i < 40; i++ {
				blocks = append(blocks, randomBlock(r, uniform(r)))
			}
			c.putMany(r, blocks)
			for _, h := range c.hosts {
				c.s.Crash(h)
			}
			c.s.RunFor(time.Minute)
			for _, i := range r.Perm(len(c.hosts)) {
				if err := c.s.Restart(c.hosts[i]); err != nil {
					t.Fatal(err)
				}
				if staggered {
					c.s.RunFor(time.Duration(r.IntN(20)) * time.Second)
				}
			}
			c.s.RunFor(4 * c.cfg.Stabilize)
			founded := 0
			for _, h := range c.hosts {
				if !c.node(h).Joined() {
					t.Errorf("staggered %v, seed %d: %s not on the ring %v after the last start", staggered, seed, h.Addr, 4*c.cfg.Stabilize)
				}
				founded += int(c.node(h).Stats.Founded)
			}
			if founded != 1 {
				t.Errorf("staggered %v, seed %d: %d nodes founded the ring, want 1", staggered, seed, founded)
			}
			c.s.RunFor(10 * c.cfg.Stabilize)
			c.checkRing()
			for i, b := range blocks {
				data, err := c.get(r.IntN(len(c.hosts)), b.key, d2.Sum(b.data))
				if err != nil || !bytes.Equal(data, b.data) {
					t.Errorf("staggered %v, seed %d: block %d after the cold restart: %v", staggered, seed, i, err)
				}
			}
		}
	}
}
