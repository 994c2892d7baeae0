package newsd

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"triad/internal/client"
	"triad/internal/config"
	"triad/internal/pki"
	"triad/internal/usenet"
	"triad/internal/usenet/peering"
)

// Options say everything about one news site. The fields down to
// PeerListen are its flags and the keys of a configuration file's [nntp]
// table (named in each field's comment); the rest are set by code.
type Options struct {
	// Listen is the TCP address (host:port) to serve NNTP on. Key listen.
	// Default 127.0.0.1:1119.
	Listen string
	// Data is the folder of news.db (groups, overview, history), the
	// journal, feeds.status and, without Node, the local spool. Key data.
	// Default triad-data/nntp.
	Data string
	// Node is the address of a triad node: articles are kept in the DHT
	// rather than locally. Key node.
	Node string
	// Groups are the newsgroups made at start, comma-separated; a name may
	// end in :y (posting allowed, the default), :n or :m (moderated), as
	// in INN's active file; existing groups keep their articles. Key
	// groups. Default DefaultGroups.
	Groups string
	// PathHost is the site's name in Path and Xref headers. Empty: the host
	// name. Key pathhost.
	PathHost string
	// SyncPeriod, above zero, is periodic durability: articles are
	// acknowledged once their listing is written to the journal, which is
	// synced within this period (usenet.SiteConfig.SyncPeriod); triad site
	// gives its node the same period unless told otherwise. Key
	// sync-period. Default zero: durable before acknowledged.
	SyncPeriod time.Duration
	// MaxArticle is the largest article accepted, in bytes (1,000 to 64
	// MiB). Key max-article. Default 1,000,000.
	MaxArticle int
	// MaxConns is the connections served at once. Key max-conns. Default
	// 5000.
	MaxConns int
	// MaxPerAddr is the connections served at once from one address. Key
	// max-per-addr. Default 2000.
	MaxPerAddr int
	// IdleTimeout drops a client silent this long (RFC 3977 asks for at
	// least 3 minutes). Key idle-timeout. Default 10m.
	IdleTimeout time.Duration
	// WriteTimeout drops a client that takes none of a reply for this
	// long. Key write-timeout. Default 1m.
	WriteTimeout time.Duration
	// MemoryLimitMB is the soft limit of the server's Go memory (heap and
	// stacks) in MiB besides the article cache, past which it collects
	// garbage as often as it must (GoMemoryLimitMB). Zero: none. Key
	// memory-limit-mb. Default 256.
	MemoryLimitMB int
	// Users is the password file for AUTHINFO (lines
	// name:bcrypt-hash:read,post,feed, from 'triad nntp passwd'). Empty:
	// only 127.0.0.1 may read, post and feed. Key users.
	Users string
	// Expire are expiry rules 'wildmat=days;...', first match wins. Empty:
	// binaries 15 days, the rest 90. Key expire.
	Expire string
	// PeersFile is a file of [[peer]] tables (the keys of [[nntp.peer]]):
	// the sites this one announces to and takes announcements from, and
	// feeds. Key peers.
	PeersFile string
	// CacheMB is the memory cache of articles read from the DHT, in MiB,
	// shared by every connection. Zero: none. Key cache-mb. Default 256.
	CacheMB int
	// ReadAhead is how many articles past the one read a connection
	// reading a group in order has fetched into the cache before it asks
	// (0: none). Key read-ahead. Default 8.
	ReadAhead int
	// CachePolicy says which cached article goes first: lru or fifo. Key
	// cache-policy. Default lru.
	CachePolicy string
	// MaxBacklog is the articles queued for a peer that is down; past it
	// the oldest are dropped for it (and counted in feeds.status). Key
	// max-backlog. Default 1,000,000.
	MaxBacklog int
	// MaxBacklogMB bounds the same queue in MiB of its records (headers
	// included): a peer's share of news.db. Key max-backlog-mb. Default
	// 256.
	MaxBacklogMB int
	// HTTP is the address of the status page (/) and Prometheus metrics
	// (/metrics). Empty: none. Key http.
	HTTP string
	// TLS is the folder of the site's certificate bundle (from 'triad ca
	// issue NAME'): mutual TLS to Node, and to and from peers whose secret
	// is TLSSecret. Empty: plain TCP. Key tls.
	TLS string
	// PeerListen is the address on which peer sites announce over mutual
	// TLS, known by their certificates (needs TLS). Empty: none. Key
	// peer-listen.
	PeerListen string

	// Peers are the site's peers: a configuration file's [[nntp.peer]]
	// tables, or triad up's. Giving PeersFile too is an error.
	Peers []config.Peer
	// Bundle is the certificate bundle, in place of loading TLS.
	Bundle *pki.Bundle
	// PeerListener is a listener for PeerListen, already bound.
	PeerListener net.Listener
	// Local, if set, is the node at Node running in this process (triad
	// site, triad up): articles go to it by a call into its event loop,
	// not over a socket, as a site on a machine of its own would run it.
	Local *client.Local
}

// TLSSecret, as a peer's secret, makes its link mutual TLS: the site
// dials the peer's peer-listen address and checks that its certificate is
// issued to the peer's name, and the peer is known here by its own.
const TLSSecret = "tls"

// DefaultGroups are the groups a fresh site carries.
const DefaultGroups = "local.general,local.test,local.binaries.misc"

// DefaultOptions is a standalone site on 127.0.0.1:1119.
func DefaultOptions() Options {
	return Options{
		Listen:        "127.0.0.1:1119",
		Data:          "triad-data/nntp",
		Groups:        DefaultGroups,
		MaxArticle:    1_000_000,
		MaxConns:      5000,
		MaxPerAddr:    2000,
		IdleTimeout:   10 * time.Minute,
		WriteTimeout:  time.Minute,
		MemoryLimitMB: 256,
		CacheMB:       256,
		ReadAhead:     8,
		CachePolicy:   "lru",
		MaxBacklog:    1_000_000,
		MaxBacklogMB:  256,
	}
}

// RegisterFlags defines the site's flags on fs, bound to o's fields and
// with o's values as their defaults.
func (o *Options) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.Listen, "listen", o.Listen, "TCP `address` to serve NNTP on")
	fs.StringVar(&o.Data, "data", o.Data, "`directory` for the database (and the local spool)")
	fs.StringVar(&o.Node, "node", o.Node, "`address` of a triad node: keep articles in the DHT rather than locally")
	fs.StringVar(&o.Groups, "groups", o.Groups, "comma-separated `newsgroups` to create at start")
	fs.StringVar(&o.PathHost, "pathhost", o.PathHost, "this site's `name` in Path and Xref headers (default: the host name)")
	fs.IntVar(&o.MaxArticle, "max-article", o.MaxArticle, "largest article accepted, in `bytes`")
	fs.IntVar(&o.MaxConns, "max-conns", o.MaxConns, "connections at once")
	fs.IntVar(&o.MaxPerAddr, "max-per-addr", o.MaxPerAddr, "connections at once from one address")
	fs.IntVar(&o.MemoryLimitMB, "memory-limit-mb", o.MemoryLimitMB, "soft limit of the server's Go memory (heap and stacks) in MiB besides the article cache, past which it collects garbage as often as it must; 0: none; GOMEMLIMIT overrides")
	fs.DurationVar(&o.IdleTimeout, "idle-timeout", o.IdleTimeout, "drop a client silent this long")
	fs.DurationVar(&o.SyncPeriod, "sync-period", o.SyncPeriod, "periodic durability: acknowledge articles once written and make them durable within this `period`, as INN does (a power cut loses the last period's); triad site gives its node the same; 0: durable before acknowledged")
	fs.DurationVar(&o.WriteTimeout, "write-timeout", o.WriteTimeout, "drop a client that takes none of a reply for this long")
	fs.StringVar(&o.Users, "users", o.Users, "password `file` for AUTHINFO (lines name:bcrypt-hash:read,post,feed)")
	fs.StringVar(&o.Expire, "expire", o.Expire, "expiry `rules` 'wildmat=days;...', first match wins (default '*.binaries.*,*.binaries=15;*=90'); every site of a ring should have the same")
	fs.StringVar(&o.PeersFile, "peers", o.PeersFile, "peer `file` of [[peer]] tables: the sites this one announces its articles to and takes announcements from, and upstream feeds (see above)")
	fs.IntVar(&o.CacheMB, "cache-mb", o.CacheMB, "memory cache of articles read from the DHT, in MiB, shared by every connection (0: none)")
	fs.IntVar(&o.ReadAhead, "read-ahead", o.ReadAhead, "`articles` past the one read that a reader reading a group in order has fetched from the DHT into the cache before it asks (0: none; needs --cache-mb)")
	fs.StringVar(&o.CachePolicy, "cache-policy", o.CachePolicy, "which cached article goes first when the cache is full: lru or fifo")
	fs.StringVar(&o.TLS, "tls", o.TLS, "mutual TLS to the --node, and to and from peers whose secret is 'tls', with the bundle in this `directory` (from 'triad ca issue NAME'; none: plain TCP)")
	fs.StringVar(&o.PeerListen, "peer-listen", o.PeerListen, "serve peer sites over mutual TLS on this TCP `address`: a peer whose secret is 'tls' announces here, known by its certificate (needs --tls)")
	fs.StringVar(&o.HTTP, "http", o.HTTP, "serve the status page (/) and Prometheus metrics (/metrics) on this TCP `address` (host:port; none by default)")
	fs.IntVar(&o.MaxBacklog, "max-backlog", o.MaxBacklog, "articles queued for a peer that is down; past it the oldest are dropped for it (and counted in feeds.status)")
	fs.IntVar(&o.MaxBacklogMB, "max-backlog-mb", o.MaxBacklogMB, "the same queue bounded in MiB of its records (headers included): a peer's share of news.db")
}

// Validate checks o, naming the flag (and configuration key) of a bad
// value. It reads PeersFile, not Users.
func (o *Options) Validate() error {
	_, err := o.settings()
	return err
}

// settings are o's values parsed: what Start builds from.
type settings struct {
	groups []groupSpec
	rules  []usenet.ExpiryRule
	peers  []peering.Peer
	policy usenet.CachePolicy
}

// groupSpec is one entry of Groups: a name and its status ("" leaves an
// existing group's as it is).
type groupSpec struct{ name, status string }

func (o *Options) settings() (settings, error) {
	var s settings
	var p problems
	var err error
	if s.groups, err = ParseGroups(o.Groups); err != nil {
		p.add(fmt.Errorf("--groups: %v", err))
	}
	p.add(o.checkLimits())
	if o.SyncPeriod < 0 || o.SyncPeriod > 10*time.Second {
		p.add(fmt.Errorf("--sync-period %v: want 0 (durable before acknowledged) or up to 10s", o.SyncPeriod))
	}
	if s.policy, err = usenet.ParseCachePolicy(o.CachePolicy); err != nil {
		p.add(fmt.Errorf("--cache-policy: %v", err))
	}
	s.rules, err = parseExpire(o.Expire)
	p.add(err)
	s.peers, err = o.peers()
	p.add(err)
	if err := p.err(); err != nil {
		return s, err
	}
	tlsLinks := o.PeerListen != "" || o.PeerListener != nil || slices.ContainsFunc(s.peers, func(p peering.Peer) bool { return p.Password == TLSSecret })
	if tlsLinks && o.TLS == "" && o.Bundle == nil {
		return s, errors.New("--peer-listen and peers whose secret is 'tls' need --tls: the certificate this site is known by")
	}
	if len(s.peers) > 0 && o.Node == "" {
		return s, errors.New("peer sites share articles through the DHT: --peers needs --node")
	}
	return s, nil
}

// checkLimits checks the numbers, and says every one that is wrong.
func (o *Options) checkLimits() error {
	var p problems
	p.check(o.MaxArticle < 1000 || o.MaxArticle > 64<<20, "--max-article %d: want 1000 bytes to 64 MiB", o.MaxArticle)
	p.check(o.MaxConns < 1, "--max-conns %d: want at least 1", o.MaxConns)
	p.check(o.MaxPerAddr < 1, "--max-per-addr %d: want at least 1", o.MaxPerAddr)
	p.check(o.IdleTimeout < 3*time.Minute, "--idle-timeout %s: RFC 3977 asks for at least 3 minutes", o.IdleTimeout)
	p.check(o.WriteTimeout < time.Second, "--write-timeout %s: want at least 1s", o.WriteTimeout)
	p.check(o.CacheMB < 0 || o.CacheMB > 1<<20, "--cache-mb %d: want 0 to 1048576", o.CacheMB)
	p.check(o.ReadAhead < 0 || o.ReadAhead > 64, "--read-ahead %d: want 0 to 64", o.ReadAhead)
	p.check(o.MaxBacklog < 1, "--max-backlog %d: want at least 1", o.MaxBacklog)
	p.check(o.MaxBacklogMB < 1, "--max-backlog-mb %d: want at least 1", o.MaxBacklogMB)
	p.check(o.MemoryLimitMB < 0, "--memory-limit-mb %d: want 0 (none) or more", o.MemoryLimitMB)
	return p.err()
}

// problems gathers what is wrong with options, to say all at once.
type problems []error

// check adds the problem format names if bad.
func (p *problems) check(bad bool, format string, args ...any) {
	if bad {
		*p = append(*p, fmt.Errorf(format, args...))
	}
}

// add adds err, if any.
func (p *problems) add(err error) {
	if err != nil {
		*p = append(*p, err)
	}
}

func (p problems) err() error { return errors.Join(p...) }

// GoMemoryLimitMB is the soft limit of the process's Go memory: the
// MemoryLimitMB on top of the article cache, which is memory the server
// is meant to hold (under the limit, a full cache made the collector run
// without end and cost a third of the ingest rate). Zero: none.
func (o *Options) GoMemoryLimitMB() int {
	if o.MemoryLimitMB > 0 && o.Node != "" {
		return o.MemoryLimitMB + o.CacheMB
	}
	return o.MemoryLimitMB
}

// ParseGroups splits a Groups list and checks each entry, "name" or
// "name:status".
func ParseGroups(list string) ([]groupSpec, error) {
	var out []groupSpec
	for _, spec := range splitList(list) {
		name, status, _ := strings.Cut(spec, ":")
		if err := usenet.CheckGroupName(name); err != nil {
			return nil, err
		}
		switch status {
		case "", "y", "n", "m":
		default:
			return nil, fmt.Errorf("group %s: status %q, want y, n or m", name, status)
		}
		out = append(out, groupSpec{name, status})
	}
	return out, nil
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

// parseExpire parses expiry rules 'wildmat=days;...'.
func parseExpire(rules string) ([]usenet.ExpiryRule, error) {
	if rules == "" {
		return nil, nil
	}
	var out []usenet.ExpiryRule
	for _, r := range strings.Split(rules, ";") {
		pat, days, ok := strings.Cut(r, "=")
		var d float64
		if _, err := fmt.Sscan(days, &d); !ok || err != nil || d <= 0 || pat == "" {
			return nil, fmt.Errorf("--expire: %q is not wildmat=days", r)
		}
		out = append(out, usenet.ExpiryRule{Pattern: pat, Keep: time.Duration(d * 24 * float64(time.Hour))})
	}
	return out, nil
}

// peers reads PeersFile, or takes Peers, and makes them the site's.
func (o *Options) peers() ([]peering.Peer, error) {
	list := o.Peers
	if o.PeersFile != "" {
		if len(o.Peers) > 0 {
			return nil, errors.New("--peers and [[nntp.peer]] tables in the configuration file: give the peers in one place")
		}
		var err error
		if list, err = config.LoadPeers(o.PeersFile); err != nil {
			return nil, fmt.Errorf("--peers: %w", err)
		}
	}
	var out []peering.Peer
	seen := map[string]bool{}
	for _, p := range list {
		peer, err := peerOf(p, seen)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %v", p.File, p.Line, err)
		}
		out = append(out, peer)
	}
	return out, nil
}

// peerOf checks and makes one peer; seen holds the names of the peers
// before it. An announce peer is a site of the same ring: it is sent
// headers and keys (TAKEDHT) of every article listed here and may
// announce here, logging in as its name with the secret (the same on
// both sides of the link). A mesh peer is one in a full mesh: it is sent
// only the articles that entered the ring here. A feed peer is a
// traditional server upstream: it is sent whole articles (CHECK,
// TAKETHIS), logging in with the secret if there is one. The secret
// TLSSecret makes the link mutual TLS instead.
func peerOf(c config.Peer, seen map[string]bool) (peering.Peer, error) {
	p := peering.Peer{Name: c.Name, Addr: c.Addr, Password: c.Secret, Groups: c.Groups}
	if err := c.Check(); err != nil { // as a file's peers are when parsed
		return p, err
	}
	if seen[p.Name] {
		return p, fmt.Errorf("peer name %q is not a unique Path name", p.Name)
	}
	seen[p.Name] = true
	p.Mode = map[string]peering.PeerMode{"announce": peering.Announce, "mesh": peering.Mesh, "feed": peering.Feed}[c.Mode]
	return p, nil
}
