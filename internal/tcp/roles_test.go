package tcp

import (
	"crypto/tls"
	"net"
	"path/filepath"
	"testing"
	"time"

	"triad/internal/pki"
	"triad/internal/ring"
	"triad/internal/testutil"
	"triad/internal/wire"
)

// issue issues who from the ring's CA and loads its bundle.
func (r *testCA) issue(who pki.Identity) *pki.Bundle {
	r.t.Helper()
	if who.Site == "" {
		who.Site = "site1"
	}
	out := filepath.Join(r.t.TempDir(), who.Name)
	if err := r.ca.Issue(who, time.Hour, out); err != nil {
		r.t.Fatal(err)
	}
	b, err := pki.LoadBundle(out)
	if err != nil {
		r.t.Fatal(err)
	}
	return b
}

// dialTLS opens a TLS connection to the node at addr with b's certificate.
func dialTLS(t *testing.T, addr string, b *pki.Bundle) net.Conn {
	t.Helper()
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, b.ClientConfig(addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// sendThenPing writes e on c, then a Ping from the same sender address,
// and waits for the Ping's answer: the node has handled (or refused) e
// by then, since a connection's frames are handled in order.
func sendThenPing(t *testing.T, c net.Conn, e wire.Envelope) {
	t.Helper()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	defer c.SetDeadline(time.Time{})
	ping := wire.Envelope{Kind: wire.Request, ReqID: 1 << 40, From: wire.NodeRef{Addr: e.From.Addr}, Msg: &wire.Ping{}}
	if err := wire.WriteFrame(c, e); err != nil {
		t.Fatal(err)
	}
	if err := wire.WriteFrame(c, ping); err != nil {
		t.Fatal(err)
	}
	for {
		frame, err := wire.ReadFrame(c, nil, wire.MaxFrameBytes)
		if err != nil {
			t.Fatalf("waiting for the ping's answer after %v: %v", e.Msg.Type(), err)
		}
		r, err := wire.Decode(frame)
		if err != nil {
			t.Fatal(err)
		}
		if r.Kind == wire.Reply && r.ReqID == ping.ReqID {
			return
		}
	}
}

// A certificate grants only what it names. Clients, news front-ends and
// operators use the client API: a node's message from them (StoreBlock,
// Stabilize, TreeQuery) is refused and counted, and only an operator's
// certificate may pause maintenance. A node's frames must carry the
// machine identity its certificate names and one of the vnodes it
// allows. Each refused frame never reaches the host; each allowed one
// does. (Before roles, all of these reached it.)
func TestTLSCertificatesGrantOnlyTheirRoles(t *testing.T) {
	r := newRingCA(t)
	addr := testutil.FreeAddr(t)
	n, rec := startHost(t, Config{Listen: addr, TLS: r.bundle("n", addr, time.Hour), HandshakeTimeout: time.Second, CheckVnodes: true})

	client := r.issue(pki.Identity{Name: "prog"})
	site := r.issue(pki.Identity{Name: "news.site1.example", Role: pki.RoleSite})
	operator := r.issue(pki.Identity{Name: "alice", Role: pki.RoleOperator})
	peerAddr := testutil.FreeAddr(t) // nothing listens: the certificate proves it
	peer := r.issue(pki.Identity{Name: "p", Addr: peerAddr, Vnodes: 2})

	vnode := func(i int, machine uint64) wire.NodeRef {
		return wire.NodeRef{ID: ring.VnodeID(peerAddr, i), Addr: peerAddr, Machine: machine}
	}
	good := peer.Self.MachineID()
	for _, c := range []struct {
		name   string
		b      *pki.Bundle
		e      wire.Envelope
		wanted bool
	}{
		{"a client's StoreBlock", client, wire.Envelope{Kind: wire.Request, ReqID: 1, Msg: &wire.StoreBlock{}}, false},
		{"a site's Stabilize", site, wire.Envelope{Kind: wire.Request, ReqID: 2, Msg: &wire.Stabilize{}}, false},
		{"an operator's TreeQuery", operator, wire.Envelope{Kind: wire.Request, ReqID: 3, Msg: &wire.TreeQuery{}}, false},
		{"a client's maint pause", client, wire.Envelope{Kind: wire.Request, ReqID: 4, Msg: &wire.MaintControl{Pause: true}}, false},
		{"a site's maint pause", site, wire.Envelope{Kind: wire.Request, ReqID: 5, Msg: &wire.MaintControl{Pause: true}}, false},
		{"a client's get", client, wire.Envelope{Kind: wire.Request, ReqID: 6, Msg: &wire.ClientGet{}}, true},
		{"an operator's maint pause", operator, wire.Envelope{Kind: wire.Request, ReqID: 7, Msg: &wire.MaintControl{Pause: true}}, true},
		{"vnode 2 of a node allowed 2", peer, wire.Envelope{Kind: wire.OneWay, From: vnode(2, good), Msg: &wire.Stabilize{}}, false},
		{"another machine's identity", peer, wire.Envelope{Kind: wire.OneWay, From: vnode(0, good+1), Msg: &wire.Stabilize{}}, false},
		{"an ID not derived", peer, wire.Envelope{Kind: wire.OneWay, From: wire.NodeRef{ID: ring.VnodeID("10.9.9.9:1", 0), Addr: peerAddr, Machine: good}, Msg: &wire.Stabilize{}}, false},
		{"vnode 1 of a node allowed 2", peer, wire.Envelope{Kind: wire.OneWay, From: vnode(1, good), Msg: &wire.TreeQuery{}}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.e.From.Addr = map[bool]string{true: peerAddr, false: ""}[c.b == peer]
			forged := n.Stats.Forged.Load()
			before := len(rec.received())
			sendThenPing(t, dialTLS(t, addr, c.b), c.e)
			handed := false
			for _, in := range rec.received()[before:] {
				handed = handed || in.Env.Msg.Type() == c.e.Msg.Type()
			}
			refused := n.Stats.Forged.Load() - forged
			switch {
			case c.wanted && (!handed || refused != 0):
				t.Errorf("allowed message: handed to the host %v, %d refused", handed, refused)
			case !c.wanted && (handed || refused != 1):
				t.Errorf("refused message: handed to the host %v, %d refused (want 1)", handed, refused)
			}
		})
	}
}

// Without TLS, a client (a connection that claims no node address) uses
// the client API too: a node's message from it is refused and counted.
func TestClientsSendOnlyTheClientAPI(t *testing.T) {
	n, rec := startHost(t, Config{})
	c := dial(t, n.Addr())
	for i, m := range []wire.Msg{&wire.StoreBlock{}, &wire.Leave{}, &wire.TreeQuery{}, &wire.LookupDone{}} {
		sendThenPing(t, c, wire.Envelope{Kind: wire.Request, ReqID: uint64(i + 1), Msg: m})
	}
	for _, in := range rec.received() {
		if in.Env.Msg.Type() != wire.TypePing {
			t.Errorf("a client's %v reached the host", in.Env.Msg.Type())
		}
	}
	if got := n.Stats.Forged.Load(); got != 4 {
		t.Errorf("Forged = %d, want 4", got)
	}
}
