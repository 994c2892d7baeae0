package tcp

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"triad/internal/client"
	"triad/internal/pki"
	"triad/internal/testutil"
	"triad/internal/wire"
)

// testCA is a deployment CA for TLS tests.
type testCA struct {
	t   *testing.T
	dir string
	ca  *pki.CA
}

func newRingCA(t *testing.T) *testCA {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ca")
	if err := pki.InitCA(dir, "test", time.Hour); err != nil {
		t.Fatal(err)
	}
	ca, err := pki.LoadCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	return &testCA{t: t, dir: dir, ca: ca}
}

// bundle issues name (a node at addr, or a client) and loads its bundle
// without checking it, so that expired certificates can be presented.
func (r *testCA) bundle(name, addr string, validity time.Duration) *pki.Bundle {
	r.t.Helper()
	out := filepath.Join(r.t.TempDir(), name)
	if err := r.ca.Issue(pki.Identity{Name: name, Site: "site1", Addr: addr}, validity, out); err != nil {
		r.t.Fatal(err)
	}
	// The CA's CRL as it is now: a bundle issued after a revocation has it.
	if crl, err := os.ReadFile(filepath.Join(r.dir, pki.CRL)); err == nil {
		if err := os.WriteFile(filepath.Join(out, pki.CRL), crl, 0o644); err != nil {
			r.t.Fatal(err)
		}
	}
	b, err := pki.LoadBundleUnchecked(out)
	if err != nil {
		r.t.Fatal(err)
	}
	return b
}

// startTLSHost runs a TLS node named name at a free address.
func startTLSHost(t *testing.T, r *testCA, name string) (*Driver, *recorder) {
	t.Helper()
	addr := testutil.FreeAddr(t)
	return startHost(t, Config{Listen: addr, TLS: r.bundle(name, addr, time.Hour), HandshakeTimeout: time.Second})
}

// Two nodes with certificates from the ring's CA talk both ways, with no
// challenge: the certificates prove their addresses.
func TestTLSPeersTalk(t *testing.T) {
	r := newRingCA(t)
	a, ra := startTLSHost(t, r, "a")
	b, rb := startTLSHost(t, r, "b")
	if err := call(t, a, ra, b.Addr()); err != nil {
		t.Fatalf("a pings b: %v", err)
	}
	if err := call(t, b, rb, a.Addr()); err != nil {
		t.Fatalf("b pings a: %v", err)
	}
	for _, d := range []*Driver{a, b} {
		if n := d.Stats.Forged.Load() + d.Stats.TLSRefused.Load() + d.Stats.Unproven.Load(); n != 0 {
			t.Errorf("%s: %d forged, refused or unproven between honest peers", d.Addr(), n)
		}
	}
	for _, in := range append(ra.received(), rb.received()...) {
		if _, ok := in.Env.Msg.(*wire.Challenge); ok {
			t.Errorf("a challenge went out although the certificates proved the addresses")
		}
	}
}

// Outsiders are refused by a TLS node before a frame of theirs reaches
// it: no certificate (plain TCP, or TLS without one), another CA's, an
// expired or revoked one; and an insider's certificate cannot speak for
// another node's address. A node dialling a peer refuses a certificate
// that does not name the address it dialled.
func TestTLSRefusesOutsiders(t *testing.T) {
	r := newRingCA(t)
	revoked := r.bundle("revoked", "", time.Hour)
	if err := r.ca.Revoke("revoked"); err != nil {
		t.Fatal(err)
	}
	a, ra := startTLSHost(t, r, "a") // issued after the revocation: its bundle has the CRL
	other := newRingCA(t)
	insider := testutil.FreeAddr(t)
	ping := wire.Envelope{Kind: wire.Request, ReqID: 1, Msg: &wire.Ping{}}

	try := func(name string, conf *tls.Config, claim string) (refusedBefore uint64) {
		t.Helper()
		before := a.Stats.TLSRefused.Load() + a.Stats.Forged.Load()
		c := dial(t, a.Addr())
		var conn net.Conn = c
		if conf != nil {
			tc := tls.Client(c, conf)
			tc.SetDeadline(time.Now().Add(5 * time.Second))
			if err := tc.Handshake(); err != nil {
				t.Logf("%s: handshake: %v", name, err)
			}
			tc.SetDeadline(time.Time{})
			conn = tc
		}
		e := ping
		e.From = wire.NodeRef{Addr: claim}
		wire.WriteFrame(conn, e)
		expectClosed(t, conn)
		if !testutil.Poll(5*time.Second, func() bool { return a.Stats.TLSRefused.Load()+a.Stats.Forged.Load() != before }) {
			t.Errorf("%s: neither refused nor counted as forged", name)
		}
		return before
	}
	noCert := &tls.Config{MinVersion: tls.VersionTLS13, InsecureSkipVerify: true}
	try("plain TCP", nil, "")
	try("TLS without a certificate", noCert, "")
	// The outsider does not check the node's certificate (its own CA would
	// refuse it): the node must refuse the outsider's.
	outsider := other.bundle("x", "", time.Hour).ClientConfig(a.Addr())
	outsider.VerifyConnection = nil
	try("another CA's certificate", outsider, "")
	try("an expired certificate", r.bundle("old", "", -time.Minute).ClientConfig(a.Addr()), "")
	try("a revoked certificate", revoked.ClientConfig(a.Addr()), "")
	try("a node's certificate claiming another node's address", r.bundle("b", insider, time.Hour).ClientConfig(a.Addr()), a.Addr()+"0")
	try("a client's certificate claiming a node's address", r.bundle("c", "", time.Hour).ClientConfig(a.Addr()), insider)
	if n := a.Stats.TLSRefused.Load(); n < 5 {
		t.Errorf("TLSRefused = %d, want at least 5", n)
	}
	if n := a.Stats.Forged.Load(); n != 2 {
		t.Errorf("Forged = %d, want 2 (the two false claims)", n)
	}
	for _, in := range ra.received() {
		t.Errorf("the host was handed %v %v from %q", in.Env.Kind, in.Env.Msg.Type(), in.From)
	}

	// A client with a valid certificate is answered.
	c := tls.Client(dial(t, a.Addr()), r.bundle("good", "", time.Hour).ClientConfig(a.Addr()))
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if err := wire.WriteFrame(c, ping); err != nil {
		t.Fatal(err)
	}
	frame, err := wire.ReadFrame(c, nil, wire.MaxFrameBytes)
	if err != nil {
		t.Fatalf("a valid client got no reply: %v", err)
	}
	if e, err := wire.Decode(frame); err != nil || e.Kind != wire.Reply {
		t.Fatalf("reply %+v %v", e, err)
	}

	// Its operator's command is refused with a reply that says why, not
	// left to time out (issue 47: maint pause waited 5 s for an i/o
	// timeout).
	pause := ping
	pause.ReqID, pause.Msg = 3, &wire.MaintControl{Pause: true}
	if err := wire.WriteFrame(c, pause); err != nil {
		t.Fatal(err)
	}
	if frame, err = wire.ReadFrame(c, nil, wire.MaxFrameBytes); err != nil {
		t.Fatalf("an operator's command from a client's certificate: no reply: %v", err)
	}
	if e, err := wire.Decode(frame); err != nil || e.Kind != wire.Reply || e.ReqID != 3 {
		t.Fatalf("reply %+v %v", e, err)
	} else if we, ok := e.Msg.(*wire.Error); !ok || !strings.Contains(we.Text, "refused: an operator's command from a client certificate (it needs the operator role)") {
		t.Fatalf("an operator's command from a client's certificate answered %+v", e.Msg)
	}

	// A node's certificate, claiming its own address, still cannot send an
	// operator's command: operators are clients.
	peerAddr := testutil.FreeAddr(t)
	nodeConn := tls.Client(dial(t, a.Addr()), r.bundle("peer", peerAddr, time.Hour).ClientConfig(a.Addr()))
	forgedBefore := a.Stats.Forged.Load()
	ctl := wire.Envelope{Kind: wire.Request, ReqID: 2, From: wire.NodeRef{Addr: peerAddr}, Msg: &wire.MaintControl{Pause: true}}
	if err := wire.WriteFrame(nodeConn, ctl); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 5*time.Second, "the operator's command from a node to be dropped", func() bool { return a.Stats.Forged.Load() != forgedBefore })
	for _, in := range ra.received() {
		if in.From == peerAddr {
			t.Errorf("the host was handed %v %v from %q", in.Env.Kind, in.Env.Msg.Type(), in.From)
		}
	}

	// A dials a TLS node whose certificate is for another address: the
	// call fails, and nothing is sent to it.
	imposter := testutil.FreeAddr(t) // the address the certificate names
	bad := testutil.FreeAddr(t)      // where it is served
	ln, err := tls.Listen("tcp", bad, r.bundle("liar", imposter, time.Hour).ServerConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { c.Read(make([]byte, 1)); c.Close() }()
		}
	}()
	before := a.Stats.TLSRefused.Load()
	if err := call(t, a, ra, bad); err == nil {
		t.Fatal("a call to a node presenting another address's certificate succeeded")
	}
	if a.Stats.TLSRefused.Load() == before {
		t.Error("the refused dial was not counted")
	}
}

// A node cannot listen with a certificate for another address.
func TestTLSListenNeedsItsOwnCertificate(t *testing.T) {
	r := newRingCA(t)
	_, err := Listen(Config{Listen: testutil.FreeAddr(t), DataDir: t.TempDir(), TLS: r.bundle("n", "127.0.0.1:1", time.Hour)})
	if err == nil || !strings.Contains(err.Error(), "is for the node at") {
		t.Fatalf("Listen with another address's certificate: %v", err)
	}
}

// Strangers who connect and never start a handshake hold a bounded number
// of handshake slots, for a bounded time: they are closed within
// maxHandshakeTime, and a client with a certificate gets in after them.
// They come from several addresses, so that the total bound is the one
// that holds them.
func TestTLSSilentStrangersAreBounded(t *testing.T) {
	r := newRingCA(t)
	a, _ := startTLSHost(t, r, "a")
	var silent []net.Conn
	for i := range maxHandshakes + 8 {
		silent = append(silent, dialFrom(t, fmt.Sprintf("127.0.0.%d", 2+i%8), a.Addr()))
	}
	start := time.Now()
	for _, c := range silent {
		expectClosed(t, c)
	}
	if took := time.Since(start); took > maxHandshakeTime+2*time.Second {
		t.Errorf("silent connections held for %v, want at most %v", took, maxHandshakeTime)
	}
	if n := a.Stats.TLSRefused.Load(); n < maxHandshakes+8 {
		t.Errorf("TLSRefused = %d, want every silent connection counted", n)
	}
	c := tls.Client(dial(t, a.Addr()), r.bundle("good", "", time.Hour).ClientConfig(a.Addr()))
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if err := wire.WriteFrame(c, wire.Envelope{Kind: wire.Request, ReqID: 1, Msg: &wire.Ping{}}); err != nil {
		t.Fatal(err)
	}
	if _, err := wire.ReadFrame(c, nil, wire.MaxFrameBytes); err != nil {
		t.Fatalf("a client with a certificate after the strangers: %v", err)
	}
}

// One address holds at most maxHandshakesPerIP handshake slots: its
// connections past them are refused at once, and a client with a
// certificate from another address gets in while they are held.
func TestTLSHandshakesPerAddressAreBounded(t *testing.T) {
	r := newRingCA(t)
	addr := testutil.FreeAddr(t)
	a, _ := startHost(t, Config{Listen: addr, TLS: r.bundle("a", addr, time.Hour), HandshakeTimeout: maxHandshakeTime})
	good := r.bundle("good", "", time.Hour)
	start := time.Now()
	var held []net.Conn
	for range maxHandshakesPerIP {
		held = append(held, dialFrom(t, "127.0.0.2", a.Addr()))
	}
	// Accepted in order: the ones past the bound come after the held ones.
	testutil.WaitFor(t, 5*time.Second, "the held handshakes", func() bool { return a.handshakesHeld("127.0.0.2") == maxHandshakesPerIP })
	for range 4 {
		expectClosed(t, dialFrom(t, "127.0.0.2", a.Addr()))
	}
	if n := a.Stats.TLSRefused.Load(); n != 4 {
		t.Errorf("TLSRefused = %d, want the 4 past the bound", n)
	}
	c := tls.Client(dialFrom(t, "127.0.0.3", a.Addr()), good.ClientConfig(a.Addr()))
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if err := wire.WriteFrame(c, wire.Envelope{Kind: wire.Request, ReqID: 1, Msg: &wire.Ping{}}); err != nil {
		t.Fatal(err)
	}
	if _, err := wire.ReadFrame(c, nil, wire.MaxFrameBytes); err != nil {
		t.Fatalf("a client with a certificate from another address: %v", err)
	}
	if took := time.Since(start); took >= maxHandshakeTime {
		t.Fatalf("took %v: the held handshakes may have timed out, and the test shows nothing", took)
	}
	if n := a.handshakesHeld("127.0.0.2"); n != maxHandshakesPerIP {
		t.Errorf("%d handshakes held from 127.0.0.2 after the client's, want %d", n, maxHandshakesPerIP)
	}
	for _, c := range held {
		expectClosed(t, c)
	}
	if n := a.handshakesHeld("127.0.0.2"); n != 0 {
		t.Errorf("%d slots still counted for 127.0.0.2 after its connections closed", n)
	}
}

// A revocation reaches connections already open: once the node's bundle
// reads a CRL that revokes a peer, RecheckCertificates closes that peer's
// connections, and its next handshake is refused.
func TestTLSRevocationClosesOpenConnections(t *testing.T) {
	r := newRingCA(t)
	a, ra := startTLSHost(t, r, "a")
	b, rb := startTLSHost(t, r, "b")
	if err := call(t, b, rb, a.Addr()); err != nil {
		t.Fatalf("b pings a: %v", err)
	}
	if n := a.RecheckCertificates(); n != 0 {
		t.Fatalf("closed %d connections before any revocation", n)
	}
	if err := r.ca.Revoke("b"); err != nil {
		t.Fatal(err)
	}
	crl, err := os.ReadFile(filepath.Join(r.dir, pki.CRL))
	if err != nil {
		t.Fatal(err)
	}
	// The operator copies the CRL into a's bundle; a reads it again.
	if err := os.WriteFile(filepath.Join(a.cfg.TLS.Dir(), pki.CRL), crl, 0o644); err != nil {
		t.Fatal(err)
	}
	if changed, err := a.cfg.TLS.ReloadCRL(); !changed || err != nil {
		t.Fatalf("reloading the CRL: changed %v, %v", changed, err)
	}
	before := a.Stats.TLSRefused.Load()
	if n := a.RecheckCertificates(); n != 1 {
		t.Fatalf("closed %d connections, want b's one", n)
	}
	if err := call(t, b, rb, a.Addr()); err == nil {
		t.Fatal("b pings a after its certificate was revoked")
	}
	// A new connection with b's certificate is refused at its handshake,
	// which a counts when its side of the handshake ends.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := client.Call(ctx, a.Addr(), &wire.Ping{}, client.Options{TLS: b.cfg.TLS}); err == nil {
		t.Fatal("a new connection with b's revoked certificate was taken")
	}
	if !testutil.Poll(5*time.Second, func() bool { return a.Stats.TLSRefused.Load()-before >= 2 }) {
		t.Errorf("%d refusals counted, want the closed connection and the new handshake", a.Stats.TLSRefused.Load()-before)
	}
	if err := call(t, a, ra, b.Addr()); err == nil {
		t.Fatal("a took b's certificate when dialling it after the revocation")
	}
}

// Handshakes are counted by IPv4 address, an IPv4-mapped IPv6 address
// being the IPv4 one, and by IPv6 /64, since one host commonly has a /64.
func TestHandshakeBuckets(t *testing.T) {
	bucket := func(ip string) string { return handshakeBucket(&net.TCPAddr{IP: net.ParseIP(ip), Port: 4000}) }
	for _, same := range [][2]string{
		{"192.0.2.7", "::ffff:192.0.2.7"},
		{"2001:db8:1:2::1", "2001:db8:1:2:ffff:ffff:ffff:ffff"},
	} {
		if a, b := bucket(same[0]), bucket(same[1]); a != b {
			t.Errorf("%s and %s in different buckets (%s, %s)", same[0], same[1], a, b)
		}
	}
	for _, apart := range [][2]string{
		{"192.0.2.7", "192.0.2.8"},
		{"2001:db8:1:2::1", "2001:db8:1:3::1"},
	} {
		if a, b := bucket(apart[0]), bucket(apart[1]); a == b {
			t.Errorf("%s and %s share bucket %s", apart[0], apart[1], a)
		}
	}
}

// dialFrom connects to addr from the local address ip (any of 127.0.0.0/8
// on Linux), as a peer on another host would.
func dialFrom(t *testing.T, ip, addr string) net.Conn {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("dials from 127.0.0.0/8 addresses other than 127.0.0.1: Linux only")
	}
	d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// handshakesHeld is how many handshake slots ip holds now.
func (d *Driver) handshakesHeld(ip string) int {
	d.hsMu.Lock()
	defer d.hsMu.Unlock()
	return d.handshakesFrom[ip]
}
