package tapestry_test

import (
	"slices"
	"testing"
	"time"

	"triad/internal/deploy"
	"triad/internal/node"
	"triad/internal/ring"
	"triad/internal/sim"
	"triad/internal/tapestry"
	"triad/internal/wire"
)

// With derived IDs a host's Tapestry ID is its vnode 0: a node that
// presents its vnode 1 (a certificate for two vnodes may derive both)
// takes no second place in anyone's table, as sender or as a node named
// in a message, and is counted.
func TestSecondVnodeIsNoTapestryNode(t *testing.T) {
	s := sim.New(sim.Config{Seed: 5, DecodeMessages: true}, sim.NewTopology(6, 5))
	var hosts []*sim.Host
	for i := 0; i < 6; i++ {
		o := deploy.DefaultOptions()
		o.NoRing, o.Blocks, o.Vnodes = true, nil, 2
		o.Ring.VerifyIDs = true
		c := tapestry.DefaultConfig()
		o.Tapestry = &c
		boot := node.Addr("")
		if i > 0 {
			boot = hosts[0].Addr
		}
		h, err := s.AddHost(deploy.Factory(o, func() node.Addr { return boot }))
		if err != nil {
			t.Fatal(err)
		}
		hosts = append(hosts, h)
		s.RunFor(2 * time.Second)
	}
	s.RunFor(30 * time.Second)
	a, b := tap(hosts[0]), hosts[3]
	if self := tap(b).Self(); self.ID != ring.VnodeID(b.Addr, 0) {
		t.Fatalf("%s runs Tapestry as %s, not its vnode 0", b.Addr, self.ID.Short())
	}
	second := wire.NodeRef{ID: ring.VnodeID(b.Addr, 1), Addr: b.Addr, Machine: tap(b).Self().Machine}
	if err := a.Validate(&wire.TapNodes{Nodes: []wire.NodeRef{second}}); err == nil {
		t.Error("a node list naming a host's vnode 1 was accepted")
	}
	if err := a.Validate(&wire.TapNodes{Nodes: []wire.NodeRef{tap(b).Self()}}); err != nil {
		t.Errorf("a node list naming a host's vnode 0 was refused: %v", err)
	}
	bad := a.Stats.BadRequests
	s.Do(hosts[0], func(env node.Env) {
		a.Receive(env, node.MsgIn{From: b.Addr, Env: wire.Envelope{Kind: wire.OneWay, From: second, Msg: &wire.TapNotify{Kind: wire.TapPointsAt}}})
	})
	s.RunFor(10 * time.Second)
	if a.Stats.BadRequests == bad {
		t.Error("a message from a host's vnode 1 was not counted as refused")
	}
	for _, e := range a.Table().Entries {
		if slices.ContainsFunc(e.Links, func(r wire.NodeRef) bool { return r.ID == second.ID }) {
			t.Fatalf("%s's vnode 1 holds a place in the table at level %d", b.Addr, e.Level)
		}
	}
}
