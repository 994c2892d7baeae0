package pki

import (
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// deployment is a CA with bundles issued from it.
type deployment struct {
	t   *testing.T
	dir string
	ca  *CA
}

func newDeployment(t *testing.T) *deployment {
	dir := filepath.Join(t.TempDir(), "ca")
	if err := InitCA(dir, "test ring", 24*time.Hour); err != nil {
		t.Fatal(err)
	}
	ca, err := LoadCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	return &deployment{t: t, dir: dir, ca: ca}
}

func (d *deployment) issue(name, site, addr string, validity time.Duration) *Bundle {
	d.t.Helper()
	out := filepath.Join(d.t.TempDir(), name)
	if err := d.ca.Issue(Identity{Name: name, Site: site, Addr: addr}, validity, out); err != nil {
		d.t.Fatal(err)
	}
	b, err := loadBundle(out, false)
	if err != nil {
		d.t.Fatal(err)
	}
	return b
}

// handshake runs a TLS handshake between a server with srv and a client
// with cli dialling addr, and returns the identities each side saw (or
// the first error).
func handshake(t *testing.T, srv *Bundle, cli *tls.Config) (server, client Identity, err error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	type result struct {
		id  Identity
		err error
	}
	got := make(chan result, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- result{err: err}
			return
		}
		defer c.Close()
		tc := tls.Server(c, srv.ServerConfig())
		tc.SetDeadline(time.Now().Add(5 * time.Second))
		if err := tc.Handshake(); err != nil {
			got <- result{err: err}
			return
		}
		id, err := PeerIdentity(tc.ConnectionState())
		// Echo a byte, so that the client's read ends cleanly.
		var b [1]byte
		if _, rerr := tc.Read(b[:]); rerr == nil {
			tc.Write(b[:])
		}
		got <- result{id, err}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tc := tls.Client(c, cli)
	tc.SetDeadline(time.Now().Add(5 * time.Second))
	cerr := tc.Handshake()
	if cerr == nil {
		// TLS 1.3: the client learns of a refused certificate on its
		// first read.
		tc.Write([]byte{0})
		_, cerr = tc.Read(make([]byte, 1))
	}
	r := <-got
	if cerr == nil {
		client, cerr = PeerIdentity(tc.ConnectionState())
	}
	// Either side may be the one that refused: both errors are said.
	return r.id, client, errors.Join(r.err, cerr)
}

func TestMutualTLS(t *testing.T) {
	d := newDeployment(t)
	node := d.issue("node1", "site1", "127.0.0.1:4001", time.Hour)
	front := d.issue("front1", "site1", "", time.Hour)

	srvSaw, cliSaw, err := handshake(t, node, front.ClientConfig("127.0.0.1:4001"))
	if err != nil {
		t.Fatalf("a valid pair: %v", err)
	}
	if srvSaw.Name != "front1" || srvSaw.Site != "site1" || srvSaw.Addr != "" || cliSaw.Addr != "127.0.0.1:4001" {
		t.Fatalf("identities: server saw %+v, client saw %+v", srvSaw, cliSaw)
	}

	if srvSaw, cliSaw, err := handshake(t, front, node.NamedClientConfig("front1")); err != nil || srvSaw.Name != "node1" || cliSaw.Name != "front1" {
		t.Fatalf("a front-end dialled by its name: server saw %+v, client saw %+v, %v", srvSaw, cliSaw, err)
	}

	other := newDeployment(t)
	outsider := other.issue("node9", "site9", "127.0.0.1:4009", time.Hour)
	expired := d.issue("old", "site1", "", -time.Minute)
	revoked := d.issue("gone", "site1", "", time.Hour)
	if err := d.ca.Revoke("gone"); err != nil {
		t.Fatal(err)
	}
	// The node reloads its bundle with the CRL (the operator copies it).
	node2 := d.issue("node2", "site2", "127.0.0.1:4002", time.Hour)
	noCert := &tls.Config{MinVersion: tls.VersionTLS13, InsecureSkipVerify: true}
	// An outsider that does not check the node's certificate (its own CA
	// would refuse it first): the node must refuse the outsider's.
	blind := outsider.ClientConfig("127.0.0.1:4001")
	blind.VerifyConnection = nil
	for _, tc := range []struct {
		name string
		srv  *Bundle
		cli  *tls.Config
		want string
	}{
		{"no certificate", node, noCert, "certificate"},
		{"another CA's", node, blind, "unknown authority"},
		{"expired", node, expired.ClientConfig("127.0.0.1:4001"), "expired"},
		{"revoked", node2, revoked.ClientConfig("127.0.0.1:4002"), "revoked"},
		{"a server for another address", node, front.ClientConfig("127.0.0.1:4002"), "for \"127.0.0.1:4001\""},
		{"a server from another CA", outsider, front.ClientConfig("127.0.0.1:4009"), "unknown authority"},
		{"a front-end under another name", front, node.NamedClientConfig("front2"), "certificate is front1's"},
		{"a front-end from another CA", outsider, front.NamedClientConfig("node9"), "unknown authority"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := handshake(t, tc.srv, tc.cli)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
}

func TestIssueRules(t *testing.T) {
	d := newDeployment(t)
	if err := InitCA(d.dir, "again", time.Hour); err == nil {
		t.Error("a second CA in the same folder")
	}
	out := t.TempDir()
	for _, bad := range []Identity{{Name: "", Site: "s"}, {Name: "a/b", Site: "s"}, {Name: "x", Site: ""}, {Name: "x", Site: "s", Addr: "nohost"}} {
		if err := d.ca.Issue(bad, time.Hour, out); err == nil {
			t.Errorf("issued %+v", bad)
		}
	}
	d.issue("n", "s", "", time.Hour)
	if err := d.ca.Issue(Identity{Name: "n", Site: "s"}, time.Hour, out); err == nil || !strings.Contains(err.Error(), "revoke it first") {
		t.Errorf("a name issued twice: %v", err)
	}
	if err := d.ca.Revoke("n"); err != nil {
		t.Fatal(err)
	}
	if err := d.ca.Issue(Identity{Name: "n", Site: "s"}, time.Hour, filepath.Join(out, "n2")); err != nil {
		t.Errorf("re-issue after revocation: %v", err)
	}
	if _, err := LoadBundle(filepath.Join(t.TempDir(), "none")); err == nil {
		t.Error("loaded a missing bundle")
	}
	// A bundle whose own certificate is expired or revoked does not load.
	if err := d.ca.Issue(Identity{Name: "late", Site: "s"}, -time.Minute, filepath.Join(out, "late")); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadBundle(filepath.Join(out, "late")); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Errorf("loaded an expired bundle: %v", err)
	}
	// A revoked bundle does not load once it has the CRL, and a CRL that
	// is not the CA's is refused.
	if err := d.ca.Issue(Identity{Name: "gone2", Site: "s"}, time.Hour, filepath.Join(out, "gone2")); err != nil {
		t.Fatal(err)
	}
	if err := d.ca.Revoke("gone2"); err != nil {
		t.Fatal(err)
	}
	crl, err := os.ReadFile(filepath.Join(d.dir, CRL))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, "gone2", CRL), crl, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadBundle(filepath.Join(out, "gone2")); err == nil || !strings.Contains(err.Error(), "revoked") {
		t.Errorf("a revoked bundle loaded: %v", err)
	}
	other := newDeployment(t)
	other.issue("x", "s", "", time.Hour)
	if err := other.ca.Revoke("x"); err != nil {
		t.Fatal(err)
	}
	foreign, err := os.ReadFile(filepath.Join(other.dir, CRL))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.ca.Issue(Identity{Name: "fine", Site: "s"}, time.Hour, filepath.Join(out, "fine")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, "fine", CRL), foreign, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadBundle(filepath.Join(out, "fine")); err == nil || !strings.Contains(err.Error(), "not signed by the CA") {
		t.Errorf("a bundle with another CA's CRL loaded: %v", err)
	}

	// A node's address has one live certificate: another is refused until
	// the first is revoked.
	d.issue("n1", "s", "127.0.0.1:4001", time.Hour)
	if err := d.ca.Issue(Identity{Name: "n1b", Site: "s", Addr: "127.0.0.1:4001"}, time.Hour, filepath.Join(out, "n1b")); err == nil || !strings.Contains(err.Error(), "already holds") {
		t.Errorf("a second certificate for one address: %v", err)
	}
	if err := d.ca.Revoke("n1"); err != nil {
		t.Fatal(err)
	}
	if err := d.ca.Issue(Identity{Name: "n1b", Site: "s", Addr: "127.0.0.1:4001"}, time.Hour, filepath.Join(out, "n1b")); err != nil {
		t.Errorf("re-issuing an address after revocation: %v", err)
	}
}

// ReloadCRL takes a newer CRL of the CA, and keeps the one in use when
// the file is another CA's, older, or gone.
func TestReloadCRL(t *testing.T) {
	d := newDeployment(t)
	node := d.issue("node1", "site1", "127.0.0.1:4001", time.Hour)
	gone := d.issue("gone", "site1", "", time.Hour)
	later := d.issue("later", "site1", "", time.Hour)
	copyCRL := func(from string) {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(from, CRL))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(node.Dir(), CRL), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if changed, err := node.ReloadCRL(); changed || err != nil {
		t.Fatalf("no CRL yet: changed %v, %v", changed, err)
	}
	if err := d.ca.Revoke("gone"); err != nil {
		t.Fatal(err)
	}
	first, err := os.ReadFile(filepath.Join(d.dir, CRL))
	if err != nil {
		t.Fatal(err)
	}
	copyCRL(d.dir)
	if changed, err := node.ReloadCRL(); !changed || err != nil {
		t.Fatalf("a new CRL: changed %v, %v", changed, err)
	}
	if _, _, err := handshake(t, node, gone.ClientConfig("127.0.0.1:4001")); err == nil || !strings.Contains(err.Error(), "revoked") {
		t.Fatalf("a certificate revoked by the reloaded CRL: %v", err)
	}
	if changed, err := node.ReloadCRL(); changed || err != nil {
		t.Fatalf("the same CRL again: changed %v, %v", changed, err)
	}
	if err := d.ca.Revoke("later"); err != nil {
		t.Fatal(err)
	}
	copyCRL(d.dir)
	if _, err := node.ReloadCRL(); err != nil {
		t.Fatal(err)
	}
	other := newDeployment(t)
	other.issue("x", "s", "", time.Hour)
	if err := other.ca.Revoke("x"); err != nil {
		t.Fatal(err)
	}
	for name, swap := range map[string]func(){
		"an older CRL":     func() { os.WriteFile(filepath.Join(node.Dir(), CRL), first, 0o644) },
		"another CA's CRL": func() { copyCRL(other.dir) },
		"no CRL":           func() { os.Remove(filepath.Join(node.Dir(), CRL)) },
	} {
		swap()
		if _, err := node.ReloadCRL(); err == nil {
			t.Errorf("%s taken", name)
		}
		if _, _, err := handshake(t, node, later.ClientConfig("127.0.0.1:4001")); err == nil {
			t.Errorf("after %s, the certificate revoked by the CRL in use is taken", name)
		}
	}
}

// A certificate names its holder's role and, for a node, its machine and
// vnode count; what Issue refuses to write, and how a certificate issued
// before roles reads.
func TestRoles(t *testing.T) {
	d := newDeployment(t)
	for _, c := range []struct {
		in   Identity
		want Identity // Name, Site, Addr, Role, Machine, Vnodes
	}{
		{Identity{Name: "n1", Site: "s", Addr: "127.0.0.1:4001"}, Identity{Role: RoleNode, Vnodes: 1}},
		{Identity{Name: "n2", Site: "s", Addr: "127.0.0.1:4002", Vnodes: 4, Machine: 0xabc}, Identity{Role: RoleNode, Vnodes: 4, Machine: 0xabc}},
		{Identity{Name: "news.s.example", Site: "s", Role: RoleSite}, Identity{Role: RoleSite}},
		{Identity{Name: "alice", Site: "s", Role: RoleOperator}, Identity{Role: RoleOperator}},
		{Identity{Name: "prog", Site: "s"}, Identity{Role: RoleClient}},
	} {
		out := filepath.Join(t.TempDir(), c.in.Name)
		if err := d.ca.Issue(c.in, time.Hour, out); err != nil {
			t.Fatalf("%s: %v", c.in.Name, err)
		}
		b, err := LoadBundle(out)
		if err != nil {
			t.Fatal(err)
		}
		got := b.Self
		if got.Name != c.in.Name || got.Site != c.in.Site || got.Addr != c.in.Addr || got.Role != c.want.Role || got.Machine != c.want.Machine || got.Vnodes != c.want.Vnodes {
			t.Errorf("%s: read %+v, want role %s machine %x vnodes %d", c.in.Name, got, c.want.Role, c.want.Machine, c.want.Vnodes)
		}
	}
	for _, bad := range []Identity{
		{Name: "b1", Site: "s", Role: RoleOperator, Addr: "127.0.0.1:4009"},
		{Name: "b2", Site: "s", Role: RoleNode},
		{Name: "b3", Site: "s", Addr: "127.0.0.1:4010", Vnodes: MaxVnodes + 1},
		{Name: "b4", Site: "s", Role: RoleSite, Machine: 1},
		{Name: "b5", Site: "s", Role: RoleClient, Vnodes: 2},
		{Name: "b6", Site: "s", Role: "admin"},
	} {
		if err := d.ca.Issue(bad, time.Hour, filepath.Join(t.TempDir(), bad.Name)); err == nil {
			t.Errorf("issued %+v", bad)
		}
	}
	// Machine identities: the one named, else one per address.
	a := Identity{Addr: "10.0.0.1:4001"}
	if m := (Identity{Machine: 7}).MachineID(); m != 7 {
		t.Errorf("MachineID of a named machine = %d", m)
	}
	if a.MachineID() == 0 || a.MachineID() == (Identity{Addr: "10.0.0.2:4001"}).MachineID() {
		t.Error("machines derived from two addresses are zero or equal")
	}

	// A certificate issued before roles (no role URI) reads as a node's
	// with one vnode when it names an address, else as a client's; one
	// with two roles is refused.
	legacy := func(uris ...string) (Identity, error) {
		key, tmpl, err := newTemplate(pkix.Name{CommonName: "old", OrganizationalUnit: []string{"s"}}, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range uris {
			u, err := url.Parse(s)
			if err != nil {
				t.Fatal(err)
			}
			tmpl.URIs = append(tmpl.URIs, u)
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, d.ca.cert, &key.PublicKey, d.ca.key)
		if err != nil {
			t.Fatal(err)
		}
		c, err := x509.ParseCertificate(der)
		if err != nil {
			t.Fatal(err)
		}
		return IdentityOf(c)
	}
	if id, err := legacy("triad://127.0.0.1:4001"); err != nil || id.Role != RoleNode || id.Vnodes != 1 {
		t.Errorf("an old node certificate reads as %+v, %v", id, err)
	}
	if id, err := legacy(); err != nil || id.Role != RoleClient {
		t.Errorf("an old client certificate reads as %+v, %v", id, err)
	}
	if _, err := legacy("triad-role:operator", "triad-role:node?vnodes=1"); err == nil {
		t.Error("a certificate with two roles was read")
	}
	if _, err := legacy("triad-role:node?vnodes=1"); err == nil {
		t.Error("a node certificate without an address was read")
	}
}

// TestDescribe says whom a certificate is for, as triad ca issue prints
// it (the identity read back from the bundle: TestRoles checks that it
// is what was issued).
func TestDescribe(t *testing.T) {
	for _, c := range []struct {
		id   Identity
		want string
	}{
		{Identity{Role: RoleNode, Addr: "127.0.0.1:4001", Vnodes: 4}, "the node at 127.0.0.1:4001, 4 vnode(s)"},
		{Identity{Role: RoleSite}, "a site"},
		{Identity{Role: RoleOperator}, "a operator"},
		{Identity{Role: RoleClient}, "a client"},
	} {
		if got := c.id.Describe(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.id, got, c.want)
		}
	}
}
