package nntpd

import (
	"fmt"
	"io"
	"net"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"triad/internal/nntp"
	"triad/internal/nntp/nntptest"
	"triad/internal/testutil"
	"triad/internal/usenet"
)

// testServer runs a real server on 127.0.0.1 over a real site and spool.
type testServer struct {
	site *usenet.Site
	srv  *Server
	addr string
}

func startServer(t testing.TB, cfg Config, siteCfg usenet.SiteConfig) *testServer {
	t.Helper()
	return startServerOver(t, cfg, siteCfg, nil, nil)
}

// startServerOver is startServer with the local spool seen through
// spoolOf (as it is if nil), and prepare run on the site before the
// server starts.
func startServerOver(t testing.TB, cfg Config, siteCfg usenet.SiteConfig, spoolOf func(*usenet.LocalSpool) usenet.Spool, prepare func(*usenet.Site)) *testServer {
	t.Helper()
	dir := t.TempDir()
	spool, err := usenet.OpenLocalSpool(filepath.Join(dir, "spool"), 2<<20)
	if err != nil {
		t.Fatal(err)
	}
	siteCfg.Dir, siteCfg.Spool, siteCfg.PathHost = dir, spool, "test.site"
	if spoolOf != nil {
		siteCfg.Spool = spoolOf(spool)
	}
	site, err := usenet.OpenSite(siteCfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range []string{"local.test", "local.other", "alt.binaries.x"} {
		if err := site.List().AddGroup(g, "y", "about "+g); err != nil {
			t.Fatal(err)
		}
	}
	if err := site.List().AddGroup("local.readonly", "n", ""); err != nil {
		t.Fatal(err)
	}
	if err := site.List().AddGroup("local.moderated", "m", ""); err != nil {
		t.Fatal(err)
	}
	if prepare != nil {
		prepare(site)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Site = site
	ts := &testServer{site: site, srv: NewServer(cfg), addr: ln.Addr().String()}
	go ts.srv.Serve(ln)
	t.Cleanup(func() {
		ts.srv.Close()
		site.Close()
		spool.Close()
	})
	return ts
}

// testClient fails the test on a broken connection.
type testClient = nntptest.Client

func (ts *testServer) dial(t *testing.T) (*testClient, string) {
	t.Helper()
	c, err := nntp.Dial(ts.addr, time.Now().Add(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &testClient{T: t, Client: c}, c.Greeting()
}

func article(id, groups, body string, extra ...string) string {
	h := []string{"Path: feeder.example!not-for-mail", "From: Tester <t@example.com>", "Newsgroups: " + groups,
		"Subject: test " + id, "Date: Sat, 21 Nov 2026 10:00:00 +0000", "Message-ID: " + id}
	h = append(h, extra...)
	return strings.Join(h, "\r\n") + "\r\n\r\n" + body
}

func TestPostReadAndNavigate(t *testing.T) {
	ts := startServer(t, Config{}, usenet.SiteConfig{})
	c, hello := ts.dial(t)
	nntptest.Code(t, hello, "200")
	for i := 1; i <= 3; i++ {
		nntptest.Code(t, c.Status("POST"), "340")
		c.SendText(fmt.Sprintf("From: p@example.com\r\nNewsgroups: local.test,local.other\r\nSubject: post %d\r\n\r\n.dot line\r\nline two\r\n", i))
		nntptest.Code(t, c.Line(), "240")
	}
	nntptest.Code(t, c.Status("GROUP local.test"), "211 3 1 3 local.test")
	nntptest.Code(t, c.Status("GROUP local.other"), "211 3 1 3 local.other")
	r := c.Status("ARTICLE 2")
	nntptest.Code(t, r, "220 2 <")
	lines := c.Block()
	if !slices.Contains(lines, "Subject: post 2") || lines[len(lines)-2] != ".dot line" || lines[len(lines)-1] != "line two" {
		t.Fatalf("article 2: %q", lines)
	}
	if !slices.Contains(lines, "Path: test.site!not-for-mail") {
		t.Fatalf("POST did not get a Path: %q", lines)
	}
	msgid := strings.Fields(r)[2]
	nntptest.Code(t, c.Status("STAT %s", msgid), "223 0 "+msgid)
	nntptest.Code(t, c.Status("NEXT"), "223 3 ")
	nntptest.Code(t, c.Status("NEXT"), "421")
	nntptest.Code(t, c.Status("LAST"), "223 2 ")
	nntptest.Code(t, c.Status("HEAD 1"), "221 1 ")
	if h := c.Block(); !slices.Contains(h, "Newsgroups: local.test,local.other") || slices.Contains(h, "") {
		t.Fatalf("head: %q", h)
	}
	nntptest.Code(t, c.Status("BODY 3"), "222 3 ")
	if b := c.Block(); len(b) != 2 || b[0] != ".dot line" {
		t.Fatalf("body: %q", b)
	}
	nntptest.Code(t, c.Status("OVER 1-"), "224")
	over := c.Block()
	if len(over) != 3 || !strings.Contains(over[0], "\tpost 1\t") || !strings.HasSuffix(over[0], "Xref: test.site local.test:1 local.other:1") {
		t.Fatalf("over: %q", over)
	}
	// By message-id the entry is rebuilt from the article and the history,
	// which keeps this site's Xref; the number is 0 (RFC 3977 8.3.2).
	nntptest.Code(t, c.Status("OVER %s", msgid), "224")
	if over := c.Block(); len(over) != 1 || !strings.HasPrefix(over[0], "0\tpost 2\t") || !strings.HasSuffix(over[0], "Xref: test.site local.test:2 local.other:2") {
		t.Fatalf("over %s: %q", msgid, over)
	}
	nntptest.Code(t, c.Status("HDR Subject 2-3"), "225")
	if h := c.Block(); len(h) != 2 || h[0] != "2 post 2" {
		t.Fatalf("hdr: %q", h)
	}
	nntptest.Code(t, c.Status("HDR Newsgroups 1"), "225") // not in the overview: read from the article
	if h := c.Block(); len(h) != 1 || h[0] != "1 local.test,local.other" {
		t.Fatalf("hdr newsgroups: %q", h)
	}
	nntptest.Code(t, c.Status("LISTGROUP local.test 2-"), "211 3 1 3 local.test")
	if l := c.Block(); strings.Join(l, ",") != "2,3" {
		t.Fatalf("listgroup: %q", l)
	}
	nntptest.Code(t, c.Status("LIST ACTIVE local.*"), "215")
	if l := c.Block(); !slices.Contains(l, "local.test 3 1 y") || !slices.Contains(l, "local.readonly 0 1 n") || slices.Contains(l, "alt.binaries.x 0 1 y") {
		t.Fatalf("list active: %q", l)
	}
	nntptest.Code(t, c.Status("LIST NEWSGROUPS"), "215")
	if l := c.Block(); !slices.Contains(l, "local.test\tabout local.test") {
		t.Fatalf("list newsgroups: %q", l)
	}
	nntptest.Code(t, c.Status("NEWNEWS local.* 20000101 000000 GMT"), "230")
	if l := c.Block(); len(l) != 3 || !slices.Contains(l, msgid) {
		t.Fatalf("newnews: %q", l)
	}
	nntptest.Code(t, c.Status("NEWNEWS * 20991231 000000"), "230")
	if l := c.Block(); len(l) != 0 {
		t.Fatalf("newnews from the future: %q", l)
	}
	nntptest.Code(t, c.Status("NEWGROUPS 000101 000000 GMT"), "231")
	if l := c.Block(); len(l) != 5 || !slices.Contains(l, "local.moderated 0 1 m") {
		t.Fatalf("newgroups: %q", l)
	}
	nntptest.Code(t, c.Status("ARTICLE 99"), "423")
	nntptest.Code(t, c.Status("ARTICLE <nope@example.com>"), "430")
	nntptest.Code(t, c.Status("GROUP no.such.group"), "411")
	nntptest.Code(t, c.Status("QUIT"), "205")
}

func TestBadInputIsRefusedAndNothingStored(t *testing.T) {
	ts := startServer(t, Config{}, usenet.SiteConfig{MaxArticle: 10000})
	c, _ := ts.dial(t)

	nntptest.Code(t, c.Status("%s", "GROUP "+strings.Repeat("a", 600)), "501")
	nntptest.Code(t, c.Status("FROBNICATE"), "500")
	nntptest.Code(t, c.Status("GROUP local.\xff"), "501")
	nntptest.Code(t, c.Status("ARTICLE"), "412")
	nntptest.Code(t, c.Status("IHAVE not-a-message-id"), "501")
	nntptest.Code(t, c.Status("IHAVE <no-at-sign>"), "501")

	refuse := func(what, a, want string) {
		t.Helper()
		nntptest.Code(t, c.Status("POST"), "340")
		c.SendText(a)
		if r := c.Line(); !strings.HasPrefix(r, want) {
			t.Fatalf("%s: reply %q, want %s", what, r, want)
		}
	}
	refuse("no From", "Newsgroups: local.test\r\nSubject: x\r\n\r\nbody\r\n", "441")
	refuse("no Newsgroups", "From: a@example.com\r\nSubject: x\r\n\r\nbody\r\n", "441")
	refuse("bad message-id", "From: a@example.com\r\nNewsgroups: local.test\r\nSubject: x\r\nMessage-ID: <a b@c>\r\n\r\nbody\r\n", "441")
	refuse("NUL", "From: a@example.com\r\nNewsgroups: local.test\r\nSubject: x\r\n\r\nbo\x00dy\r\n", "441")
	refuse("8-bit header", "From: a@example.com\r\nNewsgroups: local.test\r\nSubject: \xff\xfe\r\n\r\nbody\r\n", "441")
	refuse("unknown group", "From: a@example.com\r\nNewsgroups: no.such\r\nSubject: x\r\n\r\nbody\r\n", "441")
	refuse("read-only group", "From: a@example.com\r\nNewsgroups: local.readonly\r\nSubject: x\r\n\r\nbody\r\n", "441")
	refuse("moderated group, not approved", "From: a@example.com\r\nNewsgroups: local.test,local.moderated\r\nSubject: x\r\n\r\nbody\r\n", "441")
	refuse("too large", "From: a@example.com\r\nNewsgroups: local.test\r\nSubject: x\r\n\r\n"+strings.Repeat("0123456789\r\n", 1000), "441")
	refuse("a Date that is no date", "From: a@example.com\r\nNewsgroups: local.test\r\nSubject: x\r\nDate: yesterday\r\n\r\nbody\r\n", "441")

	// Fed articles need every RFC 5536 header and the offered id.
	nntptest.Code(t, c.Status("IHAVE <a1@example.com>"), "335")
	c.SendText("From: a@example.com\r\nNewsgroups: local.test\r\nSubject: x\r\nMessage-ID: <a1@example.com>\r\n\r\nno Path or Date\r\n")
	nntptest.Code(t, c.Line(), "437")
	// A Date that does not parse is refused as a missing one is (it
	// was taken).
	nntptest.Code(t, c.Status("IHAVE <d1@example.com>"), "335")
	c.SendText("Path: x\r\nFrom: a@example.com\r\nNewsgroups: local.test\r\nSubject: x\r\nMessage-ID: <d1@example.com>\r\nDate: 31 Foo 2026 99:00\r\n\r\nbad date\r\n")
	nntptest.Code(t, c.Line(), "437")
	nntptest.Code(t, c.Status("IHAVE <a2@example.com>"), "335")
	c.SendText(article("<other@example.com>", "local.test", "wrong id\r\n"))
	nntptest.Code(t, c.Line(), "437")

	nntptest.Code(t, c.Status("IHAVE <m1@example.com>"), "335")
	c.SendText(article("<m1@example.com>", "local.moderated", "not approved\r\n"))
	nntptest.Code(t, c.Line(), "437")

	for _, name := range []string{"local.test", "local.moderated"} {
		if g, _ := ts.site.List().Group(name); g.Count != 0 {
			t.Fatalf("%d articles stored in %s from bad input", g.Count, name)
		}
	}
	nntptest.Code(t, c.Status("IHAVE <m2@example.com>"), "335")
	c.SendText(article("<m2@example.com>", "local.moderated", "approved\r\n", "Approved: mod@example.com"))
	nntptest.Code(t, c.Line(), "235")

	// 8-bit UTF-8 bodies, lone dots and dot-stuffing are fine.
	nntptest.Code(t, c.Status("IHAVE <ok@example.com>"), "335")
	c.SendText(article("<ok@example.com>", "local.test", "caf\xc3\xa9\r\n.\r\n..\r\n.x\r\n"))
	nntptest.Code(t, c.Line(), "235")
	nntptest.Code(t, c.Status("BODY <ok@example.com>"), "222")
	if b := c.Block(); strings.Join(b, "|") != "caf\xc3\xa9|.|..|.x" {
		t.Fatalf("body %q", b)
	}
	nntptest.Code(t, c.Status("IHAVE <ok@example.com>"), "435")
	nntptest.Code(t, c.Status("CHECK <ok@example.com>"), "438")

	// A client that drops mid-article stores nothing.
	d, _ := ts.dial(t)
	nntptest.Code(t, d.Status("IHAVE <dropped@example.com>"), "335")
	d.Conn().Write([]byte(article("<dropped@example.com>", "local.test", "half an arti")))
	d.Conn().Close()
	nntptest.Code(t, c.Status("STAT <dropped@example.com>"), "430")
	nntptest.Code(t, c.Status("CHECK <dropped@example.com>"), "238")
}

// A pipelined streaming feed is answered in order, each article once it
// is listed, and listed as it was sent: the stream workers hand each
// article's buffer back for the next one as soon as it is stored, so the
// overview's line and byte counts would show a listing that read a
// recycled buffer.
func TestStreamingFeedPipelinedAndDuplicates(t *testing.T) {
	ts := startServer(t, Config{}, usenet.SiteConfig{})
	c, _ := ts.dial(t)
	nntptest.Code(t, c.Status("MODE STREAM"), "203")
	const n = 300
	sent := make([]string, n)
	for i := range sent {
		id := fmt.Sprintf("<s%d@example.com>", i)
		sent[i] = article(id, "local.test,alt.binaries.x", strings.Repeat(fmt.Sprintf("article %d\r\n", i), i%7+1))
	}
	go func() {
		for i, a := range sent {
			fmt.Fprintf(c.Conn(), "TAKETHIS <s%d@example.com>\r\n", i)
			c.SendText(a)
		}
	}()
	for i := 0; i < n; i++ {
		nntptest.Code(t, c.Line(), fmt.Sprintf("239 <s%d@example.com>", i))
	}
	// A 239 is sent once the article is listed: no Flush.
	g, _ := ts.site.List().Group("local.test")
	if g.Count != n || g.High != n {
		t.Fatalf("group %+v after %d articles", g, n)
	}
	nntptest.Code(t, c.Status("GROUP local.test"), "211")
	nntptest.Code(t, c.Status("OVER 1-"), "224")
	for _, l := range c.Block() {
		f := strings.Split(l, "\t")
		var i int
		fmt.Sscanf(f[4], "<s%d@example.com>", &i)
		want := strings.Replace(sent[i], "Path: ", "Path: test.site!", 1)
		if f[3] != "Sat, 21 Nov 2026 10:00:00 +0000" || f[6] != fmt.Sprint(len(want)) || f[7] != fmt.Sprint(i%7+1) {
			t.Errorf("overview line %q: want %d bytes and %d lines", l, len(want), i%7+1)
		}
	}
	// The same articles again are refused, and CHECK says not to send them.
	nntptest.Code(t, c.Status("CHECK <s7@example.com>"), "438 <s7@example.com>")
	nntptest.Code(t, c.Status("CHECK <new@example.com>"), "238 <new@example.com>")
	fmt.Fprintf(c.Conn(), "TAKETHIS <s7@example.com>\r\n")
	c.SendText(article("<s7@example.com>", "local.test", "again\r\n"))
	nntptest.Code(t, c.Line(), "439 <s7@example.com>")
	// Articles for groups not carried here are refused.
	fmt.Fprintf(c.Conn(), "TAKETHIS <x@example.com>\r\n")
	c.SendText(article("<x@example.com>", "comp.lang.go", "elsewhere\r\n"))
	nntptest.Code(t, c.Line(), "439 <x@example.com>")
}

func TestManyIdleConnectionsAndIdleTimeout(t *testing.T) {
	ts := startServer(t, Config{IdleTimeout: 2 * time.Second}, usenet.SiteConfig{})
	var conns []net.Conn
	for i := 0; i < 1000; i++ {
		nc, err := net.Dial("tcp", ts.addr)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		conns = append(conns, nc)
	}
	defer func() {
		for _, nc := range conns {
			nc.Close()
		}
	}()
	// A working client is still served while the 1,000 sit idle.
	c, hello := ts.dial(t)
	nntptest.Code(t, hello, "200")
	nntptest.Code(t, c.Status("GROUP local.test"), "211")
	// Each idle connection is told and closed by the idle timeout.
	for i, nc := range conns {
		nc.SetReadDeadline(time.Now().Add(30 * time.Second))
		c, err := nntp.NewClient(nc, nil)
		if err != nil || !strings.HasPrefix(c.Greeting(), "200 ") {
			t.Fatalf("connection %d: greeting %v", i, err)
		}
		l, err := c.ReadLine()
		if code, _ := nntp.ParseStatus(l); err != nil || code != nntp.CodeUnavailable {
			t.Fatalf("connection %d: got %q, %v, want the idle timeout's 400", i, l, err)
		}
		if _, err := c.ReadLine(); err != io.EOF {
			t.Fatalf("connection %d still open after its timeout: %v", i, err)
		}
	}
}

func TestConnectionLimits(t *testing.T) {
	ts := startServer(t, Config{MaxPerAddr: 2}, usenet.SiteConfig{})
	ts.dial(t)
	ts.dial(t)
	_, hello := ts.dial(t)
	nntptest.Code(t, hello, "400")
}

func TestAccessAndAuthinfo(t *testing.T) {
	hash, err := HashPassword("s3cret pass")
	if err != nil {
		t.Fatal(err)
	}
	users, err := ParseUsers(strings.NewReader("# readers\nann:" + hash + ":read\n"))
	if err != nil {
		t.Fatal(err)
	}
	// As if every client came from afar: nothing without a password.
	ts := startServer(t, Config{Users: users, Open: func(netip.Addr) Perm { return 0 }}, usenet.SiteConfig{})
	c, hello := ts.dial(t)
	nntptest.Code(t, hello, "201")
	nntptest.Code(t, c.Status("GROUP local.test"), "480")
	nntptest.Code(t, c.Status("AUTHINFO PASS x"), "482")
	nntptest.Code(t, c.Status("AUTHINFO USER ann"), "381")
	nntptest.Code(t, c.Status("AUTHINFO PASS wrong"), "481")
	nntptest.Code(t, c.Status("AUTHINFO USER ann"), "381")
	nntptest.Code(t, c.Status("AUTHINFO PASS s3cret pass"), "281")
	nntptest.Code(t, c.Status("GROUP local.test"), "211")
	nntptest.Code(t, c.Status("POST"), "502") // ann may read, not post
	nntptest.Code(t, c.Status("AUTHINFO USER ann"), "502")

	noUsers := startServer(t, Config{Open: func(netip.Addr) Perm { return 0 }}, usenet.SiteConfig{})
	_, hello = noUsers.dial(t)
	nntptest.Code(t, hello, "502")
}

func TestExpiryDropsOverviewByGroupPattern(t *testing.T) {
	now := time.Now() // the spool's clock is the real one
	clock := func() time.Time { return now }
	ts := startServer(t, Config{}, usenet.SiteConfig{Now: clock, Expiry: []usenet.ExpiryRule{{Pattern: "*.binaries.*", Keep: 24 * time.Hour}, {Pattern: "*", Keep: 10 * 24 * time.Hour}}})
	c, _ := ts.dial(t)
	nntptest.Code(t, c.Status("IHAVE <e1@example.com>"), "335")
	c.SendText(article("<e1@example.com>", "local.test,alt.binaries.x", "both\r\n"))
	nntptest.Code(t, c.Line(), "235")

	now = now.Add(2 * 24 * time.Hour)
	ov, hist, err := ts.site.List().Expire()
	if err != nil || ov != 1 || hist != 0 {
		t.Fatalf("after 2 days: %d overview, %d history entries expired, %v; want 1, 0", ov, hist, err)
	}
	nntptest.Code(t, c.Status("GROUP alt.binaries.x"), "211 0 2 1 alt.binaries.x")
	nntptest.Code(t, c.Status("GROUP local.test"), "211 1 1 1 local.test")
	nntptest.Code(t, c.Status("ARTICLE 1"), "220")
	c.Block()

	now = now.Add(30 * 24 * time.Hour)
	if ov, hist, err = ts.site.List().Expire(); err != nil || ov != 1 || hist != 1 {
		t.Fatalf("after 32 days: %d overview, %d history entries expired, %v; want 1, 1", ov, hist, err)
	}
	nntptest.Code(t, c.Status("GROUP local.test"), "211 0 2 1 local.test")
	// Numbers are never reused.
	nntptest.Code(t, c.Status("IHAVE <e2@example.com>"), "335")
	c.SendText(article("<e2@example.com>", "local.test", "later\r\n"))
	nntptest.Code(t, c.Line(), "235")
	nntptest.Code(t, c.Status("GROUP local.test"), "211 1 2 2 local.test")
}

// FuzzCommands: whatever a client sends, the server answers every line it
// can and keeps serving others; nothing it sends is stored unless it was
// a well-formed article.
func FuzzCommands(f *testing.F) {
	for _, s := range []string{
		"GROUP local.test\r\nARTICLE 1\r\nOVER 1-\r\n",
		"POST\r\nFrom: a@b.c\r\nNewsgroups: local.test\r\nSubject: s\r\n\r\nbody\r\n.\r\n",
		"MODE STREAM\r\nTAKETHIS <a@b>\r\nPath: x\r\n.\r\nCHECK <a@b>\r\n",
		"LIST ACTIVE [\r\nNEWNEWS * 991231 235959 GMT\r\nHDR Subject <a@b>\r\nLISTGROUP local.test 5-1\r\n",
		"AUTHINFO USER a\r\nXHDR x 1-\r\nNEXT\r\nLAST\r\nHELP\r\nCAPABILITIES\r\n",
	} {
		f.Add([]byte(s))
	}
	ts := startServer(f, Config{}, usenet.SiteConfig{MaxArticle: 4096})
	f.Fuzz(func(t *testing.T, in []byte) {
		nc, err := net.Dial("tcp", ts.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		nc.SetDeadline(time.Now().Add(5 * time.Second))
		nc.Write(in)
		nc.(*net.TCPConn).CloseWrite()
		// The server answers and then closes when the input ends.
		buf := make([]byte, 64<<10)
		for {
			if _, err := nc.Read(buf); err != nil {
				if ne, ok := err.(net.Error); ok && ne.Timeout() {
					t.Fatalf("server stalled on %q", in)
				}
				break
			}
		}
		c, hello := ts.dial(t)
		nntptest.Code(t, hello, "200")
		nntptest.Code(t, c.Status("DATE"), "111")
	})
}

// TestLargeArticlesPipelined reads large articles (longer than the
// connection's kept buffer, with long and dot-led lines) next to a small
// one, with pipelined ARTICLE, HEAD and BODY by number and by message-id:
// every reply is whole, in order and byte for byte what was fed.
func TestLargeArticlesPipelined(t *testing.T) {
	ts := startServer(t, Config{}, usenet.SiteConfig{})
	c, _ := ts.dial(t)
	var body strings.Builder
	for i := 0; body.Len() < 300_000; i++ {
		switch i % 7 {
		case 0:
			fmt.Fprintf(&body, ".line %d starts with a dot\r\n", i)
		case 3:
			body.WriteString(strings.Repeat("x", 2000) + "\r\n")
		default:
			fmt.Fprintf(&body, "line %d of a large article\r\n", i)
		}
	}
	arts := map[string]string{
		"<large@example.com>":  article("<large@example.com>", "local.test", body.String()),
		"<medium@example.com>": article("<medium@example.com>", "local.test", body.String()[:70_000]),
		"<small@example.com>":  article("<small@example.com>", "local.test", "small\r\n"),
	}
	ids := []string{"<large@example.com>", "<small@example.com>", "<medium@example.com>"}
	for _, id := range ids {
		nntptest.Code(t, c.Status("IHAVE %s", id), "335")
		c.SendText(arts[id])
		nntptest.Code(t, c.Line(), "235")
	}
	ts.site.Flush()
	nntptest.Code(t, c.Status("GROUP local.test"), "211 3 1 3")

	// What a reader must get back: the Path starts with this site.
	want := func(id string) (head, body []string) {
		a := strings.Replace(arts[id], "Path: ", "Path: test.site!", 1)
		h, b, _ := strings.Cut(a, "\r\n\r\n")
		return strings.Split(h, "\r\n"), strings.Split(strings.TrimSuffix(b, "\r\n"), "\r\n")
	}
	var cmds strings.Builder
	for i, id := range ids {
		fmt.Fprintf(&cmds, "ARTICLE %s\r\nBODY %d\r\nHEAD %s\r\n", id, i+1, id)
	}
	cmds.WriteString("DATE\r\n")
	c.Conn().Write([]byte(cmds.String()))
	for i, id := range ids {
		head, body := want(id)
		nntptest.Code(t, c.Line(), "220 0 "+id)
		if got := c.Block(); !slices.Equal(got, append(append(slices.Clone(head), ""), body...)) {
			t.Fatalf("ARTICLE %s: %d lines, want %d", id, len(got), len(head)+1+len(body))
		}
		nntptest.Code(t, c.Line(), fmt.Sprintf("222 %d %s", i+1, id))
		if got := c.Block(); !slices.Equal(got, body) {
			t.Fatalf("BODY %d: %d lines, want %d", i+1, len(got), len(body))
		}
		nntptest.Code(t, c.Line(), "221 0 "+id)
		if got := c.Block(); !slices.Equal(got, head) {
			t.Fatalf("HEAD %s: %q, want %q", id, got, head)
		}
	}
	nntptest.Code(t, c.Line(), "111 ")
}

// A run of CHECKs pipelined with TAKETHIS articles (a peer's feeder sends
// a batch of CHECKs in one write) is answered in order: the CHECK replies
// wait to leave with the next reply written, or until no whole command is
// left to read, and the TAKETHIS replies, made on stream workers, keep
// their places among them.
func TestPipelinedChecksAnsweredInOrder(t *testing.T) {
	ts := startServer(t, Config{}, usenet.SiteConfig{})
	c, _ := ts.dial(t)
	nntptest.Code(t, c.Status("MODE STREAM"), "203")
	const n = 100
	var run strings.Builder
	var want []string
	for i := range n {
		fmt.Fprintf(&run, "CHECK <c%d@example.com>\r\n", i)
		want = append(want, fmt.Sprintf("238 <c%d@example.com>", i))
		if i%10 == 9 {
			id := fmt.Sprintf("<t%d@example.com>", i)
			fmt.Fprintf(&run, "TAKETHIS %s\r\n%s.\r\n", id, article(id, "local.test", "body\r\n"))
			want = append(want, "239 "+id)
		}
	}
	if _, err := c.Conn().Write([]byte(run.String())); err != nil {
		t.Fatal(err)
	}
	for _, w := range want {
		nntptest.Code(t, c.Line(), w)
	}
	// A CHECK alone is answered at once (nothing else to read).
	nntptest.Code(t, c.Status("CHECK <t9@example.com>"), "438 <t9@example.com>")
}

// The operator's commands (triad news) need PermAdmin, which no client
// gets by default; with it, groups are added and removed at run time, and
// a reader in a group removed has no group selected.
func TestAdminCommands(t *testing.T) {
	ts := startServer(t, Config{}, usenet.SiteConfig{})
	c, _ := ts.dial(t)
	nntptest.Code(t, c.Status("XNEWGROUP local.new"), "502")
	nntptest.Code(t, c.Status("XRMGROUP local.test"), "502")

	admin := startServer(t, Config{Open: func(netip.Addr) Perm { return PermRead | PermAdmin }}, usenet.SiteConfig{})
	c, _ = admin.dial(t)
	nntptest.Code(t, c.Status("XNEWGROUP local.new m a group made at run time"), "288")
	if g, ok := admin.site.List().Group("local.new"); !ok || g.Status != "m" || g.Desc != "a group made at run time" {
		t.Fatalf("XNEWGROUP made %+v, %v", g, ok)
	}
	nntptest.Code(t, c.Status("GROUP local.new"), "211")
	nntptest.Code(t, c.Status("XNEWGROUP local.new y"), "288") // a status change keeps the description
	if g, _ := admin.site.List().Group("local.new"); g.Status != "y" || g.Desc != "a group made at run time" {
		t.Fatalf("XNEWGROUP again made %+v", g)
	}
	nntptest.Code(t, c.Status("XNEWGROUP local..bad"), "501")
	nntptest.Code(t, c.Status("XNEWGROUP local.x q"), "501")
	reader, _ := admin.dial(t) // a reader in the group as it goes
	nntptest.Code(t, reader.Status("GROUP local.new"), "211")
	nntptest.Code(t, c.Status("XRMGROUP local.new"), "288")
	nntptest.Code(t, c.Status("GROUP local.new"), "411")
	for _, cmd := range []string{"ARTICLE 1", "NEXT", "OVER"} {
		nntptest.Code(t, reader.Status("%s", cmd), "412") // no group selected: it is gone
	}
	nntptest.Code(t, c.Status("XRMGROUP local.new"), "411")
	nntptest.Code(t, c.Status("XPEERS"), "503") // no feeds here
	nntptest.Code(t, c.Status("XPAUSE"), "503")
}

// A reader reading a group in order has the next ReadAhead articles
// fetched into the cache: the second article read in order sets it off,
// for the articles past it not asked for yet; reads out of order do not,
// and an article fetched ahead is not fetched again when read.
func TestReadAheadFetchesTheNextArticles(t *testing.T) {
	var cache *usenet.CachedSpool
	ts := startServerOver(t, Config{ReadAhead: 3}, usenet.SiteConfig{}, func(s *usenet.LocalSpool) usenet.Spool {
		cache = usenet.NewCachedSpool(s, 4<<20, usenet.LRU)
		return cache
	}, nil)
	c, _ := ts.dial(t)
	pad := strings.Repeat("binary-ish line of a large article\r\n", 2000) // 70 KB: not cached when put
	for i := 1; i <= 8; i++ {
		nntptest.Code(t, c.Status("POST"), "340")
		c.SendText(fmt.Sprintf("From: p@example.com\r\nNewsgroups: local.other\r\nSubject: post %d\r\n\r\n%s", i, pad))
		nntptest.Code(t, c.Line(), "240")
	}
	nntptest.Code(t, c.Status("GROUP local.other"), "211 8 1 8 local.other")
	read := func(n int) {
		nntptest.Code(t, c.Status("BODY %d", n), fmt.Sprintf("222 %d ", n))
		c.Block()
	}
	wantPrefetches := func(n uint64, why string) {
		t.Helper()
		if !testutil.Poll(10*time.Second, func() bool { return cache.Stats().Prefetches == n }) {
			t.Fatalf("%s: %d prefetches, want %d", why, cache.Stats().Prefetches, n)
		}
	}
	read(8)
	read(1)
	wantPrefetches(0, "reads out of order")
	read(2)
	wantPrefetches(3, "two reads in order") // 3, 4, 5
	read(3)
	wantPrefetches(4, "a third read in order") // 6: 4 and 5 were asked for
	// 8, 1, 2 fetched as read; 3, 4, 5, 6 ahead; 3 not again.
	if st := cache.Stats(); st.Fetches != 7 {
		t.Errorf("%d fetches from the spool, want 7 (article 3, fetched ahead, fetched again?): %+v", st.Fetches, st)
	}
}
