package nntpd

import (
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"

	"triad/internal/nntp/nntptest"
	"triad/internal/usenet"
	"triad/internal/vfs"
)

// errJournal is the failure the tests inject into the journal's syncs.
var errJournal = errors.New("injected: the journal cannot sync")

// failingJournal is a site file system whose journal's syncs fail while
// fail is set, as a failing disk's would.
func failingJournal(fail *atomic.Bool) vfs.FS {
	return vfs.Inject(vfs.OS(), func(op vfs.Op, path string) error {
		if op == vfs.OpSync && filepath.Base(path) == "journal" && fail.Load() {
			return errJournal
		}
		return nil
	})
}

// spoolKinds are the two ways a site waits for its spool: the local
// spool's, journaled and synced on its own, and a spool shared with other
// sites, as the DHT is.
var spoolKinds = []struct {
	name string
	of   func(*usenet.LocalSpool) usenet.Spool
}{
	{"journaled", nil},
	{"synced", func(s *usenet.LocalSpool) usenet.Spool { return syncSpool{s} }},
}

// syncSpool hides that a LocalSpool is the site's own: a spool shared
// with other sites, as the DHT is, so the site stores articles sealed and
// takes announcements.
type syncSpool struct{ usenet.Spool }

// An article whose listing cannot be made durable (the journal's sync
// fails) is not acknowledged: POST gets 441, IHAVE 436, and TAKETHIS 400, which closes
// the feed (a feeder offers again what was unanswered; 439 would mean
// never). It is nowhere a reader or a duplicate check looks, so the next
// offer is taken, as number 2: the failed offer's number stays unused.
func TestUnjournaledListingIsNotAcknowledged(t *testing.T) {
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
				ts := startServerOver(t, Config{}, usenet.SiteConfig{FS: failingJournal(&fail)}, sp.of, nil)
				const id = "<unlisted@example.com>"
				offer := func() (*testClient, string) {
					c, _ := ts.dial(t)
					switch v.verb {
					case "POST":
						nntptest.Code(t, c.Status("POST"), "340")
					case "IHAVE":
						nntptest.Code(t, c.Status("IHAVE %s", id), "335")
					case "TAKETHIS":
						nntptest.Code(t, c.Status("MODE STREAM"), "203")
						if err := c.Send("TAKETHIS " + id); err != nil {
							t.Fatal(err)
						}
					}
					c.SendText(article(id, "local.test", "body\r\n"))
					return c, c.Line()
				}
				c, reply := offer()
				nntptest.Code(t, reply, v.failed)
				if v.verb == "TAKETHIS" {
					if l, err := c.ReadLine(); err == nil {
						t.Fatalf("after a 400 the feed is still open: %q", l)
					}
				}

				r, _ := ts.dial(t)
				nntptest.Code(t, r.Status("MODE STREAM"), "203")
				nntptest.Code(t, r.Status("GROUP local.test"), "211 0 1 0 local.test")
				nntptest.Code(t, r.Status("STAT 1"), "423")
				nntptest.Code(t, r.Status("OVER 1-"), "423")
				nntptest.Code(t, r.Status("ARTICLE %s", id), "430")
				nntptest.Code(t, r.Status("CHECK %s", id), "238 "+id)
				if _, found, err := ts.site.List().Lookup(id); found || err != nil {
					t.Fatalf("in the history (%v) after a failed journal", err)
				}

				fail.Store(false)
				_, reply = offer()
				nntptest.Code(t, reply, v.ok)
				nntptest.Code(t, r.Status("GROUP local.test"), "211 1 2 2 local.test")
				nntptest.Code(t, r.Status("STAT 2"), "223 2 "+id)
				nntptest.Code(t, r.Status("CHECK %s", id), "438 "+id)
			})
		}
	}
}
