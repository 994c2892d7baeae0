package ring_test

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"triad/internal/deploy"
	"triad/internal/host"
	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/pki"
	"triad/internal/ring"
	"triad/internal/sim"
	"triad/internal/wire"
)

// minusOne is x − 1 on the ring.
func minusOne(x id.ID) id.ID {
	b := make([]byte, id.Bytes)
	b[id.Bytes-1] = 1
	one, err := id.FromBytes(b)
	if err != nil {
		panic(err)
	}
	return x.Sub(one)
}

func TestVnodeIndex(t *testing.T) {
	const a, b = "10.0.0.1:4001", "10.0.0.2:4001"
	last := ring.VnodeID(a, ring.MaxVnodes-1)
	short, err := id.FromBytes(last.Bytes()[10:])
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		ref  wire.NodeRef
		want int
		ok   bool
	}{
		{"vnode 0", wire.NodeRef{ID: ring.VnodeID(a, 0), Addr: a}, 0, true},
		{"vnode 5", wire.NodeRef{ID: ring.VnodeID(a, 5), Addr: a}, 5, true},
		{"the last vnode", wire.NodeRef{ID: last, Addr: a}, ring.MaxVnodes - 1, true},
		{"another address's ID", wire.NodeRef{ID: ring.VnodeID(b, 0), Addr: a}, 0, false},
		{"an honest ID minus one", wire.NodeRef{ID: minusOne(ring.VnodeID(b, 3)), Addr: a}, 0, false},
		{"a random ID", wire.NodeRef{ID: id.Random(rand.New(rand.NewPCG(1, 2)), id.Bytes), Addr: a}, 0, false},
		{"no address", wire.NodeRef{ID: ring.VnodeID("", 0)}, 0, false},
		{"a short ID", wire.NodeRef{ID: short, Addr: a}, 0, false},
	} {
		i, ok := ring.VnodeIndex(c.ref)
		if ok != c.ok || ok && i != c.want {
			t.Errorf("%s: VnodeIndex = %d, %v; want %d, %v", c.name, i, ok, c.want, c.ok)
		}
	}
	// Index 64 and beyond are not derived, whatever the hash says.
	defer func() {
		if recover() == nil {
			t.Error("VnodeID(addr, MaxVnodes) did not panic")
		}
	}()
	ring.VnodeID(a, ring.MaxVnodes)
}

// A host that saved random IDs (before IDs were derived) moves to its
// derived IDs, says which it left once, and drops saved peers whose IDs
// are not derived; a new host moves from nothing.
func TestLoadDerivedStateMovesSavedIDs(t *testing.T) {
	const addr = "10.0.0.1:4001"
	r := rand.New(rand.NewPCG(3, 4))
	st := sim.NewStorage(func() time.Time { return time.Unix(0, 0) })
	old := []id.ID{id.Random(r, id.Bytes), id.Random(r, id.Bytes)}
	good := wire.NodeRef{ID: ring.VnodeID("10.0.0.2:4001", 1), Addr: "10.0.0.2:4001"}
	bad := wire.NodeRef{ID: minusOne(good.ID), Addr: "10.0.0.3:4001"}
	b, err := ring.MarshalState(ring.State{IDs: old, Machine: 7, Peers: []wire.NodeRef{bad, good}})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.WriteFile(ring.StateFile, b); err != nil {
		t.Fatal(err)
	}
	s, moved, err := ring.LoadDerivedState(st, r, addr, 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	want := []id.ID{ring.VnodeID(addr, 0), ring.VnodeID(addr, 1)}
	if !slices.Equal(s.IDs, want) || !slices.Equal(moved, old) || s.Machine != 7 || !slices.Equal(s.Peers, []wire.NodeRef{good}) {
		t.Fatalf("got ids %v moved %v machine %d peers %v; want ids %v moved %v machine 7 peers [%v]", s.IDs, moved, s.Machine, s.Peers, want, old, good)
	}
	s, moved, err = ring.LoadDerivedState(st, r, addr, 2, 2)
	if err != nil || len(moved) != 0 || !slices.Equal(s.IDs, want) {
		t.Fatalf("second load: ids %v moved %v err %v; want %v, none moved", s.IDs, moved, err, want)
	}
	fresh := sim.NewStorage(func() time.Time { return time.Unix(0, 0) })
	if s, moved, err = ring.LoadDerivedState(fresh, r, addr, 3, 3); err != nil || len(moved) != 0 || s.IDs[2] != ring.VnodeID(addr, 2) {
		t.Fatalf("new host: ids %v moved %v err %v", s.IDs, moved, err)
	}
	if _, _, err := ring.LoadDerivedState(fresh, r, addr, ring.MaxVnodes+1, ring.MaxVnodes+1); err == nil {
		t.Fatal("65 derived vnodes loaded")
	}
}

// Honest hosts with derived IDs refuse nothing of each other: a simulated
// ring of 6 hosts with 3 vnodes each, every ID checked, forms, answers
// every lookup, heals after a crash and a restart, and counts no forged
// reference.
func TestVerifiedRingFormsAndHeals(t *testing.T) {
	c := emptyCluster(t, 6, 21, ring.DefaultConfig())
	cfg := ring.DefaultConfig()
	cfg.VerifyIDs = true
	for i := range 6 {
		boot := ""
		if i > 0 {
			boot = "h0"
		}
		opts := deploy.Options{Vnodes: 3, Host: host.DefaultConfig(), Ring: cfg}
		if _, err := c.s.AddHost(deploy.Factory(opts, func() node.Addr { return boot })); err != nil {
			t.Fatal(err)
		}
		c.s.RunFor(200 * time.Millisecond)
	}
	c.waitConsistent(2 * time.Minute)
	c.lookupAll()
	h := c.s.Hosts()[3]
	c.s.Crash(h)
	c.s.RunFor(time.Minute)
	if err := c.s.Restart(h); err != nil {
		t.Fatal(err)
	}
	c.waitConsistent(2 * time.Minute)
	for _, x := range c.s.Hosts() {
		for i, v := range chord(x).Vnodes() {
			if v.Self().ID != ring.VnodeID(x.Addr, i) {
				t.Errorf("%s: vnode %d is not at its derived ID", v.Self(), i)
			}
		}
		if n := chord(x).Stats.ForgedRefs; n != 0 {
			t.Errorf("%s refused %d references of honest hosts", x.Addr, n)
		}
	}
}

// A node certificate may name as many vnodes as the ring derives IDs for,
// and no more: pki keeps its own copy of the bound so that clients, which
// import pki, need not import the ring.
func TestCertificatesBoundVnodesAsTheRingDoes(t *testing.T) {
	if pki.MaxVnodes != ring.MaxVnodes {
		t.Fatalf("pki.MaxVnodes %d, ring.MaxVnodes %d", pki.MaxVnodes, ring.MaxVnodes)
	}
}
