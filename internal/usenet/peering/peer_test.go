package peering

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"triad/internal/id"
	"triad/internal/nntp"
	"triad/internal/nntp/nntptest"
	"triad/internal/pki"
	"triad/internal/testutil"
	"triad/internal/usenet"
	"triad/internal/usenet/nntpd"
)

// ringSpool stands for the DHT that sites share: one spool, not a site's
// own, that resolves keys. Close leaves it open for the others.
type ringSpool struct {
	s    *usenet.LocalSpool
	gets atomic.Int64
}

func (r *ringSpool) PutBatch(batch []usenet.Put, done func([]usenet.Put)) { r.s.PutBatch(batch, done) }
func (r *ringSpool) Get(ctx context.Context, key id.ID) ([]byte, error) {
	r.gets.Add(1)
	return r.s.Get(ctx, key)
}
func (r *ringSpool) View(ctx context.Context, key id.ID, fn func([]byte) error) error {
	data, err := r.Get(ctx, key)
	if err != nil {
		return err
	}
	return fn(data)
}
func (r *ringSpool) Resolve(ctx context.Context, key id.ID) (usenet.Stored, bool, error) {
	return r.s.Resolve(ctx, key)
}
func (r *ringSpool) Close() error { return nil }

// put stores one article in a spool and waits until it is durable.
func put(s usenet.Spool, article []byte, expires time.Time) (id.ID, error) {
	b := []usenet.Put{{Article: article, Expires: expires}}
	done := make(chan struct{})
	s.PutBatch(b, func([]usenet.Put) { close(done) })
	<-done
	return b[0].Key, b[0].Err
}

// testSite is one site of a test deployment.
type testSite struct {
	name  string
	dir   string
	addr  string
	site  *usenet.Site
	srv   *nntpd.Server
	feeds *Feeds
	ln    net.Listener

	// With TLS links: the site's certificate, and the listener its peers
	// announce to.
	bundle   *pki.Bundle
	peerLn   net.Listener
	peerAddr string
}

const linkSecret = "link-secret"

// startSites starts n sites on one shared spool, each peered with every
// other (announce), on 127.0.0.1.
func startSites(t *testing.T, n int, tweak func(*FeedConfig)) ([]*testSite, *ringSpool) {
	t.Helper()
	return startSitesLinked(t, n, nil, tweak)
}

// startSitesLinked is startSites with mutual TLS links between the sites
// when ca is set: each site's certificate is issued by ca under its name,
// and the sites announce to each other's TLS listeners.
func startSitesLinked(t *testing.T, n int, ca *pki.CA, tweak func(*FeedConfig)) ([]*testSite, *ringSpool) {
	t.Helper()
	root := t.TempDir()
	local, err := usenet.OpenLocalSpool(filepath.Join(root, "ring"), 2<<20)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { local.Close() })
	ring := &ringSpool{s: local}
	sites := make([]*testSite, n)
	for i := range sites {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		sites[i] = &testSite{name: fmt.Sprintf("site%c", 'a'+i), dir: filepath.Join(root, fmt.Sprintf("site%d", i)), addr: ln.Addr().String(), ln: ln}
		if ca != nil {
			s := sites[i]
			s.bundle = issueBundle(t, ca, s.name)
			tcp, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			s.peerLn, s.peerAddr = tls.NewListener(tcp, s.bundle.ServerConfig()), tcp.Addr().String()
		}
	}
	for _, s := range sites {
		s.start(t, sites, ring, tweak)
	}
	t.Cleanup(func() {
		for _, s := range sites {
			s.stop()
		}
	})
	return sites, ring
}

// start opens the site and serves it on its address (a listener made
// before, or a new one on the same port).
func (s *testSite) start(t *testing.T, all []*testSite, spool usenet.Spool, tweak func(*FeedConfig)) {
	t.Helper()
	site, err := usenet.OpenSite(usenet.SiteConfig{Dir: s.dir, Spool: usenet.NewCachedSpool(spool, 1<<20, usenet.LRU), PathHost: s.name, Relay: true, RelayAnnounced: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := site.List().AddGroup("local.test", "y", ""); err != nil {
		t.Fatal(err)
	}
	users := nntpd.NewUsers()
	users.Add("reader", "pw", nntpd.PermRead|nntpd.PermFeed)
	fc := FeedConfig{Site: site, Retry: 50 * time.Millisecond}
	cfg := nntpd.Config{Site: site, Users: users}
	for _, o := range all {
		switch {
		case o == s:
		case s.bundle != nil:
			fc.Peers = append(fc.Peers, Peer{Name: o.name, Addr: o.peerAddr, TLS: s.bundle.NamedClientConfig(o.name)})
		default:
			users.Add(o.name, linkSecret, nntpd.PermRead|nntpd.PermFeed|nntpd.PermAnnounce)
			fc.Peers = append(fc.Peers, Peer{Name: o.name, Addr: o.addr, Password: linkSecret})
		}
	}
	if s.bundle != nil {
		cfg.TLSPeer = func(cs tls.ConnectionState) (string, nntpd.Perm, error) {
			id, err := pki.PeerIdentity(cs)
			for _, o := range all {
				if err == nil && o != s && o.name == id.Name {
					return id.Name, nntpd.PermRead | nntpd.PermFeed | nntpd.PermAnnounce, nil
				}
			}
			return id.Name, 0, errors.Join(err, errors.New("not a peer site"))
		}
	}
	if tweak != nil {
		tweak(&fc)
	}
	if s.ln == nil && !testutil.Poll(10*time.Second, func() bool { s.ln, err = net.Listen("tcp", s.addr); return err == nil }) {
		t.Fatal(err)
	}
	s.site, s.srv = site, nntpd.NewServer(cfg)
	go s.srv.Serve(s.ln)
	if s.peerLn != nil {
		go s.srv.Serve(s.peerLn)
	}
	if s.feeds, err = StartFeeds(fc); err != nil {
		t.Fatal(err)
	}
}

func (s *testSite) stop() {
	if s.site == nil {
		return
	}
	s.feeds.Close()
	s.srv.Close()
	s.site.Close()
	s.site, s.ln, s.peerLn = nil, nil, nil
}

// issueBundle has ca issue a certificate to name (its own site) and loads
// the bundle.
func issueBundle(t *testing.T, ca *pki.CA, name string) *pki.Bundle {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	if err := ca.Issue(pki.Identity{Name: name, Site: name}, time.Hour, dir); err != nil {
		t.Fatal(err)
	}
	b, err := pki.LoadBundle(dir)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// newCA makes a deployment CA in a temporary folder.
func newCA(t *testing.T) *pki.CA {
	t.Helper()
	dir := t.TempDir()
	if err := pki.InitCA(dir, "test CA", time.Hour); err != nil {
		t.Fatal(err)
	}
	ca, err := pki.LoadCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func (s *testSite) dial(t *testing.T) *testClient {
	c, err := nntp.Dial(s.addr, time.Now().Add(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &testClient{T: t, Client: c}
}

// listedWithin reports whether every site lists msgid within d.
func listedWithin(sites []*testSite, msgid string, d time.Duration) bool {
	return testutil.Poll(d, func() bool {
		for _, s := range sites {
			if _, found, _ := s.site.List().Lookup(msgid); !found {
				return false
			}
		}
		return true
	})
}

// relayWithin bounds how long an article takes to be listed at every
// site of a test. It is what these tests can promise, not a latency
// claim: a feeder sends as soon as a record is listed, but a hop may have
// to dial its peer first and, if the peer fails or says later, waits
// FeedConfig.Retry (1 s) before the next try; two hops under the race
// detector on a loaded 2-core machine took over the 1 s the tests once
// allowed (TestAnnouncementsAreRelayed failed so in a CI run, issue 45).
// The relay's speed is measured where it is claimed, in bench nntp
// (docs/usenet.md: listed within a millisecond).
const relayWithin = 5 * time.Second

// waitListed waits until every site lists msgid, or fails after d.
func waitListed(t *testing.T, sites []*testSite, msgid string, d time.Duration) {
	t.Helper()
	if !listedWithin(sites, msgid, d) {
		t.Fatalf("%s not listed at every site within %s", msgid, d)
	}
}

func TestPostedAtOneSiteIsReadableAtEvery(t *testing.T) {
	sites, ring := startSites(t, 3, nil)
	a := sites[0].dial(t)
	nntptest.Code(t, a.Status("POST"), "340")
	a.SendText("From: Poster <p@example.com>\r\nNewsgroups: local.test\r\nSubject: hello sites\r\n\r\nbody line\r\n.dot line\r\n")
	reply := a.Line()
	nntptest.Code(t, reply, "240")
	msgid := strings.Fields(reply)[3]
	start := time.Now()
	waitListed(t, sites, msgid, relayWithin)
	t.Logf("listed at all 3 sites %s after the 240", time.Since(start).Round(time.Millisecond))
	var bodies []string
	for _, s := range sites {
		c := s.dial(t)
		nntptest.Code(t, c.Status("GROUP local.test"), "211 1 1 1 local.test")
		nntptest.Code(t, c.Status("OVER 1"), "224")
		over := c.Block()
		if len(over) != 1 || !strings.Contains(over[0], "hello sites") || !strings.Contains(over[0], msgid) {
			t.Fatalf("%s: OVER %q", s.name, over)
		}
		nntptest.Code(t, c.Status("HEAD %s", msgid), "221")
		if head := strings.Join(c.Block(), "\n"); !strings.Contains(head, "Subject: hello sites") || strings.Contains(head, usenet.ChordHeader) {
			t.Fatalf("%s: HEAD %q", s.name, head)
		}
		nntptest.Code(t, c.Status("BODY 1"), "222")
		bodies = append(bodies, strings.Join(c.Block(), "\n"))
	}
	for _, b := range bodies {
		if b != "body line\n.dot line" {
			t.Fatalf("bodies %q", bodies)
		}
	}
	// HEAD and BODY at each site: the origin cached the article when it
	// stored it, each other site fetched it once.
	if got := ring.gets.Load(); got != 2 {
		t.Errorf("%d fetches from the ring, want 2", got)
	}
	for _, s := range sites {
		g, _ := s.site.List().Group("local.test")
		if g.Count != 1 {
			t.Fatalf("%s: %+v", s.name, g)
		}
		// b and c relay it to each other too, and are told 438.
		for _, st := range s.feeds.Status() {
			if !testutil.Poll(5*time.Second, func() bool { st.Backlog, _ = s.site.List().Backlog(st.Peer); return st.Backlog.Records == 0 }) {
				t.Errorf("%s -> %s: backlog %+v", s.name, st.Peer, st.Backlog)
			}
		}
	}
}

// sending it back to a.
func TestAnnouncementsAreRelayed(t *testing.T) {
	for _, mesh := range []bool{false, true} {
		sites, _ := startSites(t, 3, func(fc *FeedConfig) {
			var keep []Peer
			for _, p := range fc.Peers {
				if fc.Site.PathHost()+p.Name == "sitea"+"sitec" || fc.Site.PathHost()+p.Name == "sitec"+"sitea" {
					continue
				}
				if mesh {
					p.Mode = Mesh
				}
				keep = append(keep, p)
			}
			fc.Peers = keep
		})
		c := sites[0].dial(t)
		nntptest.Code(t, c.Status("IHAVE <line@x>"), "335")
		c.SendText(article("<line@x>", "local.test", "x\r\n"))
		nntptest.Code(t, c.Line(), "235")
		if mesh {
			waitListed(t, sites[:2], "<line@x>", relayWithin)
			// b's feeder to c passes over the record without offering it.
			var bl usenet.PeerBacklog
			if !testutil.Poll(5*time.Second, func() bool { bl, _ = sites[1].site.List().Backlog("sitec"); return bl.Records == 0 }) {
				t.Fatalf("b's feeder to c did not pass a's article: %+v", bl)
			}
			for _, st := range sites[1].feeds.Status() {
				if st.Peer == "sitec" && st.Offered != 0 {
					t.Fatalf("b offered c an article a announced, in mesh mode: %+v", st)
				}
			}
			if _, found, _ := sites[2].site.List().Lookup("<line@x>"); found {
				t.Fatal("c listed a's article through b in mesh mode")
			}
			for _, s := range sites {
				s.stop()
			}
			continue
		}
		waitListed(t, sites, "<line@x>", relayWithin)
		for _, st := range sites[1].feeds.Status() {
			if st.Peer == "sitea" && st.Offered != 0 {
				t.Fatalf("b offered a its own article back: %+v", st)
			}
		}
		for _, s := range sites {
			s.stop()
		}
	}
}

func TestSiteDownCatchesUpFromBacklog(t *testing.T) {
	sites, ring := startSites(t, 3, nil)
	b := sites[1]
	b.stop()
	feed := sites[0].dial(t)
	nntptest.Code(t, feed.Status("AUTHINFO USER reader"), "381")
	nntptest.Code(t, feed.Status("AUTHINFO PASS pw"), "281")
	nntptest.Code(t, feed.Status("MODE STREAM"), "203")
	const n = 200
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range n {
			feed.Send(fmt.Sprintf("TAKETHIS <down-%d@x>", i))
			feed.SendText(article(fmt.Sprintf("<down-%d@x>", i), "local.test", fmt.Sprintf("body %d\r\n", i)))
		}
	}()
	for range n {
		nntptest.Code(t, feed.Line(), "239")
	}
	wg.Wait()
	waitListed(t, []*testSite{sites[0], sites[2]}, fmt.Sprintf("<down-%d@x>", n-1), 5*time.Second)
	var backlog usenet.PeerBacklog
	for _, st := range sites[0].feeds.Status() {
		if st.Peer == b.name {
			backlog = st.Backlog
		}
	}
	if backlog.Records != n {
		t.Fatalf("a's backlog for b while b is down: %+v, want %d", backlog, n)
	}
	b.start(t, sites, ring, nil)
	for i := range n {
		if !listedWithin(sites, fmt.Sprintf("<down-%d@x>", i), 10*time.Second) {
			for _, s := range sites {
				t.Logf("%s: %+v", s.name, s.feeds.Status())
			}
			t.Fatalf("<down-%d@x> not listed everywhere", i)
		}
	}
	for _, s := range sites {
		// The group's counts follow its commit by a moment.
		var g usenet.Group
		testutil.Poll(time.Second, func() bool { g, _ = s.site.List().Group("local.test"); return g.Count >= n }) // checked below
		if g.Count != n || g.High != n {
			t.Fatalf("%s: %+v, want %d articles numbered 1-%d (none twice)", s.name, g, n, n)
		}
	}
}

func TestBacklogIsBounded(t *testing.T) {
	sites, _ := startSites(t, 2, func(fc *FeedConfig) { fc.MaxBacklog = 10 })
	sites[1].stop()
	c := sites[0].dial(t)
	for i := range 25 {
		nntptest.Code(t, c.Status("IHAVE <b-%d@x>", i), "335")
		c.SendText(article(fmt.Sprintf("<b-%d@x>", i), "local.test", "x\r\n"))
		nntptest.Code(t, c.Line(), "235")
	}
	sites[0].site.Flush() // the out log is written at the listing's checkpoint
	list := sites[0].site.List()
	if err := list.Trim([]string{sites[1].name}, 10, 0); err != nil {
		t.Fatal(err)
	}
	bl, _ := list.Backlog(sites[1].name)
	if bl.Records != 10 || bl.Dropped != 15 {
		t.Fatalf("backlog %+v, want 10 queued and 15 dropped", bl)
	}
}

func TestBadAnnouncementsAreRefused(t *testing.T) {
	sites, ring := startSites(t, 2, nil)
	a := sites[0]
	keptUntil := time.Now().Add(time.Hour).Truncate(time.Second)
	exp := time.Now().Add(48 * time.Hour) // later than the block is kept: listed only as long as it is
	// good announces an article stored in the ring, as its site would.
	good := func(id string) string {
		ann, _, block := announcementOf(article(id, "local.test", "b\r\n"), exp)
		if _, err := put(ring, block, keptUntil); err != nil {
			t.Fatal(err)
		}
		return ann
	}
	fineAnn, key, block := announcementOf(article("<fine@x>", "local.test", "b\r\n"), exp)
	if _, err := put(ring, block, keptUntil); err != nil {
		t.Fatal(err)
	}
	fine, _ := usenet.ParseArticle([]byte(article("<fine@x>", "local.test", "b\r\n")))
	_, fineRec := usenet.SealedAnnouncement(fine, exp)
	size := fineRec.Bytes
	unknownAnn, _, _ := announcementOf(article("<unknown@x>", "local.test", "b\r\n"), exp)
	expiredAnn, _, _ := announcementOf(article("<expired@x>", "local.test", "b\r\n"), time.Now().Add(-time.Hour))
	// Not logged in: 480; logged in as a reader, not a peer: 502.
	anon := a.dial(t)
	nntptest.Code(t, anon.Status("MODE STREAM"), "203")
	anon.Send("TAKEDHT <x1@x>")
	anon.SendText(good("<x1@x>"))
	nntptest.Code(t, anon.Line(), "480")
	reader := a.dial(t)
	nntptest.Code(t, reader.Status("AUTHINFO USER reader"), "381")
	nntptest.Code(t, reader.Status("AUTHINFO PASS pw"), "281")
	reader.Send("TAKEDHT <x2@x>")
	reader.SendText(good("<x2@x>"))
	nntptest.Code(t, reader.Line(), "502")
	// A peer: malformed heads and unresolved keys are refused for good.
	peer := a.dial(t)
	nntptest.Code(t, peer.Status("AUTHINFO USER %s", sites[1].name), "381")
	nntptest.Code(t, peer.Status("AUTHINFO PASS %s", linkSecret), "281")
	bad := map[string]string{
		"<no-chord@x>":  strings.TrimSuffix(article("<no-chord@x>", "local.test", ""), "\r\n"),
		"<bad-chord@x>": strings.TrimSuffix(article("<bad-chord@x>", "local.test", ""), "\r\n") + usenet.ChordHeader + ": zz bytes=1 lines=1 expires=1 state=x\r\n",
		"<unknown@x>":   unknownAnn,
		"<no-from@x>":   strings.Replace(good("<no-from@x>"), "From: Tester <t@example.com>\r\n", "", 1),
		"<body@x>":      good("<body@x>") + "\r\nbody\r\n",
		"<expired@x>":   expiredAnn,
		"<mismatch@x>":  good("<other@x>"),
		"<size@x>":      strings.Replace(good("<size@x>"), " bytes=", " bytes=1", 1),
	}
	for msgid, head := range bad {
		peer.Send("TAKEDHT " + msgid)
		peer.SendText(head)
		if reply := peer.Line(); !strings.HasPrefix(reply, "439 "+msgid) {
			t.Errorf("%s: %q, want 439", msgid, reply)
		}
	}
	for _, msgid := range []string{"<x1@x>", "<x2@x>", "<no-chord@x>", "<bad-chord@x>", "<unknown@x>", "<no-from@x>", "<body@x>", "<expired@x>", "<mismatch@x>", "<other@x>", "<size@x>"} {
		if _, found, _ := a.site.List().Lookup(msgid); found {
			t.Errorf("%s listed", msgid)
		}
	}
	// The good one from a peer is listed, with the announced size.
	peer.Send("TAKEDHT <fine@x>")
	peer.SendText(fineAnn)
	nntptest.Code(t, peer.Line(), "239 <fine@x>")
	ov, err := a.site.List().Overview("local.test", 1, 10, 10)
	if err != nil || len(ov) != 1 || ov[0].Bytes != size || ov[0].Lines != 1 || ov[0].Key != key {
		t.Fatalf("overview %+v, %v", ov, err)
	}
	if h, _, _ := a.site.List().Lookup("<fine@x>"); h.Expires > keptUntil.UnixNano() || ov[0].Expires > keptUntil.UnixNano() {
		t.Fatalf("listed until %v (history %v), but the article is kept until %v", time.Unix(0, ov[0].Expires), time.Unix(0, h.Expires), keptUntil)
	}
	if g, _ := a.site.List().Group("local.test"); g.Count != 1 {
		t.Fatalf("group %+v", g)
	}
}

// TestAnnouncementsAreRelayed has sites in a line, a-b-c: c learns of
// what a takes through b, which passes a's announcement on (flooding);
// with b's peers in mesh mode it would not, and a's Path keeps b from
// TestFeedUpstreamGetsWholeArticles gives site a an upstream feed peer, a
// traditional server (a standalone site on its own spool, as INN would
// be): articles posted at a and at b (announced to a) reach it whole,
// byte for byte, with CHECK and TAKETHIS; one that came from upstream is
// not sent back.
func TestFeedUpstreamGetsWholeArticles(t *testing.T) {
	up := startStandalone(t)
	upName := up.site.PathHost()
	sites, _ := startSites(t, 2, func(fc *FeedConfig) {
		if fc.Site.PathHost() == "sitea" {
			fc.Peers = append(fc.Peers, Peer{Name: upName, Addr: up.addr, Mode: Feed, Groups: "local.*"})
		}
	})
	post := func(s *testSite, subject string) string {
		c := s.dial(t)
		nntptest.Code(t, c.Status("POST"), "340")
		c.SendText("From: p@example.com\r\nNewsgroups: local.test\r\nSubject: " + subject + "\r\n\r\nbody of " + subject + "\r\n.dot\r\n")
		reply := c.Line()
		nntptest.Code(t, reply, "240")
		return strings.Fields(reply)[3]
	}
	atA, atB := post(sites[0], "posted at a"), post(sites[1], "posted at b")
	// One fed to a from upstream (its name in Path): not fed back.
	c := sites[0].dial(t)
	nntptest.Code(t, c.Status("IHAVE <from-up@x>"), "335")
	c.SendText(strings.Replace(article("<from-up@x>", "local.test", "x\r\n"), "Path: ", "Path: "+upName+"!", 1))
	nntptest.Code(t, c.Line(), "235")
	sentinel := post(sites[0], "after the one from upstream")
	for _, id := range []string{atA, atB, sentinel} {
		testutil.WaitFor(t, 5*time.Second, id+" to reach the upstream server", func() bool {
			_, found, _ := up.site.List().Lookup(id)
			return found
		})
		uc, _ := up.dial(t)
		nntptest.Code(t, uc.Status("ARTICLE %s", id), "220")
		got := strings.Join(uc.Block(), "\r\n")
		sc := sites[0].dial(t)
		nntptest.Code(t, sc.Status("ARTICLE %s", id), "220")
		want := strings.Join(sc.Block(), "\r\n")
		// Upstream puts its own name first in Path, as any server does.
		if strings.Replace(got, "Path: "+upName+"!", "Path: ", 1) != want {
			t.Fatalf("%s upstream:\n%s\nwant\n%s", id, got, want)
		}
	}
	if _, found, _ := up.site.List().Lookup("<from-up@x>"); found {
		t.Fatal("an article from upstream was fed back to it")
	}
}

// TestPostedHeadersCannotStopAnnouncements posts at a site articles whose
// headers would have kept them from the peers: an X-ChordID of the
// poster's own (two in the announcement: refused everywhere) and a Path
// naming the peers (skipped as if they had it). Both reach every site.
func TestPostedHeadersCannotStopAnnouncements(t *testing.T) {
	sites, _ := startSites(t, 3, nil)
	c := sites[0].dial(t)
	var ids []string
	for _, extra := range []string{usenet.ChordHeader + ": whatever", "Path: siteb!sitec!x"} {
		nntptest.Code(t, c.Status("POST"), "340")
		c.SendText("From: p@example.com\r\nNewsgroups: local.test\r\nSubject: sly\r\n" + extra + "\r\n\r\nbody\r\n")
		reply := c.Line()
		nntptest.Code(t, reply, "240")
		ids = append(ids, strings.Fields(reply)[3])
	}
	for _, id := range ids {
		waitListed(t, sites, id, 2*time.Second)
	}
}

// With TLS links, sites announce to each other by certificate, and nobody
// else is taken on the peers' listener: no certificate, another CA's, or
// one of the CA's that names no peer.
func TestPeersAreKnownByCertificate(t *testing.T) {
	ca := newCA(t)
	sites, _ := startSitesLinked(t, 2, ca, nil)
	a, b := sites[0], sites[1]
	post := a.dial(t)
	nntptest.Code(t, post.Status("POST"), "340")
	post.SendText(article("<over-tls@x>", "local.test", "body\r\n"))
	nntptest.Code(t, post.Line(), "240")
	waitListed(t, sites, "<over-tls@x>", 10*time.Second)
	if st := b.feeds.Status(); len(st) != 1 || st[0].LastError != "" {
		t.Errorf("site b's feed to a: %+v", st)
	}

	stranger := issueBundle(t, ca, "stranger")
	outsider := issueBundle(t, newCA(t), a.name) // another CA's, under a peer's name
	noCert := &tls.Config{MinVersion: tls.VersionTLS13, InsecureSkipVerify: true}
	blind := outsider.NamedClientConfig(a.name)
	blind.VerifyConnection = nil // it would refuse a's certificate first
	for _, tc := range []struct {
		name    string
		cfg     *tls.Config
		greeted bool // the handshake completes, and a 502 says why not
	}{
		{"a certificate that names no peer", stranger.NamedClientConfig(a.name), true},
		{"no certificate", noCert, false},
		{"another CA's certificate", blind, false},
	} {
		c, err := nntp.DialTLS(a.peerAddr, tc.cfg, time.Now().Add(10*time.Second))
		switch {
		case err == nil:
			g := c.Greeting()
			c.Close()
			if !tc.greeted || !strings.HasPrefix(g, "502 ") {
				t.Errorf("%s: greeted %q", tc.name, g)
			}
		case tc.greeted:
			t.Errorf("%s: %v, want a 502 greeting", tc.name, err)
		}
	}
	// The server counts a refusal when its side of the handshake ends,
	// which may be after the client's.
	testutil.Poll(5*time.Second, func() bool { return a.srv.Stats().TLSRefused >= 3 }) // checked below
	if got := a.srv.Stats().TLSRefused; got != 3 {
		t.Errorf("%d TLS clients refused, want 3", got)
	}
	// No secret lets a peer in by the readers' port: it is known only by
	// its certificate.
	plain := a.dial(t)
	nntptest.Code(t, plain.Status("AUTHINFO USER %s", b.name), "381")
	nntptest.Code(t, plain.Status("AUTHINFO PASS %s", linkSecret), "481")
	plain.Send("TAKEDHT <sneaked@x>")
	plain.SendText(article("<sneaked@x>", "local.test", ""))
	nntptest.Code(t, plain.Line(), "480")
}

// announcementOf is the TAKEDHT block a site sends for an article (wire
// form), the key of the article's sealed block, and the block.
func announcementOf(raw string, exp time.Time) (string, id.ID, []byte) {
	a, err := usenet.ParseArticle([]byte(raw))
	if err != nil {
		panic(err)
	}
	block, r := usenet.SealedAnnouncement(a, exp)
	cmd := string(usenet.AppendAnnouncement(nil, &r))
	ann := strings.TrimSuffix(cmd[strings.Index(cmd, "\r\n")+2:], ".\r\n")
	return ann, r.Key, block
}
