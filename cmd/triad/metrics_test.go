package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"triad/internal/e2e"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.yaml.in/yaml/v3"

	"triad/internal/localdeploy"
	"triad/internal/newsd"
	"triad/internal/nntp"
	"triad/internal/testutil"
)

// Every daemon of `triad up` serves well-formed Prometheus text at
// /metrics, by the naming conventions (promlint), with the families an
// operator watches, and the figures move with the work: a post at site 1
// is counted there, its reads at site 2, and the nodes' RPCs have latency
// histograms by message type.
func TestUpServesMetrics(t *testing.T) {
	bin := e2e.Build(t)
	port, newsPort, httpPort := e2e.ConsecutiveFreePorts(t, 3), e2e.ConsecutiveFreePorts(t, 3), e2e.ConsecutiveFreePorts(t, 3)
	up := e2e.StartUp(t, bin, "--sites", "3", "--port", fmt.Sprint(port), "--nntp-port", fmt.Sprint(newsPort),
		"--http-port", fmt.Sprint(httpPort), "--data", filepath.Join(t.TempDir(), "data"))
	up.WaitFor("Press Ctrl-C") // started, the ring consistent before the sites

	e2e.PostArticle(t, fmt.Sprintf("127.0.0.1:%d", newsPort), "From: m@test\r\nNewsgroups: local.test\r\nSubject: metrics\r\nMessage-ID: <metrics1@test>\r\n\r\nbody\r\n")
	c2, err := nntp.Dial(fmt.Sprintf("127.0.0.1:%d", newsPort+1), time.Now().Add(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	var reply []byte
	if !testutil.Poll(5*time.Second, func() bool {
		var err error
		if reply, err = c2.Cmd("ARTICLE <metrics1@test>"); err != nil {
			t.Fatal(err)
		}
		return strings.HasPrefix(string(reply), "220")
	}) {
		t.Fatalf("ARTICLE at site 2: %q", reply)
	}
	if _, _, err := c2.ReadBlock(nil, 1<<20); err != nil {
		t.Fatal(err)
	}

	// The deployment page of a TLS deployment: a node's own certificate
	// surveys the ring as a client (it was refused as a forged claim).
	page := fmt.Sprintf("http://127.0.0.1:%d/deployment", httpPort+1)
	resp, err := http.Get(page)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if n := strings.Count(string(body), `<tr class="up"`); n != 3 || strings.Contains(string(body), "survey failed") {
		t.Errorf("%s shows %d nodes up, want 3:\n%s", page, n, body)
	}
	// Its news section: triad up's three sites, each feeding the other two;
	// its D2 column: each node's primary load.
	news, _, _ := strings.Cut(string(body), `<section id="news">`)
	news = strings.TrimPrefix(string(body), news)
	if h, li := strings.Count(news, "<h3>"), strings.Count(news, "<li>"); h != 3 || li != 6 {
		t.Errorf("%s's news section shows %d sites and %d feeds, want 3 and 6:\n%s", page, h, li, body)
	}
	if n := strings.Count(string(body), "keys</td>"); n != 3 || !strings.Contains(string(body), "primary for") {
		t.Errorf("%s shows D2's primary load of %d nodes, want 3:\n%s", page, n, body)
	}

	families := []string{
		"triad_ring_vnodes", "triad_ring_successors", "triad_ring_neighbour_changes_total", "triad_ring_lookups_total",
		"triad_ring_lookup_hops", "triad_ring_refused_leaves_total", "triad_ring_forged_refs_total", "triad_rpc_latency_seconds", "triad_rpc_timeouts_total",
		"triad_store_objects", "triad_store_bytes", "triad_store_bytes_by_expiry", "triad_store_objects_by_expiry", "triad_store_reclaimed_windows_total", "triad_store_reclaimed_bytes_total", "triad_store_clock_steps_total",
		"triad_maint_rounds_total", "triad_maint_keys_compared_total", "triad_maint_repair_queue_objects",
		"triad_maint_repair_queue_bytes", "triad_maint_objects_repaired_total", "triad_maint_audits_sent_total", "triad_maint_suspects",
		"triad_nntp_replies_total", "triad_nntp_deferrals_total", "triad_nntp_cache_hits_total",
		"triad_nntp_peer_backlog_articles", "triad_nntp_forged_announcements_total", "go_goroutines", "process_resident_memory_bytes",
		"triad_net_stalled_frames_total", "triad_net_read_pauses_total", "triad_net_frames_inline_total", "triad_nntp_dht_gets_total",
		"triad_d2_joined", "triad_d2_primary_blocks", "triad_d2_held", "triad_d2_lookups_total", "triad_d2_cache_misses_total",
		"triad_d2_moves_total", "triad_d2_unauthorized_total", "triad_d2_distrusted_peers", "triad_d2_audits_total", "triad_d2_gateway_copies_total",
	}
	seen := map[string]bool{} // families served by any daemon
	for i := 0; i < 3; i++ {
		url := fmt.Sprintf("http://127.0.0.1:%d/metrics", httpPort+i)
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s: %d %v", url, resp.StatusCode, err)
		}
		if problems, err := promlint.New(bytes.NewReader(body)).Lint(); err != nil || len(problems) > 0 {
			t.Errorf("%s: promlint: %v %+v", url, err, problems)
		}
		parser := expfmt.NewTextParser(model.UTF8Validation)
		got, err := parser.TextToMetricFamilies(bytes.NewReader(body))
		if err != nil {
			t.Fatalf("%s is not Prometheus text: %v", url, err)
		}
		for name := range got {
			seen[name] = true
		}
		for _, f := range families {
			if got[f] == nil {
				t.Errorf("%s has no %s", url, f)
			}
		}
		if v, want := value(got, "triad_ring_vnodes", nil), float64(localdeploy.DefaultOptions().Vnodes); v != want {
			t.Errorf("%s: triad_ring_vnodes %v, want triad up's %v", url, v, want)
		}
		// Issue 44: triad up's one process has the soft memory limit its
		// 3 nodes and 3 sites would each have alone, summed.
		if v, want := value(got, "go_gc_gomemlimit_bytes", nil), float64((3*nodeLimitMB+3*newsd.DefaultOptions().MemoryLimitMB)<<20); v != want {
			t.Errorf("%s: go_gc_gomemlimit_bytes %v, want %v", url, v, want)
		}
		if h := got["triad_rpc_latency_seconds"]; h == nil || len(h.Metric) == 0 || h.Metric[0].GetHistogram().GetSampleCount() == 0 {
			t.Errorf("%s: no RPC latencies observed", url)
		}
		switch i {
		case 0:
			if v := value(got, "triad_nntp_articles_ingested_total", map[string]string{"verb": "post"}); v != 1 {
				t.Errorf("site 1 counted %v posts, want 1", v)
			}
		case 1:
			if v := value(got, "triad_nntp_articles_read_total", map[string]string{"part": "article"}); v != 1 {
				t.Errorf("site 2 counted %v ARTICLE reads, want 1", v)
			}
			if v := value(got, "triad_nntp_cache_misses_total", nil); v != 1 {
				t.Errorf("site 2 counted %v cache misses, want 1 (the first read)", v)
			}
		}
	}
	up.Interrupt()

	// The example Grafana dashboard asks only for what is served.
	dash, err := os.ReadFile("../../docs/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	names := regexp.MustCompile(`triad_[a-z_]+`).FindAllString(string(dash), -1)
	if len(names) < 10 {
		t.Fatalf("the dashboard names %d metrics", len(names))
	}
	for _, n := range names {
		if base := strings.TrimSuffix(n, "_bucket"); !seen[base] {
			t.Errorf("the dashboard asks for %s, which no daemon serves", n)
		}
	}
	checkAlertRules(t, "../../docs/alerts.yml", seen)
}

// checkAlertRules parses the Prometheus rule file at path: every rule an
// alert with an expression, a severity and a summary, every triad metric
// it names one of served (issue 47: rules users can load as they are).
func checkAlertRules(t *testing.T, path string, served map[string]bool) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Groups []struct {
			Name  string `yaml:"name"`
			Rules []struct {
				Alert       string            `yaml:"alert"`
				Expr        string            `yaml:"expr"`
				For         string            `yaml:"for"`
				Labels      map[string]string `yaml:"labels"`
				Annotations map[string]string `yaml:"annotations"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&file); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	rules := 0
	for _, g := range file.Groups {
		for _, r := range g.Rules {
			rules++
			if r.Alert == "" || r.Expr == "" || r.Labels["severity"] == "" || r.Annotations["summary"] == "" {
				t.Errorf("%s: rule %+v lacks a name, an expression, a severity or a summary", path, r)
			}
			if r.For != "" {
				if _, err := model.ParseDuration(r.For); err != nil {
					t.Errorf("%s: %s: for %q: %v", path, r.Alert, r.For, err)
				}
			}
			for _, n := range regexp.MustCompile(`triad_[a-z0-9_]+`).FindAllString(r.Expr, -1) {
				if !served[n] {
					t.Errorf("%s: %s asks for %s, which no daemon serves", path, r.Alert, n)
				}
			}
		}
	}
	if rules < 15 {
		t.Errorf("%s has %d rules; docs/operations.md lists more", path, rules)
	}
}

// value is the value of the metric of family name with the labels, -1 if
// there is none.
func value(fams map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	f := fams[name]
	if f == nil {
		return -1
	}
next:
	for _, m := range f.Metric {
		for k, v := range labels {
			found := false
			for _, l := range m.Label {
				if l.GetName() == k && l.GetValue() == v {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		}
	}
	return -1
}
