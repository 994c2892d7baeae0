package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// File names in a CA folder and in a bundle.
const (
	CACert   = "ca.pem"
	CAKey    = "ca-key.pem"
	CRL      = "crl.pem"
	Cert     = "cert.pem"
	Key      = "key.pem"
	issued   = "issued" // the CA's record of what it issued, by name
	uriStart = "triad://"
)

// Role is what a certificate lets its holder do.
type Role string

// The roles. A node speaks the ring's protocols to other nodes; the others
// use only the client API (puts, gets, lookups, status), and of them only
// an operator may send operators' commands (pausing maintenance, the load
// generator).
const (
	RoleNode     Role = "node"     // a ring node: names its address, machine and vnode count
	RoleSite     Role = "site"     // a news front-end, named by its Path name
	RoleOperator Role = "operator" // a person who runs the ring
	RoleClient   Role = "client"   // any other program that stores and reads blocks
)

// ParseRole reads a role's name.
func ParseRole(s string) (Role, error) {
	switch r := Role(s); r {
	case RoleNode, RoleSite, RoleOperator, RoleClient:
		return r, nil
	}
	return "", fmt.Errorf("pki: role %q: want node, site, operator or client", s)
}

// MaxVnodes bounds the vnode count a node certificate names: the ring's
// derived IDs stop there (ring.MaxVnodes; a test in ring holds the two
// equal, so that clients, which import pki, need not import the ring).
const MaxVnodes = 64

// roleScheme is the scheme of the URI SAN that names a certificate's role:
// triad-role:node?machine=0123456789abcdef&vnodes=4 for a node,
// triad-role:operator for an operator. It is not "triad", whose URIs name
// a node's address, so that older readers, which take any triad: URI for
// an address, skip it.
const roleScheme = "triad-role"

// Identity is what a certificate says of its holder.
type Identity struct {
	Name string // the common name
	Site string // the organizational unit
	Addr string // a node's listen address (host:port); "" for any other role
	// Role is what the holder may do. A certificate issued before roles
	// names none: it is read as a node's if it names an address, else as
	// a client's.
	Role Role
	// Machine is a node's machine identity (wire.NodeRef.Machine), which
	// its refs must carry: nodes that share a disk are given one. Zero in
	// a node certificate means one of its own, derived from its address
	// (MachineID).
	Machine uint64
	// Vnodes is how many vnodes a node may run: its refs must name vnode
	// indexes below it. A node certificate without one allows 1.
	Vnodes int
	Serial *big.Int
}

// MachineID is the machine identity a node with this certificate must
// use: the one it names, or one derived from its address.
func (id Identity) MachineID() uint64 {
	if id.Machine != 0 {
		return id.Machine
	}
	sum := sha256.Sum256([]byte("triad-machine\x00" + id.Addr))
	var m uint64
	for _, b := range sum[:8] {
		m = m<<8 | uint64(b)
	}
	return max(m, 1)
}

// Describe says whom a certificate of id is for, as triad ca issue
// reports it: "the node at ADDR, N vnode(s)" for a node, else "a ROLE".
func (id Identity) Describe() string {
	if id.Role == RoleNode {
		return fmt.Sprintf("the node at %s, %d vnode(s)", id.Addr, id.Vnodes)
	}
	return "a " + string(id.Role)
}

// IdentityOf reads the identity in a certificate.
func IdentityOf(c *x509.Certificate) (Identity, error) {
	id := Identity{Name: c.Subject.CommonName, Serial: c.SerialNumber}
	if len(c.Subject.OrganizationalUnit) == 1 {
		id.Site = c.Subject.OrganizationalUnit[0]
	}
	for _, u := range c.URIs {
		switch u.Scheme {
		case "triad":
			if id.Addr != "" {
				return id, errors.New("pki: a certificate with two node addresses")
			}
			id.Addr = u.Host
		case roleScheme:
			if id.Role != "" {
				return id, errors.New("pki: a certificate with two roles")
			}
			if err := id.readRole(u); err != nil {
				return id, err
			}
		}
	}
	if id.Name == "" || id.Site == "" {
		return id, errors.New("pki: a certificate without a name or a site")
	}
	switch {
	case id.Role == "" && id.Addr != "":
		id.Role, id.Vnodes = RoleNode, 1
	case id.Role == "":
		id.Role = RoleClient
	case id.Role == RoleNode && id.Addr == "":
		return id, errors.New("pki: a node certificate without an address")
	case id.Role != RoleNode && id.Addr != "":
		return id, fmt.Errorf("pki: a %s certificate that names a node address", id.Role)
	}
	return id, nil
}

// readRole reads a role URI (roleScheme) into id.
func (id *Identity) readRole(u *url.URL) error {
	r, err := ParseRole(u.Opaque)
	if err != nil {
		return err
	}
	id.Role = r
	q := u.Query()
	if r != RoleNode {
		if len(q) > 0 {
			return fmt.Errorf("pki: a %s certificate that names a machine or vnodes", r)
		}
		return nil
	}
	id.Vnodes = 1
	if v := q.Get("vnodes"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxVnodes {
			return fmt.Errorf("pki: vnodes %q not in [1, %d]", v, MaxVnodes)
		}
		id.Vnodes = n
	}
	if m := q.Get("machine"); m != "" {
		x, err := strconv.ParseUint(m, 16, 64)
		if err != nil || len(m) != 16 || x == 0 {
			return fmt.Errorf("pki: machine %q is not 16 hex digits", m)
		}
		id.Machine = x
	}
	return nil
}

// roleURI is the URI SAN naming id's role (and a node's machine and
// vnodes).
func (id Identity) roleURI() *url.URL {
	u := &url.URL{Scheme: roleScheme, Opaque: string(id.Role)}
	if id.Role == RoleNode {
		q := url.Values{}
		q.Set("vnodes", strconv.Itoa(id.Vnodes))
		if id.Machine != 0 {
			q.Set("machine", fmt.Sprintf("%016x", id.Machine))
		}
		u.RawQuery = q.Encode()
	}
	return u
}

// InitCA makes a new CA in dir (which must not hold one): a key and a
// self-signed certificate valid for the given time.
func InitCA(dir, name string, validity time.Duration) error {
	if _, err := os.Stat(filepath.Join(dir, CACert)); err == nil {
		return fmt.Errorf("pki: %s already holds a CA", dir)
	}
	if err := os.MkdirAll(filepath.Join(dir, issued), 0o700); err != nil {
		return err
	}
	key, tmpl, err := newTemplate(pkix.Name{CommonName: name, Organization: []string{"triad deployment CA"}}, validity)
	if err != nil {
		return err
	}
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign
	tmpl.BasicConstraintsValid, tmpl.IsCA, tmpl.MaxPathLenZero = true, true, true
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return err
	}
	if err := writeKey(filepath.Join(dir, CAKey), key); err != nil {
		return err
	}
	return writePEM(filepath.Join(dir, CACert), "CERTIFICATE", der, 0o644)
}

// CA is a loaded certificate authority.
type CA struct {
	dir  string
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// LoadCA loads the CA in dir.
func LoadCA(dir string) (*CA, error) {
	cert, err := readCert(filepath.Join(dir, CACert))
	if err != nil {
		return nil, err
	}
	raw, err := os.ReadFile(filepath.Join(dir, CAKey))
	if err != nil {
		return nil, fmt.Errorf("pki: the CA's key: %w", err)
	}
	b, _ := pem.Decode(raw)
	if b == nil {
		return nil, fmt.Errorf("pki: %s holds no PEM key", CAKey)
	}
	key, err := x509.ParseECPrivateKey(b.Bytes)
	if err != nil {
		return nil, fmt.Errorf("pki: the CA's key: %w", err)
	}
	return &CA{dir: dir, cert: cert, key: key}, nil
}

// Issue makes a certificate for id valid for the given time, and writes a
// bundle for it in out: the CA's certificate, the new certificate and its
// key, and the CRL if there is one. id's Role defaults to node with Addr
// set (a node listening there), client without; a node's Vnodes defaults
// to 1, and only a node names an address, a machine or vnodes. The CA
// keeps a copy of each certificate it issued, by name; a name is issued
// once unless it is revoked.
func (ca *CA) Issue(id Identity, validity time.Duration, out string) error {
	if err := checkName(id.Name); err != nil {
		return err
	}
	if id.Role == "" {
		id.Role = RoleClient
		if id.Addr != "" {
			id.Role = RoleNode
		}
	}
	if _, err := ParseRole(string(id.Role)); err != nil {
		return err
	}
	if id.Role == RoleNode {
		if id.Addr == "" {
			return errors.New("pki: a node certificate names the address the node listens on")
		}
		if id.Vnodes == 0 {
			id.Vnodes = 1
		}
		if id.Vnodes < 1 || id.Vnodes > MaxVnodes {
			return fmt.Errorf("pki: %d vnodes not in [1, %d]", id.Vnodes, MaxVnodes)
		}
	} else if id.Addr != "" || id.Machine != 0 || id.Vnodes != 0 {
		return fmt.Errorf("pki: only a node certificate names an address, a machine or vnodes, not a %s's", id.Role)
	}
	if id.Site == "" || strings.ContainsAny(id.Site, "/\\\n") {
		return fmt.Errorf("pki: site %q", id.Site)
	}
	record := filepath.Join(ca.dir, issued, id.Name+".pem")
	revoked, err := ca.revoked()
	if err != nil {
		return err
	}
	if old, err := readCert(record); err == nil && !revoked[old.SerialNumber.String()] {
		return fmt.Errorf("pki: %s was issued already (serial %s); revoke it first to issue it again", id.Name, old.SerialNumber)
	}
	if id.Addr != "" {
		// A node's address is its identity: one live certificate each.
		if holder, err := ca.holderOf(id.Addr, revoked); err != nil {
			return err
		} else if holder != "" {
			return fmt.Errorf("pki: %s already holds a certificate for the node at %s; revoke it first", holder, id.Addr)
		}
	}
	key, tmpl, err := newTemplate(pkix.Name{CommonName: id.Name, OrganizationalUnit: []string{id.Site}}, validity)
	if err != nil {
		return err
	}
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth}
	if id.Addr != "" {
		host, _, err := net.SplitHostPort(id.Addr)
		if err != nil {
			return fmt.Errorf("pki: node address %q: %v", id.Addr, err)
		}
		tmpl.URIs = []*url.URL{{Scheme: "triad", Host: id.Addr}}
		if ip := net.ParseIP(host); ip != nil {
			tmpl.IPAddresses = []net.IP{ip}
		} else {
			tmpl.DNSNames = []string{host}
		}
	}
	tmpl.URIs = append(tmpl.URIs, id.roleURI())
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o700); err != nil {
		return err
	}
	caPEM, err := os.ReadFile(filepath.Join(ca.dir, CACert))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, CACert), caPEM, 0o644); err != nil {
		return err
	}
	if crl, err := os.ReadFile(filepath.Join(ca.dir, CRL)); err == nil {
		if err := os.WriteFile(filepath.Join(out, CRL), crl, 0o644); err != nil {
			return err
		}
	}
	if err := writeKey(filepath.Join(out, Key), key); err != nil {
		return err
	}
	if err := writePEM(filepath.Join(out, Cert), "CERTIFICATE", der, 0o644); err != nil {
		return err
	}
	return writePEM(record, "CERTIFICATE", der, 0o644)
}

// Revoke revokes the certificate issued to name: the CA's CRL, rewritten
// in its folder, lists it from now on. Copy crl.pem to every bundle.
func (ca *CA) Revoke(name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	cert, err := readCert(filepath.Join(ca.dir, issued, name+".pem"))
	if err != nil {
		return fmt.Errorf("pki: no certificate was issued to %s", name)
	}
	var entries []x509.RevocationListEntry
	number := big.NewInt(1)
	if old, err := readCRL(filepath.Join(ca.dir, CRL)); err == nil {
		entries = old.RevokedCertificateEntries
		number.Add(old.Number, big.NewInt(1))
	}
	for _, e := range entries {
		if e.SerialNumber.Cmp(cert.SerialNumber) == 0 {
			return nil
		}
	}
	now := time.Now()
	entries = append(entries, x509.RevocationListEntry{SerialNumber: cert.SerialNumber, RevocationTime: now})
	der, err := x509.CreateRevocationList(rand.Reader, &x509.RevocationList{
		Number: number, ThisUpdate: now, NextUpdate: now.Add(365 * 24 * time.Hour), RevokedCertificateEntries: entries,
	}, ca.cert, ca.key)
	if err != nil {
		return err
	}
	return writePEM(filepath.Join(ca.dir, CRL), "X509 CRL", der, 0o644)
}

// holderOf names the holder of an unrevoked certificate the CA issued for
// the node at addr, if any.
func (ca *CA) holderOf(addr string, revoked map[string]bool) (string, error) {
	entries, err := os.ReadDir(filepath.Join(ca.dir, issued))
	if err != nil {
		return "", err
	}
	for _, e := range entries {
		c, err := readCert(filepath.Join(ca.dir, issued, e.Name()))
		if err != nil {
			return "", err
		}
		if id, err := IdentityOf(c); err == nil && id.Addr == addr && !revoked[c.SerialNumber.String()] && time.Now().Before(c.NotAfter) {
			return id.Name, nil
		}
	}
	return "", nil
}

// revoked is the set of serials (decimal) the CA's CRL lists.
func (ca *CA) revoked() (map[string]bool, error) {
	out := map[string]bool{}
	crl, err := readCRL(filepath.Join(ca.dir, CRL))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return out, nil
		}
		return nil, err
	}
	for _, e := range crl.RevokedCertificateEntries {
		out[e.SerialNumber.String()] = true
	}
	return out, nil
}

// Bundle is a loaded bundle: what a node or client presents and trusts.
type Bundle struct {
	Cert  tls.Certificate
	Self  Identity
	Roots *x509.CertPool

	dir     string
	ca      *x509.Certificate
	revoked atomic.Pointer[crlState] // what the CRL in dir said when last read
}

// crlState is a CRL as read: the serials it revokes and its number.
type crlState struct {
	serials map[string]bool
	number  *big.Int // nil without a CRL
}

// LoadBundle loads the bundle in dir, checking that its certificate is
// the CA's and in date.
func LoadBundle(dir string) (*Bundle, error) { return loadBundle(dir, true) }

// LoadBundleUnchecked loads a bundle whose own certificate may be expired
// or revoked: for tests that present such certificates to a node.
func LoadBundleUnchecked(dir string) (*Bundle, error) { return loadBundle(dir, false) }

// loadBundle loads a bundle; unchecked, its own certificate may be
// expired or revoked (tests present such certificates).
func loadBundle(dir string, check bool) (*Bundle, error) {
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, Cert), filepath.Join(dir, Key))
	if err != nil {
		return nil, fmt.Errorf("pki: bundle %s: %w", dir, err)
	}
	ca, err := readCert(filepath.Join(dir, CACert))
	if err != nil {
		return nil, err
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		return nil, err
	}
	b := &Bundle{Cert: cert, Roots: x509.NewCertPool(), dir: dir, ca: ca}
	b.Roots.AddCert(ca)
	if b.Self, err = IdentityOf(leaf); err != nil {
		return nil, err
	}
	if _, err := b.ReloadCRL(); err != nil {
		return nil, err
	}
	if !check {
		return b, nil
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: b.Roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
		return nil, fmt.Errorf("pki: bundle %s: its certificate: %w", dir, err)
	}
	if b.isRevoked(b.Self.Serial) {
		return nil, fmt.Errorf("pki: bundle %s: its certificate is revoked", dir)
	}
	return b, nil
}

// ReloadCRL reads the bundle's crl.pem again (the operator copies a new one
// from the CA after 'triad ca revoke'), so that the certificates it lists
// are refused from the next handshake on. A CRL not signed by the CA, or
// older than the one in use, is an error and the one in use stays. It
// reports whether the CRL changed.
func (b *Bundle) ReloadCRL() (changed bool, err error) {
	next := &crlState{serials: map[string]bool{}}
	crl, err := readCRL(filepath.Join(b.dir, CRL))
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return false, err
	default:
		if err := crl.CheckSignatureFrom(b.ca); err != nil {
			return false, fmt.Errorf("pki: %s is not signed by the CA: %w", CRL, err)
		}
		for _, e := range crl.RevokedCertificateEntries {
			next.serials[e.SerialNumber.String()] = true
		}
		next.number = crl.Number
	}
	cur := b.revoked.Load()
	if cur != nil && cur.number == nil && next.number == nil {
		return false, nil
	}
	if cur != nil && cur.number != nil {
		if next.number == nil || next.number.Cmp(cur.number) < 0 {
			return false, fmt.Errorf("pki: %s is missing or older (number %v) than the CRL in use (number %v)", CRL, next.number, cur.number)
		}
		if next.number.Cmp(cur.number) == 0 {
			return false, nil
		}
	}
	b.revoked.Store(next)
	return cur != nil, nil
}

// Dir is the folder the bundle was loaded from.
func (b *Bundle) Dir() string { return b.dir }

func (b *Bundle) isRevoked(serial *big.Int) bool {
	st := b.revoked.Load()
	return st != nil && serial != nil && st.serials[serial.String()]
}

// Check verifies a peer's certificate chain, as presented in a TLS
// handshake: issued by the CA, in date, not revoked. It returns the
// peer's identity.
func (b *Bundle) Check(chain []*x509.Certificate, usage x509.ExtKeyUsage) (Identity, error) {
	if len(chain) == 0 {
		return Identity{}, errors.New("pki: no certificate")
	}
	inter := x509.NewCertPool()
	for _, c := range chain[1:] {
		inter.AddCert(c)
	}
	if _, err := chain[0].Verify(x509.VerifyOptions{Roots: b.Roots, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
		return Identity{}, fmt.Errorf("pki: %w", err)
	}
	id, err := IdentityOf(chain[0])
	if err != nil {
		return id, err
	}
	if b.isRevoked(id.Serial) {
		return id, fmt.Errorf("pki: the certificate of %s (serial %s) is revoked", id.Name, id.Serial)
	}
	return id, nil
}

func checkName(name string) error {
	if name == "" || len(name) > 64 || strings.ContainsAny(name, "/\\ \t\n") || name[0] == '.' {
		return fmt.Errorf("pki: name %q: want 1 to 64 characters, no slashes or spaces", name)
	}
	return nil
}

// newTemplate makes a key and the template of its certificate: subject,
// a random serial, valid from an hour ago (clocks differ) for validity.
func newTemplate(subject pkix.Name, validity time.Duration) (*ecdsa.PrivateKey, *x509.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	return key, &x509.Certificate{SerialNumber: serial, Subject: subject, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(validity)}, nil
}

func writeKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	return writePEM(path, "EC PRIVATE KEY", der, 0o600)
}

func writePEM(path, kind string, der []byte, mode os.FileMode) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), mode)
}

func readCert(path string) (*x509.Certificate, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	b, _ := pem.Decode(raw)
	if b == nil || b.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("pki: %s holds no PEM certificate", path)
	}
	return x509.ParseCertificate(b.Bytes)
}

func readCRL(path string) (*x509.RevocationList, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	b, _ := pem.Decode(raw)
	if b == nil || b.Type != "X509 CRL" {
		return nil, fmt.Errorf("pki: %s holds no PEM CRL", path)
	}
	return x509.ParseRevocationList(b.Bytes)
}
