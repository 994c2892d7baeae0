package usenet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"triad/internal/store"
	"triad/internal/store/disk"
	"triad/internal/testutil"
	"triad/internal/vfs"
	"triad/internal/vfs/powercut"
)

// Power loss for a news site on a local spool: an article acknowledged to
// a poster or a feeder must be listed and readable after a power cut. The
// journal and the spool's segments live on a vfs.MemFS, which remembers
// what a power cut would leave. news.db and the spool's index are bbolt
// files on the OS; bbolt's fsync discipline is trusted, so a crash point
// pairs the MemFS as synced with news.db as last committed (read in a
// transaction), and the spool rebuilds its index from its segments.

// siteState is what a crash point keeps beside the MemFS as synced.
type siteState struct {
	newsDB []byte // nil if none was made yet
	acked  int    // how many acknowledged message-ids came before
}

// sitePowerCut runs a site on a MemFS and records a crash point at each
// sync.
type sitePowerCut struct {
	t       *testing.T
	dir     string
	live    atomic.Pointer[Site]
	hold    atomic.Bool   // the lister waits for release
	wait    chan struct{} // closed to release it
	durable atomic.Int64  // articles durable and journaled, on their way to the lister
	rec     *powercut.Recorder[siteState]
	shared  bool // the spool stands for the DHT (syncSpool): articles sealed, hashed at Accept

	mu   sync.Mutex
	acks []string // message-ids
}

func newSitePowerCut(t *testing.T) *sitePowerCut {
	c := &sitePowerCut{t: t, dir: t.TempDir()}
	c.rec = powercut.New(c.state)
	if err := os.MkdirAll(c.spoolDir(), 0o755); err != nil { // bbolt's side
		t.Fatal(err)
	}
	return c
}

func (c *sitePowerCut) spoolDir() string { return filepath.Join(c.dir, "spool") }

// state is what a crash point keeps now beside the MemFS. It runs with
// the MemFS locked.
func (c *sitePowerCut) state() siteState {
	c.mu.Lock()
	n := len(c.acks)
	c.mu.Unlock()
	return siteState{newsDB: c.newsDB(), acked: n}
}

// newsDB returns news.db as last committed.
func (c *sitePowerCut) newsDB() []byte {
	var db *bolt.DB
	if s := c.live.Load(); s != nil {
		db = s.list.db.b
	}
	b, err := powercut.Committed(db, filepath.Join(c.dir, "news.db"))
	if err != nil {
		c.t.Errorf("copying news.db: %v", err)
	}
	return b
}

// open opens the spool and the site on fsys, as triad nntp does: the spool
// first.
func (c *sitePowerCut) open(fsys vfs.FS) (*Site, *LocalSpool, error) {
	d, err := disk.OpenFS(fsys, store.Options{Dir: c.spoolDir(), MaxObject: 1 << 20, NoTree: true})
	if err != nil {
		return nil, nil, err
	}
	spool := &LocalSpool{Engine: d}
	var sp Spool = spool
	if c.shared {
		sp = syncSpool{spool}
	}
	site, err := OpenSite(SiteConfig{Dir: c.dir, Spool: sp, PathHost: "test.site", FS: fsys})
	if err != nil {
		spool.Close()
		return nil, nil, err
	}
	site.durable = func(n int) { c.durable.Add(int64(n)) }
	site.beforeList = func() {
		if c.hold.Load() {
			<-c.wait
		}
	}
	return site, spool, nil
}

// holdUnlisted holds the lister and offers n articles of round, and
// returns once all are durable and journaled, not yet listed (so not yet
// answered), with a channel that gets each offer's outcome once the hold
// is released.
func (c *sitePowerCut) holdUnlisted(site *Site, round, n int) chan error {
	c.t.Helper()
	c.wait = make(chan struct{})
	c.hold.Store(true)
	before := c.durable.Load()
	done := make(chan error, n)
	for i := range n {
		id := msgid(round, 0, i)
		go func() {
			_, err := site.Accept(context.Background(), []byte(article(id, "local.test", body(id))), id, false)
			done <- err
		}()
	}
	if !testutil.Poll(10*time.Second, func() bool { return c.durable.Load() >= before+int64(n) }) {
		c.t.Fatalf("%d of %d articles durable after 10s", c.durable.Load()-before, n)
	}
	select {
	case err := <-done:
		c.t.Fatalf("an article was answered (%v) while its listing was held", err)
	default:
	}
	return done
}

func (c *sitePowerCut) openLive(fsys vfs.FS) (*Site, *LocalSpool) {
	c.t.Helper()
	site, spool, err := c.open(fsys)
	if err != nil {
		c.t.Fatal(err)
	}
	c.live.Store(site)
	if err := site.List().AddGroup("local.test", "y", ""); err != nil {
		c.t.Fatal(err)
	}
	return site, spool
}

func (c *sitePowerCut) close(site *Site, spool *LocalSpool) {
	c.t.Helper()
	if err := site.Close(); err != nil {
		c.t.Fatal(err)
	}
	c.live.Store(nil)
	if err := spool.Close(); err != nil {
		c.t.Fatal(err)
	}
}

// restore puts news.db (nil: none) in place and drops the spool's index,
// which the spool rebuilds from its segments.
func (c *sitePowerCut) restore(newsDB []byte) {
	c.t.Helper()
	if err := errors.Join(powercut.Restore(filepath.Join(c.dir, "news.db"), newsDB), powercut.Restore(filepath.Join(c.spoolDir(), "index.db"), nil)); err != nil {
		c.t.Fatal(err)
	}
}

func msgid(round, w, i int) string { return fmt.Sprintf("<r%d.w%d.%d@powerloss>", round, w, i) }

func body(id string) string { return "the body of " + id + "\r\n" }

// feed offers n articles from each of four feeders at once, each
// acknowledged once durable and listed.
func (c *sitePowerCut) feed(site *Site, round, n int) {
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range n {
				id := msgid(round, w, i)
				raw := []byte(article(id, "local.test", body(id)))
				if _, err := site.Accept(context.Background(), raw, id, false); err != nil {
					c.t.Errorf("%s not accepted: %v", id, err)
					return
				}
				c.mu.Lock()
				c.acks = append(c.acks, id)
				c.mu.Unlock()
			}
		})
	}
	wg.Wait()
}

// check reopens the site from one crash point and checks that every
// article acknowledged before it is in the history, listed once and
// readable. It returns how many it checked and how many failed.
func (c *sitePowerCut) check(i int, cp powercut.Point[siteState]) (checked, missing int) {
	t := c.t
	t.Helper()
	c.restore(cp.State.newsDB)
	site, spool, err := c.open(cp.FS.CrashClone())
	if err != nil {
		t.Fatalf("crash point %d: reopening: %v", i, err)
	}
	defer spool.Close()
	defer site.Close()
	listed := map[string]int{}
	if ov, err := site.List().Overview("local.test", 1, 1<<20, 1<<20); err != nil {
		t.Errorf("crash point %d: overview: %v", i, err)
	} else {
		for _, o := range ov {
			listed[o.MessageID]++
		}
	}
	for _, id := range c.acks[:cp.State.acked] {
		checked++
		h, found, err := site.List().Lookup(id)
		if err != nil || !found {
			t.Errorf("crash point %d: acknowledged %s is not in the history (%v)", i, id, err)
			missing++
			continue
		}
		raw, err := site.Article(context.Background(), h)
		if err != nil || !strings.HasSuffix(string(raw), body(id)) {
			t.Errorf("crash point %d: acknowledged %s does not read back (%v)", i, id, err)
			missing++
			continue
		}
		if listed[id] != 1 {
			t.Errorf("crash point %d: acknowledged %s is listed %d times in local.test", i, id, listed[id])
			missing++
		}
	}
	if err := spool.Engine.CheckTree(); err != nil {
		t.Errorf("crash point %d: %v", i, err)
	}
	return checked, missing
}

// TestPowerLossAtEverySync feeds a site whose journal and spool are on a
// MemFS that records, before every sync, what a power cut would leave;
// then reopens the site from each of those states and checks that every
// acknowledged article is listed, once, and readable. An article is
// acknowledged once its listing is in the journal, so most crash points
// catch acknowledged articles news.db has not checkpointed. The workload
// feeds; loses power while articles durable and journaled wait to be
// listed (not yet answered), and recovers (the journal lists them); closes
// and reopens; feeds again. It runs on the site's own spool and on one
// that stands for the DHT, where the site hashes each article itself and
// journals it while the spool stores it.
func TestPowerLossAtEverySync(t *testing.T) {
	for _, shared := range []bool{false, true} {
		t.Run(map[bool]string{false: "local", true: "shared"}[shared], func(t *testing.T) {
			powerLossAtEverySync(t, shared)
		})
	}
}

func powerLossAtEverySync(t *testing.T, shared bool) {
	c := newSitePowerCut(t)
	c.shared = shared
	mem := vfs.NewMem()
	c.rec.Record(mem)
	n := 8
	if testing.Short() {
		n = 4
	}

	site, spool := c.openLive(mem)
	c.feed(site, 1, n)

	// Hold the lister: the next articles are durable, not listed.
	done := c.holdUnlisted(site, 2, 3)
	cut := c.rec.Cut(mem)
	mem = cut.FS
	c.hold.Store(false)
	close(c.wait)
	for i := range 3 {
		if err := <-done; err != nil {
			t.Fatalf("an article held before its listing: %v once released", err)
		}
		c.acks = append(c.acks, msgid(2, 0, i))
	}
	c.close(site, spool)
	c.restore(cut.State.newsDB)
	c.rec.Record(mem)

	site, spool = c.openLive(mem)
	for i := range 3 {
		if _, found, err := site.List().Lookup(msgid(2, 0, i)); err != nil || !found {
			t.Fatalf("after the power cut, a journaled article not yet listed is not listed (%v)", err)
		}
	}
	c.feed(site, 3, n)
	c.close(site, spool)

	site, spool = c.openLive(mem)
	c.feed(site, 4, n)
	c.close(site, spool)
	c.rec.Last(mem)
	if t.Failed() {
		t.FailNow()
	}

	points := c.rec.Points()
	checked, missing := 0, 0
	for i, cp := range points {
		ch, m := c.check(i, cp)
		checked, missing = checked+ch, missing+m
		if t.Failed() {
			break
		}
	}
	t.Logf("power loss, news site: %d crash points (one before each sync, one after the last), %d acknowledged articles checked, %d missing (%d acknowledged)",
		len(points), checked, missing, len(c.acks))
	if min := 30; len(points) < min {
		t.Errorf("only %d crash points; the workload should sync at least %d times", len(points), min)
	}
}

// TestJournalCreationSyncsTheDirectory: an article durable and journaled
// on a site opened for the first time, and not yet listed, is listed after
// a power cut. The journal's fdatasync alone does not make its name
// durable; fails if openJournal does not sync the directory.
func TestJournalCreationSyncsTheDirectory(t *testing.T) {
	c := newSitePowerCut(t)
	mem := vfs.NewMem()
	site, spool := c.openLive(mem)
	done := c.holdUnlisted(site, 1, 1)
	c.acks = append(c.acks, msgid(1, 0, 0)) // checked below as if acknowledged
	cp := c.rec.Now(mem)
	close(c.wait)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	c.close(site, spool)
	if checked, _ := c.check(0, cp); checked != 1 {
		t.Fatal("the article was not checked")
	}
}

// TestFailedJournalSyncIsNotAcknowledged: when the journal's fdatasync
// fails, the article is refused and not listed, and a later offer of it
// is taken.
func TestFailedJournalSyncIsNotAcknowledged(t *testing.T) {
	c := newSitePowerCut(t)
	var failing atomic.Bool
	site, spool := c.openLive(vfs.Inject(vfs.NewMem(), func(op vfs.Op, path string) error {
		if op == vfs.OpSync && failing.Load() && filepath.Base(path) == "journal" {
			return syscall.EIO
		}
		return nil
	}))
	defer c.close(site, spool)
	id := msgid(1, 0, 0)
	raw := article(id, "local.test", body(id))
	failing.Store(true)
	if _, err := site.Accept(context.Background(), []byte(raw), id, false); !errors.Is(err, syscall.EIO) {
		t.Fatalf("accepted with a failing journal: %v, want EIO", err)
	}
	site.Flush()
	if _, found, _ := site.List().Lookup(id); found {
		t.Fatal("an article whose journal record failed is listed")
	}
	failing.Store(false)
	if _, err := site.Accept(context.Background(), []byte(raw), "", false); err != nil {
		t.Fatalf("offered again once the journal works: %v", err)
	}
	if _, found, _ := site.List().Lookup(id); !found {
		t.Fatal("the second offer is not listed")
	}
}
