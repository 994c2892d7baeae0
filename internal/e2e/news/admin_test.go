package news_test

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"triad/internal/e2e"
	"triad/internal/nntp"
)

// TestNewsAdministration (issue 47): `triad news newgroup` at one site of
// `triad up` makes every site carry the group, at once and after a
// restart of all three; rmgroup stops it everywhere, and --groups does
// not bring it back; feeds, pause and resume answer; a certificate other
// than the operator's is refused.
func TestNewsAdministration(t *testing.T) {
	bin := e2e.Build(t)
	port := e2e.ConsecutiveFreePorts(t, 3)
	newsPort := e2e.ConsecutiveFreePorts(t, 3)
	peerPort := e2e.ConsecutiveFreePorts(t, 3)
	data := filepath.Join(t.TempDir(), "data")
	args := []string{"--sites", "3", "--port", fmt.Sprint(port), "--nntp-port", fmt.Sprint(newsPort), "--peer-port", fmt.Sprint(peerPort), "--data", data}
	up := e2e.StartUp(t, bin, args...)
	up.WaitFor("Press Ctrl-C")
	operator := filepath.Join(data, "ca", "bundles", "operator")
	admin := fmt.Sprintf("127.0.0.1:%d", peerPort)
	news := func(bundle string, args ...string) (string, error) {
		out, err := exec.Command(bin, append(append([]string{"news"}, args...), "--addr", admin, "--tls", bundle)...).CombinedOutput()
		return string(out), err
	}
	groupAt := func(site int, group string) string {
		t.Helper()
		c, err := nntp.Dial(fmt.Sprintf("127.0.0.1:%d", newsPort+site), time.Now().Add(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		line, err := c.Cmd("GROUP " + group)
		if err != nil {
			t.Fatal(err)
		}
		return string(line[:3])
	}
	everywhere := func(when, group, want string) {
		t.Helper()
		for site := range 3 {
			if got := groupAt(site, group); got != want {
				t.Errorf("%s: GROUP %s at site %d answered %s, want %s", when, group, site+1, got, want)
			}
		}
	}

	start := time.Now()
	if out, err := news(operator, "newgroup", "local.new", "--desc", "made at run time"); err != nil || strings.Count(out, "local.new carried") != 3 {
		t.Fatalf("triad news newgroup: %v\n%s", err, out)
	}
	everywhere("right after newgroup", "local.new", "211")
	t.Logf("newgroup at 3 sites in %v", time.Since(start).Round(time.Millisecond))
	if out, err := news(operator, "rmgroup", "local.test"); err != nil || strings.Count(out, "local.test removed") != 3 {
		t.Fatalf("triad news rmgroup: %v\n%s", err, out)
	}
	everywhere("after rmgroup", "local.test", "411")
	if out, err := news(operator, "pause", "site2"); err != nil || !strings.Contains(out, "held") {
		t.Fatalf("triad news pause site2: %v\n%s", err, out)
	}
	if out, err := news(operator, "feeds"); err != nil || !strings.Contains(out, "site2 mesh") || !strings.Contains(out, "paused") {
		t.Fatalf("triad news feeds: %v\n%s", err, out)
	}
	if out, err := news(operator, "resume"); err != nil || !strings.Contains(out, "going again") {
		t.Fatalf("triad news resume: %v\n%s", err, out)
	}
	// A site's certificate is the ring's, but not the operator's.
	site := filepath.Join(data, "ca", "bundles", "site1")
	if out, err := news(site, "newgroup", "local.intruder"); err == nil || !strings.Contains(out, "refused") {
		t.Errorf("newgroup with a site's certificate: %v\n%s", err, out)
	}

	up.Interrupt()
	up = e2e.StartUp(t, bin, args...)
	up.WaitFor("Press Ctrl-C")
	everywhere("after a restart", "local.new", "211")
	everywhere("after a restart (--groups names it)", "local.test", "411")
	everywhere("after a restart", "local.intruder", "411")
	up.Interrupt()
}
