package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"triad/internal/config"
	"triad/internal/id"
	"triad/internal/newsd"
	"triad/internal/noded"
	"triad/internal/pki"
	"triad/internal/ring"
	"triad/internal/wire"
)

const upAbout = `
Starts a small local UsenetDHT deployment on 127.0.0.1: --sites news sites,
each a news server (NNTP) and --nodes triad nodes, all in this one process.
The nodes of every site join one ring and keep the articles of all of them
(each article stored once in the ring, with its replicas); the sites peer
with each other and pass on only headers (TAKEDHT), so an article posted or
fed at one site is readable at every site. Site i serves news on
--nntp-port+i; node j listens on --port+j; data for all of them goes under
--data. It prints what it started and how to look at it, waits until the ring
is consistent, and runs until Ctrl-C, when every node leaves the ring
gracefully. Started again with the same --data, the nodes come back at the
same ring positions and the sites with their groups and articles.`

func runUp(args []string, stdout, stderr io.Writer) error {
	o := defaultUpOptions()
	fs := newFlags("up", "up [--sites N] [--nodes N] [--vnodes N] [--port P] [--nntp-port P] [--data DIR]", upAbout, stderr)
	o.RegisterFlags(fs)
	profile := addProfileFlag(fs, "every node and site until Ctrl-C")
	cf, err := parseCommand(fs, args, "up", &o)
	if err != nil {
		return err
	}
	// The sites' options: the [nntp] table of the file, then what up sets
	// for each site. Checked now, before anything starts.
	d := &upDeployment{o: o, site: newsd.DefaultOptions(), out: stdout}
	sfs := flag.NewFlagSet("nntp", flag.ContinueOnError)
	d.site.RegisterFlags(sfs)
	if err := applyTable(cf, "nntp", sfs, &d.site); err != nil {
		return err
	}
	if o.NNTPPort > 0 {
		site := d.siteOptions(0)
		if err := site.Validate(); err != nil {
			return usageErr(fs, "%v", cf.Explain("nntp", err))
		}
	}
	stopProfile, err := profile.start()
	if err != nil {
		return err
	}
	defer stopProfile()
	relaxGC()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	d.log = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	defer d.Close(stderr)
	for _, step := range []func(context.Context) error{d.openCA, d.startNodes, d.startSites, d.printHowTo, d.waitConsistent} {
		if err := step(ctx); err != nil {
			return err
		}
	}
	<-ctx.Done()
	fmt.Fprintln(stdout, "stopping...")
	return nil
}

// upOptions are triad up's flags and the [up] table of a configuration
// file.
type upOptions struct {
	Sites    int    // news sites, each a news server with its own nodes (1 to 16); key sites; default 3
	Nodes    int    // nodes per site (1 to 64 in all); key nodes; default 1
	Vnodes   int    // virtual servers per node (1 to 64); key vnodes; default 2
	Port     int    // first TCP port: node i listens on Port+i; key port; default 4001
	Data     string // data folder of every node and site; key data; default triad-data/up
	NNTPPort int    // news port of the first site (site i on NNTPPort+i); 0: no news servers; key nntp-port; default 1119
	CacheMB  int    // each site's article cache in MiB; key cache-mb; default 64
	TLS      bool   // mutual TLS with a CA made under Data; key tls; default true
	HTTPPort int    // first HTTP port of the status pages (node i on HTTPPort+i); 0: none; key http-port; default 9101
	Groups   string // the groups every site carries; key groups; default newsd.DefaultGroups
}

func defaultUpOptions() upOptions {
	return upOptions{Sites: 3, Nodes: 1, Vnodes: 2, Port: 4001, Data: "triad-data/up", NNTPPort: 1119, CacheMB: 64, TLS: true, HTTPPort: 9101, Groups: newsd.DefaultGroups}
}

func (o *upOptions) RegisterFlags(fs *flag.FlagSet) {
	fs.IntVar(&o.Sites, "sites", o.Sites, "news sites, each a news server with its own nodes")
	fs.IntVar(&o.Nodes, "nodes", o.Nodes, "nodes per site")
	fs.IntVar(&o.Vnodes, "vnodes", o.Vnodes, "virtual servers per node")
	fs.IntVar(&o.Port, "port", o.Port, "first TCP port; node i listens on port+i")
	fs.StringVar(&o.Data, "data", o.Data, "data `directory` for all nodes and sites")
	fs.IntVar(&o.NNTPPort, "nntp-port", o.NNTPPort, "news port of the first site on 127.0.0.1; site i serves on nntp-port+i (0: no news servers)")
	fs.IntVar(&o.CacheMB, "cache-mb", o.CacheMB, "each site's cache of articles read from the ring, in MiB")
	fs.BoolVar(&o.TLS, "tls", o.TLS, "mutual TLS on every connection to and from the nodes, with a CA made under --data (data/ca); --tls=false: plain TCP")
	fs.IntVar(&o.HTTPPort, "http-port", o.HTTPPort, "first HTTP port on 127.0.0.1 for the status pages and /metrics: node i (and the site it serves) on http-port+i (0: none)")
	fs.StringVar(&o.Groups, "groups", o.Groups, "comma-separated `newsgroups` every site carries (name or name:y|n|m)")
}

func (o *upOptions) Validate() error {
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
	case o.CacheMB < 0:
		return fmt.Errorf("--cache-mb %d: want 0 or more", o.CacheMB)
	}
	if _, err := newsd.ParseGroups(o.Groups); err != nil {
		return fmt.Errorf("--groups: %v", err)
	}
	return nil
}

// upDeployment is what triad up runs, started by its steps in order and
// stopped by one Close: the sites first (they use the nodes), then the
// nodes, each leaving the ring gracefully.
type upDeployment struct {
	o    upOptions
	site newsd.Options // the [nntp] table: the base of each site's options
	log  *slog.Logger
	out  io.Writer

	ca      *upCA // nil without TLS
	nodes   []*noded.Node
	sites   []*newsd.Site
	peerLns []net.Listener // the sites' TLS listeners, until their sites serve them
}

// siteOptions are the options of site i: the [nntp] table's, with what
// up sets.
func (d *upDeployment) siteOptions(i int) newsd.Options {
	o := d.site
	o.Listen, o.Data, o.PathHost = fmt.Sprintf("127.0.0.1:%d", d.o.NNTPPort+i), filepath.Join(d.o.Data, upSiteName(i)), upSiteName(i)
	o.CacheMB, o.Groups, o.Peers, o.PeersFile = d.o.CacheMB, d.o.Groups, nil, ""
	return o
}

// openCA makes (or opens) the deployment's CA, with TLS.
func (d *upDeployment) openCA(context.Context) error {
	if !d.o.TLS {
		return nil
	}
	var err error
	d.ca, err = openUpCA(filepath.Join(d.o.Data, "ca"))
	return err
}

// startNodes starts every node, each joining through the first.
func (d *upDeployment) startNodes(context.Context) error {
	total := d.o.Sites * d.o.Nodes
	for i := range total {
		o := noded.DefaultOptions()
		o.Listen, o.Data, o.Vnodes = fmt.Sprintf("127.0.0.1:%d", d.o.Port+i), filepath.Join(d.o.Data, fmt.Sprintf("node%d", i)), d.o.Vnodes
		if i > 0 {
			o.Join = d.nodes[0].Addr
		}
		// Evenly spaced IDs, not derived ones: the nodes of one operator on
		// one machine, where balance matters more than placement checks.
		o.IDs, o.DeriveIDs = spacedIDs(i, total, d.o.Vnodes), false
		if d.ca != nil {
			var err error
			if o.Bundle, err = d.ca.bundle(pki.Identity{Name: fmt.Sprintf("node%d-%s", i, o.Listen), Site: "node", Addr: o.Listen, Vnodes: d.o.Vnodes}); err != nil {
				return err
			}
		}
		if d.o.HTTPPort > 0 {
			o.HTTP = fmt.Sprintf("127.0.0.1:%d", d.o.HTTPPort+i)
			o.Name = fmt.Sprintf("node %d (%s)", i, o.Listen)
			if d.o.NNTPPort > 0 && i%d.o.Nodes == 0 {
				o.Name += ", news site " + upSiteName(i/d.o.Nodes)
			}
		}
		// The nodes stop after the sites, which use them until closed:
		// Close stops them, not the signal.
		n, err := noded.Start(context.Background(), o, d.log)
		if err != nil {
			return fmt.Errorf("node %d: %w", i, err)
		}
		d.nodes = append(d.nodes, n)
		fmt.Fprintf(d.out, "started node %d on %s (%d vnodes, data in %s)\n", i, n.Addr, d.o.Vnodes, n.Data)
	}
	return nil
}

// startSites starts the news sites, each on the first of its nodes. Their
// links: mutual TLS with the ring's CA, each site known by its
// certificate on a listener of its own (a free port, printed); or,
// without TLS, AUTHINFO with one shared secret.
func (d *upDeployment) startSites(ctx context.Context) error {
	if d.o.NNTPPort == 0 {
		return nil
	}
	peerAddr, err := d.peerAddrs()
	if err != nil {
		return err
	}
	secret := newsd.TLSSecret
	if d.ca == nil {
		if secret, err = upSecret(d.o.Data); err != nil {
			return err
		}
	}
	for i := range d.o.Sites {
		o, n := d.siteOptions(i), d.nodes[i*d.o.Nodes]
		o.Node = n.Addr
		if d.ca != nil {
			if o.Bundle, err = d.ca.bundle(pki.Identity{Name: o.PathHost, Site: o.PathHost, Role: pki.RoleSite}); err != nil {
				return err
			}
			o.PeerListener, d.peerLns[i] = d.peerLns[i], nil
		}
		for j := range d.o.Sites {
			if j != i {
				o.Peers = append(o.Peers, config.Peer{Name: upSiteName(j), Addr: peerAddr[j], Secret: secret, Mode: "mesh"})
			}
		}
		s, err := newsd.Start(ctx, o, d.log)
		if err != nil {
			return fmt.Errorf("news site %s: %w", o.PathHost, err)
		}
		d.sites = append(d.sites, s)
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
		fmt.Fprintf(d.out, "started news site %s on %s (node %s; %s; groups %s; data in %s)\n", o.PathHost, s.Addr, n.Addr, links, strings.Join(s.Groups, ", "), o.Data)
	}
	return nil
}

// peerAddrs are the addresses the sites announce to each other on: with
// TLS, a listener of each site's own on a free port (bound now); else its
// news port.
func (d *upDeployment) peerAddrs() ([]string, error) {
	addrs := make([]string, d.o.Sites)
	d.peerLns = make([]net.Listener, d.o.Sites)
	for i := range addrs {
		addrs[i] = fmt.Sprintf("127.0.0.1:%d", d.o.NNTPPort+i)
		if d.ca == nil {
			continue
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		d.peerLns[i], addrs[i] = ln, ln.Addr().String()
	}
	return addrs, nil
}

// printHowTo says how to look at the deployment.
func (d *upDeployment) printHowTo(context.Context) error {
	out := d.out
	fmt.Fprintf(out, "\nLook at it from another terminal:\n")
	if d.ca != nil {
		if _, err := d.ca.bundle(pki.Identity{Name: "operator", Site: "operator", Role: pki.RoleOperator}); err != nil {
			return err
		}
		fmt.Fprintf(out, "  export TRIAD_TLS=%s   # the nodes run mutual TLS with their own CA in %s; commands need a certificate\n", filepath.Join(d.ca.dir, "bundles", "operator"), d.ca.dir)
	}
	fmt.Fprintf(out, "  go run ./cmd/triad ring --addr %s\n  go run ./cmd/triad lookup --addr %s --text hello\n", d.nodes[0].Addr, d.nodes[len(d.nodes)-1].Addr)
	if d.o.HTTPPort > 0 {
		fmt.Fprintf(out, "  status page and Prometheus metrics (/metrics) of each node (and of the site it serves):\n")
		for i, n := range d.nodes {
			site := ""
			if len(d.sites) > 0 && i%d.o.Nodes == 0 {
				site = ", " + upSiteName(i/d.o.Nodes)
			}
			fmt.Fprintf(out, "    http://%s/   (node %d%s)\n", n.HTTP.Addr, i, site)
		}
	}
	if len(d.sites) > 0 {
		fmt.Fprintf(out, "  point a newsreader at any site (no password from this machine):\n")
		for i, s := range d.sites {
			fmt.Fprintf(out, "    news://%s/   (%s)\n", s.Addr, upSiteName(i))
		}
		fmt.Fprintf(out, `  an article posted at one site is read at every other one, e.g.:
  python3 -c "import nntplib; s = nntplib.NNTP('127.0.0.1', %d); print(s.group('local.test'))"
  each site's feeds to the others: %s
`, d.o.NNTPPort+len(d.sites)-1, filepath.Join(d.o.Data, upSiteName(0), "feeds.status"))
	}
	fmt.Fprintf(out, `
Note: these %d nodes share this machine's disk. Each counts as a machine of its
own, so a block's replicas are on distinct nodes but not on distinct disks: a
local ring for trying triad, not for keeping data. On real machines, run one
'triad node' per machine (or give nodes that share a disk one --machine name).
`, len(d.nodes))
	fmt.Fprintln(out, "Press Ctrl-C to stop every node (each leaves the ring gracefully).")
	return nil
}

// waitConsistent waits until every vnode's successor list is complete
// (ring.Check): successor pointers are right first, and the rest of each
// list is copied from the successor's at the next stabilization rounds;
// until then a lookup can answer from a list with a gap, and a put place
// a copy on a node that is not among the key's successors.
func (d *upDeployment) waitConsistent(ctx context.Context) error {
	start := time.Now()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		var views []wire.VnodeInfo
		for _, n := range d.nodes {
			v, err := n.RingInfo(ctx)
			if err != nil {
				return nil // stopping
			}
			views = append(views, v...)
		}
		if len(ring.Check(views, ring.Want{Succs: d.nodes[0].Host.Ring.Config().Succs})) == 0 {
			fmt.Fprintf(d.out, "ring consistent: %d vnodes, every successor list complete (%.1fs)\n", len(views), time.Since(start).Seconds())
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// Close stops the sites, then the nodes, and says what failed.
func (d *upDeployment) Close(stderr io.Writer) {
	for _, s := range d.sites {
		if err := s.Close(); err != nil {
			fmt.Fprintf(stderr, "news server %s: %v\n", s.Addr, err)
		}
	}
	for _, ln := range d.peerLns {
		if ln != nil {
			ln.Close()
		}
	}
	for _, n := range d.nodes {
		if err := n.Close(); err != nil {
			fmt.Fprintf(stderr, "node %s: %v\n", n.Addr, err)
		}
	}
	if len(d.nodes) > 0 {
		fmt.Fprintln(d.out, "stopped")
	}
}

// spacedIDs are the ring positions of node i of n with v vnodes each: the
// n*v positions spaced evenly, the nodes taking turns around the ring, so
// that with k replicas each node holds k/n of what is stored (random
// positions on so few nodes leave one holding all of it, another little).
func spacedIDs(i, n, v int) []id.ID {
	var ids []id.ID
	for j := range v {
		ids = append(ids, id.Spaced(j*n+i, n*v))
	}
	return ids
}

// upSiteName is the Path name of triad up's site i.
func upSiteName(i int) string { return fmt.Sprintf("site%d", i+1) }

// upSecret is the secret triad up's sites log in to each other with, made
// once and kept in the data folder.
func upSecret(dir string) (string, error) {
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

// upCA is the certificate authority triad up makes under its data folder,
// so that its ring runs mutual TLS with no more commands: a bundle for
// each node (named by its address), each news site and an operator,
// issued once and kept.
type upCA struct {
	dir string
	ca  *pki.CA
}

func openUpCA(dir string) (*upCA, error) {
	if _, err := os.Stat(filepath.Join(dir, pki.CACert)); errors.Is(err, os.ErrNotExist) {
		if err := pki.InitCA(dir, "triad up", 10*365*24*time.Hour); err != nil {
			return nil, err
		}
	}
	ca, err := pki.LoadCA(dir)
	if err != nil {
		return nil, err
	}
	return &upCA{dir: dir, ca: ca}, nil
}

// bundle loads name's bundle, issuing it first if it has none.
func (u *upCA) bundle(id pki.Identity) (*pki.Bundle, error) {
	out := filepath.Join(u.dir, "bundles", id.Name)
	if _, err := os.Stat(filepath.Join(out, pki.Cert)); errors.Is(err, os.ErrNotExist) {
		if err := u.ca.Issue(id, 10*365*24*time.Hour, out); err != nil {
			return nil, err
		}
	}
	return pki.LoadBundle(out)
}
