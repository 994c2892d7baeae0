package main

import (
	"context"
	"crypto/tls"
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

	"golang.org/x/term"

	"triad/internal/client"
	"triad/internal/metrics"
	"triad/internal/pki"
	"triad/internal/status"
	"triad/internal/usenet"
)

const nntpAbout = `
Runs a news server (NNTP: RFC 3977 reading and posting, RFC 4644 streaming
feeds, RFC 4643 AUTHINFO) on --listen.

Articles are kept whole, each as one content-hash object: standalone in a
local storage engine under --data (one site, like INN), or in the DHT through
the node at --node. Newsgroups, their article numbers, the overview and the
history of message-ids live in an embedded database under --data.

Out of the box, clients on 127.0.0.1 may read, post and feed without a
password, and nobody else may do anything. --users FILE lets others in with
AUTHINFO USER/PASS; make its lines with 'triad nntp passwd NAME'.

Groups named by --groups are created at start (existing ones keep their
articles). A name may end in :y (posting allowed, the default), :n (no
posting; feeds still arrive) or :m (moderated: only articles with an
Approved header), as in INN's active file. Expiry keeps binaries (groups matching *.binaries.*) 15 days and
everything else 90 days unless --expire says otherwise.

Sites of one ring (UsenetDHT): with --node, several news servers share the
articles in the DHT, each storing about k/n of them, and pass each other only
headers. --peers FILE names the other sites, one per line:

  # name     address             mode      secret   [groups]
  siteb      10.0.0.2:119        announce  s3cret
  sitec      10.0.0.3:563        mesh      tls
  upstream   news.example:119    feed      -        comp.*,!comp.binaries.*

A site announces every article listed here (posted, fed, or announced by
another peer) to its announce peers with CHECK and TAKEDHT (headers and the
article's key), except to sites already in its Path; a mesh peer (every site
peers with every other) gets only the articles that entered the ring here;
a feed peer (INN, say) gets whole articles with CHECK and TAKETHIS. An announce peer logs in here as
its name with the secret of the link. With the secret 'tls' the link is
mutual TLS with the deployment's certificates (--tls, from 'triad ca issue
NAME' where NAME is the site's --pathhost): the peer is dialled at the
address given, its --peer-listen, and must present a certificate issued to
its name; it announces to this site's --peer-listen, known by its own. What a peer has not taken waits in
news.db (--max-backlog) and goes when it is back; each peer's state is in
DATA/feeds.status. Articles read from the DHT are kept in a memory cache
(--cache-mb, --cache-policy).

Point a newsreader at it, or try:
  python3 -c "import nntplib; s = nntplib.NNTP('127.0.0.1', 1119); print(s.list()[1][:5])"

'triad nntp passwd NAME [--perm read,post,feed]' reads a password on stdin and
prints a --users line.`

func runNNTP(args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "passwd" {
		return runNNTPPasswd(args[1:], stdout, stderr)
	}
	fs := newFlags("nntp", "nntp [--listen ADDR] [--data DIR] [--groups a.b,c.d] [--node ADDR]", nntpAbout, stderr)
	o := addNNTPFlags(fs)
	profile := addProfileFlag(fs, "the server until it stops")
	configPath := addConfigFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	cf, err := applyConfig(fs, *configPath, "nntp")
	if err == nil {
		o.configPeers, err = configPeers(cf)
	}
	if err != nil {
		return err
	}
	stopProfile, err := profile.start()
	if err != nil {
		return err
	}
	defer stopProfile()
	relaxGC()
	if fs.NArg() > 0 {
		return usageErr(fs, "unexpected argument %q", fs.Arg(0))
	}
	if err := o.check(); err != nil {
		return usageErr(fs, "%v", cf.Explain("nntp", err))
	}
	if checkedOnly(fs) {
		return nil
	}
	limitMemory(o.memoryLimitMB())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	srv, err := startNNTP(ctx, o, log)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "triad nntp: serving %s on %s (%s), data in %s\n", srv.where, srv.addr, strings.Join(srv.groups, ", "), *o.data)
	if srv.http != nil {
		fmt.Fprintf(stdout, "status page on http://%s/, metrics on http://%s/metrics\n", srv.http.Addr, srv.http.Addr)
	}
	<-ctx.Done()
	return srv.close()
}

// nntpOptions are the flags of a news server.
type nntpOptions struct {
	listen, data, node *string
	groups             *string
	pathHost           *string
	maxArticle         *int
	maxConns           *int
	maxPerAddr         *int
	idle               *time.Duration
	writeTimeout       *time.Duration
	memLimitMB         *int
	users              *string
	expire             *string
	rules              []usenet.ExpiryRule
	peersFile          *string
	peers              []usenet.Peer // from peersFile or configPeers, or set by triad up
	configPeers        []usenet.Peer // the configuration file's [[nntp.peer]] tables
	cacheMB            *int
	cachePolicy        *string
	maxBacklog         *int
	backlogMB          *int
	http               *string
	tls                *string
	tlsBundle          *pki.Bundle // set by triad up in place of --tls
	peerListen         *string
	peerLn             net.Listener // set by triad up in place of --peer-listen
	policy             usenet.CachePolicy
}

// tlsSecret, as a peer's secret, makes its link mutual TLS: this site
// dials the peer's --peer-listen address and checks that its certificate
// is issued to the peer's name, and the peer is known here by its own.
const tlsSecret = "tls"

// defaultGroups are the groups a fresh server carries.
const defaultGroups = "local.general,local.test,local.binaries.misc"

func addNNTPFlags(fs *flag.FlagSet) *nntpOptions {
	return &nntpOptions{
		listen:       fs.String("listen", "127.0.0.1:1119", "TCP `address` to serve NNTP on"),
		data:         fs.String("data", "triad-data/nntp", "`directory` for the database (and the local spool)"),
		node:         fs.String("node", "", "`address` of a triad node: keep articles in the DHT rather than locally"),
		groups:       fs.String("groups", defaultGroups, "comma-separated `newsgroups` to create at start"),
		pathHost:     fs.String("pathhost", "", "this site's `name` in Path and Xref headers (default: the host name)"),
		maxArticle:   fs.Int("max-article", 1_000_000, "largest article accepted, in `bytes`"),
		maxConns:     fs.Int("max-conns", 5000, "connections at once"),
		maxPerAddr:   fs.Int("max-per-addr", 2000, "connections at once from one address"),
		memLimitMB:   fs.Int("memory-limit-mb", 256, "soft limit of the server's Go memory (heap and stacks) in MiB besides the article cache, past which it collects garbage as often as it must; 0: none; GOMEMLIMIT overrides"),
		idle:         fs.Duration("idle-timeout", 10*time.Minute, "drop a client silent this long"),
		writeTimeout: fs.Duration("write-timeout", time.Minute, "drop a client that takes none of a reply for this long"),
		users:        fs.String("users", "", "password `file` for AUTHINFO (lines name:bcrypt-hash:read,post,feed)"),
		expire:       fs.String("expire", "", "expiry `rules` 'wildmat=days;...', first match wins (default '*.binaries.*,*.binaries=15;*=90'); every site of a ring should have the same"),
		peersFile:    fs.String("peers", "", "peer `file`: the sites this one announces its articles to and takes announcements from, and upstream feeds (see above)"),
		cacheMB:      fs.Int("cache-mb", 256, "memory cache of articles read from the DHT, in MiB, shared by every connection (0: none)"),
		cachePolicy:  fs.String("cache-policy", "lru", "which cached article goes first when the cache is full: lru or fifo"),
		tls:          fs.String("tls", "", "mutual TLS to the --node, and to and from peers whose secret is 'tls', with the bundle in this `directory` (from 'triad ca issue NAME'; none: plain TCP)"),
		peerListen:   fs.String("peer-listen", "", "serve peer sites over mutual TLS on this TCP `address`: a peer whose secret is 'tls' announces here, known by its certificate (needs --tls)"),
		http:         fs.String("http", "", "serve the status page (/) and Prometheus metrics (/metrics) on this TCP `address` (host:port; none by default)"),
		maxBacklog:   fs.Int("max-backlog", 1_000_000, "articles queued for a peer that is down; past it the oldest are dropped for it (and counted in feeds.status)"),
		backlogMB:    fs.Int("max-backlog-mb", 256, "the same queue bounded in MiB of its records (headers included): a peer's share of news.db"),
	}
}

func (o *nntpOptions) check() error {
	for _, g := range splitList(*o.groups) {
		if _, _, err := groupSpec(g); err != nil {
			return fmt.Errorf("--groups: %v", err)
		}
	}
	if *o.maxArticle < 1000 || *o.maxArticle > 64<<20 {
		return fmt.Errorf("--max-article %d: want 1000 bytes to 64 MiB", *o.maxArticle)
	}
	if *o.maxConns < 1 || *o.maxPerAddr < 1 {
		return errors.New("--max-conns and --max-per-addr must be at least 1")
	}
	if *o.idle < 3*time.Minute {
		return fmt.Errorf("--idle-timeout %s: RFC 3977 asks for at least 3 minutes", *o.idle)
	}
	if *o.writeTimeout < time.Second {
		return fmt.Errorf("--write-timeout %s: want at least 1s", *o.writeTimeout)
	}
	var err error
	if o.policy, err = usenet.ParseCachePolicy(*o.cachePolicy); err != nil {
		return fmt.Errorf("--cache-policy: %v", err)
	}
	if *o.cacheMB < 0 || *o.cacheMB > 1<<20 {
		return fmt.Errorf("--cache-mb %d: want 0 to 1048576", *o.cacheMB)
	}
	if *o.maxBacklog < 1 {
		return fmt.Errorf("--max-backlog %d: want at least 1", *o.maxBacklog)
	}
	if *o.backlogMB < 1 {
		return fmt.Errorf("--max-backlog-mb %d: want at least 1", *o.backlogMB)
	}
	switch {
	case *o.peersFile != "" && len(o.configPeers) > 0:
		return errors.New("--peers and [[nntp.peer]] tables in the configuration file: give the peers in one place")
	case *o.peersFile != "":
		if o.peers, err = loadPeers(*o.peersFile); err != nil {
			return err
		}
	case len(o.configPeers) > 0:
		o.peers = o.configPeers
	}
	tlsLinks := *o.peerListen != "" || slices.ContainsFunc(o.peers, func(p usenet.Peer) bool { return p.Password == tlsSecret })
	if tlsLinks && *o.tls == "" && o.tlsBundle == nil {
		return errors.New("--peer-listen and peers whose secret is 'tls' need --tls: the certificate this site is known by")
	}
	if *o.expire != "" {
		for _, r := range strings.Split(*o.expire, ";") {
			pat, days, ok := strings.Cut(r, "=")
			var d float64
			if _, err := fmt.Sscan(days, &d); !ok || err != nil || d <= 0 || pat == "" {
				return fmt.Errorf("--expire: %q is not wildmat=days", r)
			}
			o.rules = append(o.rules, usenet.ExpiryRule{Pattern: pat, Keep: time.Duration(d * 24 * float64(time.Hour))})
		}
	}
	return nil
}

// memoryLimitMB is the server's soft memory limit: --memory-limit-mb on
// top of the article cache, which is memory the server is meant to hold
// (under the limit, a full cache made the collector run without end and
// cost a third of the ingest rate). 0: none.
func (o *nntpOptions) memoryLimitMB() int {
	if *o.memLimitMB > 0 && *o.node != "" {
		return *o.memLimitMB + *o.cacheMB
	}
	return *o.memLimitMB
}

func splitList(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

// runningNNTP is a news server started by startNNTP.
type runningNNTP struct {
	addr     string
	peerAddr string // the peers' TLS listener, if any
	where    string // "local spool" or "the DHT via ..."
	groups   []string
	site     *usenet.Site
	spool    usenet.Spool
	cache    *usenet.CachedSpool // nil without a DHT or with --cache-mb 0
	feeds    *usenet.Feeds       // nil without peers
	srv      *usenet.Server
	http     *metrics.Server // nil without --http
	done     chan error
	stop     context.CancelFunc
}

// startNNTP opens the site and serves it until ctx ends or close.
func startNNTP(ctx context.Context, o *nntpOptions, log *slog.Logger) (*runningNNTP, error) {
	var rec *status.Recorder
	if *o.http != "" {
		rec = status.NewRecorder(log.Handler(), 50)
		log = slog.New(rec)
	}
	var spool usenet.Spool
	var cache *usenet.CachedSpool
	where := "local spool"
	bundle := o.tlsBundle
	if *o.tls != "" {
		b, err := pki.LoadBundle(*o.tls)
		if err != nil {
			return nil, err
		}
		bundle = b
	}
	if *o.node != "" {
		cl, err := client.DialClusterOptions(ctx, client.Options{TLS: bundle}, *o.node)
		if err != nil {
			return nil, fmt.Errorf("nntp: node %s: %w", *o.node, err)
		}
		spool, where = &usenet.DHTSpool{Cluster: cl}, "the DHT via "+*o.node
		if *o.cacheMB > 0 {
			cache = usenet.NewCachedSpool(spool, int64(*o.cacheMB)<<20, o.policy)
			spool = cache
		}
	} else {
		if len(o.peers) > 0 {
			return nil, errors.New("nntp: peer sites share articles through the DHT: --peers needs --node")
		}
		s, err := usenet.OpenLocalSpool(filepath.Join(*o.data, "spool"), *o.maxArticle+1024)
		if err != nil {
			return nil, err
		}
		spool = s
	}
	site, err := usenet.OpenSite(usenet.SiteConfig{Dir: *o.data, Spool: spool, PathHost: *o.pathHost, MaxArticle: *o.maxArticle,
		Expiry: o.rules, Relay: len(o.peers) > 0, RelayAnnounced: slices.ContainsFunc(o.peers, func(p usenet.Peer) bool { return p.Mode != usenet.Mesh })})
	if err != nil {
		spool.Close()
		return nil, err
	}
	r := &runningNNTP{where: where, site: site, spool: spool, cache: cache, done: make(chan error, 1)}
	fail := func(err error) (*runningNNTP, error) {
		site.Close()
		spool.Close()
		return nil, err
	}
	for _, spec := range splitList(*o.groups) {
		g, status, _ := groupSpec(spec)
		if old, ok := site.List().Group(g); !ok || status != "" && status != old.Status {
			if err := site.List().AddGroup(g, status, old.Desc); err != nil {
				return fail(err)
			}
		}
	}
	for _, g := range site.List().Groups("") {
		r.groups = append(r.groups, g.Name)
	}
	cfg := usenet.Config{Site: site, Log: log, MaxConns: *o.maxConns, MaxPerAddr: *o.maxPerAddr, IdleTimeout: *o.idle, WriteTimeout: *o.writeTimeout}
	if *o.users != "" {
		if cfg.Users, err = usenet.LoadUsers(*o.users); err != nil {
			return fail(err)
		}
	}
	// An announcing peer logs in with its name and the link's secret, or
	// is known by its certificate on the peers' TLS listener.
	peers, tlsPeers := slices.Clone(o.peers), map[string]bool{}
	for i, p := range peers {
		if p.Password == tlsSecret {
			peers[i].Password, peers[i].TLS = "", bundle.NamedClientConfig(p.Name)
			tlsPeers[p.Name] = p.Mode != usenet.Feed
			continue
		}
		if p.Mode == usenet.Feed || p.Password == "" {
			continue
		}
		if cfg.Users == nil {
			cfg.Users = usenet.NewUsers()
		}
		if err := cfg.Users.Add(p.Name, p.Password, usenet.PermRead|usenet.PermFeed|usenet.PermAnnounce); err != nil {
			return fail(err)
		}
	}
	if bundle != nil {
		cfg.TLSPeer = func(cs tls.ConnectionState) (string, usenet.Perm, error) {
			id, err := pki.PeerIdentity(cs)
			if err != nil {
				return "", 0, err
			}
			if !tlsPeers[id.Name] {
				return id.Name, 0, errors.New("not a peer of this site that announces by certificate")
			}
			return id.Name, usenet.PermRead | usenet.PermFeed | usenet.PermAnnounce, nil
		}
	}
	peerLn := o.peerLn
	if *o.peerListen != "" {
		if peerLn, err = net.Listen("tcp", *o.peerListen); err != nil {
			return fail(fmt.Errorf("--peer-listen: %w", err))
		}
	}
	if peerLn != nil {
		r.peerAddr = peerLn.Addr().String()
		peerLn = tls.NewListener(peerLn, bundle.ServerConfig())
		defer func() {
			if r.stop == nil { // failed before serving it
				peerLn.Close()
			}
		}()
	}
	ln, err := net.Listen("tcp", *o.listen)
	if err != nil {
		return fail(err)
	}
	r.addr = ln.Addr().String()
	if len(peers) > 0 {
		r.feeds, err = usenet.StartFeeds(usenet.FeedConfig{Site: site, Peers: peers, MaxBacklog: uint64(*o.maxBacklog),
			MaxBacklogBytes: uint64(*o.backlogMB) << 20, Log: log, StatusFile: filepath.Join(*o.data, "feeds.status")})
		if err != nil {
			ln.Close()
			return fail(err)
		}
	}
	r.srv = usenet.NewServer(cfg)
	if *o.http != "" {
		if r.http, err = metrics.Listen(*o.http, metrics.NewRegistry(r.collector())); err != nil {
			ln.Close()
			if r.feeds != nil {
				r.feeds.Close()
			}
			return fail(fmt.Errorf("--http %s: %w", *o.http, err))
		}
		page := &status.Sources{Name: "news " + r.addr, Log: rec}
		if s, ok := spool.(*usenet.LocalSpool); ok {
			page.Store = s.Engine.Stats
		}
		page.SetNews(r.collector())
		r.http.Mux.Handle("/", status.Handler(page))
	}
	ctx, r.stop = context.WithCancel(ctx)
	go func() { r.done <- r.srv.Serve(ln) }()
	if peerLn != nil {
		go r.srv.Serve(peerLn)
	}
	go r.expireLoop(ctx, log)
	if bundle != nil {
		go watchCRL(ctx, bundle, log, nil) // the next handshakes see it
	}
	go func() {
		<-ctx.Done()
		r.srv.Close()
	}()
	return r, nil
}

// expireLoop runs expiry at start and then every hour.
func (r *runningNNTP) expireLoop(ctx context.Context, log *slog.Logger) {
	for {
		ov, hist, err := r.site.List().Expire()
		if err != nil {
			log.Error("expiry failed", "err", err)
		} else if ov+hist > 0 {
			log.Info("expired", "overview_entries", ov, "history_entries", hist)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Hour):
		}
	}
}

// close stops serving and closes the site and the spool.
// collector is the server's metrics collector.
func (r *runningNNTP) collector() *metrics.News {
	return &metrics.News{Server: r.srv, Site: r.site, Cache: r.cache, Feeds: r.feeds}
}

func (r *runningNNTP) close() error {
	r.stop()
	err := <-r.done
	r.srv.Close()
	if r.http != nil {
		err = errors.Join(err, r.http.Close())
	}
	if r.feeds != nil {
		r.feeds.Close()
	}
	return errors.Join(err, r.site.Close(), r.spool.Close())
}

func runNNTPPasswd(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("nntp passwd", "nntp passwd NAME [--perm read,post,feed]", "Reads a password on stdin and prints a line for the --users file of 'triad nntp'.", stderr)
	perm := fs.String("perm", "read,post", "what the user may do: any of `read,post,feed`")
	pos, err := parseMixed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || strings.ContainsAny(pos[0], ": \t") {
		return usageErr(fs, "want one user NAME without ':' or spaces")
	}
	if _, err := usenet.ParsePerm(*perm); err != nil {
		return usageErr(fs, "--perm: %v", err)
	}
	var pw []byte
	if term.IsTerminal(int(os.Stdin.Fd())) {
		fmt.Fprint(stderr, "password: ")
		pw, err = term.ReadPassword(int(os.Stdin.Fd()))
		fmt.Fprintln(stderr)
	} else {
		pw, err = io.ReadAll(io.LimitReader(os.Stdin, 1024))
	}
	if err != nil {
		return err
	}
	password := strings.TrimRight(string(pw), "\r\n")
	if password == "" {
		return errors.New("nntp passwd: empty password")
	}
	h, err := usenet.HashPassword(password)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s:%s:%s\n", pos[0], h, *perm)
	return nil
}

// groupSpec splits a --groups entry, "name" or "name:status", and checks
// both parts. An empty status leaves an existing group's as it is.
func groupSpec(spec string) (name, status string, err error) {
	name, status, _ = strings.Cut(spec, ":")
	if err := usenet.CheckGroupName(name); err != nil {
		return "", "", err
	}
	switch status {
	case "", "y", "n", "m":
		return name, status, nil
	}
	return "", "", fmt.Errorf("group %s: status %q, want y, n or m", name, status)
}

// loadPeers reads a --peers file: one peer per line,
//
//	name  host:port  announce|mesh|feed  secret|-|tls  [groups-wildmat]
//
// name is the peer's Path name. An announce peer is a site of the same
// ring: it is sent headers and keys (TAKEDHT) of every article listed
// here and may announce here, logging in as name with the secret (the
// same on both sides of the link). A mesh peer is one in a full mesh: it
// is sent only the articles that entered the ring here.
// A feed peer is a traditional server upstream: it is sent whole articles
// (CHECK, TAKETHIS), logging in with the secret unless it is "-". The
// secret "tls" makes the link mutual TLS instead (see tlsSecret).
func loadPeers(path string) ([]usenet.Peer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--peers: %w", err)
	}
	var peers []usenet.Peer
	seen := map[string]bool{}
	for n, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		bad := func(format string, args ...any) error {
			return fmt.Errorf("%s:%d: %s", path, n+1, fmt.Sprintf(format, args...))
		}
		f := strings.Fields(line)
		if len(f) < 4 || len(f) > 5 {
			return nil, bad("want 'name host:port announce|mesh|feed secret|- [groups]', got %d fields", len(f))
		}
		groups := ""
		if len(f) == 5 {
			groups = f[4]
		}
		p, err := peerOf(f[0], f[1], f[2], f[3], groups, seen)
		if err != nil {
			return nil, bad("%v", err)
		}
		peers = append(peers, p)
	}
	return peers, nil
}

// peerOf checks and makes one peer, from a line of a --peers file or a
// [[nntp.peer]] table of the configuration file (secret "-": none); seen
// holds the names of the peers before it.
func peerOf(name, addr, mode, secret, groups string, seen map[string]bool) (usenet.Peer, error) {
	p := usenet.Peer{Name: name, Addr: addr, Password: secret, Groups: groups}
	if name == "" || strings.ContainsAny(p.Name, "!:") || seen[p.Name] {
		return p, fmt.Errorf("peer name %q is not a unique Path name", p.Name)
	}
	seen[p.Name] = true
	if _, _, err := net.SplitHostPort(p.Addr); err != nil {
		return p, fmt.Errorf("address %q: %v", p.Addr, err)
	}
	switch mode {
	case "announce":
		p.Mode = usenet.Announce
	case "mesh":
		p.Mode = usenet.Mesh
	case "feed":
		p.Mode = usenet.Feed
	default:
		return p, fmt.Errorf("mode %q: want announce, mesh or feed", mode)
	}
	if p.Password == "-" {
		if p.Mode != usenet.Feed {
			return p, errors.New("an announce peer needs a secret: it is how the peer is known when it announces")
		}
		p.Password = ""
	}
	return p, nil
}
