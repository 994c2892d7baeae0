package usenet

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"triad/internal/id"
)

// gatedSpool is a local spool whose syncs the test decides: the site's
// wait for durability reports the key on committed (the article's listing
// is then committed) and takes its outcome from verdict.
type gatedSpool struct {
	*LocalSpool
	committed chan id.ID
	verdict   chan error
}

func (g *gatedSpool) PutAsync(ctx context.Context, article []byte, expires time.Time) (id.ID, func() error, error) {
	key, durable, err := g.LocalSpool.PutAsync(ctx, article, expires)
	if err != nil {
		return key, nil, err
	}
	return key, func() error {
		g.committed <- key
		if err := <-g.verdict; err != nil {
			return err
		}
		return durable()
	}, nil
}

func openTestSite(t *testing.T, dir string, spool Spool) *Site {
	t.Helper()
	site, err := OpenSite(SiteConfig{Dir: dir, Spool: spool, PathHost: "test.site"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { site.Close() })
	if err := site.AddGroup("local.test", "y", ""); err != nil {
		t.Fatal(err)
	}
	return site
}

func openTestSpool(t *testing.T, dir string) *LocalSpool {
	t.Helper()
	s, err := OpenLocalSpool(dir, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// accept runs Site.Accept on its own goroutine, for a test that plays the
// spool meanwhile.
func accept(site *Site, raw string) chan error {
	done := make(chan error, 1)
	go func() {
		_, err := site.Accept(context.Background(), []byte(raw), "", false)
		done <- err
	}()
	return done
}

// A crash after an article's listing is committed but before the spool's
// sync made it durable: the article was never acknowledged, and on the
// next open it must not be listed, as the spool lost it.
func TestCrashBeforeSpoolSyncUnlistsLostArticle(t *testing.T) {
	dir := t.TempDir()
	gated := &gatedSpool{LocalSpool: openTestSpool(t, filepath.Join(dir, "spool")),
		committed: make(chan id.ID), verdict: make(chan error)}
	site := openTestSite(t, dir, gated)

	kept := article("<kept@x>", "local.test", "durable\r\n")
	done := accept(site, kept)
	keptKey := <-gated.committed
	gated.verdict <- nil
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	done = accept(site, article("<lost@x>", "local.test", "never synced\r\n"))
	<-gated.committed
	// The machine stops here: news.db as it is on disk, and a spool that
	// has only what was synced.
	crashed := t.TempDir()
	db, err := os.ReadFile(filepath.Join(dir, "news.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(crashed, "news.db"), db, 0o644); err != nil {
		t.Fatal(err)
	}
	gated.verdict <- nil
	<-done
	stored, err := gated.Get(context.Background(), keptKey)
	if err != nil {
		t.Fatal(err)
	}
	spool := openTestSpool(t, filepath.Join(crashed, "spool"))
	if _, err := spool.Put(context.Background(), stored, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}

	after := openTestSite(t, crashed, spool)
	if _, found, _ := after.Lookup("<lost@x>"); found {
		t.Fatal("the lost article is still in the history")
	}
	if _, found, _ := after.Lookup("<kept@x>"); !found {
		t.Fatal("the durable article left the history")
	}
	g, _ := after.Group("local.test")
	ov, err := after.Overview("local.test", 1, 100, 100)
	if err != nil || len(ov) != 1 || ov[0].MessageID != "<kept@x>" || g.Count != 1 || g.Low != 1 || g.High != 2 {
		t.Fatalf("after recovery: overview %d entries (%v), group %+v; want only <kept@x>, count 1, low 1, high 2", len(ov), err, g)
	}
	after.db.b.View(func(tx *bolt.Tx) error {
		if k, _ := tx.Bucket(bucketUnsynced).Cursor().First(); k != nil {
			t.Error("the unsynced note outlived recovery")
		}
		return nil
	})
	// The feeder never had it acknowledged, so it offers it again.
	if _, err := after.Accept(context.Background(), []byte(article("<lost@x>", "local.test", "again\r\n")), "", false); err != nil {
		t.Fatalf("re-offered lost article: %v", err)
	}
	if g, _ := after.Group("local.test"); g.Count != 2 || g.High != 3 {
		t.Fatalf("group after re-feed %+v, want count 2, high 3", g)
	}
}

// When the spool cannot make an article durable, Accept fails and the
// article is unlisted at once.
func TestFailedSpoolSyncUnlists(t *testing.T) {
	dir := t.TempDir()
	gated := &gatedSpool{LocalSpool: openTestSpool(t, filepath.Join(dir, "spool")),
		committed: make(chan id.ID), verdict: make(chan error)}
	site := openTestSite(t, dir, gated)
	done := accept(site, article("<eio@x>", "local.test", "body\r\n"))
	<-gated.committed
	if ov, _ := site.Overview("local.test", 1, 10, 10); len(ov) != 1 {
		t.Fatalf("listing not committed while the sync runs: %d entries", len(ov))
	}
	eio := errors.New("fdatasync: input/output error")
	gated.verdict <- eio
	if err := <-done; !errors.Is(err, eio) {
		t.Fatalf("Accept: %v, want the sync's error", err)
	}
	if _, found, _ := site.Lookup("<eio@x>"); found {
		t.Fatal("an article that never became durable is in the history")
	}
	if ov, _ := site.Overview("local.test", 1, 10, 10); len(ov) != 0 {
		t.Fatalf("an article that never became durable is in the overview: %d entries", len(ov))
	}
	if g, _ := site.Group("local.test"); g.Count != 0 || g.Low != 2 {
		t.Fatalf("group %+v, want count 0 and low past the unlisted number", g)
	}
}
