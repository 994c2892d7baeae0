package bench

import (
	"flag"
	"io"
	"slices"
	"strings"
	"testing"
)

// --nodes takes one count, as it always has, or a list of two or more,
// which makes a scaling run whose first count is also Nodes; counts and
// --cpu-per-node out of range are refused.
func TestDHashNodesFlag(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		nodes int
		scale []int
		back  string // what the flag reads back as
		bad   bool
	}{
		{nil, 8, nil, "8", false},
		{[]string{"--nodes", "3"}, 3, nil, "3", false},
		{[]string{"--nodes", "1,2,4,6"}, 1, []int{1, 2, 4, 6}, "1,2,4,6", false},
		{[]string{"--nodes", "6, 2"}, 6, []int{6, 2}, "6,2", false},
		{[]string{"--nodes", "4,"}, 4, nil, "4", false},
		{[]string{"--nodes", "1,2", "--cpu-per-node", "0.25"}, 1, []int{1, 2}, "1,2", false},
		{[]string{"--nodes", "1,x"}, 0, nil, "", true},
		{[]string{"--nodes", ","}, 0, nil, "", true},
		{[]string{"--nodes", "0,2"}, 0, nil, "", true},
		{[]string{"--nodes", "2,65"}, 0, nil, "", true},
		{[]string{"--cpu-per-node", "-1"}, 0, nil, "", true},
		{[]string{"--cpu-per-node", "1000"}, 0, nil, "", true},
	} {
		cfg := DefaultDHashConfig()
		fs := flag.NewFlagSet("bench dhash", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		cfg.RegisterFlags(fs)
		err := fs.Parse(tc.args)
		if err == nil {
			err = cfg.Validate()
		}
		if tc.bad {
			if err == nil {
				t.Errorf("%q: accepted (nodes %d, scale %v)", tc.args, cfg.Nodes, cfg.Scale)
			}
			continue
		}
		if err != nil || cfg.Nodes != tc.nodes || !slices.Equal(cfg.Scale, tc.scale) {
			t.Errorf("%q: nodes %d, scale %v, %v; want %d, %v", tc.args, cfg.Nodes, cfg.Scale, err, tc.nodes, tc.scale)
		}
		if got := fs.Lookup("nodes").Value.String(); got != tc.back {
			t.Errorf("%q: --nodes reads back %q, want %q", tc.args, got, tc.back)
		}
	}
}

// A scaling run stores the nodes' default k=2 copies unless its smallest
// count cannot hold them.
func TestScaleReplicas(t *testing.T) {
	for _, tc := range []struct {
		counts []int
		want   int
	}{{[]int{1, 2, 4, 6}, 1}, {[]int{2, 4, 6}, 2}, {[]int{6, 4, 2}, 2}, {[]int{4, 1}, 1}, {[]int{3, 8}, 2}} {
		if got := scaleReplicas(tc.counts); got != tc.want {
			t.Errorf("scaleReplicas(%v) = %d, want %d", tc.counts, got, tc.want)
		}
	}
}

// The scaling table has a line per count with its speed-up, says the
// durability and why k is below the default, and flags a count with
// failures.
func TestDHashScalingText(t *testing.T) {
	run := func(nodes int, put, get float64, failed int) DHashResult {
		return DHashResult{Nodes: nodes, Size: 65536, Concurrency: 16 * nodes,
			Put: PhaseResult{Done: 1000, Failed: failed, OpsPerS: put * 1e6 / 65536, MBps: put, Seconds: 1, NodeCPUSecs: []float64{0.2, 0.1}},
			Get: PhaseResult{Done: 1000, OpsPerS: get * 1e6 / 65536, MBps: get, Seconds: 1}}
	}
	s := DHashScaling{Size: 65536, Ops: 1000, CPUPerNode: 0.25, CgroupVersion: 1, Route: RouteAnyNode, Replicas: 1,
		Runs: []DHashResult{run(1, 80, 200, 0), run(6, 360, 500, 3)}, PutSpeedup: []float64{1, 4.5}, GetSpeedup: []float64{1, 2.5}}
	var b strings.Builder
	s.WriteText(&b)
	out := b.String()
	for _, want := range []string{
		"CPU cgroup of 0.25 cores (cgroup v1)",
		"sent to " + RouteAnyNode,
		"k=1 copies of every block",
		"1 node cannot hold the nodes' default of 2",
		"6 nodes: 3 puts and 0 gets failed",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	// nodes, k, in flight, put ops/s, put MB/s, get ops/s, get MB/s,
	// failed, speed-ups, node CPU µs/op, busiest node (2 fields), client.
	var rows [][]string
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) == 14 && (f[0] == "1" || f[0] == "6") {
			rows = append(rows, f)
		}
	}
	if len(rows) != 2 || rows[1][4] != "360.00" || rows[1][7] != "3" || rows[1][8] != "4.50x" || rows[1][9] != "2.50x" || rows[1][10] != "300" || rows[1][11] != "0.20" {
		t.Errorf("rows %q, want 1 and 6 nodes, the second 360.00 MB/s put, 3 failed, 4.50x and 2.50x, 300 µs/op, busiest 0.20 cores:\n%s", rows, out)
	}
}
