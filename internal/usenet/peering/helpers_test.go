package peering

import (
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"triad/internal/nntp"
	"triad/internal/nntp/nntptest"
	"triad/internal/usenet"
	"triad/internal/usenet/nntpd"
)

// testClient fails the test on a broken connection.
type testClient = nntptest.Client

// article is an article in wire form, fed (a Path already).
func article(id, groups, body string, extra ...string) string {
	h := []string{"Path: feeder.example!not-for-mail", "From: Tester <t@example.com>", "Newsgroups: " + groups,
		"Subject: test " + id, "Date: Sat, 21 Nov 2026 10:00:00 +0000", "Message-ID: " + id}
	h = append(h, extra...)
	return strings.Join(h, "\r\n") + "\r\n\r\n" + body
}

// standalone is a news server on its own local spool, as INN would be:
// a site's upstream feed peer.
type standalone struct {
	site *usenet.Site
	addr string
}

func startStandalone(t *testing.T, tweak ...func(*nntpd.Config)) *standalone {
	t.Helper()
	dir := t.TempDir()
	spool, err := usenet.OpenLocalSpool(filepath.Join(dir, "spool"), 2<<20)
	if err != nil {
		t.Fatal(err)
	}
	site, err := usenet.OpenSite(usenet.SiteConfig{Dir: dir, Spool: spool, PathHost: "test.site"})
	if err != nil {
		t.Fatal(err)
	}
	if err := site.List().AddGroup("local.test", "y", ""); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := nntpd.Config{Site: site}
	for _, fn := range tweak {
		fn(&cfg)
	}
	srv := nntpd.NewServer(cfg)
	go srv.Serve(ln)
	t.Cleanup(func() {
		srv.Close()
		site.Close()
		spool.Close()
	})
	return &standalone{site: site, addr: ln.Addr().String()}
}

func (s *standalone) dial(t *testing.T) (*testClient, string) {
	t.Helper()
	c, err := nntp.Dial(s.addr, time.Now().Add(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &testClient{T: t, Client: c}, c.Greeting()
}
