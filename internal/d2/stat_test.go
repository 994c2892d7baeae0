package d2_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"triad/internal/d2"
	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/store"
	"triad/internal/wire"
)

// stat runs a Stat of k from the host from.
func (c *cluster) stat(from int, k id.ID, hash []byte) ([]wire.D2Holder, error) {
	c.t.Helper()
	h := c.hosts[from]
	var (
		holders []wire.D2Holder
		err     error
		done    bool
	)
	c.s.Do(h, func(env node.Env) {
		c.node(h).Stat(env, k, hash, func(env node.Env, l []wire.D2Holder, e error) { holders, err, done = l, e, true })
	})
	c.s.RunFor(30 * time.Second) // time for a dead holder's timeout
	if !done {
		c.t.Fatalf("stat of %s from %s never ended", k.Short(), h.Addr)
	}
	return holders, err
}

// checkHolders fails unless holders are addrs, in order, in the states
// want.
func checkHolders(t *testing.T, what string, holders []wire.D2Holder, addrs []string, want ...wire.D2HolderState) {
	t.Helper()
	if len(holders) != len(want) {
		t.Fatalf("%s: %d holders %+v, want %d", what, len(holders), holders, len(want))
	}
	for i, h := range holders {
		if h.Node.Node.Addr != addrs[i] || h.State != want[i] {
			t.Errorf("%s: holder %d is %s in state %d, want %s in state %d", what, i, h.Node.Node.Addr, h.State, addrs[i], want[i])
		}
	}
}

// TestStatNamesHolders: a Stat from a node that holds nothing of the key
// names its three replicas, owner first, each holding the block; with
// another hash none holds it; a replica whose copy is other bytes is
// missing; once it is repaired and another replica crashes, two hold the
// block and the crashed one is reported as not answering, not as
// missing. Over the wire the same answer comes as a
// D2Holders.
func TestStatNamesHolders(t *testing.T) {
	c := newCluster(t, 21, 12, still(), skewed)
	r := rand.New(rand.NewPCG(21, 21))
	b := randomBlock(r, skewed(r))
	if copies, err := c.put(0, b); err != nil || copies != 3 {
		t.Fatalf("put: %d copies, %v", copies, err)
	}
	reps := c.replicas(b.key)
	gws := c.gateways(b.key, 2)
	gw, gw2 := gws[0], gws[1]
	sum := d2.Sum(b.data)
	const (
		ok      = wire.D2HolderOK
		missing = wire.D2HolderMissing
		silent  = wire.D2HolderNoAnswer
	)

	hs, err := c.stat(gw, b.key, sum)
	if err != nil {
		t.Fatal(err)
	}
	checkHolders(t, "a put block", hs, reps, ok, ok, ok)
	hs, err = c.stat(gw, b.key, d2.Sum([]byte("other")))
	if err != nil {
		t.Fatal(err)
	}
	checkHolders(t, "another hash", hs, reps, missing, missing, missing)

	// A replica whose engine holds other bytes under the key.
	e := c.engines[reps[1]]
	replace := func(data []byte) {
		t.Helper()
		if err := e.Delete(b.key); err != nil {
			t.Fatal(err)
		}
		if err := e.Put(b.key, data, c.s.Epoch().Add(c.s.Now()+time.Hour), store.PutOptions{Opaque: true}); err != nil {
			t.Fatal(err)
		}
	}
	replace([]byte("other bytes"))
	hs, err = c.stat(gw, b.key, sum)
	if err != nil {
		t.Fatal(err)
	}
	checkHolders(t, "a replica with other bytes", hs, reps, ok, missing, ok)
	replace(b.data)

	// The last replica crashes: it does not answer; the others still
	// hold the block.
	for _, h := range c.hosts {
		if h.Addr == reps[2] {
			c.s.Crash(h)
		}
	}
	reply, err := c.send(gw2, gw, &wire.D2Stat{Key: b.key, Hash: sum})
	if err != nil {
		t.Fatal(err)
	}
	m, isHolders := reply.(*wire.D2Holders)
	if !isHolders || m.Key != b.key {
		t.Fatalf("a D2Stat answered with %+v", reply)
	}
	checkHolders(t, "a crashed replica, over the wire", m.Holders, reps, ok, ok, silent)
	if n := c.node(c.hosts[gw]).Stats.StatReqs; n != 4 {
		t.Errorf("%d stats counted at the gateway, want 4", n)
	}
}
