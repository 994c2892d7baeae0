package d2_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"triad/internal/e2e"

	"triad/internal/bench"
)

// TestBenchFSTasks: `triad bench fs --no-copy` on 6 real `triad node --d2`
// processes writes a few directories of Go's src/encoding under both
// placements and reads each back as a task: under block placement a
// task's reads go to more nodes and replica groups than under D2's, the
// lookups are counted from the gateway's metrics page, and no failure.
func TestBenchFSTasks(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 6 node processes")
	}
	d := e2e.StartDHash(t, 5, "--d2", "--d2-stabilize", "1s")
	ports := e2e.FreePorts(t, 2)
	gw := d.StartWith("node5", fmt.Sprintf("127.0.0.1:%d", ports[0]), filepath.Join(d.Dir, "data5"), d.Nodes[0].Addr, 1,
		"--d2", "--d2-stabilize", "1s", "--http", fmt.Sprintf("127.0.0.1:%d", ports[1]))
	d.Nodes = append(d.Nodes, gw)
	waitD2Ring(t, d, 150*time.Second)

	var stdout, stderr bytes.Buffer
	cmd := exec.Command(d.Bin, "bench", "fs", "--no-copy", "--addr", gw.Addr, "--tasks", "6", "--json",
		"--tree", filepath.Join(goroot(t), "src", "encoding"), "--metrics", fmt.Sprintf("http://127.0.0.1:%d/metrics", ports[1]))
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("triad bench fs: %v\n%s\n%s", err, stdout.String(), stderr.String())
	}
	t.Logf("triad bench fs:\n%s", stdout.String())
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	var res bench.FSResult
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
		t.Fatalf("the last line is not the JSON result: %v", err)
	}
	if len(res.Tasks) != 2 || res.Tasks[0].Placement != "d2" || res.Tasks[1].Placement != "block" {
		t.Fatalf("tasks %+v, want d2's then block's", res.Tasks)
	}
	d2, block := res.Tasks[0], res.Tasks[1]
	for _, r := range res.Tasks {
		if r.Tasks != 6 || r.Blocks < 2*r.Tasks || r.NodesPerTask < 1 || r.LookupMsgsPerTask < 0 {
			t.Errorf("%s: %+v", r.Placement, r)
		}
	}
	if block.NodesPerTask < 2*d2.NodesPerTask || block.GroupsPerTask < 2*d2.GroupsPerTask {
		t.Errorf("block placement: %.1f nodes and %.1f replica groups per task; d2: %.1f and %.1f; want block at least twice d2's",
			block.NodesPerTask, block.GroupsPerTask, d2.NodesPerTask, d2.GroupsPerTask)
	}
}
