package status

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"triad/internal/deploy"
	"triad/internal/id"
	"triad/internal/metrics"
	"triad/internal/node"
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

// A neighbour that is one vnode's successor and another's predecessor is
// drawn as a successor (issue 47: every other vnode was drawn as a
// predecessor, none in the successors' colour); one that is only a
// predecessor, as one.
func TestRingPointsPreferSuccessors(t *testing.T) {
	ref := func(b byte) wire.NodeRef {
		var raw [id.Bytes]byte
		raw[0] = b
		x, err := id.FromBytes(raw[:])
		if err != nil {
			t.Fatal(err)
		}
		return wire.NodeRef{ID: x, Addr: fmt.Sprintf("127.0.0.1:%d", 4000+int(b))}
	}
	a, b, x, y := ref(0x10), ref(0x50), ref(0x30), ref(0x90)
	snap := metrics.NodeSnapshot{Vnodes: []metrics.VnodeSnapshot{
		{Self: a, Preds: []wire.NodeRef{y}, Succs: []wire.NodeRef{x}},
		{Self: b, Preds: []wire.NodeRef{x}, Succs: []wire.NodeRef{y}},
	}}
	kinds := map[string]string{}
	for _, p := range ringPoints(snap) {
		kinds[p.Label[strings.LastIndex(p.Label, "(")+1:len(p.Label)-1]] = p.Kind
	}
	want := map[string]string{a.Addr: "self", b.Addr: "self", x.Addr: "succ", y.Addr: "succ"}
	if !maps.Equal(kinds, want) {
		t.Fatalf("kinds %v, want %v", kinds, want)
	}
}

// The protocols that report their own figures get a section each: D2 off
// its ring in red, the blocks it holds; Tapestry's links (issue 47: while
// D2 was down on every node, no page said so, and a node holding 658
// D2 blocks showed "0 objects").
func TestPageShowsProtocols(t *testing.T) {
	snap := metrics.NodeSnapshot{Addr: "127.0.0.1:1", Protocols: []deploy.Report{
		{Protocol: "tapestry", Metrics: []node.Metric{{Name: "links", Gauge: true, Value: 12}}},
		{Protocol: "d2", Metrics: []node.Metric{{Name: "joined", Gauge: true, Value: 0}, {Name: "held", Gauge: true, Value: 658}}},
	}}
	src := &Sources{Name: "node test", Node: func(context.Context) (metrics.NodeSnapshot, error) { return snap, nil }}
	get := func() string {
		w := httptest.NewRecorder()
		Handler(src).ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
		return w.Body.String()
	}
	body := get()
	for _, want := range []string{`<section id="tapestry">`, "12 routing table links.", `<section id="d2">`,
		`<span class="bad">Not on its ring</span>`, "658 blocks and pointers held."} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	snap.Protocols[1].Metrics[0].Value = 1
	if body := get(); strings.Contains(body, "Not on its ring") || !strings.Contains(body, "On its ring.") {
		t.Error("a joined D2 is shown off its ring")
	}
}
