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
	"slices"
	"strings"
	"syscall"
	"time"

	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/pki"
	"triad/internal/usenet"
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
	fs := newFlags("up", "up [--sites N] [--nodes N] [--vnodes N] [--port P] [--nntp-port P] [--data DIR]", upAbout, stderr)
	sites := fs.Int("sites", 3, "news sites, each a news server with its own nodes")
	nodes := fs.Int("nodes", 1, "nodes per site")
	vnodes := fs.Int("vnodes", 2, "virtual servers per node")
	port := fs.Int("port", 4001, "first TCP port; node i listens on port+i")
	data := fs.String("data", "triad-data/up", "data `directory` for all nodes and sites")
	nntpPort := fs.Int("nntp-port", 1119, "news port of the first site on 127.0.0.1; site i serves on nntp-port+i (0: no news servers)")
	cacheMB := fs.Int("cache-mb", 64, "each site's cache of articles read from the ring, in MiB")
	useTLS := fs.Bool("tls", true, "mutual TLS on every connection to and from the nodes, with a CA made under --data (data/ca); --tls=false: plain TCP")
	httpPort := fs.Int("http-port", 9101, "first HTTP port on 127.0.0.1 for the status pages and /metrics: node i (and the site it serves) on http-port+i (0: none)")
	groups := fs.String("groups", defaultGroups, "comma-separated `newsgroups` every site carries (name or name:y|n|m)")
	profile := addProfileFlag(fs, "every node and site until Ctrl-C")
	configPath := addConfigFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	cf, err := applyConfig(fs, *configPath, "up")
	if err != nil {
		return err
	}
	// The sites' options: the [nntp] table of the file, then what up sets
	// for each site. Checked now, before anything starts.
	siteOptions := func(i int) (*nntpOptions, error) {
		sfs := flag.NewFlagSet("nntp", flag.ContinueOnError)
		o := addNNTPFlags(sfs)
		if cf != nil {
			if err := cf.Apply("nntp", sfs, notInFile...); err != nil {
				return nil, err
			}
		}
		if err := o.check(); err != nil {
			return nil, cf.Explain("nntp", err)
		}
		listen, dir, name := fmt.Sprintf("127.0.0.1:%d", *nntpPort+i), filepath.Join(*data, upSiteName(i)), upSiteName(i)
		o.listen, o.data, o.pathHost, o.cacheMB, o.groups, o.peers = &listen, &dir, &name, cacheMB, groups, nil
		return o, nil
	}
	usageErr := func(fs *flag.FlagSet, format string, args ...any) error {
		return usageErr(fs, "%v", cf.Explain("up", fmt.Errorf(format, args...)))
	}
	if fs.NArg() > 0 {
		return usageErr(fs, "unexpected argument %q", fs.Arg(0))
	}
	total := *sites * *nodes
	if *sites < 1 || *sites > 16 || *nodes < 1 || total > 64 || *vnodes < 1 || *vnodes > 64 {
		return usageErr(fs, "--sites %d, --nodes %d, --vnodes %d: want 1 to 16 sites, 1 to 64 nodes in all and 1 to 64 vnodes", *sites, *nodes, *vnodes)
	}
	if *nntpPort < 0 || *nntpPort+*sites > 65535 {
		return usageErr(fs, "--nntp-port %d out of range", *nntpPort)
	}
	if *port < 1 || *port+total > 65535 {
		return usageErr(fs, "--port %d out of range", *port)
	}
	if *httpPort < 0 || *httpPort+total > 65535 {
		return usageErr(fs, "--http-port %d out of range", *httpPort)
	}
	for _, g := range splitList(*groups) {
		if _, _, err := groupSpec(g); err != nil {
			return usageErr(fs, "--groups: %v", err)
		}
	}
	if *cacheMB < 0 {
		return usageErr(fs, "--cache-mb %d: want 0 or more", *cacheMB)
	}
	if *nntpPort > 0 {
		if _, err := siteOptions(0); err != nil {
			return usageErr(fs, "%v", err)
		}
	}
	if checkedOnly(fs) {
		return nil
	}
	stopProfile, err := profile.start()
	if err != nil {
		return err
	}
	defer stopProfile()
	relaxGC()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	// The nodes stop after the news sites, which use them until closed.
	nodeCtx, stopNodes := context.WithCancel(context.Background())
	defer stopNodes()
	var running []*runningNode
	var news []*runningNNTP
	shutdown := func() {
		stop()
		for _, n := range news {
			n.close()
		}
		stopNodes()
		for _, r := range running {
			r.wait()
		}
	}
	var ca *upCA
	if *useTLS {
		if ca, err = openUpCA(filepath.Join(*data, "ca")); err != nil {
			shutdown()
			return err
		}
	}
	for i := 0; i < total; i++ {
		join := ""
		if i > 0 {
			join = running[0].addr
		}
		listen := fmt.Sprintf("127.0.0.1:%d", *port+i)
		dir := filepath.Join(*data, fmt.Sprintf("node%d", i))
		spec := defaultNodeSpec()
		if ca != nil {
			if spec.tls, err = ca.bundle(pki.Identity{Name: fmt.Sprintf("node%d-%s", i, listen), Site: "node", Addr: listen, Vnodes: *vnodes}); err != nil {
				shutdown()
				return err
			}
		}
		spec.listen, spec.data, spec.join, spec.vnodes = listen, dir, join, *vnodes
		// Evenly spaced IDs, not derived ones: the nodes of one operator on
		// one machine, where balance matters more than placement checks.
		spec.ids, spec.ring.VerifyIDs = spacedIDs(i, total, *vnodes), false
		if *httpPort > 0 {
			spec.http = fmt.Sprintf("127.0.0.1:%d", *httpPort+i)
			spec.name = fmt.Sprintf("node %d (%s)", i, listen)
			if *nntpPort > 0 && i%*nodes == 0 {
				spec.name += ", news site " + upSiteName(i / *nodes)
			}
		}
		n, err := startNode(nodeCtx, spec, log)
		if err != nil {
			shutdown()
			return fmt.Errorf("node %d: %w", i, err)
		}
		running = append(running, n)
		fmt.Fprintf(stdout, "started node %d on %s (%d vnodes, data in %s)\n", i, n.addr, *vnodes, dir)
	}
	if *nntpPort > 0 {
		// The sites' links: mutual TLS with the ring's CA, each site
		// known by its certificate on a listener of its own (a free port,
		// printed); or, without TLS, AUTHINFO with one shared secret.
		secret, peerAddr, peerLns := tlsSecret, make([]string, *sites), make([]net.Listener, *sites)
		for i := range peerLns {
			peerAddr[i] = fmt.Sprintf("127.0.0.1:%d", *nntpPort+i)
			if ca == nil {
				continue
			}
			if peerLns[i], err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
				shutdown()
				return err
			}
			defer peerLns[i].Close() // closed by its site once served; this is for the sites that fail before
			peerAddr[i] = peerLns[i].Addr().String()
		}
		if ca == nil {
			if secret, err = upSecret(*data); err != nil {
				shutdown()
				return err
			}
		}
		for i := 0; i < *sites; i++ {
			o, err := siteOptions(i)
			if err != nil {
				shutdown()
				return err
			}
			name, dir, nodeAddr := upSiteName(i), *o.data, running[i**nodes].addr
			o.node = &nodeAddr
			if ca != nil {
				if o.tlsBundle, err = ca.bundle(pki.Identity{Name: name, Site: name, Role: pki.RoleSite}); err != nil {
					shutdown()
					return err
				}
				o.peerLn = peerLns[i]
			}
			for j := 0; j < *sites; j++ {
				if j != i {
					o.peers = append(o.peers, usenet.Peer{Name: upSiteName(j), Addr: peerAddr[j], Password: secret, Mode: usenet.Mesh})
				}
			}
			n, err := startNNTP(ctx, o, log)
			if err != nil {
				shutdown()
				return fmt.Errorf("news site %s: %w", name, err)
			}
			news = append(news, n)
			if h := running[i**nodes].http; h != nil {
				// The site's figures beside its node's, on one address.
				if err := h.Registry.Register(n.collector()); err != nil {
					shutdown()
					return err
				}
				running[i**nodes].page.SetNews(n.collector())
			}
			links := "peers by AUTHINFO"
			if n.peerAddr != "" {
				links = "peers over TLS on " + n.peerAddr
			}
			fmt.Fprintf(stdout, "started news site %s on %s (node %s; %s; groups %s; data in %s)\n", name, n.addr, nodeAddr, links, strings.Join(n.groups, ", "), dir)
		}
	}
	fmt.Fprintf(stdout, "\nLook at it from another terminal:\n")
	if ca != nil {
		if _, err := ca.bundle(pki.Identity{Name: "operator", Site: "operator", Role: pki.RoleOperator}); err != nil {
			shutdown()
			return err
		}
		fmt.Fprintf(stdout, `  export TRIAD_TLS=%s   # the nodes run mutual TLS with their own CA in %s; commands need a certificate
`, filepath.Join(ca.dir, "bundles", "operator"), ca.dir)
	}
	fmt.Fprintf(stdout, `  go run ./cmd/triad ring --addr %s
  go run ./cmd/triad lookup --addr %s --text hello
`, running[0].addr, running[len(running)-1].addr)
	if *httpPort > 0 {
		fmt.Fprintf(stdout, "  status page and Prometheus metrics (/metrics) of each node (and of the site it serves):\n")
		for i, r := range running {
			site := ""
			if len(news) > 0 && i%*nodes == 0 {
				site = ", " + upSiteName(i / *nodes)
			}
			fmt.Fprintf(stdout, "    http://%s/   (node %d%s)\n", r.http.Addr, i, site)
		}
	}
	if len(news) > 0 {
		fmt.Fprintf(stdout, "  point a newsreader at any site (no password from this machine):\n")
		for i, n := range news {
			fmt.Fprintf(stdout, "    news://%s/   (%s)\n", n.addr, upSiteName(i))
		}
		fmt.Fprintf(stdout, `  an article posted at one site is read at every other one, e.g.:
  python3 -c "import nntplib; s = nntplib.NNTP('127.0.0.1', %d); print(s.group('local.test'))"
  each site's feeds to the others: %s
`, *nntpPort+len(news)-1, filepath.Join(*data, upSiteName(0), "feeds.status"))
	}
	fmt.Fprintf(stdout, `
Note: these %d nodes share this machine's disk. Each counts as a machine of its
own, so a block's replicas are on distinct nodes but not on distinct disks: a
local ring for trying triad, not for keeping data. On real machines, run one
'triad node' per machine (or give nodes that share a disk one --machine name).
`, len(running))
	fmt.Fprintln(stdout, "Press Ctrl-C to stop every node (each leaves the ring gracefully).")

	start := time.Now()
	for ctx.Err() == nil {
		if ringConsistent(ctx, running) {
			fmt.Fprintf(stdout, "ring consistent: %d vnodes, every successor list complete (%.1fs)\n",
				total**vnodes, time.Since(start).Seconds())
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(250 * time.Millisecond):
		}
	}
	<-ctx.Done()
	fmt.Fprintln(stdout, "stopping...")
	for _, n := range news {
		if err := n.close(); err != nil {
			fmt.Fprintf(stderr, "news server %s: %v\n", n.addr, err)
		}
	}
	stopNodes()
	for _, n := range running {
		if err := n.wait(); err != nil {
			fmt.Fprintf(stderr, "node %s: %v\n", n.addr, err)
		}
	}
	fmt.Fprintln(stdout, "stopped")
	return nil
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

// ringConsistent reports whether every vnode's successor list is complete
// (see succListsComplete). Successor pointers are right first; the rest of
// each list is copied from the successor's at the next stabilization
// rounds, and until then a lookup can answer from a list with a gap and a
// put place a copy on a node that is not among the key's successors.
func ringConsistent(ctx context.Context, nodes []*runningNode) bool {
	var lists [][]id.ID
	listLen := 0
	for _, n := range nodes {
		err := n.drv.Do(ctx, func(env node.Env) {
			listLen = n.node.Ring.Config().Succs
			for _, v := range n.node.Ring.Vnodes() {
				l := []id.ID{v.Self().ID}
				for _, s := range v.Succs() {
					l = append(l, s.ID)
				}
				lists = append(lists, l)
			}
		})
		if err != nil {
			return false
		}
	}
	return succListsComplete(lists, listLen)
}

// succListsComplete reports whether each of lists (a vnode's ID, then its
// successor list, nearest first) names the next vnodes clockwise among
// all of them, as many as a list holds (listLen) or all the others: no
// gap, no stranger, no shortfall.
func succListsComplete(lists [][]id.ID, listLen int) bool {
	all := make([]id.ID, len(lists))
	for i, l := range lists {
		all[i] = l[0]
	}
	slices.SortFunc(all, id.ID.Cmp)
	want := min(listLen, len(all)-1)
	for _, l := range lists {
		if len(l)-1 != want {
			return false
		}
		i, _ := slices.BinarySearchFunc(all, l[0], id.ID.Cmp)
		for j := 1; j <= want; j++ {
			if l[j] != all[(i+j)%len(all)] {
				return false
			}
		}
	}
	return true
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
