package usenet

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"triad/internal/id"
)

// FuzzAnnouncement feeds TAKEDHT blocks to a site: whatever the bytes,
// Announce must not panic, and what it lists must carry a well-formed
// message-id equal to the one offered, the key the X-ChordID named, and a
// group this site carries.
func FuzzAnnouncement(f *testing.F) {
	exp := time.Now().Add(time.Hour)
	good, key, block := announcementOf(article("<f@x>", "local.test", "body\r\n"), exp)
	f.Add([]byte(good), "<f@x>")
	f.Add([]byte(strings.Replace(good, "bytes=", "bytes=-", 1)), "<f@x>")
	f.Add([]byte(strings.Replace(good, "Subject: test", "Subject: forged", 1)), "<f@x>")
	f.Add([]byte("X-ChordID: "+key.String()+"\r\n"), "<f@x>")
	f.Add([]byte("Path: a\r\n continued\r\nX-ChordID: zz\r\n"), "<f@x>")
	site := openTestSite(f, f.TempDir(), alwaysHas{size: len(block)})
	f.Fuzz(func(t *testing.T, head []byte, offered string) {
		orig := bytes.Clone(head) // Announce edits the buffer (Path), as Accept does
		msgid, err := site.Announce(context.Background(), head, offered)
		if err != nil {
			return
		}
		h, found, _ := site.List().Lookup(msgid)
		if !found || msgid != offered || CheckMessageID(msgid) != nil {
			t.Fatalf("listed %q (offered %q), found %v", msgid, offered, found)
		}
		a, _ := ParseArticle(orig)
		v, _ := a.Header(ChordHeader)
		if c, err := parseChordValue(v); err != nil || c.key != h.Key {
			t.Fatalf("listed under %s, announced %q", h.Key, v)
		}
	})
}

// alwaysHas is a spool whose every key resolves, to a block of size
// bytes: the fuzzer's keys are its own.
type alwaysHas struct {
	Spool
	size int
}

func (h alwaysHas) Resolve(context.Context, id.ID) (Stored, bool, error) {
	return Stored{Size: h.size, Expires: time.Now().Add(24 * time.Hour)}, true, nil
}

// announcementOf is the TAKEDHT block a site sends for an article (wire
// form), the key of the article's sealed block, and the block.
func announcementOf(raw string, exp time.Time) (string, id.ID, []byte) {
	a, err := ParseArticle([]byte(raw))
	if err != nil {
		panic(err)
	}
	head, body := sealedHead(a), a.Raw[a.body:]
	block := seal(head, body)
	key := id.Key(block)
	return string(head[:len(head)-2]) + ChordHeader + ": " +
		chordValue(key, uint32(len(head)+len(body)), uint32(a.Lines()), exp, midstate(body)) + "\r\n", key, block
}
func (alwaysHas) Close() error { return nil }

// FuzzLogRecord decodes out-log records: never a panic, and a record that
// decodes encodes back to the same bytes.
func FuzzLogRecord(f *testing.F) {
	e := Entry{MessageID: "<a@b>", Key: id.Key([]byte("x")), Expires: time.Unix(1800000000, 0), Bytes: 2450, Lines: 40,
		Head: []byte("Path: a!b\r\nSubject: s\r\n"), Announced: true, Posted: true}
	f.Add(encodeLogRecord(&e))
	e.State = midstate([]byte("body\r\n"))
	f.Add(encodeLogRecord(&e))
	f.Add([]byte{0})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeLogRecord(1, b)
		if err != nil {
			return
		}
		back := encodeLogRecord(&Entry{MessageID: r.MessageID, Key: r.Key, Expires: r.Expires, Bytes: r.Bytes, Lines: r.Lines, Head: r.Head, State: r.State, Announced: r.Announced, Posted: r.Posted})
		if r2, err := decodeLogRecord(1, back); err != nil || r2.MessageID != r.MessageID || r2.Key != r.Key || !r2.Expires.Equal(r.Expires) || r2.State != r.State ||
			r2.Bytes != r.Bytes || r2.Lines != r.Lines || string(r2.Head) != string(r.Head) || r2.Announced != r.Announced || r2.Posted != r.Posted {
			t.Fatalf("%+v does not survive a round trip: %+v %v", r, r2, err)
		}
	})
}
