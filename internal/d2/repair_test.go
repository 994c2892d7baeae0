package d2_test

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"triad/internal/d2"
	"triad/internal/sim"
	"triad/internal/store"
)

// TestGetRepairsALostCopy: the owner's engine loses a block (a damaged
// record quarantined) and a second replica holds other bytes under the
// key; a get from another node skips both, reads the third replica, and
// gives the block back to the owner, which stops listing the lost copy
// when its read fails. The replica with other bytes keeps them: a repair
// never replaces (they may be newer than the get's pointer).
func TestGetRepairsALostCopy(t *testing.T) {
	c := newCluster(t, 41, 12, still(), skewed)
	r := rand.New(rand.NewPCG(41, 41))
	b := randomBlock(r, skewed(r))
	if n, err := c.put(0, b); err != nil || n != 3 {
		t.Fatalf("put: %d copies, %v", n, err)
	}
	reps := c.replicas(b.key)
	owner, second := c.engines[reps[0]], c.engines[reps[1]]
	if err := owner.Delete(b.key); err != nil {
		t.Fatal(err)
	}
	other := []byte("other bytes")
	if err := second.Delete(b.key); err != nil {
		t.Fatal(err)
	}
	if err := second.Put(b.key, other, time.Unix(0, 0).Add(100*365*24*time.Hour), store.PutOptions{Opaque: true}); err != nil {
		t.Fatal(err)
	}
	gw := slices.IndexFunc(c.hosts, func(h *sim.Host) bool { return !slices.Contains(reps, h.Addr) })
	data, err := c.get(gw, b.key, d2.Sum(b.data))
	if err != nil || !bytes.Equal(data, b.data) {
		t.Fatalf("get: %d bytes, %v", len(data), err)
	}
	c.s.RunFor(time.Second)
	if got, _, err := owner.Get(b.key); err != nil || !bytes.Equal(d2.BlockOf(got), b.data) {
		t.Errorf("the owner after the get: %d bytes, %v; want the block back", len(got), err)
	}
	if got, _, err := second.Get(b.key); err != nil || !bytes.Equal(d2.BlockOf(got), other) {
		t.Errorf("the replica with other bytes after the get: %q, %v; want them kept", got, err)
	}
	if n := c.node(c.hosts[gw]).Stats.Repaired; n != 1 {
		t.Errorf("the gateway repaired %d copies, want 1", n)
	}
	if n := c.nodes[reps[1]].Stats.Mismatches; n != 1 {
		t.Errorf("the replica with other bytes skipped %d mismatches, want 1", n)
	}
	if n := c.nodes[reps[0]].Stats.LostLocal; n != 1 {
		t.Errorf("the owner counted %d lost blocks, want 1", n)
	}
}
