package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"triad/internal/e2e"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"triad/internal/pki"
	"triad/internal/testutil"
)

// A ring of real `triad node --tls` processes: its members talk over
// mutual TLS, clients and a news front-end with the CA's certificates put,
// get and post through it, and outsiders are refused and counted
// (triad_net_tls_refused_total), with nothing stored: a node without TLS
// trying to join, clients with no certificate or another CA's, a news
// front-end without one. A client with an expired certificate is stopped
// by its own check before it connects.
func TestTLSRingRefusesOutsiders(t *testing.T) {
	if testing.Short() {
		t.Skip("starts node processes")
	}
	c := e2e.NewCluster(t)
	ca := newTestCA(t, filepath.Join(c.Dir, "ca"))
	issue := func(name, addr string, validity time.Duration) string {
		return issueBundle(t, ca, c.Dir, name, addr, 2, validity) // the nodes below run two vnodes each
	}
	ports := e2e.FreePorts(t, 5)
	addrs := make([]string, 3)
	for i := range addrs {
		addrs[i] = fmt.Sprintf("127.0.0.1:%d", ports[i])
	}
	httpAddr := fmt.Sprintf("127.0.0.1:%d", ports[3])
	c.TLSDir = issue("operator", "", time.Hour)
	for i, a := range addrs {
		extra := []string{"--tls", issue(fmt.Sprintf("node%d", i), a, time.Hour)}
		join := ""
		if i == 0 {
			extra = append(extra, "--http", httpAddr)
		} else {
			join = addrs[0]
		}
		c.StartWith(fmt.Sprintf("node%d", i), a, filepath.Join(c.Dir, fmt.Sprintf("data%d", i)), join, 2, extra...)
	}
	c.WaitConsistent("TLS ring", 30*time.Second)

	// Insiders: a put through one node reads back through another, and a
	// news front-end with a certificate posts into the ring.
	file := filepath.Join(c.Dir, "file")
	data := bytes.Repeat([]byte("over TLS\n"), 5000)
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := c.Triad("put", file, "--addr", addrs[0])
	if err != nil {
		t.Fatal(err)
	}
	key := strings.TrimSpace(string(out))
	if got, err := c.Triad("get", key, "--addr", addrs[2]); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("get over TLS: %d bytes, %v", len(got), err)
	}
	news := e2e.StartNews(t, filepath.Join(c.Dir, "news"), "--node", addrs[1], "--tls", issue("front", "", time.Hour), "--groups", "local.test", "--cache-mb", "0")
	nc := e2e.PostArticle(t, news.Addr, "From: t@test\r\nNewsgroups: local.test\r\nSubject: tls\r\nMessage-ID: <tls1@test>\r\n\r\nthrough TLS\r\n")
	if reply, err := nc.Cmd("BODY <tls1@test>"); err != nil || !strings.HasPrefix(string(reply), "222") {
		t.Fatalf("BODY from the ring: %q %v", reply, err)
	}
	nc.Close()

	objects := func() (stored, refused float64) {
		t.Helper()
		resp, err := http.Get("http://" + httpAddr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		parser := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := parser.TextToMetricFamilies(bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		return value(fams, "triad_store_objects", nil), value(fams, "triad_net_tls_refused_total", nil)
	}
	storedBefore, refusedBefore := objects()

	// Outsiders.
	oca := newTestCA(t, filepath.Join(c.Dir, "other-ca"))
	foreign := filepath.Join(c.Dir, "bundles", "foreign")
	if err := oca.Issue(pki.Identity{Name: "foreign", Site: "elsewhere"}, time.Hour, foreign); err != nil {
		t.Fatal(err)
	}
	expired := issue("expired", "", -time.Minute)
	run := func(args ...string) (string, error) {
		// Bounded: a command that wrongly got in (a news server that
		// started) is stopped, and fails the test, rather than hanging it.
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, c.Bin, args...).CombinedOutput()
		return string(out), err
	}
	// Without one, the command says what to set, not only that the
	// connection closed (issue 27).
	if out, err := run("get", key, "--addr", addrs[0]); err == nil || !strings.Contains(out, "speaks TLS: set TRIAD_TLS or --tls") {
		t.Errorf("get without a certificate: %v %s", err, out)
	}
	if out, err := run("put", file, "--addr", addrs[0], "--tls", foreign); err == nil {
		t.Errorf("put with another CA's certificate succeeded: %s", out)
	}
	if out, err := run("get", key, "--addr", addrs[0], "--tls", expired); err == nil || !strings.Contains(out, "expired") {
		t.Errorf("get with an expired certificate: %v %s", err, out)
	}
	if out, err := run("nntp", "--listen", "127.0.0.1:0", "--data", filepath.Join(c.Dir, "outsider-news"), "--node", addrs[0]); err == nil {
		t.Errorf("a news front-end without a certificate started: %s", out)
	}
	// A node without TLS tries to join through node 0 for a few rounds.
	intruder := exec.Command(c.Bin, "node", "--listen", fmt.Sprintf("127.0.0.1:%d", ports[4]), "--data", filepath.Join(c.Dir, "intruder"),
		"--join", addrs[0], "--stabilize", "200ms")
	if err := intruder.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { intruder.Process.Kill(); intruder.Wait() }()
	var refused float64
	if !testutil.Poll(10*time.Second, func() bool { _, refused = objects(); return refused >= refusedBefore+3 }) {
		t.Fatalf("node 0 counted %v TLS refusals, want at least %v", refused, refusedBefore+3)
	}
	c.WaitConsistent("TLS ring after the intruder", 10*time.Second) // no view names it
	if stored, _ := objects(); stored != storedBefore {
		t.Errorf("node 0 holds %v objects after the outsiders, %v before", stored, storedBefore)
	}
}

// issueBundle issues name a bundle under dir/bundles from ca, for site1:
// a node's for addr allowing vnodes, or a client's without an address.
func issueBundle(t *testing.T, ca *pki.CA, dir, name, addr string, vnodes int, validity time.Duration) string {
	t.Helper()
	out := filepath.Join(dir, "bundles", name)
	who := pki.Identity{Name: name, Site: "site1", Addr: addr}
	if addr != "" {
		who.Vnodes = vnodes // a certificate allows what it names
	}
	if err := ca.Issue(who, validity, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// newTestCA makes a CA in dir, valid for an hour.
func newTestCA(t *testing.T, dir string) *pki.CA {
	t.Helper()
	if err := pki.InitCA(dir, "test "+filepath.Base(dir), time.Hour); err != nil {
		t.Fatal(err)
	}
	ca, err := pki.LoadCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}
