package noded_test

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"triad/internal/id"
	"triad/internal/noded"
	"triad/internal/pki"
	"triad/internal/ring"
	"triad/internal/testutil"
	"triad/internal/wire"
)

// startNode starts a real node in this process on a free port of
// 127.0.0.1 with 8 vnodes, data under dir, joining through join.
func startNode(t *testing.T, dir, listen, join string, positions int) *noded.Node {
	t.Helper()
	if listen == "" {
		listen = testutil.FreeAddr(t)
	}
	o := noded.DefaultOptions()
	o.Listen, o.Data, o.Join, o.Vnodes, o.Positions = listen, dir, join, 8, positions
	n, err := noded.Start(context.Background(), o, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

// refs are the vnodes a node runs.
func refs(n *noded.Node) []wire.NodeRef {
	var out []wire.NodeRef
	for _, x := range n.Host.State.IDs {
		out = append(out, wire.NodeRef{ID: x, Addr: n.Addr})
	}
	return out
}

// waitLists waits until some vnode of n lists a vnode of every node in
// others among its successors or predecessors: the ring a new node
// surveys through n shows them.
func waitLists(t *testing.T, n *noded.Node, others ...*noded.Node) {
	t.Helper()
	testutil.WaitFor(t, time.Minute, n.Addr+" to list every other node", func() bool {
		info, err := n.RingInfo(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, v := range info {
			for _, r := range append(v.Succs, v.Preds...) {
				seen[r.Addr] = true
			}
		}
		return !slices.ContainsFunc(others, func(o *noded.Node) bool { return !seen[o.Addr] })
	})
}

// A new node chooses its positions from the ring it surveys through its
// --join node (ring.Place, on what the other nodes run), keeps them when
// it restarts, and with --positions equal to --vnodes takes the first
// ones. The first node of a ring spreads its own.
func TestNewNodeChoosesItsPositions(t *testing.T) {
	base := t.TempDir()
	a := startNode(t, filepath.Join(base, "a"), "", "", 0)
	if want, _ := ring.Place(a.Addr, 8, ring.MaxVnodes, 2, nil); !slices.Equal(a.Host.State.IDs, want) {
		t.Fatalf("first node at %v, want %v (spread by themselves)", a.Host.State.IDs, want)
	}
	b := startNode(t, filepath.Join(base, "b"), "", a.Addr, 0)
	waitLists(t, a, b)
	c := startNode(t, filepath.Join(base, "c"), "", a.Addr, 0)
	want, _ := ring.Place(c.Addr, 8, ring.MaxVnodes, 2, append(refs(a), refs(b)...))
	if !slices.Equal(c.Host.State.IDs, want) {
		t.Fatalf("third node at %v, want %v (placed on the ring of the first two)", c.Host.State.IDs, want)
	}
	first, _ := ring.Place(c.Addr, 8, 8, 2, nil)
	if slices.Equal(want, first) {
		t.Fatal("the test shows nothing: the placed positions are the first ones")
	}
	addr, dir := c.Addr, filepath.Join(base, "c")
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	again := startNode(t, dir, addr, a.Addr, 0)
	if !slices.Equal(again.Host.State.IDs, want) {
		t.Fatalf("restarted at %v, want the positions it chose, %v", again.Host.State.IDs, want)
	}
	d := startNode(t, filepath.Join(base, "d"), "", a.Addr, 8)
	var firstEight []id.ID
	for i := range 8 {
		firstEight = append(firstEight, ring.VnodeID(d.Addr, i))
	}
	if !slices.Equal(d.Host.State.IDs, firstEight) {
		t.Fatalf("--positions 8: at %v, want the first 8 positions", d.Host.State.IDs)
	}
}

// With TLS a node surveys the ring with its own certificate, speaking for
// its address (a node's certificate is refused on a frame that claims
// none), and chooses among the positions the certificate allows.
func TestNewNodeChoosesItsPositionsWithTLS(t *testing.T) {
	base := t.TempDir()
	if err := pki.InitCA(filepath.Join(base, "ca"), "test", time.Hour); err != nil {
		t.Fatal(err)
	}
	ca, err := pki.LoadCA(filepath.Join(base, "ca"))
	if err != nil {
		t.Fatal(err)
	}
	start := func(name, join string) *noded.Node {
		addr := testutil.FreeAddr(t)
		bundle := filepath.Join(base, name+"-tls")
		if err := ca.Issue(pki.Identity{Name: name, Site: name, Addr: addr, Vnodes: 16}, time.Hour, bundle); err != nil {
			t.Fatal(err)
		}
		o := noded.DefaultOptions()
		o.Listen, o.Data, o.Join, o.Vnodes, o.TLS = addr, filepath.Join(base, name), join, 8, bundle
		n, err := noded.Start(context.Background(), o, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { n.Close() })
		return n
	}
	a := start("a", "")
	b := start("b", a.Addr)
	waitLists(t, a, b)
	c := start("c", a.Addr)
	want, _ := ring.Place(c.Addr, 8, 16, 2, append(refs(a), refs(b)...))
	if !slices.Equal(c.Host.State.IDs, want) {
		alone, _ := ring.Place(c.Addr, 8, 16, 2, nil)
		t.Fatalf("third node at %v, want %v (placed on the ring of the first two; alone it would be at %v)", c.Host.State.IDs, want, alone)
	}
}
