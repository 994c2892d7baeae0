package usenet

import (
	"bufio"
	"net"
	"strings"
	"testing"
	"time"
)

// HELP's text is a multi-line block, so every line of it, the status line
// and the terminating dot included, ends in CRLF (RFC 3977 section 3.1.1).
// Read on a raw connection: a client's block reader may mend bare LFs.
func TestHelpLinesEndInCRLF(t *testing.T) {
	ts := startServer(t, Config{}, SiteConfig{})
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
	code(t, readLine(), "200")
	if _, err := conn.Write([]byte("HELP\r\n")); err != nil {
		t.Fatal(err)
	}
	code(t, readLine(), "100")
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
	ts := startServer(t, Config{}, SiteConfig{})
	c, _ := ts.dial(t)
	code(t, c.cmd("GROUP"), "501")
	code(t, c.cmd("GROUP local.test extra"), "501")
	code(t, c.cmd("LISTGROUP"), "412")
	code(t, c.cmd("STAT 1"), "412")
	code(t, c.cmd("GROUP local.test"), "211")
	code(t, c.cmd("GROUP"), "501")
	code(t, c.cmd("LISTGROUP"), "211")
	c.block()
}

// An article of 900 KB of folded header lines is refused with each
// command's own code, at once (it used to cost 18.8 s of CPU to parse and
// then be taken), and the connection goes on.
func TestFoldedHeaderArticleRefused(t *testing.T) {
	ts := startServer(t, Config{}, SiteConfig{})
	c, _ := ts.dial(t)
	raw := string(foldedArticle(900_000, 4))
	code(t, c.cmd("POST"), "340")
	c.sendArticle(raw)
	code(t, c.line(), "441")
	code(t, c.cmd("IHAVE <fold@example.com>"), "335")
	c.sendArticle(raw)
	code(t, c.line(), "437")
	if err := c.Send("TAKETHIS <fold@example.com>"); err != nil {
		t.Fatal(err)
	}
	c.sendArticle(raw)
	code(t, c.line(), "439 <fold@example.com>")
	code(t, c.cmd("STAT <fold@example.com>"), "430")
	// Headers at the limits are taken.
	code(t, c.cmd("IHAVE <fold@example.com>"), "335")
	c.sendArticle(string(foldedArticle(maxHeaderBytes-1000, 33)))
	code(t, c.line(), "235")
}
