package usenet

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"triad/internal/id"
	"triad/internal/vfs"
)

// An article keeps the numbers readers saw across a crash: they are
// handed out before its listing is journaled, and the journal keeps them.

// crashWhileStaged feeds articles to a site whose checkpoints fail (so
// they stay staged), lets between run, and copies the site as a power cut
// would leave it. It returns the numbers readers saw of <b@x> (its Xref)
// and the copy's folder.
func crashWhileStaged(t *testing.T, between func(site *Site, gated *gatedSpool)) (string, string) {
	t.Helper()
	dir := t.TempDir()
	gated := &gatedSpool{LocalSpool: openTestSpool(t, filepath.Join(dir, "spool")),
		committed: make(chan id.ID), verdict: make(chan error)}
	site := openTestSite(t, dir, gated)
	site.List().FailCommits(func() error { return errors.New("news.db: no space left on device") })
	between(site, gated)
	h, found, err := site.List().Lookup("<b@x>")
	if !found || err != nil {
		t.Fatal(found, err)
	}
	crashed := t.TempDir()
	copyFiles(t, dir, crashed)
	copyFiles(t, filepath.Join(dir, "spool"), filepath.Join(crashed, "spool"))
	os.Remove(filepath.Join(crashed, "spool", "index.db"))
	return h.Xref, crashed
}

// reopenedXref opens a crashed site's copy and returns msgid's Xref, and
// the site.
func reopenedXref(t *testing.T, crashed, msgid string) (string, *Site) {
	t.Helper()
	site := openTestSite(t, crashed, openTestSpool(t, filepath.Join(crashed, "spool")))
	h, found, err := site.List().Lookup(msgid)
	if !found || err != nil {
		t.Fatalf("%s after the crash: %v %v", msgid, found, err)
	}
	return h.Xref, site
}

// An article the spool stored but reported failed (on the DHT, a put
// whose copies landed though its caller timed out) is never acknowledged
// nor numbered for readers, yet replay finds it stored and lists it: the
// acknowledged article after it must not move.
func TestReplayKeepsTheNumbersReadersSaw(t *testing.T) {
	saw, crashed := crashWhileStaged(t, func(site *Site, gated *gatedSpool) {
		done := accept(site, article("<a@x>", "local.test", "a\r\n"))
		<-gated.committed
		gated.verdict <- errors.New("put: 1 live hosts, need 2")
		if err := <-done; err == nil {
			t.Fatal("<a@x> acknowledged")
		}
		done = accept(site, article("<b@x>", "local.test", "b\r\n"))
		<-gated.committed
		gated.verdict <- nil
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
	if got, _ := reopenedXref(t, crashed, "<b@x>"); got != saw {
		t.Fatalf("<b@x> was %q to readers, %q after the crash", saw, got)
	}
}

// AddGroup (newsd's reload) changes a group's status and description in
// news.db, not its numbers: those in memory count staged entries, which
// replay lists again after a crash.
func TestAddGroupWhileStagedKeepsNumbers(t *testing.T) {
	saw, crashed := crashWhileStaged(t, func(site *Site, gated *gatedSpool) {
		done := accept(site, article("<b@x>", "local.test", "b\r\n"))
		<-gated.committed
		gated.verdict <- nil
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if err := site.List().AddGroup("local.test", "y", "reloaded"); err != nil {
			t.Fatal(err)
		}
	})
	got, site := reopenedXref(t, crashed, "<b@x>")
	if got != saw {
		t.Fatalf("<b@x> was %q to readers, %q after the crash", saw, got)
	}
	if g, _ := site.List().Group("local.test"); g.Count != 1 || g.Low != 1 || g.High != 1 {
		t.Fatalf("local.test after the crash: %+v, want the one article, 1-1", g)
	}
}

// A journaled entry whose article is gone when the site reopens is not
// listed, and its number is not handed out again: readers may have seen
// it (the article was acknowledged before its holders were lost).
func TestReplayedNumberOfAGoneArticleIsNotReused(t *testing.T) {
	dir := t.TempDir()
	spool := openTestSpool(t, filepath.Join(dir, "spool"))
	site := openTestSite(t, dir, spool)
	if err := site.Close(); err != nil {
		t.Fatal(err)
	}
	j, _, err := openJournal(vfs.OS(), filepath.Join(dir, "journal"))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	gone := Entry{MessageID: "<gone@x>", Key: id.Key([]byte("never stored")), Groups: []string{"local.test"},
		Arrived: now, Expires: now.Add(time.Hour), Nums: []uint64{5}}
	if err := j.append(1, []Entry{gone}, []bool{true}); err != nil {
		t.Fatal(err)
	}
	j.close()
	site = openTestSite(t, dir, spool)
	if _, found, _ := site.List().Lookup("<gone@x>"); found {
		t.Fatal("an entry whose article is gone was listed")
	}
	if err := <-accept(site, article("<next@x>", "local.test", "next\r\n")); err != nil {
		t.Fatal(err)
	}
	h, found, err := site.List().Lookup("<next@x>")
	if !found || err != nil || h.Xref != "test.site local.test:6" {
		t.Fatalf("the next article: %q (%v %v), want number 6", h.Xref, found, err)
	}
}

// An article whose first offer failed in the spool (leaving its block
// stored: on the DHT, a put whose copies landed though its caller gave up)
// and whose second offer was acknowledged keeps the number readers saw:
// replay lists only a message-id's last journaled offer, and the next
// article does not take that number.
func TestReplayListsTheAcknowledgedOffer(t *testing.T) {
	saw, crashed := crashWhileStaged(t, func(site *Site, gated *gatedSpool) {
		done := accept(site, article("<b@x>", "local.test", "b\r\n"))
		<-gated.committed
		gated.verdict <- errors.New("put: 1 live hosts, need 2")
		if err := <-done; err == nil {
			t.Fatal("the first offer was acknowledged")
		}
		done = accept(site, article("<b@x>", "local.test", "b\r\n"))
		<-gated.committed
		gated.verdict <- nil
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
	got, site := reopenedXref(t, crashed, "<b@x>")
	if got != saw {
		t.Fatalf("<b@x> was %q to readers, %q after the crash", saw, got)
	}
	if ov, _ := site.List().Overview("local.test", 1, 10, 10); len(ov) != 1 || ov[0].MessageID != "<b@x>" {
		t.Fatalf("local.test lists %d entries after the crash, want <b@x> once", len(ov))
	}
	if err := <-accept(site, article("<c@x>", "local.test", "c\r\n")); err != nil {
		t.Fatal(err)
	}
	if c, _, _ := site.List().Lookup("<c@x>"); c.Xref == saw {
		t.Fatalf("the next article took <b@x>'s number: %q", c.Xref)
	}
}
