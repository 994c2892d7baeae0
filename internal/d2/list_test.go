package d2_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	"triad/internal/fault"
	"triad/internal/id"
	"triad/internal/wire"
)

// TestListSpansOwners: a client's D2List, followed from Next to Next,
// gives every key of a prefix whose keys lie on several nodes, once each
// and in key order, a page at a time; a prefix with no keys gives none;
// an After outside the prefix is a bad request.
func TestListSpansOwners(t *testing.T) {
	c := newCluster(t, 40, 16, still(), skewed)
	r := rand.New(rand.NewPCG(40, 40))
	prefix := []byte{0x4d} // inside the nodes' clusters (skewed: 0.300-0.309 of the ring)
	var want []id.ID
	for range 120 {
		k := at(r, (float64(prefix[0])+r.Float64())/256)
		if _, err := c.put(r.IntN(len(c.hosts)), randomBlock(r, k)); err != nil {
			t.Fatal(err)
		}
		want = append(want, k)
	}
	slices.SortFunc(want, id.ID.Cmp)
	ps, _ := c.ring()
	owners := map[id.ID]bool{}
	for _, k := range want {
		owners[owner(ps, k)] = true
	}
	if len(owners) < 3 {
		t.Fatalf("the keys lie on %d nodes; the test wants several", len(owners))
	}
	list := func(prefix []byte, max uint32) (keys []id.ID, calls int) {
		var after id.ID
		for calls = 1; calls < 1000; calls++ {
			reply, err := c.send(1, 2, &wire.D2List{Prefix: prefix, After: after, Max: max})
			if err != nil {
				t.Fatalf("list after %s: %v", after.Short(), err)
			}
			l := reply.(*wire.D2Listing)
			keys = append(keys, l.Keys...)
			if l.Next.IsZero() {
				return keys, calls
			}
			after = l.Next
		}
		t.Fatal("the listing never ended")
		return nil, 0
	}
	got, calls := list(prefix, 7)
	if !slices.Equal(got, want) {
		t.Fatalf("listed %d keys, want the %d put (in order)", len(got), len(want))
	}
	if calls < len(want)/7 || calls < len(owners) {
		t.Errorf("%d calls for %d keys on %d nodes, pages of 7", calls, len(want), len(owners))
	}
	if got, _ := list([]byte{0x4d, 0, 0, 0, 0, 0, 0, 0, 1}, 0); len(got) != 0 {
		t.Errorf("an empty prefix listed %d keys", len(got))
	}
	outside := at(r, 0.5)
	if _, err := c.send(1, 2, &wire.D2List{Prefix: prefix, After: outside}); code(err) != fault.CodeBadRequest {
		t.Errorf("an After outside the prefix: %v, want a bad request", err)
	}
	if n := c.node(c.hosts[2]).Stats.Lists; n < uint64(calls) {
		t.Errorf("the gateway counted %d lists", n)
	}
}
