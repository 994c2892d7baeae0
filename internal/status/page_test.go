package status

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"triad/internal/id"
	"triad/internal/metrics"
	"triad/internal/store"
	"triad/internal/wire"
)

func ref(hexPrefix, addr string) wire.NodeRef {
	b := make([]byte, id.Bytes)
	copy(b, []byte(hexPrefix))
	x, err := id.FromBytes(b)
	if err != nil {
		panic(err)
	}
	return wire.NodeRef{ID: x, Addr: addr}
}

// The page draws every section from its sources: the ring with one dot
// per distinct node, the coordinates, usage by expiry, maintenance, and
// the warnings logged, escaped.
func TestPageDrawsItsSections(t *testing.T) {
	self, succ, pred := ref("a", "127.0.0.1:1"), ref("b", "127.0.0.1:2"), ref("c", "127.0.0.1:3")
	snap := metrics.NodeSnapshot{
		Addr:  "127.0.0.1:1",
		Coord: wire.Coord{X: 1, Y: 2, Height: 0.5, Error: 0.2},
		PeerCoords: map[string]wire.Coord{"127.0.0.1:1": {X: 1, Y: 2}, "127.0.0.1:2": {X: 5, Y: 1},
			"127.0.0.1:3": {X: -3, Y: 4}},
		Vnodes: []metrics.VnodeSnapshot{{ID: "61000000", Self: self, Succs: []wire.NodeRef{succ, pred},
			Preds: []wire.NodeRef{pred, succ}, Fingers: []wire.NodeRef{succ}, Successors: 2, Predecessors: 2}},
		Maint: &wire.MaintStatus{Counters: []wire.Counter{{Name: "rounds", Value: 7}}},
	}
	rec := NewRecorder(slog.NewTextHandler(io.Discard, nil), 2)
	log := slog.New(rec)
	log.Info("not kept")
	log.Warn("first <b>warning</b>", "peer", "x")
	log.Error("disk failing", "err", "EIO")
	log.Error("disk gone", "err", "ENOENT")
	src := &Sources{Name: "node test", Log: rec,
		Node:  func(context.Context) (metrics.NodeSnapshot, error) { return snap, nil },
		Store: func() store.Stats { return store.Stats{Objects: 3, Usage: 3000, ByExpiry: [7]int64{1000, 0, 2000}} },
		Now:   func() time.Time { return time.Unix(1_800_000_000, 0) },
	}
	w := httptest.NewRecorder()
	Handler(src).ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
	body := w.Body.String()
	if w.Code != 200 {
		t.Fatalf("status %d", w.Code)
	}
	for _, want := range []string{`<section id="ring">`, `<section id="coordinates">`, `<section id="storage">`,
		`<section id="maintenance">`, `<section id="news">`, `<section id="errors">`,
		`class="self"><title>self`, "disk gone", "disk failing", "No news server in this process.", "<td>rounds</td><td>7</td>",
		"2.9 KiB", "width: 67%"} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	// Three distinct nodes on the ring, three on the map (self once).
	if n := strings.Count(body, "<title>self ") + strings.Count(body, "<title>pred ") + strings.Count(body, "<title>succ ") + strings.Count(body, "<title>finger "); n != 3 {
		t.Errorf("%d dots on the ring, want 3", n)
	}
	if n := strings.Count(body, `class="peer"`) + strings.Count(body, `r="8" class="self"><title>127`); n != 3 {
		t.Errorf("%d dots on the map, want 3", n)
	}
	// The recorder kept the last two warnings, newest first; markup in a
	// message is escaped.
	if strings.Contains(body, "first <b>") || strings.Index(body, "disk gone") > strings.Index(body, "disk failing") {
		t.Errorf("recent errors wrong or unescaped")
	}
	if got := rec.Recent(); len(got) != 2 || got[0].Message != "disk gone" || got[0].Attrs != "err=ENOENT" {
		t.Errorf("recent: %+v", got)
	}

	// A node that does not answer is said so; the rest still draws.
	src.Node = func(context.Context) (metrics.NodeSnapshot, error) {
		return metrics.NodeSnapshot{}, errors.New("timeout")
	}
	w = httptest.NewRecorder()
	Handler(src).ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
	if body := w.Body.String(); !strings.Contains(body, "The node did not answer: timeout") || !strings.Contains(body, `<section id="storage">`) {
		t.Errorf("page of a silent node:\n%s", body)
	}
	w = httptest.NewRecorder()
	Handler(src).ServeHTTP(w, httptest.NewRequest("GET", "/static/style.css", nil))
	if w.Code != 200 || !strings.Contains(w.Header().Get("Content-Type"), "text/css") {
		t.Errorf("style.css: %d %s", w.Code, w.Header().Get("Content-Type"))
	}
}
