package dhash_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"triad/internal/e2e"
)

// TestStatusNamesADeadNode (issue 47): `triad status` from one node of a
// deployment of four node processes lists all four, exit 0; after a
// SIGKILL of one, it exits 1 within 10 s with that node named on one
// line, and --watch keeps naming it once the ring has dropped it.
func TestStatusNamesADeadNode(t *testing.T) {
	c := e2e.NewCluster(t)
	ports := e2e.FreePorts(t, 4)
	addr := func(i int) string { return fmt.Sprintf("127.0.0.1:%d", ports[i]) }
	var nodes []*e2e.Node
	for i := range 4 {
		join := ""
		if i > 0 {
			join = addr(0)
		}
		nodes = append(nodes, c.Start(fmt.Sprintf("node%d", i), addr(i), filepath.Join(c.Dir, fmt.Sprintf("data%d", i)), join))
	}
	c.WaitConsistent("after start", 30*time.Second)
	status := func(args ...string) (stdout, stderr string, code int) {
		var out, errb bytes.Buffer
		cmd := exec.Command(c.Bin, append([]string{"status", "--addr", addr(0)}, args...)...)
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		if e, ok := err.(*exec.ExitError); ok {
			code = e.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return out.String(), errb.String(), code
	}
	out, errOut, code := status("--json")
	var r struct {
		Nodes []struct {
			Addr      string  `json:"addr"`
			Up        bool    `json:"up"`
			Version   string  `json:"version"`
			Uptime    float64 `json:"uptime_s"`
			DiskTotal uint64  `json:"disk_total_bytes"`
		} `json:"nodes"`
		Problems []string `json:"problems"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil || len(r.Nodes) != 4 {
		t.Fatalf("triad status --json: exit %d\n%s%s", code, out, errOut)
	}
	for _, n := range r.Nodes {
		if !n.Up || n.Version == "" || n.Uptime <= 0 || n.DiskTotal == 0 {
			t.Errorf("%+v: want it up, with its version, uptime and disk", n)
		}
	}

	// A watch from before the kill: it keeps asking the nodes it saw.
	watch := exec.Command(c.Bin, "status", "--addr", addr(0), "--watch", "200ms", "--json")
	var watchOut bytes.Buffer
	watch.Stdout = &watchOut
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	victim := addr(2)
	nodes[2].Crash(t)
	killed := time.Now()
	for {
		_, errOut, code = status()
		if code == 1 && strings.Contains(errOut, "node "+victim+" is down") {
			break
		}
		if time.Since(killed) > 10*time.Second {
			t.Fatalf("10 s after the kill, triad status exits %d and says %q; want 1 naming %s", code, errOut, victim)
		}
	}
	if lines := strings.Count(strings.TrimSpace(errOut), "\n"); lines != 0 {
		t.Errorf("the reason takes %d lines, want one: %q", lines+1, errOut)
	}
	t.Logf("named down %v after the kill: %s", time.Since(killed).Round(time.Millisecond), strings.TrimSpace(errOut))

	// Once the others drop the dead node from their lists, a new survey
	// still names it: they hold it dead (GetNodeInfo), for their dead
	// memory (30 s). And the watch, which saw it, names it too.
	c.WaitConsistent("after the kill", 30*time.Second)
	if _, errOut, code = status(); code != 1 || !strings.Contains(errOut, "node "+victim+" is down") {
		t.Errorf("a single triad status once the ring healed: exit %d, %q; want 1 naming %s", code, errOut, victim)
	}
	rounds := func() int { return strings.Count(watchOut.String(), "\n") }
	for n := rounds(); rounds() < n+2; {
		time.Sleep(100 * time.Millisecond) // two more rounds of the watch
	}
	watch.Process.Signal(os.Interrupt)
	err := watch.Wait()
	if e, ok := err.(*exec.ExitError); !ok || e.ExitCode() != 1 {
		t.Errorf("triad status --watch after the kill: %v, want exit 1", err)
	}
	lines := strings.Split(strings.TrimSpace(watchOut.String()), "\n")
	if !strings.Contains(lines[len(lines)-1], `"node `+victim+` is down`) {
		t.Errorf("--watch's last survey does not name %s:\n%s", victim, lines[len(lines)-1])
	}
}
