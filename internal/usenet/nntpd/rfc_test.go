package nntpd

import (
	"bufio"
	"bytes"
	"net"
	"strings"
	"testing"
	"time"

	"triad/internal/id"
	"triad/internal/nntp/nntptest"
	"triad/internal/usenet"
)

// HELP's text is a multi-line block, so every line of it, the status line
// and the terminating dot included, ends in CRLF (RFC 3977 section 3.1.1).
// Read on a raw connection: a client's block reader may mend bare LFs.
func TestHelpLinesEndInCRLF(t *testing.T) {
	ts := startServer(t, Config{}, usenet.SiteConfig{})
	conn, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(conn)
	readLine := func() string {
		t.Helper()
		l, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("reading: %v (so far %q)", err, l)
		}
		if !strings.HasSuffix(l, "\r\n") {
			t.Fatalf("line %q does not end in CRLF", l)
		}
		return l
	}
	nntptest.Code(t, readLine(), "200")
	if _, err := conn.Write([]byte("HELP\r\n")); err != nil {
		t.Fatal(err)
	}
	nntptest.Code(t, readLine(), "100")
	n := 0
	for l := readLine(); l != ".\r\n"; l = readLine() {
		n++
	}
	if n < 20 {
		t.Fatalf("HELP gave %d lines of text", n)
	}
}

// A GROUP without its argument is a syntax error (501), whether or not a
// group is selected (RFC 3977 section 6.1.1); 412 is for the commands that
// need a selected group and find none.
func TestGroupWithoutArgumentIs501(t *testing.T) {
	ts := startServer(t, Config{}, usenet.SiteConfig{})
	c, _ := ts.dial(t)
	nntptest.Code(t, c.Status("GROUP"), "501")
	nntptest.Code(t, c.Status("GROUP local.test extra"), "501")
	nntptest.Code(t, c.Status("LISTGROUP"), "412")
	nntptest.Code(t, c.Status("STAT 1"), "412")
	nntptest.Code(t, c.Status("GROUP local.test"), "211")
	nntptest.Code(t, c.Status("GROUP"), "501")
	nntptest.Code(t, c.Status("LISTGROUP"), "211")
	c.Block()
}

// An article of 900 KB of folded header lines is refused with each
// command's own code, at once (it used to cost 18.8 s of CPU to parse and
// then be taken), and the connection goes on.
func TestFoldedHeaderArticleRefused(t *testing.T) {
	ts := startServer(t, Config{}, usenet.SiteConfig{})
	c, _ := ts.dial(t)
	raw := string(foldedArticle(900_000, 4))
	nntptest.Code(t, c.Status("POST"), "340")
	c.SendText(raw)
	nntptest.Code(t, c.Line(), "441")
	nntptest.Code(t, c.Status("IHAVE <fold@example.com>"), "335")
	c.SendText(raw)
	nntptest.Code(t, c.Line(), "437")
	if err := c.Send("TAKETHIS <fold@example.com>"); err != nil {
		t.Fatal(err)
	}
	c.SendText(raw)
	nntptest.Code(t, c.Line(), "439 <fold@example.com>")
	nntptest.Code(t, c.Status("STAT <fold@example.com>"), "430")
	// Headers at the limits are taken.
	nntptest.Code(t, c.Status("IHAVE <fold@example.com>"), "335")
	c.SendText(string(foldedArticle(usenet.MaxHeaderBytes-1000, 33)))
	nntptest.Code(t, c.Line(), "235")
}

// foldedArticle is an article whose X-Fold header is folded over
// continuation lines of width bytes (CRLF included, at least 4) until its
// header block is about size bytes.
func foldedArticle(size, width int) []byte {
	cont := " " + strings.Repeat("x", width-3) + "\r\n"
	raw := []byte(article("<fold@example.com>", "local.test", "body\r\n", "X-Fold: start"))
	head, body, _ := bytes.Cut(raw, []byte("\r\n\r\n"))
	out := append(bytes.Clone(head), "\r\n"...)
	for len(out) < size {
		out = append(out, cont...)
	}
	out = append(out, "\r\n"...)
	return append(out, body...)
}

// announced is an entry as a peer site would announce an article it
// stored in the DHT: headers and content key, no body here.
func announced(msgid string, groups ...string) usenet.Entry {
	now := time.Now()
	return usenet.Entry{MessageID: msgid, Key: id.Key([]byte("body of " + msgid)), Groups: groups,
		Arrived: now, Expires: now.Add(30 * 24 * time.Hour), Bytes: 1234, Lines: 17,
		Subject: "announced " + msgid, From: "Peer <p@peer.example>", Date: "Sat, 21 Nov 2026 10:00:00 +0000"}
}

// A site's list is fed an entry for an article this site never spooled:
// a reader sees it in GROUP and OVER, and a feeder is told it is not
// wanted; reading it needs the body, which is elsewhere.
func TestListedWithoutSpoolAnswersGroupAndOver(t *testing.T) {
	ts := startServer(t, Config{}, usenet.SiteConfig{})
	n, err := ts.site.List().Add(announced("<flood@peer.example>", "local.test", "local.other"))
	if err != nil || n != 1 {
		t.Fatalf("Add: %d, %v", n, err)
	}
	c, _ := ts.dial(t)
	nntptest.Code(t, c.Status("GROUP local.test"), "211 1 1 1 local.test")
	nntptest.Code(t, c.Status("OVER 1"), "224")
	over := c.Block()
	want := "1\tannounced <flood@peer.example>\tPeer <p@peer.example>\tSat, 21 Nov 2026 10:00:00 +0000\t<flood@peer.example>\t\t1234\t17\tXref: test.site local.test:1 local.other:1"
	if len(over) != 1 || over[0] != want {
		t.Fatalf("OVER 1: %q\nwant %q", over, want)
	}
	nntptest.Code(t, c.Status("STAT 1"), "223 1 <flood@peer.example>")
	nntptest.Code(t, c.Status("HDR Subject <flood@peer.example>"), "430") // by id HDR rebuilds from the article
	nntptest.Code(t, c.Status("ARTICLE 1"), "423")                        // the body is not in this site's spool
	nntptest.Code(t, c.Status("MODE STREAM"), "203")
	nntptest.Code(t, c.Status("CHECK <flood@peer.example>"), "438 <flood@peer.example>")
	// A new article is numbered after it.
	nntptest.Code(t, c.Status("IHAVE <local@example.com>"), "335")
	c.SendText(article("<local@example.com>", "local.test", "here\r\n"))
	nntptest.Code(t, c.Line(), "235")
	if l := c.Status("GROUP local.test"); !strings.HasPrefix(l, "211 2 1 2 ") {
		t.Fatalf("GROUP after a local article: %q", l)
	}
}
