package bench

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"triad/internal/e2e"
)

// The "name: count" lines of /proc/PID/io and /proc/PID/status are read
// in the order asked, whatever their order in the file; a name missing or
// a value that is not a count is an error. This process's own counts are
// there and plausible.
func TestProcFields(t *testing.T) {
	io := "rchar: 2012\nwchar: 533\nsyscr: 17\nsyscw: 9\nread_bytes: 0\nwrite_bytes: 4096\ncancelled_write_bytes: 0\n"
	status := "Name:\ttriad\nState:\tS (sleeping)\nThreads:\t7\nvoluntary_ctxt_switches:\t1234\nnonvoluntary_ctxt_switches:\t56\n"
	for _, tc := range []struct {
		raw   string
		names []string
		want  []uint64
	}{
		{io, []string{"syscr", "syscw"}, []uint64{17, 9}},
		{io, []string{"syscw", "syscr"}, []uint64{9, 17}},
		{status, []string{"voluntary_ctxt_switches", "nonvoluntary_ctxt_switches"}, []uint64{1234, 56}},
	} {
		got, err := procFields([]byte(tc.raw), tc.names...)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("procFields(%v) = %v, %v; want %v", tc.names, got, err, tc.want)
		}
	}
	for _, bad := range []struct{ raw, name string }{
		{"syscr: 17\n", "syscw"},
		{"syscr: x\nsyscw: 9\n", "syscr"},
		{"syscr: -1\nsyscw: 9\n", "syscr"},
		{"", "syscr"},
	} {
		if _, err := procFields([]byte(bad.raw), "syscr", "syscw"); err == nil || !strings.Contains(err.Error(), bad.name) {
			t.Errorf("procFields(%q): %v, want an error naming %s", bad.raw, err, bad.name)
		}
	}
	u, err := selfUsage()
	if err != nil {
		t.Fatal(err)
	}
	if u.syscr == 0 || u.vol+u.invol == 0 || u.mallocs == 0 || u.cpu <= 0 {
		t.Errorf("this process's own usage %+v: a count is 0", u)
	}
}

// A node's counters are read from its metrics page: a counter's value, a
// histogram's sum (the lookup hops), and false for a family missing; a
// page that does not answer 200 is an error.
func TestScrapeCounters(t *testing.T) {
	page := "# TYPE triad_net_frames_sent_total counter\ntriad_net_frames_sent_total 1234\n" +
		"# TYPE triad_ring_lookup_hops histogram\ntriad_ring_lookup_hops_bucket{le=\"+Inf\"} 3\ntriad_ring_lookup_hops_sum 5\ntriad_ring_lookup_hops_count 3\n"
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, page)
	}))
	defer s.Close()
	hc := &http.Client{Timeout: 5 * time.Second}
	fams, err := scrape(hc, strings.TrimPrefix(s.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		want uint64
		ok   bool
	}{{"triad_net_frames_sent_total", 1234, true}, {"triad_ring_lookup_hops", 5, true}, {"triad_store_syncs_total", 0, false}} {
		if v, ok := counterValue(fams, tc.name); v != tc.want || ok != tc.ok {
			t.Errorf("counterValue(%s) = %d, %v; want %d, %v", tc.name, v, ok, tc.want, tc.ok)
		}
	}
	gone := httptest.NewServer(http.NotFoundHandler())
	defer gone.Close()
	if _, err := scrape(hc, strings.TrimPrefix(gone.URL, "http://")); err == nil {
		t.Error("a page answering 404 was read")
	}
}

// A run with Explain counts each put's path on real nodes: frames sent,
// syscalls and CPU, and a file sync of the block store per put or a few
// shared (k=2 copies, each durable before its acknowledgement); it prints
// the figures and the floor, and puts them in the JSON.
func TestDHashExplain(t *testing.T) {
	if testing.Short() {
		t.Skip("starts node processes")
	}
	cfg := DefaultDHashConfig()
	cfg.Binary, cfg.Dir, cfg.Nodes, cfg.Ops, cfg.Explain, cfg.Log = e2e.Build(t), t.TempDir(), 2, 200, true, t.Logf
	res, err := DHash(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Put.Failed+res.Get.Failed > 0 || res.Put.Explain == nil || res.Get.Explain == nil || res.Floor == nil {
		t.Fatalf("put %d failed, get %d failed, explain %v and %v, floor %v", res.Put.Failed, res.Get.Failed, res.Put.Explain, res.Get.Explain, res.Floor)
	}
	put := res.Put.Explain
	if n := put.Nodes; n.FramesSent <= 0 || n.Syncs <= 0 || n.Syncs >= 10 || n.ReadSyscalls+n.WriteSyscalls <= 0 || n.CPUMicros <= 0 {
		t.Errorf("nodes per put: %+v; want frames, syscalls and CPU above 0 and 0 < syncs < 10", n)
	}
	if c := put.Client; c.ReadSyscalls+c.WriteSyscalls <= 0 || c.CPUMicros <= 0 || c.Mallocs <= 0 {
		t.Errorf("client per put: %+v; want syscalls, CPU and allocations above 0", c)
	}
	if f := res.Floor; f.Replicas != 2 || f.NodeFrames != 3 || f.RoundTripCPUMicros <= 0 || f.RoundTripWallMicros <= 0 {
		t.Errorf("floor %+v: want k=2, 3 frames from the nodes (the node reached always holds a copy) and a round trip timed", f)
	}
	var text strings.Builder
	res.WriteText(&text)
	for _, want := range []string{"wake-ups (voluntary switches)", "preemptions", "fdatasyncs", "lookup hops", "floor of a put, k=2 copies on 2 nodes", "one loopback TCP round trip"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("the text lacks %q:\n%s", want, text.String())
		}
	}
	raw, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		Put   struct{ Explain map[string]map[string]float64 }
		Floor map[string]any
	}
	if err := json.Unmarshal(raw, &back); err != nil || back.Put.Explain["nodes"]["frames_sent"] <= 0 || back.Floor["round_trip_cpu_us"] == nil {
		t.Errorf("JSON %s: no explain or floor (%v)", raw, err)
	}
}

// The floor counts a put's frames by its route: through the node reached,
// 2k+1 from the nodes, 2 fewer when that node holds a copy (k/N of the
// puts); to the holder after a lookup, 2k whichever node is asked, with
// the client's two requests.
func TestPutFloorFrames(t *testing.T) {
	for _, c := range []struct {
		k, n          int
		direct        bool
		frames, trips float64
	}{
		{2, 2, false, 3, 2},
		{2, 6, false, 5 - 4.0/6, 3 - 2.0/6},
		{2, 6, true, 4, 3},
		{3, 8, true, 6, 4},
	} {
		f, err := putFloor(c.k, c.n, 16, c.direct)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(f.NodeFrames-c.frames) > 1e-9 || math.Abs(f.RoundTrips-c.trips) > 1e-9 {
			t.Errorf("k=%d, %d nodes, direct %v: %.3f frames and %.3f round trips; want %.3f and %.3f", c.k, c.n, c.direct, f.NodeFrames, f.RoundTrips, c.frames, c.trips)
		}
		var text strings.Builder
		f.writeFloor(&text)
		if want := "the client asks a node to look the key up"; strings.Contains(text.String(), want) != c.direct {
			t.Errorf("direct %v, the text:\n%s", c.direct, text.String())
		}
	}
}
