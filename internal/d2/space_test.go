package d2_test

import (
	"math/rand/v2"
	"strings"
	"testing"

	"triad/internal/d2"
	"triad/internal/wire"
)

// TestSpace: a client's D2GetSpace is answered by the node it reaches, from
// its own engine: the bytes its store takes, no capacity bound (the mem
// engines here have none), the ring's r, whether it is on the ring, and
// its primary load and held keys, as the node itself counts them. A
// node that cannot join (its saved peers are down) still answers, not
// joined, while a block request to it fails with d2.ErrNotJoined's text,
// which d2client turns into "still joining the ring".
func TestSpace(t *testing.T) {
	c := newCluster(t, 7, 5, still(), uniform)
	r := rand.New(rand.NewPCG(7, 7))
	b := randomBlock(r, uniform(r))
	if _, err := c.put(1, b); err != nil {
		t.Fatal(err)
	}
	holder := -1
	for i, h := range c.hosts {
		for _, a := range c.replicas(b.key) {
			if h.Addr == a && i != 0 {
				holder = i
			}
		}
	}
	if holder < 0 {
		t.Fatal("no holder of the block but host 0")
	}
	reply, err := c.send(0, holder, &wire.D2GetSpace{})
	s, ok := reply.(*wire.D2Space)
	switch {
	case err != nil || !ok:
		t.Fatalf("D2GetSpace to a holder: %v, %+v", err, reply)
	case !s.Joined || s.Capacity != 0 || s.Replicas != uint32(c.cfg.Replicas) || s.Usage < uint64(len(b.data)):
		t.Errorf("D2GetSpace to a holder of %d bytes: %+v", len(b.data), s)
	case s.Held == 0 || s.Held != uint64(c.node(c.hosts[holder]).Held()) || s.Primary != uint64(c.node(c.hosts[holder]).Load()):
		t.Errorf("D2GetSpace to a holder of %d keys, primary for %d: %+v", c.node(c.hosts[holder]).Held(), c.node(c.hosts[holder]).Load(), s)
	}

	for _, h := range c.hosts[:3] { // every saved peer of a newcomer
		c.s.Crash(h)
	}
	c.add(uniform(r))
	c.s.RunFor(10 * c.cfg.Stabilize)
	newcomer := len(c.hosts) - 1
	if c.node(c.hosts[newcomer]).Joined() {
		t.Fatal("a node whose saved peers are all down joined")
	}
	reply, err = c.send(3, newcomer, &wire.D2GetSpace{})
	if s, ok := reply.(*wire.D2Space); err != nil || !ok || s.Joined || s.Replicas != uint32(c.cfg.Replicas) {
		t.Errorf("D2GetSpace to a node not on the ring: %v, %+v", err, reply)
	}
	_, err = c.send(3, newcomer, &wire.D2Latest{Prefix: b.key.Bytes()[:4]})
	if err == nil || !strings.Contains(err.Error(), "not on the ring yet") || !strings.Contains(d2.ErrNotJoined.Error(), "not on the ring yet") {
		t.Errorf("a latest at a node not on the ring: %v", err)
	}
}
