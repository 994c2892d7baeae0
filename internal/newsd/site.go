package newsd

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"path/filepath"
	"slices"
	"time"

	"triad/internal/client"
	"triad/internal/metrics"
	"triad/internal/pki"
	"triad/internal/status"
	"triad/internal/usenet"
	"triad/internal/usenet/dhtspool"
	"triad/internal/usenet/nntpd"
	"triad/internal/usenet/peering"
)

// Site is a running news site.
type Site struct {
	// Addr is the address NNTP is served on.
	Addr string
	// PeerAddr is the address of the peers' TLS listener; empty without one.
	PeerAddr string
	// Where says where articles are kept: "local spool" or "the DHT via
	// ADDR".
	Where string
	// Groups are the names of the groups the site carries.
	Groups []string
	// HTTPAddr is the address of the status page and metrics; empty
	// without Options.HTTP.
	HTTPAddr string

	site   *usenet.Site
	spool  usenet.Spool
	cache  *usenet.CachedSpool // nil without a DHT or with CacheMB 0
	dht    *client.Cluster     // nil without a DHT
	feeds  *peering.Feeds      // nil without peers
	srv    *nntpd.Server
	http   *metrics.Server // nil without Options.HTTP
	closer []func() error  // what Close releases, last first
	stop   context.CancelFunc
	done   chan error
}

// Start checks o, opens the site and serves it until ctx ends or Close.
func Start(ctx context.Context, o Options, log *slog.Logger) (_ *Site, err error) {
	set, err := o.settings()
	if err != nil {
		return nil, err
	}
	var rec *status.Recorder
	if o.HTTP != "" {
		rec = status.NewRecorder(log.Handler(), 50)
		log = slog.New(rec)
	}
	// What Start opened is released on an error: s is not the result,
	// which each error return sets to nil.
	s := &Site{done: make(chan error, 1)}
	defer func() {
		if err != nil {
			s.release()
		}
	}()
	bundle := o.Bundle
	if bundle == nil && o.TLS != "" {
		if bundle, err = pki.LoadBundle(o.TLS); err != nil {
			return nil, err
		}
	}
	if err := s.openSite(ctx, o, set, bundle); err != nil {
		return nil, err
	}
	cfg, err := s.serverConfig(o, set.peers, bundle, log)
	if err != nil {
		return nil, err
	}
	ln, peerLn, err := s.listen(o, bundle)
	if err != nil {
		return nil, err
	}
	if len(cfg.peers) > 0 {
		s.feeds, err = peering.StartFeeds(peering.FeedConfig{Site: s.site, Peers: cfg.peers, MaxBacklog: uint64(o.MaxBacklog),
			MaxBacklogBytes: uint64(o.MaxBacklogMB) << 20, Log: log, StatusFile: filepath.Join(o.Data, "feeds.status")})
		if err != nil {
			return nil, err
		}
		s.closer = append(s.closer, func() error { s.feeds.Close(); return nil })
	}
	if s.feeds != nil {
		cfg.server.Admin = siteAdmin{s.feeds}
	}
	s.srv = nntpd.NewServer(cfg.server)
	if err := s.statusPage(o, rec); err != nil {
		return nil, err
	}
	ctx, s.stop = context.WithCancel(ctx)
	go func() { s.done <- s.srv.Serve(ln) }()
	if peerLn != nil {
		go s.srv.Serve(peerLn)
	}
	go s.expireLoop(ctx, log)
	if bundle != nil {
		go pki.WatchCRL(ctx, bundle, log, nil) // the next handshakes see it
	}
	go func() {
		<-ctx.Done()
		s.srv.Close()
	}()
	return s, nil
}

// openSite opens the spool (local, or the DHT through Options.Node with
// its cache) and the site, and makes the groups of Options.Groups.
func (s *Site) openSite(ctx context.Context, o Options, set settings, bundle *pki.Bundle) error {
	s.Where = "local spool"
	if o.Node != "" {
		cl, err := client.DialClusterOptions(ctx, client.Options{TLS: bundle, Local: o.Local}, o.Node)
		if err != nil {
			return fmt.Errorf("nntp: node %s: %w", o.Node, err)
		}
		s.spool, s.Where, s.dht = &dhtspool.Spool{Cluster: cl}, "the DHT via "+o.Node, cl
		if o.CacheMB > 0 {
			s.cache = usenet.NewCachedSpool(s.spool, int64(o.CacheMB)<<20, set.policy)
			// A site that feeds whole articles reads each back at once.
			s.cache.KeepLargePuts = slices.ContainsFunc(set.peers, func(p peering.Peer) bool { return p.Mode == peering.Feed })
			s.spool = s.cache
		}
	} else {
		local, err := usenet.OpenLocalSpool(filepath.Join(o.Data, "spool"), o.MaxArticle+1024)
		if err != nil {
			return err
		}
		s.spool = local
	}
	s.closer = append(s.closer, s.spool.Close)
	site, err := usenet.OpenSite(usenet.SiteConfig{Dir: o.Data, Spool: s.spool, PathHost: o.PathHost, MaxArticle: o.MaxArticle, SyncPeriod: o.SyncPeriod,
		Expiry: set.rules, Relay: len(set.peers) > 0, RelayAnnounced: slices.ContainsFunc(set.peers, func(p peering.Peer) bool { return p.Mode != peering.Mesh })})
	if err != nil {
		return err
	}
	s.site = site
	s.closer = append(s.closer, site.Close)
	for _, g := range set.groups {
		if site.List().Removed(g.name) {
			continue // the operator removed it (triad news rmgroup): --groups does not bring it back
		}
		if old, ok := site.List().Group(g.name); !ok || g.status != "" && g.status != old.Status {
			if err := site.List().AddGroup(g.name, g.status, old.Desc); err != nil {
				return err
			}
		}
	}
	for _, g := range site.List().Groups("") {
		s.Groups = append(s.Groups, g.Name)
	}
	return nil
}

// Name is the site's name, its Path host.
func (s *Site) Name() string { return s.site.PathHost() }

// Feeds are the state of the site's feeds, one line per peer as XFEEDS
// gives them; none without peers.
func (s *Site) Feeds() []string {
	if s.feeds == nil {
		return nil
	}
	return s.feeds.Lines()
}

// siteAdmin is the site's feeds as the operator's commands see them
// (nntpd.Admin).
type siteAdmin struct{ feeds *peering.Feeds }

func (a siteAdmin) Peers() []nntpd.PeerAddr {
	var out []nntpd.PeerAddr
	for _, p := range a.feeds.Peers() {
		out = append(out, nntpd.PeerAddr{Name: p.Name, Addr: p.Addr})
	}
	return out
}

func (a siteAdmin) Feeds() []string { return a.feeds.Lines() }

func (a siteAdmin) PauseFeeds(peer string, pause bool) error { return a.feeds.Pause(peer, pause) }

// serving is the server's configuration and the peers its feeds send to.
type serving struct {
	server nntpd.Config
	peers  []peering.Peer
}

// serverConfig is the server's configuration: its users, and how peers
// are known. An announcing peer logs in with its name and the link's
// secret, or is known by its certificate on the peers' TLS listener.
func (s *Site) serverConfig(o Options, list []peering.Peer, bundle *pki.Bundle, log *slog.Logger) (serving, error) {
	cfg := nntpd.Config{Site: s.site, Log: log, MaxConns: o.MaxConns, MaxPerAddr: o.MaxPerAddr, IdleTimeout: o.IdleTimeout, WriteTimeout: o.WriteTimeout, ReadAhead: o.ReadAhead}
	var err error
	if o.Users != "" {
		if cfg.Users, err = nntpd.LoadUsers(o.Users); err != nil {
			return serving{}, err
		}
	}
	peers, tlsPeers := slices.Clone(list), map[string]bool{}
	for i, p := range peers {
		if p.Password == TLSSecret {
			peers[i].Password, peers[i].TLS = "", bundle.NamedClientConfig(p.Name)
			tlsPeers[p.Name] = p.Mode != peering.Feed
			continue
		}
		if p.Mode == peering.Feed || p.Password == "" {
			continue
		}
		if cfg.Users == nil {
			cfg.Users = nntpd.NewUsers()
		}
		if err := cfg.Users.Add(p.Name, p.Password, nntpd.PermRead|nntpd.PermFeed|nntpd.PermAnnounce); err != nil {
			return serving{}, err
		}
	}
	if bundle == nil {
		// Without TLS there is no operator's certificate: the operator is
		// whoever runs triad news on this machine, as for a node's
		// commands (ctlinnd likewise needs the server's own machine).
		cfg.Open = func(a netip.Addr) nntpd.Perm {
			if p := nntpd.LoopbackOnly(a); p != 0 {
				return p | nntpd.PermAdmin
			}
			return 0
		}
	}
	if bundle != nil {
		cfg.TLSPeer = func(cs tls.ConnectionState) (string, nntpd.Perm, error) {
			id, err := pki.PeerIdentity(cs)
			if err != nil {
				return "", 0, err
			}
			if id.Role == pki.RoleOperator {
				// triad news: the operator's certificate, and only it,
				// administers the site's groups and feeds.
				return id.Name, nntpd.PermRead | nntpd.PermAdmin, nil
			}
			if !tlsPeers[id.Name] {
				return id.Name, 0, errors.New("not a peer of this site that announces by certificate")
			}
			return id.Name, nntpd.PermRead | nntpd.PermFeed | nntpd.PermAnnounce, nil
		}
	}
	return serving{cfg, peers}, nil
}

// listen binds the NNTP address and the peers' TLS listener, if any.
func (s *Site) listen(o Options, bundle *pki.Bundle) (ln, peerLn net.Listener, err error) {
	peerLn = o.PeerListener
	if o.PeerListen != "" {
		if peerLn, err = net.Listen("tcp", o.PeerListen); err != nil {
			return nil, nil, fmt.Errorf("--peer-listen: %w", err)
		}
	}
	if peerLn != nil {
		s.PeerAddr = peerLn.Addr().String()
		peerLn = tls.NewListener(peerLn, bundle.ServerConfig())
		s.closer = append(s.closer, peerLn.Close) // the server closes it once it serves it
	}
	if ln, err = net.Listen("tcp", o.Listen); err != nil {
		return nil, nil, err
	}
	s.closer = append(s.closer, ln.Close)
	s.Addr = ln.Addr().String()
	return ln, peerLn, nil
}

// statusPage starts the status page and metrics, with Options.HTTP.
func (s *Site) statusPage(o Options, rec *status.Recorder) error {
	if o.HTTP == "" {
		return nil
	}
	var err error
	if s.http, err = metrics.Listen(o.HTTP, metrics.NewRegistry(s.Collector())); err != nil {
		return fmt.Errorf("--http %s: %w", o.HTTP, err)
	}
	s.HTTPAddr = s.http.Addr
	page := &status.Sources{Name: "news " + s.Addr, Log: rec}
	if l, ok := s.spool.(*usenet.LocalSpool); ok {
		page.Store = l.Engine.Stats
	}
	page.SetNews(s.Collector())
	s.http.Mux.Handle("/", status.Handler(page))
	return nil
}

// expireLoop runs expiry at start and then every hour.
func (s *Site) expireLoop(ctx context.Context, log *slog.Logger) {
	for {
		ov, hist, err := s.site.List().Expire()
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

// Collector is the site's metrics collector (a node serving the site can
// register it beside its own).
func (s *Site) Collector() *metrics.News {
	return &metrics.News{Server: s.srv, Site: s.site, Cache: s.cache, Feeds: s.feeds, DHT: s.dht}
}

// Close stops serving and closes the feeds, the site and the spool.
func (s *Site) Close() error {
	s.stop()
	err := <-s.done
	if errors.Is(err, net.ErrClosed) { // the stop closed the listener
		err = nil
	}
	s.srv.Close()
	if s.http != nil {
		err = errors.Join(err, s.http.Close())
	}
	return errors.Join(err, s.release())
}

// release closes what Start opened, last first.
func (s *Site) release() error {
	var errs []error
	for i := len(s.closer) - 1; i >= 0; i-- {
		if err := s.closer[i](); err != nil && !errors.Is(err, net.ErrClosed) {
			errs = append(errs, err)
		}
	}
	s.closer = nil
	return errors.Join(errs...)
}
