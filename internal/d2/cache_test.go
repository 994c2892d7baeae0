package d2_test

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"time"

	"triad/internal/d2"
	"triad/internal/id"
)

// small is the 64-byte ID of v.
func small(v byte) id.ID {
	b := make([]byte, d2.KeyBytes)
	b[len(b)-1] = v
	x, _ := id.FromBytes(b)
	return x
}

// TestLookupCache (§5): a gateway reading the blocks of one range looks it
// up once and sends the rest straight to the cached owner; when a node
// joins in front of that owner, the stale entry costs a "not mine" and the
// read still succeeds; an entry lives 1.25 hours.
func TestLookupCache(t *testing.T) {
	c := newCluster(t, 6, 16, still(), skewed)
	ps, _ := c.ring()
	top := ps[8]
	r := rand.New(rand.NewPCG(6, 6))
	var blocks []block
	for j := byte(1); j <= 20; j++ {
		b := randomBlock(r, top.Sub(small(j)))
		blocks = append(blocks, b)
		if copies, err := c.put(0, b); err != nil || copies != 3 {
			t.Fatalf("put: %d, %v", copies, err)
		}
	}
	const gw = 3
	g := c.node(c.hosts[gw])
	readAll := func(what string) {
		t.Helper()
		for i, b := range blocks {
			data, err := c.get(gw, b.key, d2.Sum(b.data))
			if err != nil || !bytes.Equal(data, b.data) {
				t.Fatalf("%s: get %d: %v", what, i, err)
			}
		}
	}
	before := g.Stats
	readAll("first reads")
	if hits, misses := g.Stats.CacheHits-before.CacheHits, g.Stats.CacheMisses-before.CacheMisses; misses != 1 || hits != 19 {
		t.Errorf("first reads: %d hits, %d misses; want 19 and 1", hits, misses)
	}

	// A node joins in the middle of the cached range.
	c.add(top.Sub(small(10)))
	c.settle()
	before = g.Stats
	readAll("after a join")
	if g.Stats.CacheWrong == before.CacheWrong {
		t.Error("the stale entry was never found wrong")
	}
	t.Logf("after the join: %d hits, %d misses, %d wrong", g.Stats.CacheHits-before.CacheHits,
		g.Stats.CacheMisses-before.CacheMisses, g.Stats.CacheWrong-before.CacheWrong)

	// Past the TTL every entry is gone: the next read misses.
	c.s.RunFor(d2.DefaultConfig().CacheTTL + time.Minute)
	before = g.Stats
	if _, err := c.get(gw, blocks[0].key, d2.Sum(blocks[0].data)); err != nil {
		t.Fatal(err)
	}
	if g.Stats.CacheMisses != before.CacheMisses+1 {
		t.Error("an entry outlived the TTL")
	}
}
