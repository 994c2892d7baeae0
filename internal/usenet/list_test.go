package usenet

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"triad/internal/id"
)

// announced is an entry as a peer site would announce an article it
// stored in the DHT: headers and content key, no body here.
func announced(msgid string, groups ...string) Entry {
	now := time.Now()
	return Entry{MessageID: msgid, Key: id.Key([]byte("body of " + msgid)), Groups: groups,
		Arrived: now, Expires: now.Add(30 * 24 * time.Hour), Bytes: 1234, Lines: 17,
		Subject: "announced " + msgid, From: "Peer <p@peer.example>", Date: "Sat, 21 Nov 2026 10:00:00 +0000"}
}

// A List alone, with no spool: entries go in, numbered per group, and the
// overview and history answer for them; the same message-id twice, or
// one for groups not carried here, is left out.
func TestListAddWithoutSpool(t *testing.T) {
	l, err := OpenList(ListConfig{Path: filepath.Join(t.TempDir(), "news.db"), PathHost: "list.test"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, g := range []string{"local.a", "local.b"} {
		if err := l.AddGroup(g, "y", ""); err != nil {
			t.Fatal(err)
		}
	}
	n, err := l.Add(announced("<1@peer>", "local.a"), announced("<2@peer>", "local.a", "local.b", "not.here"),
		announced("<1@peer>", "local.a"), announced("<3@peer>", "not.here"))
	if err != nil || n != 2 {
		t.Fatalf("Add: %d listed, %v; want 2", n, err)
	}
	if n, err := l.Add(announced("<2@peer>", "local.b")); err != nil || n != 0 {
		t.Fatalf("Add of a listed id again: %d listed, %v", n, err)
	}
	if g, _ := l.Group("local.a"); g.Count != 2 || g.Low != 1 || g.High != 2 {
		t.Fatalf("local.a %+v", g)
	}
	if g, _ := l.Group("local.b"); g.Count != 1 || g.High != 1 {
		t.Fatalf("local.b %+v", g)
	}
	h, found, err := l.Lookup("<2@peer>")
	if err != nil || !found || h.Key != id.Key([]byte("body of <2@peer>")) || h.Xref != "list.test local.a:2 local.b:1" {
		t.Fatalf("history of <2@peer>: %+v, %v, %v", h, found, err)
	}
	if has, _ := l.Has("<3@peer>"); has {
		t.Fatal("an entry for groups not carried here was listed")
	}
	if _, err := l.Add(announced("no-brackets", "local.a")); err == nil {
		t.Fatal("an entry with a malformed message-id was taken")
	}
}

// A removed group is no longer listed, takes no entries, and keeps its
// numbers and its removal across a reopen; added back, it numbers on.
func TestRemoveGroup(t *testing.T) {
	path := filepath.Join(t.TempDir(), "news.db")
	now := time.Now()
	open := func() *List {
		t.Helper()
		l, err := OpenList(ListConfig{Path: path, PathHost: "list.test", Now: func() time.Time { return now }})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	l := open()
	for _, g := range []string{"local.gone", "local.kept"} {
		if err := l.AddGroup(g, "y", "d"); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := l.Add(announced("<r1@x>", "local.gone")); err != nil || n != 1 {
		t.Fatalf("Add: %d, %v", n, err)
	}
	if err := l.RemoveGroup("local.gone"); err != nil {
		t.Fatal(err)
	}
	if err := l.RemoveGroup("local.never"); !errors.Is(err, ErrNoSuchGroup) {
		t.Fatalf("RemoveGroup of a group never made: %v", err)
	}
	check := func(l *List) {
		t.Helper()
		if _, ok := l.Group("local.gone"); ok || !l.Removed("local.gone") || len(l.Groups("local.*")) != 1 {
			t.Fatalf("a removed group is still listed: %+v", l.Groups("local.*"))
		}
		if _, _, err := l.route([]string{"local.gone"}, true, false); !errors.Is(err, ErrNoGroups) {
			t.Fatalf("an article for a removed group only: %v, want ErrNoGroups", err)
		}
	}
	check(l)
	if n, err := l.Add(announced("<r2@x>", "local.gone", "local.kept")); err != nil || n != 1 {
		t.Fatalf("Add: %d, %v", n, err)
	}
	if h, _, _ := l.Lookup("<r2@x>"); h.Xref != "list.test local.kept:1" {
		t.Fatalf("an announced entry was listed in a removed group: Xref %q", h.Xref)
	}
	l.Close()
	l = open()
	defer l.Close()
	check(l)
	// Its entries expire as they would have (its article, 30 days).
	now = now.Add(31 * 24 * time.Hour)
	if n, _, err := l.Expire(); err != nil || n != 2 {
		t.Fatalf("Expire 31 days on: %d overview entries, %v; want 2 (local.gone's and local.kept's)", n, err)
	}
	if err := l.AddGroup("local.gone", "y", ""); err != nil {
		t.Fatal(err)
	}
	if g, ok := l.Group("local.gone"); !ok || l.Removed("local.gone") || g.High != 1 || g.Count != 0 {
		t.Fatalf("added back: %+v, %v; want it listed, empty, its numbers kept (high 1)", g, ok)
	}
}
