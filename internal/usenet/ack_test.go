package usenet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// errListing is the failure the tests inject into news.db's commits.
var errListing = errors.New("injected: news.db cannot commit")

// failListing makes the site's listing commits fail while fail is set,
// inside the transaction, after its writes.
func failListing(fail *atomic.Bool) func(*Site) {
	return func(s *Site) {
		s.list.failCommit = func() error {
			if fail.Load() {
				return errListing
			}
			return nil
		}
	}
}

// spoolKinds are the two ways a site waits for its spool: the local
// spool's, journaled and synced on its own, and a spool that is durable
// when Put returns, as the DHT's is.
var spoolKinds = []struct {
	name string
	of   func(*LocalSpool) Spool
}{
	{"journaled", nil},
	{"synced", func(s *LocalSpool) Spool { return syncSpool{s} }},
}

// An article whose listing fails (news.db cannot commit) is not
// acknowledged: POST gets 441, IHAVE 436, and TAKETHIS 400, which closes
// the feed (a feeder offers again what was unanswered; 439 would mean
// never). It is nowhere a reader or a duplicate check looks, so the next
// offer is taken, as number 1.
func TestFailedListingIsNotAcknowledged(t *testing.T) {
	verbs := []struct{ verb, failed, ok string }{
		{"POST", "441", "240"},
		{"IHAVE", "436", "235"},
		{"TAKETHIS", "400", "239 "},
	}
	for _, sp := range spoolKinds {
		for _, v := range verbs {
			t.Run(sp.name+"/"+v.verb, func(t *testing.T) {
				var fail atomic.Bool
				fail.Store(true)
				ts := startServerOver(t, Config{}, SiteConfig{}, sp.of, failListing(&fail))
				const id = "<unlisted@example.com>"
				offer := func() (*testClient, string) {
					c, _ := ts.dial(t)
					switch v.verb {
					case "POST":
						code(t, c.cmd("POST"), "340")
					case "IHAVE":
						code(t, c.cmd("IHAVE %s", id), "335")
					case "TAKETHIS":
						code(t, c.cmd("MODE STREAM"), "203")
						if err := c.Send("TAKETHIS " + id); err != nil {
							t.Fatal(err)
						}
					}
					c.sendArticle(article(id, "local.test", "body\r\n"))
					return c, c.line()
				}
				c, reply := offer()
				code(t, reply, v.failed)
				if v.verb == "TAKETHIS" {
					if l, err := c.ReadLine(); err == nil {
						t.Fatalf("after a 400 the feed is still open: %q", l)
					}
				}

				r, _ := ts.dial(t)
				code(t, r.cmd("MODE STREAM"), "203")
				code(t, r.cmd("GROUP local.test"), "211 0 1 0 local.test")
				code(t, r.cmd("STAT 1"), "423")
				code(t, r.cmd("OVER 1-"), "423")
				code(t, r.cmd("ARTICLE %s", id), "430")
				code(t, r.cmd("CHECK %s", id), "238 "+id)
				if _, found, err := ts.site.List().Lookup(id); found || err != nil {
					t.Fatalf("in the history (%v) after a failed listing", err)
				}

				fail.Store(false)
				_, reply = offer()
				code(t, reply, v.ok)
				code(t, r.cmd("GROUP local.test"), "211 1 1 1 local.test")
				code(t, r.cmd("STAT 1"), "223 1 "+id)
				code(t, r.cmd("CHECK %s", id), "438 "+id)
			})
		}
	}
}

// An article refused twice because its listing failed is in the journal
// twice, durable in the spool. If the site stops before any listing
// succeeds, the next open lists it from the journal once, whole.
func TestTwiceRefusedArticleIsListedOnceAtReopen(t *testing.T) {
	dir := t.TempDir()
	spool := openTestSpool(t, filepath.Join(dir, "spool"))
	site := openTestSite(t, dir, spool)
	site.list.failCommit = func() error { return errListing }
	sent := article("<twice@x>", "local.test", "body\r\n")
	for range 2 {
		if err := <-accept(site, sent); !errors.Is(err, errListing) {
			t.Fatalf("Accept with news.db failing: %v, want the commit's error", err)
		}
	}
	if g, _ := site.List().Group("local.test"); g.Count != 0 || g.High != 0 {
		t.Fatalf("group %+v after two failed listings", g)
	}
	site.Close()

	site = openTestSite(t, dir, spool)
	ov, err := site.List().Overview("local.test", 1, 10, 10)
	if g, _ := site.List().Group("local.test"); err != nil || len(ov) != 1 || ov[0].MessageID != "<twice@x>" || g.Count != 1 || g.High != 1 {
		t.Fatalf("after reopening: overview %v (%v), group %+v; want <twice@x> once, as number 1", ov, err, g)
	}
	raw, err := site.Article(context.Background(), HistEntry{Key: ov[0].Key})
	if want := strings.Replace(sent, "Path: ", "Path: test.site!", 1); err != nil || string(raw) != want {
		t.Fatalf("listed article reads %q (%v), want %q", raw, err, want)
	}
}

// Accept keeps nothing of the article's buffer once it returns: the
// server hands the buffer to the next article at once (TAKETHIS's stream
// workers put it back in the pool). Each buffer here is overwritten as
// soon as its Accept returns, with room to spare so that the Path entry
// went in place; the overview and the spool still hold what was sent.
// Before overview entries were made at Accept, the lister counted a fed
// article's lines in its buffer after the 239: go test -race reports that
// as a race with the scribbling.
func TestAcceptKeepsNothingOfTheBuffer(t *testing.T) {
	for _, sp := range spoolKinds {
		t.Run(sp.name, func(t *testing.T) {
			dir := t.TempDir()
			var spool Spool = openTestSpool(t, filepath.Join(dir, "spool"))
			if sp.of != nil {
				spool = sp.of(spool.(*LocalSpool))
			}
			site := openTestSite(t, dir, spool)
			const n = 50
			var sent []string
			for i := range n {
				a := article(fmt.Sprintf("<buf%d@x>", i), "local.test", strings.Repeat("a line\r\n", i+1))
				raw := append(make([]byte, 0, len(a)+64), a...)
				if _, err := site.Accept(context.Background(), raw, "", false); err != nil {
					t.Fatal(err)
				}
				copy(raw[:cap(raw)], bytes.Repeat([]byte{'X'}, cap(raw)))
				sent = append(sent, strings.Replace(a, "Path: ", "Path: test.site!", 1))
			}
			site.Flush()
			ov, err := site.List().Overview("local.test", 1, n, n)
			if err != nil || len(ov) != n {
				t.Fatalf("%d overview entries (%v), want %d", len(ov), err, n)
			}
			for i, o := range ov {
				id := fmt.Sprintf("<buf%d@x>", i)
				if o.MessageID != id || o.Subject != "test "+id || o.Lines != uint32(i+1) || o.Bytes != uint32(len(sent[i])) {
					t.Errorf("overview %d: %s %q, %d lines, %d bytes; want %s, %d lines, %d bytes",
						o.Num, o.MessageID, o.Subject, o.Lines, o.Bytes, id, i+1, len(sent[i]))
				}
				if raw, err := site.Article(context.Background(), HistEntry{Key: o.Key}); err != nil || string(raw) != sent[i] {
					t.Errorf("article %d reads %q (%v), want %q", o.Num, raw, err, sent[i])
				}
			}
		})
	}
}
