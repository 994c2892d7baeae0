package usenet

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"triad/internal/id"
	"triad/internal/vfs"
)

// gatedSpool is a local spool whose syncs the test decides: once the
// engine has synced a batch, each article's key is reported on committed
// and its outcome taken from verdict, before the site is told.
type gatedSpool struct {
	*LocalSpool
	committed chan id.ID
	verdict   chan error
}

func (g *gatedSpool) PutBatch(batch []Put, done func([]Put)) {
	g.LocalSpool.PutBatch(batch, func(part []Put) {
		for i := range part {
			if part[i].Err == nil {
				g.committed <- part[i].Key
				part[i].Err = <-g.verdict
			}
		}
		done(part)
	})
}

// article is an article in wire form, fed (a Path already).
func article(id, groups, body string, extra ...string) string {
	h := []string{"Path: feeder.example!not-for-mail", "From: Tester <t@example.com>", "Newsgroups: " + groups,
		"Subject: test " + id, "Date: Sat, 21 Nov 2026 10:00:00 +0000", "Message-ID: " + id}
	h = append(h, extra...)
	return strings.Join(h, "\r\n") + "\r\n\r\n" + body
}

func openTestSite(t testing.TB, dir string, spool Spool) *Site {
	t.Helper()
	site, err := OpenSite(SiteConfig{Dir: dir, Spool: spool, PathHost: "test.site"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { site.Close() })
	if err := site.List().AddGroup("local.test", "y", ""); err != nil {
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

// accept runs Site.Accept for a fed article on its own goroutine, for a
// test that plays the spool or the lister meanwhile.
func accept(site *Site, raw string) chan error {
	done := make(chan error, 1)
	go func() {
		_, err := site.Accept(context.Background(), []byte(raw), "", false)
		done <- err
	}()
	return done
}

// copyFiles copies the regular files of src (not its subfolders) to dst,
// as a crash would leave them.
func copyFiles(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// crashBeforeListing offers an article and, once it is durable and
// journaled but before its overview commit (so before it is answered),
// copies the site as a crash would leave it: news.db and the journal, and
// the spool's segments when withSpool (else the spool lost the article).
// It returns the copy's folder.
func crashBeforeListing(t *testing.T, msgid string, withSpool bool) string {
	t.Helper()
	dir := t.TempDir()
	spool := openTestSpool(t, filepath.Join(dir, "spool"))
	site := openTestSite(t, dir, spool)
	listing, resume := make(chan struct{}), make(chan struct{})
	site.beforeList = func() {
		listing <- struct{}{}
		<-resume
	}
	done := accept(site, article(msgid, "local.test", "durable, not yet listed\r\n"))
	<-listing
	select {
	case err := <-done:
		t.Fatalf("answered (%v) before the listing commit", err)
	default:
	}
	if _, found, _ := site.List().Lookup(msgid); found {
		t.Fatal("listed before the listing commit")
	}
	crashed := t.TempDir()
	copyFiles(t, dir, crashed)
	if withSpool {
		// The segments only: the store rebuilds its index from them.
		copyFiles(t, filepath.Join(dir, "spool"), filepath.Join(crashed, "spool"))
		os.Remove(filepath.Join(crashed, "spool", "index.db"))
	}
	close(resume)
	if err := <-done; err != nil {
		t.Fatalf("not acknowledged once listed: %v", err)
	}
	site.beforeList = nil
	return crashed
}

// After a crash between the spool's sync and the overview commit, the
// next open lists the article from the journal, once: it was whole, and a
// feeder that offers it again, unanswered, is told it is a duplicate.
func TestDurableArticleIsListedAfterCrash(t *testing.T) {
	crashed := crashBeforeListing(t, "<acked@x>", true)
	for range 2 { // and opening again changes nothing
		spool := openTestSpool(t, filepath.Join(crashed, "spool"))
		site := openTestSite(t, crashed, spool)
		if _, found, _ := site.List().Lookup("<acked@x>"); !found {
			t.Fatal("a durable, journaled article is not in the history after the crash")
		}
		ov, err := site.List().Overview("local.test", 1, 100, 100)
		g, _ := site.List().Group("local.test")
		if err != nil || len(ov) != 1 || ov[0].MessageID != "<acked@x>" || g.Count != 1 || g.High != 1 {
			t.Fatalf("after recovery: %d overview entries (%v), group %+v; want <acked@x> as number 1", len(ov), err, g)
		}
		if _, err := site.Accept(context.Background(), []byte(article("<acked@x>", "local.test", "again\r\n")), "", false); !errors.Is(err, ErrDuplicate) {
			t.Fatalf("re-offered after recovery: %v, want a duplicate", err)
		}
		site.Close()
		spool.Close()
	}
}

// A journaled article the spool does not have (its sync did not finish)
// is not listed, and a re-feed takes it.
func TestJournaledArticleTheSpoolLostIsNotListed(t *testing.T) {
	crashed := crashBeforeListing(t, "<lost@x>", false)
	site := openTestSite(t, crashed, openTestSpool(t, filepath.Join(crashed, "spool")))
	if _, found, _ := site.List().Lookup("<lost@x>"); found {
		t.Fatal("an article the spool lost is in the history")
	}
	if g, _ := site.List().Group("local.test"); g.Count != 0 {
		t.Fatalf("group %+v lists an article the spool lost", g)
	}
	if _, err := site.Accept(context.Background(), []byte(article("<lost@x>", "local.test", "again\r\n")), "", false); err != nil {
		t.Fatalf("re-offered lost article: %v", err)
	}
}

// When the spool cannot make an article durable, it is not acknowledged,
// not listed, and may be offered again. Its number stays unused (a gap):
// it was journaled, and a replay that found the article would list it
// under that number, never under another's.
func TestFailedSpoolSyncIsNotAcknowledged(t *testing.T) {
	dir := t.TempDir()
	gated := &gatedSpool{LocalSpool: openTestSpool(t, filepath.Join(dir, "spool")),
		committed: make(chan id.ID), verdict: make(chan error)}
	site := openTestSite(t, dir, gated)
	done := accept(site, article("<eio@x>", "local.test", "body\r\n"))
	<-gated.committed
	eio := errors.New("fdatasync: input/output error")
	gated.verdict <- eio
	if err := <-done; !errors.Is(err, eio) {
		t.Fatalf("Accept: %v, want the sync's error", err)
	}
	done = accept(site, article("<eio@x>", "local.test", "body\r\n"))
	<-gated.committed
	gated.verdict <- nil
	if err := <-done; err != nil {
		t.Fatalf("offered again: %v", err)
	}
	site.Flush()
	if ov, _ := site.List().Overview("local.test", 1, 10, 10); len(ov) != 1 || ov[0].Num != 2 {
		t.Fatalf("overview %v, want the second offer alone, as number 2: the first kept 1", ov)
	}
}

func TestJournalCutsTornTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal")
	j, batches, err := openJournal(vfs.OS(), path)
	if err != nil || len(batches) != 0 {
		t.Fatal(batches, err)
	}
	key := id.Key([]byte("a"))
	now := time.Now()
	for seq := uint64(1); seq <= 3; seq++ {
		e := Entry{MessageID: fmt.Sprintf("<%d@x>", seq), Key: key, Arrived: now, Expires: now.Add(time.Hour)}
		if err := j.append(seq, []Entry{e}, []bool{true}); err != nil {
			t.Fatal(err)
		}
	}
	j.close()
	b, _ := os.ReadFile(path)
	full := len(b)
	b[len(b)-3] ^= 1 // damage the last record
	os.WriteFile(path, append(b, 0, 0, 0, 9), 0o644)
	j, batches, err = openJournal(vfs.OS(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer j.close()
	if len(batches) != 2 || batches[1].seq != 2 || batches[1].entries[0].msgid != "<2@x>" || batches[1].entries[0].key != key ||
		batches[1].entries[0].arrived != now.UnixNano() {
		t.Fatalf("batches %+v, want the first two intact", batches)
	}
	if st, _ := os.Stat(path); st.Size() >= int64(full) {
		t.Fatalf("journal of %d bytes: the damaged tail was not cut", st.Size())
	}
}

// The journal keeps everything the list keeps of an entry, so that replay
// reads no article back: groups, overview fields, a relayed head and its
// flags come back as they went in. A batch too large for one record is
// cut into several of the same sequence number, read back whole. Records
// of the first format (message-id, key, times) are still read.
func TestJournalKeepsWholeEntries(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal")
	j, _, err := openJournal(vfs.OS(), path)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 12345)
	e := Entry{MessageID: "<whole@x>", Key: id.Key([]byte("whole")), Groups: []string{"local.test", "local.other"},
		Arrived: now, Expires: now.Add(time.Hour), Bytes: 1234, Lines: 17, Subject: "s", From: "f", Date: "d",
		References: "<r@x>", Head: []byte("Subject: s\r\nFrom: f"), State: "st", Posted: true, Nums: []uint64{7, 0}}
	big := e
	big.MessageID, big.Head, big.Announced, big.Posted = "<big@x>", bytes.Repeat([]byte("h"), maxHead), true, false
	batch := []Entry{e}
	for i := range 80 { // about 5 MB of heads: two records
		b := big
		b.MessageID = fmt.Sprintf("<big%d@x>", i)
		batch = append(batch, b)
	}
	stored := make([]bool, len(batch))
	stored[0] = true
	if err := j.append(9, batch, stored); err != nil {
		t.Fatal(err)
	}
	// A record of the first format after it.
	v1 := binary.AppendUvarint(nil, 10)
	v1 = appendString(v1, "<old@x>")
	v1 = e.Key.AppendTo(append(v1, byte(e.Key.Width())))
	v1 = binary.AppendVarint(binary.AppendVarint(v1, now.UnixNano()), now.UnixNano())
	rec := binary.BigEndian.AppendUint32(nil, uint32(len(v1)))
	rec = append(binary.BigEndian.AppendUint32(rec, crc32.Checksum(v1, castagnoli)), v1...)
	if _, err := j.f.WriteAt(rec, j.size); err != nil {
		t.Fatal(err)
	}
	j.size += int64(len(rec))
	j.close()
	j, batches, err := openJournal(vfs.OS(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer j.close()
	var got []journalEntry
	for _, b := range batches {
		if b.seq == 9 {
			got = append(got, b.entries...)
		}
	}
	if len(batches) != 3 || len(got) != len(batch) || batches[2].seq != 10 {
		t.Fatalf("%d records, %d entries of batch 9; want 3 records (batch 9 cut in two, then 10) and %d entries", len(batches), len(got), len(batch))
	}
	w := got[0]
	if !w.stored || w.entry == nil || !reflect.DeepEqual(*w.entry, e) {
		t.Fatalf("entry read back %+v (stored %v), want %+v", w.entry, w.stored, e)
	}
	if b := got[80]; b.stored || b.entry == nil || !b.entry.Announced || len(b.entry.Head) != maxHead || b.msgid != "<big79@x>" {
		t.Fatalf("the last announced entry read back wrong: %q, stored %v", b.msgid, b.stored)
	}
	if o := batches[2].entries; len(o) != 1 || o[0].entry != nil || o[0].msgid != "<old@x>" || o[0].key != e.Key {
		t.Fatalf("first-format record read back %+v", o)
	}
}

// The journal's decoders take whatever a damaged file holds without
// panicking, and what they accept is bounded by the record.
func FuzzJournalRecord(f *testing.F) {
	now := time.Now()
	e := Entry{MessageID: "<a@b>", Key: id.Key([]byte("x")), Arrived: now, Expires: now, Groups: []string{"a.b"}, Subject: "s", Head: []byte("H: v")}
	v2 := binary.AppendUvarint(nil, 7)
	v2 = encodeJournalEntry(encodeJournalEntry(v2, &e, true), &e, false)
	f.Add(v2)
	v1 := appendString(binary.AppendUvarint(nil, 7), e.MessageID)
	v1 = binary.AppendVarint(binary.AppendVarint(e.Key.AppendTo(append(v1, byte(e.Key.Width()))), 1), 2)
	f.Add(v1)
	f.Add([]byte{1})
	f.Fuzz(func(t *testing.T, payload []byte) {
		for _, decode := range []func([]byte) (journalBatch, error){decodeJournalBatch, decodeJournalV1} {
			b, err := decode(payload)
			if err != nil {
				continue
			}
			if len(b.entries)*3 > len(payload) {
				t.Fatalf("%d entries from %d bytes", len(b.entries), len(payload))
			}
			for _, e := range b.entries {
				if len(e.msgid) > MaxMessageID {
					t.Fatalf("message-id of %d bytes", len(e.msgid))
				}
				if e.entry != nil && (len(e.entry.Groups) > maxJournalGroups || len(e.entry.Head) > MaxAnnouncement) {
					t.Fatalf("entry of %d groups and a %d-byte head", len(e.entry.Groups), len(e.entry.Head))
				}
			}
		}
	})
}

// syncSpool hides that a LocalSpool is the site's own: a spool shared with
// other sites, as the DHT is, so the site stores articles sealed and takes
// announcements.
type syncSpool struct{ Spool }

// A site on a shared spool answers an article once it is listed (in
// memory, its listing durable in the journal), and news.db has it once
// the site is closed.
func TestSyncSpoolListsBeforeAnswering(t *testing.T) {
	dir := t.TempDir()
	spool := openTestSpool(t, filepath.Join(dir, "spool"))
	site := openTestSite(t, dir, syncSpool{spool})
	for _, posted := range []bool{false, true} {
		id := fmt.Sprintf("<sync-%v@x>", posted)
		raw := []byte(article(id, "local.test", "body\r\n"))
		offered := id
		if posted {
			offered = ""
		}
		if _, err := site.Accept(context.Background(), raw, offered, posted); err != nil {
			t.Fatal(err)
		}
		if _, found, _ := site.List().Lookup(id); !found {
			t.Fatalf("%s answered before it was listed", id)
		}
		again := []byte(article(id, "local.test", "body\r\n")) // Accept took raw
		if _, err := site.Accept(context.Background(), again, id, false); !errors.Is(err, ErrDuplicate) {
			t.Fatalf("%s offered again: %v, want a duplicate", id, err)
		}
	}
	if g, _ := site.List().Group("local.test"); g.Count != 2 {
		t.Fatalf("group %+v, want 2 articles", g)
	}
	site.Close()
	list, err := OpenList(ListConfig{Path: filepath.Join(dir, "news.db"), PathHost: "test.site"})
	if err != nil {
		t.Fatal(err)
	}
	defer list.Close()
	if ov, err := list.Overview("local.test", 1, 10, 10); err != nil || len(ov) != 2 {
		t.Fatalf("news.db after closing: %d entries (%v), want 2", len(ov), err)
	}
}

// Flush and Accept end once the site closes, whenever they race Close: a
// hand-over the commit loop would never see again left its caller waiting
// for an answer for good (one Flush after Close in two did).
func TestHandOversEndOnceClosed(t *testing.T) {
	within := func(what string, fn func()) {
		t.Helper()
		done := make(chan struct{})
		go func() { fn(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s still waiting 10 s after Close", what)
		}
	}
	dir := t.TempDir()
	site := openTestSite(t, dir, openTestSpool(t, filepath.Join(dir, "spool")))
	site.Close()
	for range 64 {
		within("Flush after Close", site.Flush)
	}
	for i := range 20 {
		dir := t.TempDir()
		site := openTestSite(t, dir, openTestSpool(t, filepath.Join(dir, "spool")))
		var errs [8]chan error
		for j := range errs {
			errs[j] = accept(site, article(fmt.Sprintf("<race%d.%d@x>", i, j), "local.test", "body\r\n"))
		}
		go site.Flush()
		within("Close", func() { site.Close() })
		for j := range errs {
			within("Accept racing Close", func() { <-errs[j] })
		}
	}
}

// TestViewArticleLendsHeadAndBody reads back an article stored sealed (a
// shared spool, as the DHT) and one stored as it is (the site's own
// spool): either way ViewArticle lends its header block, through the
// empty line, and its body, which together are the article as it was
// listed, byte for byte.
func TestViewArticleLendsHeadAndBody(t *testing.T) {
	for _, shared := range []bool{true, false} {
		dir := t.TempDir()
		var spool Spool = openTestSpool(t, filepath.Join(dir, "spool"))
		if shared {
			spool = syncSpool{spool}
		}
		site := openTestSite(t, dir, spool)
		id := fmt.Sprintf("<view-%v@x>", shared)
		raw := article(id, "local.test", "first line\r\n..dotted\r\n")
		if _, err := site.Accept(context.Background(), []byte(raw), id, false); err != nil {
			t.Fatal(err)
		}
		e, found, err := site.List().Lookup(id)
		if err != nil || !found {
			t.Fatalf("%s not listed: %v", id, err)
		}
		err = site.ViewArticle(context.Background(), e, func(head, body []byte) error {
			if got, want := string(head)+string(body), strings.Replace(raw, "Path: ", "Path: test.site!", 1); got != want {
				t.Errorf("shared %v: head+body %q, want the article as listed %q", shared, got, want)
			}
			if !strings.HasSuffix(string(head), "\r\n\r\n") || string(body) != "first line\r\n..dotted\r\n" {
				t.Errorf("shared %v: split into %q and %q", shared, head, body)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		site.Close()
	}
}

// The journal is written with zeros ahead of its batches, so that an
// append's fdatasync leaves the file's length alone; replay stops at the
// zeros a crash leaves, and a clean close cuts them.
func TestJournalIsPreallocated(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal")
	j, _, err := openJournal(vfs.OS(), path)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for seq := uint64(1); seq <= 5; seq++ {
		e := Entry{MessageID: fmt.Sprintf("<%d@x>", seq), Key: id.Key([]byte{byte(seq)}), Arrived: now, Expires: now.Add(time.Hour)}
		if err := j.append(seq, []Entry{e}, []bool{true}); err != nil {
			t.Fatal(err)
		}
		if st, _ := os.Stat(path); st.Size() != vfs.ZeroChunk {
			t.Fatalf("journal of %d bytes after batch %d, want %d throughout", st.Size(), seq, vfs.ZeroChunk)
		}
	}
	// A crash leaves the zeros: replay reads the five batches and stops.
	crashed, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.close(); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(path); st.Size() >= vfs.ZeroChunk {
		t.Fatalf("journal of %d bytes after a clean close: its zeros were not cut", st.Size())
	}
	if err := os.WriteFile(path, crashed, 0o644); err != nil {
		t.Fatal(err)
	}
	j, batches, err := openJournal(vfs.OS(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer j.close()
	if len(batches) != 5 || batches[4].seq != 5 {
		t.Fatalf("replayed %d batches, want the 5 before the zeros", len(batches))
	}
	if err := j.append(6, []Entry{{MessageID: "<6@x>", Key: id.Key([]byte{6}), Arrived: now, Expires: now.Add(time.Hour)}}, []bool{true}); err != nil {
		t.Fatal(err)
	}
}

// Zeros that do not fit are cut and the batch appended past the end, as
// without them; the zeros made later start past it.
func TestJournalAppendsWhenTheZerosDoNotFit(t *testing.T) {
	var once sync.Once
	fsys := vfs.Inject(vfs.OS(), func(op vfs.Op, path string) error {
		var err error
		if op == vfs.OpWrite {
			once.Do(func() { err = errors.New("no space left on device") }) // the first write is the zeros
		}
		return err
	})
	path := filepath.Join(t.TempDir(), "journal")
	j, _, err := openJournal(fsys, path)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for seq := uint64(1); seq <= 3; seq++ {
		e := Entry{MessageID: fmt.Sprintf("<%d@full>", seq), Key: id.Key([]byte{byte(seq)}), Arrived: now, Expires: now.Add(time.Hour)}
		if err := j.append(seq, []Entry{e}, []bool{true}); err != nil {
			t.Fatalf("batch %d: %v", seq, err)
		}
	}
	j.close()
	j, batches, err := openJournal(vfs.OS(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer j.close()
	if len(batches) != 3 {
		t.Fatalf("replayed %d batches, want 3", len(batches))
	}
}
