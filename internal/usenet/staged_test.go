package usenet

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"triad/internal/testutil"
)

// Expire's own checkpoint and its scan of a group are not one step: an
// entry staged between them (its number past everything news.db holds) must
// stay between the group's low and high marks.
func TestExpireKeepsAStagedEntryInRange(t *testing.T) {
	now := time.Now()
	var armed atomic.Bool
	var l *List
	fresh := announced("<fresh@peer>", "local.a")
	cfg := ListConfig{Path: filepath.Join(t.TempDir(), "news.db"), PathHost: "list.test",
		Now: func() time.Time {
			// Expire reads the clock after its checkpoint: the lister
			// stages a batch then.
			if armed.CompareAndSwap(true, false) {
				l.stage([]Entry{fresh}, 0)
			}
			return now
		}}
	var err error
	if l, err = OpenList(cfg); err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.AddGroup("local.a", "y", ""); err != nil {
		t.Fatal(err)
	}
	old := announced("<old@peer>", "local.a")
	old.Arrived, old.Expires = now.Add(-100*24*time.Hour), now.Add(-99*24*time.Hour)
	if n, err := l.Add(old); err != nil || n != 1 {
		t.Fatal(n, err)
	}
	armed.Store(true)
	if _, _, err := l.Expire(); err != nil {
		t.Fatal(err)
	}
	g, _ := l.Group("local.a")
	ov, _ := l.Overview("local.a", g.Low, g.High, 100)
	if g.Low != 2 || g.High != 2 || g.Count != 1 || len(ov) != 1 {
		t.Fatalf("group %+v, overview of Low..High %d entries; want Low=High=2, Count=1 and <fresh@peer> in range", g, len(ov))
	}
}

// A staged message-id is listed: Has must say so even once the recent
// ids' memory has let it go, and Add must not list it again.

// A staged message-id is listed for Has and for Add's check, also once the
// seen cache has let it go.
func TestStagedIdIsListedForHasAndAdd(t *testing.T) {
	l, err := OpenList(ListConfig{Path: filepath.Join(t.TempDir(), "news.db"), PathHost: "list.test", SeenCache: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.AddGroup("local.a", "y", ""); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"<a@peer>", "<b@peer>", "<c@peer>"} {
		l.stage([]Entry{announced(m, "local.a")}, 0)
	}
	has, err := l.Has("<a@peer>")
	n, aerr := l.Add(announced("<a@peer>", "local.a"))
	if !has || n != 0 {
		t.Fatalf("staged <a@peer>: Has %v (%v), Add listed it %d more times (%v)", has, err, n, aerr)
	}
}

// crashWhileStaged feeds articles to a site whose checkpoints fail (so
// they stay staged), lets between run, and copies the site as a power cut
// would leave it. It returns the numbers readers saw (Xref) and the copy.

// An article acknowledged from the journal on a relaying site and lost
// from memory in a crash before the checkpoint is queued for the peers
// when replay lists it: the journal keeps its head.
func TestReplayedArticleIsRelayed(t *testing.T) {
	dir := t.TempDir()
	open := func(dir string) *Site {
		spool := openTestSpool(t, filepath.Join(dir, "spool"))
		site, err := OpenSite(SiteConfig{Dir: dir, Spool: syncSpool{spool}, PathHost: "test.site", Relay: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { site.Close() })
		if err := site.List().AddGroup("local.test", "y", ""); err != nil {
			t.Fatal(err)
		}
		if err := site.List().StartCursor("peer"); err != nil {
			t.Fatal(err)
		}
		return site
	}
	site := open(dir)
	site.List().FailCommits(func() error { return errors.New("news.db: no space left on device") })
	if err := <-accept(site, article("<relay@x>", "local.test", "body\r\n")); err != nil {
		t.Fatal(err)
	}
	crashed := t.TempDir()
	copyFiles(t, dir, crashed)
	copyFiles(t, filepath.Join(dir, "spool"), filepath.Join(crashed, "spool"))
	os.Remove(filepath.Join(crashed, "spool", "index.db"))

	site = open(crashed)
	if _, found, _ := site.List().Lookup("<relay@x>"); !found {
		t.Fatal("not listed after the crash")
	}
	recs, err := site.List().ReadLog("peer", 10, 1<<20)
	if err != nil || len(recs) != 1 || recs[0].MessageID != "<relay@x>" {
		t.Fatalf("out log after the crash: %d records (%v), want <relay@x> queued for the peer", len(recs), err)
	}
}

// What is staged stays bounded in bytes, not only in entries: while
// news.db fails, a relaying site whose staged heads pass maxStagedBytes
// stops staging (and so acknowledging) until a checkpoint makes room, and
// then goes on. Heads reach 64 KB each, so tens of thousands of staged
// entries could have held gigabytes.
func TestStagedBytesAreBounded(t *testing.T) {
	old := maxStagedBytes
	maxStagedBytes = 64 << 10
	defer func() { maxStagedBytes = old }()
	dir := t.TempDir()
	spool := openTestSpool(t, filepath.Join(dir, "spool"))
	site, err := OpenSite(SiteConfig{Dir: dir, Spool: spool, PathHost: "test.site", Relay: true})
	if err != nil {
		t.Fatal(err)
	}
	defer site.Close()
	if err := site.List().AddGroup("local.test", "y", ""); err != nil {
		t.Fatal(err)
	}
	var pad []string
	for i := range 16 {
		pad = append(pad, fmt.Sprintf("X-Pad-%d: %s", i, strings.Repeat("p", 900)))
	}
	big := func(id string) string { return article(id, "local.test", "body\r\n", pad...) }
	site.List().FailCommits(func() error { return errors.New("news.db: I/O error") })
	// Staged one at a time, until past the bound.
	for i := 0; ; i++ {
		if i == 20 {
			t.Fatal("20 articles of 14 KB of heads staged, still under 64 KB")
		}
		if err := <-accept(site, big(fmt.Sprintf("<under%d@x>", i))); err != nil {
			t.Fatal(err)
		}
		if _, size := site.List().stagedEntries(); size >= maxStagedBytes {
			break
		}
	}
	over := accept(site, big("<over@x>"))
	if !testutil.Poll(10*time.Second, func() bool { return site.roomWaits.Load() > 0 || len(over) > 0 }) {
		t.Fatal("the lister neither waited for room nor listed <over@x>")
	}
	if len(over) > 0 || site.roomWaits.Load() == 0 {
		t.Fatalf("<over@x> answered (%v) with the staged heads past the bound and news.db failing", <-over)
	}
	site.List().FailCommits(nil)
	if err := <-over; err != nil {
		t.Fatalf("<over@x> once news.db works again: %v", err)
	}
	if g, _ := site.List().Group("local.test"); g.Count < 2 {
		t.Fatalf("local.test %+v", g)
	}
}
