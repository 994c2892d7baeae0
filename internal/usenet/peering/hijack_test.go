package peering

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"triad/internal/nntp/nntptest"
	"triad/internal/usenet"
)

// asPeer logs in at site a as site b, as b's feeder does.
func asPeer(t *testing.T, a, b *testSite) *testClient {
	t.Helper()
	c := a.dial(t)
	nntptest.Code(t, c.Status("AUTHINFO USER %s", b.name), "381")
	nntptest.Code(t, c.Status("AUTHINFO PASS %s", linkSecret), "281")
	return c
}

// A peer announces a genuine message-id with forged headers over another
// article's block (issue 27: the forgery used to be listed and flooded,
// the genuine article refused as a duplicate, and HEAD served the other
// article). Each way of lying is refused and counted; the genuine article
// is then taken and HEAD serves its own headers.
func TestForgedAnnouncementIsRefused(t *testing.T) {
	sites, ring := startSites(t, 2, nil)
	a, b := sites[0], sites[1]
	exp := time.Now().Add(time.Hour)
	// Another article, stored in the ring: 185 bytes or so.
	otherAnn, otherKey, otherBlock := announcementOf(article("<other@x>", "local.test", "other body\r\n"), exp)
	if _, err := put(ring, otherBlock, exp); err != nil {
		t.Fatal(err)
	}
	genuine := article("<victim@x>", "local.test", "genuine body\r\n", "X-Genuine: yes")
	forged := article("<victim@x>", "local.test", "other body\r\n", "X-Forged: yes")
	forgedAnn, _, _ := announcementOf(forged, exp)
	otherChord := otherAnn[strings.Index(otherAnn, usenet.ChordHeader+":"):]
	lies := map[string]string{
		// The forged headers with the other block's X-ChordID.
		"their key": strings.TrimSuffix(forged, "\r\n\r\nother body\r\n") + "\r\n" + otherChord,
		// The forged headers with their own midstate, naming the other key.
		"another key": strings.Replace(forgedAnn, mustKey(t, forgedAnn), otherKey.String(), 1),
		// The other article's true announcement, offered as the victim's.
		"another id": otherAnn,
	}
	peer := asPeer(t, a, b)
	for name, ann := range lies {
		peer.Send("TAKEDHT <victim@x>")
		peer.SendText(ann)
		if reply := peer.Line(); !strings.HasPrefix(reply, "439 <victim@x>") {
			t.Errorf("%s: %q, want 439", name, reply)
		}
	}
	if n := a.site.Forgeries(); n != uint64(len(lies)) {
		t.Errorf("%d forgeries counted, want %d", n, len(lies))
	}
	if _, found, _ := a.site.List().Lookup("<victim@x>"); found {
		t.Fatal("the forgery was listed")
	}
	// The genuine article, fed to b, reaches a by announcement.
	c := b.dial(t)
	nntptest.Code(t, c.Status("IHAVE <victim@x>"), "335")
	c.SendText(genuine)
	nntptest.Code(t, c.Line(), "235")
	waitListed(t, sites, "<victim@x>", relayWithin)
	r := a.dial(t)
	nntptest.Code(t, r.Status("HEAD <victim@x>"), "221")
	if h := r.Block(); !slices.Contains(h, "X-Genuine: yes") || slices.Contains(h, "X-Forged: yes") {
		t.Fatalf("HEAD at a: %q", h)
	}
	nntptest.Code(t, r.Status("BODY <victim@x>"), "222")
	if body := r.Block(); len(body) != 1 || body[0] != "genuine body" {
		t.Fatalf("BODY at a: %q", body)
	}
}

// mustKey is the key an announcement names.
func mustKey(t *testing.T, ann string) string {
	t.Helper()
	i := strings.Index(ann, usenet.ChordHeader+": ")
	if i < 0 {
		t.Fatalf("no %s in %q", usenet.ChordHeader, ann)
	}
	return strings.Fields(ann[i+len(usenet.ChordHeader)+2:])[0]
}

// Many message-ids over one stored block (issue 27: 400 announcements of
// 60 KB heads over one 185-byte block grew news.db by 33.6 MB) are
// refused, counted, and cost news.db nothing.
func TestManyIDsOverOneKeyAreRefused(t *testing.T) {
	sites, ring := startSites(t, 2, nil)
	a, b := sites[0], sites[1]
	exp := time.Now().Add(time.Hour)
	ann, _, block := announcementOf(article("<one@x>", "local.test", "x\r\n"), exp)
	if _, err := put(ring, block, exp); err != nil {
		t.Fatal(err)
	}
	chord := ann[strings.Index(ann, usenet.ChordHeader+":"):]
	dbPath := filepath.Join(a.dir, "news.db")
	before, err := os.Stat(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	peer := asPeer(t, a, b)
	const n = 400
	pad := strings.Repeat("y", 60_000)
	for i := range n {
		msgid := fmt.Sprintf("<many-%d@x>", i)
		head := strings.TrimSuffix(article(msgid, "local.test", "", "X-Pad: "+pad), "\r\n") + chord
		peer.Send("TAKEDHT " + msgid)
		peer.SendText(head)
		if reply := peer.Line(); !strings.HasPrefix(reply, "439 "+msgid) {
			t.Fatalf("%s: %q, want 439", msgid, reply)
		}
	}
	if got := a.site.Forgeries(); got != n {
		t.Fatalf("%d forgeries counted, want %d", got, n)
	}
	if g, _ := a.site.List().Group("local.test"); g.Count != 0 {
		t.Fatalf("listed: %+v", g)
	}
	if lb, err := a.site.List().LogBytes(); err != nil || lb != 0 {
		t.Fatalf("out log of %d bytes (%v), want none", lb, err)
	}
	after, err := os.Stat(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	if grew := after.Size() - before.Size(); grew > 1<<20 {
		t.Fatalf("news.db grew by %d bytes", grew)
	}
	// The true one is still taken.
	peer.Send("TAKEDHT <one@x>")
	peer.SendText(ann)
	nntptest.Code(t, peer.Line(), "239 <one@x>")
}

// The out log is bounded in bytes for each peer: with a peer down and a
// quota of 100 KB, 30 articles of 10 KB heads leave about 100 KB queued
// and the rest dropped and counted.
func TestBacklogIsBoundedInBytes(t *testing.T) {
	const quota = 100 << 10
	sites, _ := startSites(t, 2, func(fc *FeedConfig) { fc.MaxBacklogBytes = quota })
	sites[1].stop()
	c := sites[0].dial(t)
	pad := strings.Repeat("z", 10_000)
	const n = 30
	for i := range n {
		msgid := fmt.Sprintf("<bb-%d@x>", i)
		nntptest.Code(t, c.Status("IHAVE %s", msgid), "335")
		c.SendText(article(msgid, "local.test", "x\r\n", "X-Pad: "+pad))
		nntptest.Code(t, c.Line(), "235")
	}
	sites[0].site.Flush() // the out log is written at the listing's checkpoint
	list := sites[0].site.List()
	if lb, _ := list.LogBytes(); lb < n*10_000 {
		t.Fatalf("out log of %d bytes before the trim, want at least %d", lb, n*10_000)
	}
	if err := list.Trim([]string{sites[1].name}, 0, quota); err != nil {
		t.Fatal(err)
	}
	lb, _ := list.LogBytes()
	bl, _ := list.Backlog(sites[1].name)
	if lb > quota || bl.Records+bl.Dropped != n || bl.Records < 8 || bl.Records > 10 {
		t.Fatalf("after the trim: %d bytes, backlog %+v; want at most %d bytes, about 9 queued and the rest dropped", lb, bl, quota)
	}
}

// An article whose headers come close to the 64 KB a site takes is
// announced with its X-ChordID line on top, and the peer takes that: the
// announcement's limit is the head's plus the line. Before, the peer parsed
// it with the head's own limit and refused every such article, so it was
// listed only where it was fed (found in review).
func TestLargestHeadersAreAnnounced(t *testing.T) {
	sites, _ := startSites(t, 2, nil)
	var pad []string
	head := func() int { return strings.Index(article("<big-head@x>", "local.test", "", pad...), "\r\n\r\n") + 2 }
	for i := 0; head() < usenet.MaxHeaderBytes-1000; i++ {
		pad = append(pad, fmt.Sprintf("X-Pad-%d: %s", i, strings.Repeat("p", 900)))
	}
	pad = append(pad, "X-Pad-last: "+strings.Repeat("q", usenet.MaxHeaderBytes-100-head()-len("X-Pad-last: \r\n")))
	if n := head(); n > usenet.MaxHeaderBytes-90 || n < usenet.MaxHeaderBytes-110 {
		t.Fatalf("head of %d bytes, want about %d", n, usenet.MaxHeaderBytes-100)
	}
	big := article("<big-head@x>", "local.test", "body\r\n", pad...)
	c := sites[1].dial(t)
	nntptest.Code(t, c.Status("IHAVE <big-head@x>"), "335")
	c.SendText(big)
	nntptest.Code(t, c.Line(), "235")
	waitListed(t, sites, "<big-head@x>", relayWithin)
}
