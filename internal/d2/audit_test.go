package d2_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	"triad/internal/id"
)

// TestAuditsFindALiar (issue 44, row 4): a node comes back on an empty
// disk as a liar that acknowledges every copy it is given and keeps none,
// and another on an empty disk as an honest node. Within a few sync
// rounds every node that shares a key with the liar and audits it (the
// key's owner, or the successors of a key the liar owns) distrusts it,
// and nobody distrusts the honest one; the keys the liar
// should hold, as owner or as replica, are on r honest nodes again (its
// owners push past it, and its successor syncs its range as its own).
// With audits off the liar's keys stay on r-1.
func TestAuditsFindALiar(t *testing.T) {
	for _, audits := range []int{1, 0} {
		cfg := still()
		cfg.Audits = audits
		c := newCluster(t, 45, 12, cfg, uniform)
		r := rand.New(rand.NewPCG(45, 45))
		var keys []id.ID
		for range 120 {
			b := randomBlock(r, uniform(r))
			if n, err := c.put(0, b); err != nil || n < 3 {
				t.Fatalf("put: %d copies, %v", n, err)
			}
			keys = append(keys, b.key)
		}
		liar, honest := c.hosts[5], c.hosts[9]
		for _, h := range []string{liar.Addr, honest.Addr} {
			c.s.Crash(c.hosts[c.hostsOf([]string{h})[0]])
			c.engines[h] = nil // an empty disk
		}
		c.rogues[liar.Addr] = true
		for _, h := range []int{5, 9} {
			if err := c.s.Restart(c.hosts[h]); err != nil {
				t.Fatal(err)
			}
		}
		c.s.RunFor(8 * cfg.Sync)

		var partners, distrusting []string
		for _, h := range c.hosts {
			n := c.node(h)
			if h == liar || h == honest {
				continue
			}
			if slices.Contains(n.Distrusted(), honest.Addr) {
				t.Errorf("audits %d: %s distrusts %s, an honest node that lost its disk", audits, h.Addr, honest.Addr)
			}
			if slices.Contains(n.Distrusted(), liar.Addr) {
				distrusting = append(distrusting, h.Addr)
			}
		}
		for _, k := range keys {
			holders := c.replicas(k)
			if !slices.Contains(holders, liar.Addr) {
				continue
			}
			// Who audits the liar for k: k's owner, or if the liar owns
			// it, its successors.
			auditors := holders[:1]
			if holders[0] == liar.Addr {
				auditors = holders[1:]
			}
			for _, h := range auditors {
				if h != honest.Addr && !slices.Contains(partners, h) {
					partners = append(partners, h)
				}
			}
			kept := 0
			for _, h := range c.hosts {
				if block, _ := c.node(h).Holds(k); block && h != liar {
					kept++
				}
			}
			if audits > 0 && kept < cfg.Replicas {
				t.Errorf("audits on: %s, held by the liar, is on %d honest nodes, want %d", k.Short(), kept, cfg.Replicas)
			}
			if audits == 0 && kept >= cfg.Replicas {
				t.Errorf("audits off: %s is on %d honest nodes; the test's liar should have cost it one", k.Short(), kept)
			}
		}
		if audits == 0 {
			if len(distrusting) > 0 {
				t.Errorf("audits off: %v distrust the liar", distrusting)
			}
			continue
		}
		slices.Sort(partners)
		slices.Sort(distrusting)
		if !slices.Equal(partners, distrusting) {
			t.Errorf("the liar's partners %v; distrusting it: %v", partners, distrusting)
		}
		t.Logf("the liar distrusted by its %d partners after %v; its keys on r honest nodes again", len(distrusting), 8*cfg.Sync)
	}
}
