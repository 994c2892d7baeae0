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

// TestColdRestartSeedFounds: when the deployment names a seed (the node
// the others --join), the seed founds the ring after a cold start even
// when it comes back last; the others wait for it. With lowest addresses
// alone, nodes up before the lowest each founded a ring of their own when
// their saved peers did not overlap (up to 4 founders on 48 nodes in sim
// d2's chaos experiment), and the rings had to merge.
func TestColdRestartSeedFounds(t *testing.T) {
	for seed := uint64(71); seed < 74; seed++ {
		c := newCluster(t, seed, 12, still(), uniform)
		seedHost := c.hosts[len(c.hosts)-1] // not the lowest address
		c.cfg.Seed = seedHost.Addr
		for _, h := range c.hosts {
			c.s.Crash(h)
		}
		c.s.RunFor(time.Minute)
		r := rand.New(rand.NewPCG(seed, 71))
		for _, i := range r.Perm(len(c.hosts)) {
			if c.hosts[i] != seedHost {
				if err := c.s.Restart(c.hosts[i]); err != nil {
					t.Fatal(err)
				}
			}
		}
		c.s.RunFor(3 * c.cfg.Stabilize) // fewer surveys than seedWait
		if err := c.s.Restart(seedHost); err != nil {
			t.Fatal(err)
		}
		c.s.RunFor(4 * c.cfg.Stabilize)
		for _, h := range c.hosts {
			if !c.node(h).Joined() {
				t.Errorf("seed %d: %s not on the ring", seed, h.Addr)
			}
			if f := c.node(h).Stats.Founded; f > 0 && h != seedHost {
				t.Errorf("seed %d: %s founded the ring, not the seed %s", seed, h.Addr, seedHost.Addr)
			}
		}
		if c.node(seedHost).Stats.Founded != 1 {
			t.Errorf("seed %d: the seed founded %d times, want 1", seed, c.node(seedHost).Stats.Founded)
		}
		c.s.RunFor(10 * c.cfg.Stabilize)
		c.checkRing()
	}
}
