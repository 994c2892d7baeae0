package nntpd

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"triad/internal/id"
	"triad/internal/nntp/nntptest"
	"triad/internal/testutil"
	"triad/internal/usenet"
)

// listArticles lists n articles numbered 1..n in local.test without
// storing them (OVER and HDR read only the overview).
func listArticles(t *testing.T, ts *testServer, n int) {
	t.Helper()
	now := time.Now()
	for lo := 0; lo < n; lo += 5000 {
		var batch []usenet.Entry
		for i := lo; i < min(n, lo+5000); i++ {
			msgid := fmt.Sprintf("<l%d@example.com>", i)
			batch = append(batch, usenet.Entry{MessageID: msgid, Key: id.Key([]byte(msgid)), Groups: []string{"local.test"},
				Arrived: now, Expires: now.Add(time.Hour), Bytes: 100, Lines: 2,
				Subject: fmt.Sprintf("subject %d", i), From: "a@example.com", Date: "Sat, 21 Nov 2026 10:00:00 +0000"})
		}
		if added, err := ts.site.List().Add(batch...); err != nil || added != len(batch) {
			t.Fatalf("listed %d of %d: %v", added, len(batch), err)
		}
	}
}

// OVER and HDR of ranges longer than a page come back whole, in order,
// once each; a range past the group's end stops at it.
func TestOverAndHdrAcrossPages(t *testing.T) {
	ts := startServer(t, Config{}, usenet.SiteConfig{})
	const n = 2*overPage + 345
	listArticles(t, ts, n)
	c, _ := ts.dial(t)
	nntptest.Code(t, c.Status("GROUP local.test"), "211")
	for _, cmd := range []string{"OVER 1-1000000", "XOVER 1-", "HDR Subject 1-", "XHDR Subject 1-"} {
		c.Status("%s", cmd)
		lines := c.Block()
		if len(lines) != n {
			t.Fatalf("%s: %d lines, want %d", cmd, len(lines), n)
		}
		for i, l := range lines {
			if want := fmt.Sprintf("%d ", i+1); !strings.HasPrefix(strings.Replace(l, "\t", " ", 1), want) {
				t.Fatalf("%s: line %d is %.40q, want it to start %q", cmd, i, l, want)
			}
		}
	}
	nntptest.Code(t, c.Status("OVER %d-%d", overPage, overPage+1), "224")
	if lines := c.Block(); len(lines) != 2 || !strings.HasPrefix(lines[1], fmt.Sprint(overPage+1, "\t")) {
		t.Fatalf("OVER across one page boundary: %q", lines)
	}
}

// A client that asks for a long OVER and reads none of it is dropped once
// a write has waited WriteTimeout, not after the idle timeout, while
// another client is served meanwhile.
func TestStalledReaderIsDropped(t *testing.T) {
	ts := startServer(t, Config{WriteTimeout: 300 * time.Millisecond}, usenet.SiteConfig{})
	listArticles(t, ts, 60000) // about 8 MB of overview: more than the sockets hold
	slow, _ := ts.dial(t)
	nntptest.Code(t, slow.Status("GROUP local.test"), "211")
	if err := slow.Send("OVER 1-1000000"); err != nil {
		t.Fatal(err)
	}
	c, _ := ts.dial(t)
	nntptest.Code(t, c.Status("GROUP local.test"), "211")
	testutil.WaitFor(t, 20*time.Second, "the stalled reader to be dropped", func() bool { return ts.srv.Conns() <= 1 })
	nntptest.Code(t, c.Status("STAT 5"), "223")
}
