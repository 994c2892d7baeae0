package peering

import (
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"triad/internal/nntp"
	"triad/internal/usenet"
	"triad/internal/usenet/nntpd"
)

// testClient is an nntp.Client that fails the test on a broken
// connection (as package nntpd's tests have it).
type testClient struct {
	t *testing.T
	*nntp.Client
}

func (c *testClient) line() string {
	c.t.Helper()
	c.Conn().SetDeadline(time.Now().Add(10 * time.Second))
	l, err := c.ReadLine()
	if err != nil {
		c.t.Fatalf("reading a reply: %v", err)
	}
	return string(l)
}

// cmd sends a line and returns the status line.
func (c *testClient) cmd(format string, args ...any) string {
	c.t.Helper()
	c.Conn().SetDeadline(time.Now().Add(10 * time.Second))
	if err := c.Send(fmt.Sprintf(format, args...)); err != nil {
		c.t.Fatal(err)
	}
	return c.line()
}

// block reads a multi-line block's lines, undoing dot-stuffing.
func (c *testClient) block() []string {
	c.t.Helper()
	b, _, err := c.ReadBlock(nil, 64<<20)
	if err != nil {
		c.t.Fatalf("reading a block: %v", err)
	}
	text := string(nntp.Unstuff(b))
	if text == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(text, "\r\n"), "\r\n")
}

// sendArticle writes an article dot-stuffed and terminated.
func (c *testClient) sendArticle(a string) {
	c.t.Helper()
	if err := c.SendArticle([]byte(a)); err != nil {
		c.t.Errorf("sending an article: %v", err)
	}
}

func code(t *testing.T, reply string, want string) {
	t.Helper()
	if !strings.HasPrefix(reply, want) {
		t.Fatalf("reply %q, want %s", reply, want)
	}
}

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

func startStandalone(t *testing.T) *standalone {
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
	srv := nntpd.NewServer(nntpd.Config{Site: site})
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
	return &testClient{t: t, Client: c}, c.Greeting()
}
