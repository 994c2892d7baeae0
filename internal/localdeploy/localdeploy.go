package localdeploy

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"triad/internal/config"
	"triad/internal/dhash"
	"triad/internal/newsd"
	"triad/internal/noded"
	"triad/internal/pki"
	"triad/internal/ring"
	"triad/internal/survey"
	"triad/internal/wire"
)

// Options are triad up's: its flags and the [up] table of a
// configuration file.
type Options struct {
	Sites    int    // news sites, each a news server with its own nodes (1 to 16); key sites; default 3
	Nodes    int    // nodes per site (1 to 64 in all); key nodes; default 1
	Vnodes   int    // virtual servers per node (1 to 64); key vnodes; default 8
	Port     int    // first TCP port: node i listens on Port+i; key port; default 4001
	Data     string // data folder of every node and site; key data; default triad-data/up
	NNTPPort int    // news port of the first site (site i on NNTPPort+i); 0: no news servers; key nntp-port; default 1119
	CacheMB  int    // each site's article cache in MiB; key cache-mb; default 64
	TLS      bool   // mutual TLS with a CA made under Data; key tls; default true
	HTTPPort int    // first HTTP port of the status pages (node i on HTTPPort+i); 0: none; key http-port; default 9101
	Groups   string // the groups every site carries; key groups; default newsd.DefaultGroups
	PeerPort int    // with TLS, the first port of the sites' feeds (site i on PeerPort+i); 0: free ports; key peer-port
}

// DefaultOptions are three sites of one node each, two vnodes a node, with
// TLS and status pages.
func DefaultOptions() Options {
	return Options{Sites: 3, Nodes: 1, Vnodes: 8, Port: 4001, Data: "triad-data/up", NNTPPort: 1119, CacheMB: 64, TLS: true, HTTPPort: 9101, Groups: newsd.DefaultGroups}
}

// RegisterFlags defines the flags on fs, bound to o's fields.
func (o *Options) RegisterFlags(fs *flag.FlagSet) {
	fs.IntVar(&o.Sites, "sites", o.Sites, "news sites, each a news server with its own nodes")
	fs.IntVar(&o.Nodes, "nodes", o.Nodes, "nodes per site")
	fs.IntVar(&o.Vnodes, "vnodes", o.Vnodes, "virtual servers per node")
	fs.IntVar(&o.Port, "port", o.Port, "first TCP port; node i listens on port+i")
	fs.StringVar(&o.Data, "data", o.Data, "data `directory` for all nodes and sites")
	fs.IntVar(&o.NNTPPort, "nntp-port", o.NNTPPort, "news port of the first site on 127.0.0.1; site i serves on nntp-port+i (0: no news servers)")
	fs.IntVar(&o.CacheMB, "cache-mb", o.CacheMB, "each site's cache of articles read from the ring, in MiB")
	fs.BoolVar(&o.TLS, "tls", o.TLS, "mutual TLS on every connection to and from the nodes, with a CA made under --data (data/ca); --tls=false: plain TCP")
	fs.IntVar(&o.HTTPPort, "http-port", o.HTTPPort, "first HTTP port on 127.0.0.1 for the status pages and /metrics: node i (and the site it serves) on http-port+i (0: none)")
	fs.IntVar(&o.PeerPort, "peer-port", o.PeerPort, "with --tls, the first port of the sites' feeds to each other: site i takes its peers' TLS connections on peer-port+i (0: free ports, printed)")
	fs.StringVar(&o.Groups, "groups", o.Groups, "comma-separated `newsgroups` every site carries (name or name:y|n|m)")
}

// MemoryLimitMB is the deployment's soft limit of its Go memory (its
// nodes and sites share one process): mb, or with -1 what its nodes
// (nodeMB each) and its sites (site.MemoryLimitMB each) would each have
// alone, summed (issue 44: the totals that bound one node's memory hold in
// one process too).
func (o Options) MemoryLimitMB(mb, nodeMB int, site newsd.Options) int {
	if mb >= 0 {
		return mb
	}
	return o.Sites*o.Nodes*nodeMB + o.Sites*site.MemoryLimitMB
}

// Validate checks o, naming the flag of a bad value.
func (o *Options) Validate() error {
	total := o.Sites * o.Nodes
	switch {
	case o.Sites < 1 || o.Sites > 16 || o.Nodes < 1 || total > 64 || o.Vnodes < 1 || o.Vnodes > 64:
		return fmt.Errorf("--sites %d, --nodes %d, --vnodes %d: want 1 to 16 sites, 1 to 64 nodes in all and 1 to 64 vnodes", o.Sites, o.Nodes, o.Vnodes)
	case o.NNTPPort < 0 || o.NNTPPort+o.Sites > 65535:
		return fmt.Errorf("--nntp-port %d out of range", o.NNTPPort)
	case o.Port < 1 || o.Port+total > 65535:
		return fmt.Errorf("--port %d out of range", o.Port)
	case o.HTTPPort < 0 || o.HTTPPort+total > 65535:
		return fmt.Errorf("--http-port %d out of range", o.HTTPPort)
	case o.PeerPort < 0 || o.PeerPort+o.Sites > 65535:
		return fmt.Errorf("--peer-port %d out of range", o.PeerPort)
	case o.CacheMB < 0:
		return fmt.Errorf("--cache-mb %d: want 0 or more", o.CacheMB)
	}
	if _, err := newsd.ParseGroups(o.Groups); err != nil {
		return fmt.Errorf("--groups: %v", err)
	}
	return nil
}

// Deployment is what triad up runs, started by its steps in order and
// stopped by one Close: the sites first (they use the nodes), then the
// nodes, each leaving the ring gracefully.
type Deployment struct {
	// Nodes are the nodes started, node i listening on Options.Port+i.
	Nodes []*noded.Node
	// Sites are the news sites started, site i on the first node of its
	// own (node i*Options.Nodes).
	Sites []*newsd.Site
	// CADir is the folder of the deployment's CA, with a bundle for each
	// node, site and an operator under bundles/; empty without TLS.
	CADir string

	o       Options
	site    newsd.Options // the base of each site's options
	log     *slog.Logger
	say     func(format string, args ...any)
	ca      *authority     // nil without TLS
	peerLns []net.Listener // the sites' TLS listeners, until their sites serve them
}

// Start starts the deployment o describes, each site from site (the
// [nntp] table's options) with what the deployment sets; say is told what
// starts. The sites start once the ring is consistent (WaitConsistent),
// so that their first post finds the replicas it needs rather than "too
// few live hosts". ctx bounds that wait; what starts runs until Close. On
// an error, or ctx's end, what started is stopped.
func Start(ctx context.Context, o Options, site newsd.Options, log *slog.Logger, say func(format string, args ...any)) (*Deployment, error) {
	d := &Deployment{o: o, site: site, log: log, say: say}
	run := context.WithoutCancel(ctx)
	for _, step := range []func() error{
		func() error { return d.openCA(run) },
		func() error { return d.startNodes(run) },
		func() error { return d.waitRing(ctx) },
		func() error { return d.startSites(run) },
		func() error { return d.issueOperator(run) },
	} {
		if err := step(); err != nil {
			return nil, errors.Join(err, d.Close())
		}
	}
	return d, nil
}

// waitRing waits until the ring is consistent, and says so.
func (d *Deployment) waitRing(ctx context.Context) error {
	start := time.Now()
	n := d.WaitConsistent(ctx)
	if n == 0 {
		return fmt.Errorf("waiting for the ring to be consistent: %w", context.Cause(ctx))
	}
	d.say("ring consistent: %d vnodes, every successor list complete (%.1fs)", n, time.Since(start).Seconds())
	return nil
}

// siteOptions are the options of site i: base (the [nntp] table's), with
// what the deployment sets.
func (o *Options) siteOptions(base newsd.Options, i int) newsd.Options {
	s := base
	s.Listen, s.Data, s.PathHost = fmt.Sprintf("127.0.0.1:%d", o.NNTPPort+i), filepath.Join(o.Data, SiteName(i)), SiteName(i)
	s.CacheMB, s.Groups, s.Peers, s.PeersFile = o.CacheMB, o.Groups, nil, ""
	return s
}

// ValidateSites checks the sites' options made from base, before anything
// starts.
func (o *Options) ValidateSites(base newsd.Options) error {
	if o.NNTPPort == 0 {
		return nil
	}
	s := o.siteOptions(base, 0)
	return s.Validate()
}

// openCA makes (or opens) the deployment's CA, with TLS.
func (d *Deployment) openCA(context.Context) error {
	if !d.o.TLS {
		return nil
	}
	var err error
	d.CADir = filepath.Join(d.o.Data, "ca")
	d.ca, err = openCA(d.CADir)
	return err
}

// startNodes starts every node, each joining through the first.
func (d *Deployment) startNodes(context.Context) error {
	total := d.o.Sites * d.o.Nodes
	var placed []wire.NodeRef // the vnodes of the nodes placed so far
	for i := range total {
		o := noded.DefaultOptions()
		o.Listen, o.Data, o.Vnodes = fmt.Sprintf("127.0.0.1:%d", d.o.Port+i), filepath.Join(d.o.Data, fmt.Sprintf("node%d", i)), d.o.Vnodes
		if i > 0 {
			o.Join = d.Nodes[0].Addr
		}
		// IDs derived from the address, as a deployment's are, checked
		// by every peer against the certificate: each node takes the
		// vnodes that even out the shares (ring.Place) among the
		// positions its certificate allows (pki.MaxVnodes), weighed here
		// against the nodes before it, which a node starting a moment
		// after them could not yet see whole. A restart keeps what the
		// node saved.
		ids, err := ring.Place(o.Listen, d.o.Vnodes, pki.MaxVnodes, dhash.DefaultConfig().Span(wire.RedundancyDefault), placed)
		if err != nil {
			return err
		}
		for _, x := range ids {
			placed = append(placed, wire.NodeRef{ID: x, Addr: o.Listen})
		}
		o.IDs, o.DeriveIDs = ids, true
		// D2 too, so that triad fs volumes can be tried on the local ring.
		o.Enable("d2")
		if d.ca != nil {
			var err error
			if o.Bundle, err = d.ca.bundle(pki.Identity{Name: fmt.Sprintf("node%d-%s", i, o.Listen), Site: "node", Addr: o.Listen, Vnodes: pki.MaxVnodes}); err != nil {
				return err
			}
		}
		if d.o.HTTPPort > 0 {
			o.HTTP = fmt.Sprintf("127.0.0.1:%d", d.o.HTTPPort+i)
			o.Name = fmt.Sprintf("node %d (%s)", i, o.Listen)
			if d.o.NNTPPort > 0 && i%d.o.Nodes == 0 {
				o.Name += ", news site " + SiteName(i/d.o.Nodes)
			}
		}
		// The nodes stop after the sites, which use them until closed:
		// Close stops them, not the signal.
		n, err := noded.Start(context.Background(), o, d.log)
		if err != nil {
			return fmt.Errorf("node %d: %w", i, err)
		}
		d.Nodes = append(d.Nodes, n)
		d.say("started node %d on %s (%d vnodes, data in %s)", i, n.Addr, d.o.Vnodes, n.Data)
	}
	d.setLocal()
	return nil
}

// setLocal tells each node's deployment page what this process runs:
// every node's own page, and the news sites started so far with their
// feeds.
func (d *Deployment) setLocal() {
	pages := map[string]string{}
	for _, n := range d.Nodes {
		if n.HTTP != nil {
			pages[n.Addr] = "http://" + n.HTTP.Addr + "/"
		}
	}
	var sites func() []survey.Site
	if started := slices.Clone(d.Sites); len(started) > 0 {
		sites = func() []survey.Site {
			var out []survey.Site
			for _, s := range started {
				out = append(out, survey.Site{Name: s.Name(), Addr: s.Addr, Up: true, Feeds: s.Feeds()})
			}
			return out
		}
	}
	for _, n := range d.Nodes {
		if n.Page != nil && n.Page.Deployment != nil {
			n.Page.Deployment.SetLocal(pages, sites)
		}
	}
}

// startSites starts the news sites, each on the first of its nodes. Their
// links: mutual TLS with the ring's CA, each site known by its
// certificate on a listener of its own (a free port, printed); or,
// without TLS, AUTHINFO with one shared secret.
func (d *Deployment) startSites(ctx context.Context) error {
	if d.o.NNTPPort == 0 {
		return nil
	}
	peerAddr, err := d.peerAddrs()
	if err != nil {
		return err
	}
	secret := newsd.TLSSecret
	if d.ca == nil {
		if secret, err = peerSecret(d.o.Data); err != nil {
			return err
		}
	}
	for i := range d.o.Sites {
		o, n := d.o.siteOptions(d.site, i), d.Nodes[i*d.o.Nodes]
		o.Node, o.Local = n.Addr, n.Local()
		if d.ca != nil {
			if o.Bundle, err = d.ca.bundle(pki.Identity{Name: o.PathHost, Site: o.PathHost, Role: pki.RoleSite}); err != nil {
				return err
			}
			o.PeerListener, d.peerLns[i] = d.peerLns[i], nil
		}
		for j := range d.o.Sites {
			if j != i {
				o.Peers = append(o.Peers, config.Peer{Name: SiteName(j), Addr: peerAddr[j], Secret: secret, Mode: "mesh"})
			}
		}
		s, err := newsd.Start(ctx, o, d.log)
		if err != nil {
			return fmt.Errorf("news site %s: %w", o.PathHost, err)
		}
		d.Sites = append(d.Sites, s)
		if n.HTTP != nil {
			// The site's figures beside its node's, on one address.
			if err := n.HTTP.Registry.Register(s.Collector()); err != nil {
				return err
			}
			n.Page.SetNews(s.Collector())
		}
		links := "peers by AUTHINFO"
		if s.PeerAddr != "" {
			links = "peers over TLS on " + s.PeerAddr
		}
		d.say("started news site %s on %s (node %s; %s; groups %s; data in %s)", o.PathHost, s.Addr, n.Addr, links, strings.Join(s.Groups, ", "), o.Data)
	}
	d.setLocal()
	return nil
}

// peerAddrs are the addresses the sites announce to each other on: with
// TLS, a listener of each site's own on a free port (bound now); else its
// news port.
func (d *Deployment) peerAddrs() ([]string, error) {
	addrs := make([]string, d.o.Sites)
	d.peerLns = make([]net.Listener, d.o.Sites)
	for i := range addrs {
		addrs[i] = fmt.Sprintf("127.0.0.1:%d", d.o.NNTPPort+i)
		if d.ca == nil {
			continue
		}
		at := "127.0.0.1:0"
		if d.o.PeerPort > 0 {
			at = fmt.Sprintf("127.0.0.1:%d", d.o.PeerPort+i)
		}
		ln, err := net.Listen("tcp", at)
		if err != nil {
			return nil, fmt.Errorf("site %s's feeds (--peer-port): %w", SiteName(i), err)
		}
		d.peerLns[i], addrs[i] = ln, ln.Addr().String()
	}
	return addrs, nil
}

// issueOperator issues the operator's bundle, with TLS: commands run
// against the deployment need a certificate.
func (d *Deployment) issueOperator(context.Context) error {
	if d.ca == nil {
		return nil
	}
	_, err := d.ca.bundle(pki.Identity{Name: "operator", Site: "operator", Role: pki.RoleOperator})
	return err
}

// OperatorBundle is the folder of the operator's bundle; empty without
// TLS.
func (d *Deployment) OperatorBundle() string {
	if d.ca == nil {
		return ""
	}
	return filepath.Join(d.CADir, "bundles", "operator")
}

// WaitConsistent waits until every vnode's successor list is complete
// (ring.Check) and returns how many vnodes there are; it returns 0 when
// ctx ends first. Successor pointers are right first, and the rest of
// each list is copied from the successor's at the next stabilization
// rounds; until then a lookup can answer from a list with a gap, and a
// put place a copy on a node that is not among the key's successors.
func (d *Deployment) WaitConsistent(ctx context.Context) int {
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		var views []wire.VnodeInfo
		for _, n := range d.Nodes {
			v, err := n.RingInfo(ctx)
			if err != nil {
				return 0 // stopping
			}
			views = append(views, v...)
		}
		if len(ring.Check(views, ring.Want{Succs: d.Nodes[0].Host.Ring.Config().Succs})) == 0 {
			return len(views)
		}
		select {
		case <-ctx.Done():
			return 0
		case <-tick.C:
		}
	}
}

// Close stops the sites, then the nodes (each leaving the ring
// gracefully), and returns what failed.
func (d *Deployment) Close() error {
	var errs []error
	for _, s := range d.Sites {
		if err := s.Close(); err != nil {
			errs = append(errs, fmt.Errorf("news server %s: %w", s.Addr, err))
		}
	}
	for _, ln := range d.peerLns {
		if ln != nil {
			ln.Close()
		}
	}
	for _, n := range d.Nodes {
		if err := n.Close(); err != nil {
			errs = append(errs, fmt.Errorf("node %s: %w", n.Addr, err))
		}
	}
	d.Sites, d.Nodes = nil, nil
	return errors.Join(errs...)
}

// SiteName is the Path name of triad up's site i.
func SiteName(i int) string { return fmt.Sprintf("site%d", i+1) }

// peerSecret is the secret triad up's sites log in to each other with, made
// once and kept in the data folder.
func peerSecret(dir string) (string, error) {
	path := filepath.Join(dir, "peer-secret")
	if b, err := os.ReadFile(path); err == nil && len(b) >= 16 {
		return strings.TrimSpace(string(b)), nil
	}
	var r [16]byte
	rand.Read(r[:])
	secret := hex.EncodeToString(r[:])
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return secret, os.WriteFile(path, []byte(secret+"\n"), 0o600)
}

// authority is the certificate authority triad up makes under its data folder,
// so that its ring runs mutual TLS with no more commands: a bundle for
// each node (named by its address), each news site and an operator,
// issued once and kept.
type authority struct {
	dir string
	ca  *pki.CA
}

func openCA(dir string) (*authority, error) {
	if _, err := os.Stat(filepath.Join(dir, pki.CACert)); errors.Is(err, os.ErrNotExist) {
		if err := pki.InitCA(dir, "triad up", 10*365*24*time.Hour); err != nil {
			return nil, err
		}
	}
	ca, err := pki.LoadCA(dir)
	if err != nil {
		return nil, err
	}
	return &authority{dir: dir, ca: ca}, nil
}

// bundle loads name's bundle, issuing it first if it has none.
func (u *authority) bundle(id pki.Identity) (*pki.Bundle, error) {
	out := filepath.Join(u.dir, "bundles", id.Name)
	if b, err := pki.LoadBundle(out); err == nil && b.Self.Vnodes != id.Vnodes && id.Vnodes != 0 {
		// Issued by an earlier triad up for fewer positions: again.
		if err := os.RemoveAll(out); err != nil {
			return nil, err
		}
	}
	if _, err := os.Stat(filepath.Join(out, pki.Cert)); errors.Is(err, os.ErrNotExist) {
		if err := u.ca.Issue(id, 10*365*24*time.Hour, out); err != nil {
			return nil, err
		}
	}
	return pki.LoadBundle(out)
}
