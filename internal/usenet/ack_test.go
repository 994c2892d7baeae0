package usenet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// errListing is the failure the tests inject into news.db's commits.
var errListing = errors.New("injected: news.db cannot commit")

// spoolKinds are the two ways a site waits for its spool: the local
// spool's, journaled and synced on its own, and a spool shared with other
// sites, as the DHT is.
var spoolKinds = []struct {
	name string
	of   func(*LocalSpool) Spool
}{
	{"journaled", nil},
	{"synced", func(s *LocalSpool) Spool { return syncSpool{s} }},
}

// An article is acknowledged once its listing is durable in the journal,
// even while news.db cannot commit: readers see it from memory, a second
// offer is a duplicate, and if the site stops before any checkpoint
// succeeds, the next open lists it from the journal, once.
func TestListedWhileNewsDBFails(t *testing.T) {
	dir := t.TempDir()
	spool := openTestSpool(t, filepath.Join(dir, "spool"))
	site := openTestSite(t, dir, spool)
	site.List().FailCommits(func() error { return errListing })
	sent := article("<twice@x>", "local.test", "body\r\n")
	if err := <-accept(site, sent); err != nil {
		t.Fatalf("Accept with news.db failing: %v, want it acknowledged from the journal", err)
	}
	if err := <-accept(site, sent); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("offered again: %v, want a duplicate", err)
	}
	check := func(when string) {
		t.Helper()
		ov, err := site.List().Overview("local.test", 1, 10, 10)
		if g, _ := site.List().Group("local.test"); err != nil || len(ov) != 1 || ov[0].MessageID != "<twice@x>" || g.Count != 1 || g.High != 1 {
			t.Fatalf("%s: overview %v (%v), group %+v; want <twice@x> once, as number 1", when, ov, err, g)
		}
		raw, err := site.Article(context.Background(), HistEntry{Key: ov[0].Key})
		if want := strings.Replace(sent, "Path: ", "Path: test.site!", 1); err != nil || string(raw) != want {
			t.Fatalf("%s: listed article reads %q (%v), want %q", when, raw, err, want)
		}
	}
	check("news.db failing")
	site.Close()
	if l, err := OpenList(ListConfig{Path: filepath.Join(dir, "news.db"), PathHost: "test.site"}); err != nil {
		t.Fatal(err)
	} else if ov, _ := l.Overview("local.test", 1, 10, 10); len(ov) != 0 {
		t.Fatalf("news.db has %d entries though every commit failed", len(ov))
	} else {
		l.Close()
	}
	site = openTestSite(t, dir, spool)
	check("after reopening")
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
