package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"triad/internal/e2e"

	"triad/internal/bench"
	"triad/internal/testutil"
)

// bench dhash measures what a client does by default: operations go to any
// node, which looks the key up; skipping the lookup takes a flag and says
// so. Every operation succeeds and every block read back is checked.
func TestBenchDHashRoutes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts node processes")
	}
	bin := e2e.Build(t)
	for _, tc := range []struct {
		flags []string
		route string
	}{
		{nil, "any node, with the lookup (a block of 16 KiB or more then moved to or from its holders)"},
		{[]string{"--holder-direct"}, "holder-direct, lookup skipped"},
	} {
		args := append([]string{"bench", "dhash", "--nodes", "3", "--ops", "200", "--size", "1000", "--dir", t.TempDir(), "--json"}, tc.flags...)
		out, err := exec.Command(bin, args...).Output()
		if err != nil {
			t.Fatalf("triad %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if !strings.Contains(lines[0], "sent to "+tc.route) {
			t.Errorf("%v: header %q does not name the route %q", tc.flags, lines[0], tc.route)
		}
		var res struct {
			Route    string
			Put, Get struct{ Done, Failed int }
		}
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
			t.Fatalf("%v: last line is not JSON: %v", tc.flags, err)
		}
		if res.Route != tc.route {
			t.Errorf("%v: route %q, want %q", tc.flags, res.Route, tc.route)
		}
		if res.Put.Done != 200 || res.Get.Done != 200 || res.Put.Failed+res.Get.Failed != 0 {
			t.Errorf("%v: put %+v get %+v, want 200 done and none failed each", tc.flags, res.Put, res.Get)
		}
	}
}

// bench dhash --tls --rounds 2 runs the same load plain and over mutual
// TLS (nodes with certificates from a CA made for the run) twice each, in
// turns, all without a failure, and prints what TLS costs.
func TestBenchDHashTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("starts node processes")
	}
	out, err := exec.Command(e2e.Build(t), "bench", "dhash", "--nodes", "3", "--ops", "200", "--size", "1000", "--dir", t.TempDir(), "--tls", "--rounds", "2", "--json").Output()
	if err != nil {
		t.Fatalf("bench dhash --tls: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	type run struct {
		TLS      bool
		Put, Get struct{ Done, Failed int }
	}
	var res struct {
		Rounds     int
		Plain, TLS []run
		PutCost    *float64 `json:"tls_cost_put"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
		t.Fatalf("last line is not JSON: %v", err)
	}
	if res.Rounds != 2 || len(res.Plain) != 2 || len(res.TLS) != 2 {
		t.Fatalf("rounds %d: %d plain runs and %d over TLS, want 2 each", res.Rounds, len(res.Plain), len(res.TLS))
	}
	for i, r := range append(res.Plain, res.TLS...) {
		if r.TLS != (i >= 2) || r.Put.Done != 200 || r.Get.Done != 200 || r.Put.Failed+r.Get.Failed != 0 {
			t.Errorf("run %d: tls %v, put %+v, get %+v", i, r.TLS, r.Put, r.Get)
		}
	}
	if res.PutCost == nil || !strings.Contains(string(out), "TLS cost, put: ") || !strings.Contains(string(out), "medians of 2 rounds") {
		t.Errorf("no TLS cost printed:\n%s", out)
	}
}

// bench nntp --cpu-pids prints what each article taken cost the server
// process, read from /proc: a server that took 2,000 articles used some
// CPU for them, and less than a second each.
func TestBenchNNTPCountsServerCPU(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a news server process")
	}
	news := e2e.StartNews(t, t.TempDir(), "--groups", "triad.bench")
	out, err := exec.Command(e2e.Build(t), "bench", "nntp", "--addr", news.Addr, "--articles", "2000",
		"--phases", "takethis,post", "--cpu-pids", strconv.Itoa(news.Pid()), "--json").Output()
	if err != nil {
		t.Fatalf("bench nntp: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var res struct {
		Phases []struct {
			Name        string  `json:"name"`
			Done        int     `json:"done"`
			ServerCPUUs float64 `json:"server_cpu_us"`
			ClientCPUUs float64 `json:"client_cpu_us"`
		} `json:"phases"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
		t.Fatalf("last line %q: %v", lines[len(lines)-1], err)
	}
	if len(res.Phases) != 2 {
		t.Fatalf("%d phases, want takethis and post: %s", len(res.Phases), out)
	}
	for _, p := range res.Phases {
		if p.Done == 0 || p.ServerCPUUs <= 0 || p.ServerCPUUs > 1e6 || p.ClientCPUUs <= 0 {
			t.Errorf("%s: %d done, server %.1f µs and client %.1f µs of CPU per article", p.Name, p.Done, p.ServerCPUUs, p.ClientCPUUs)
		}
	}
}

// bench flood on real processes: with marking, a flood far past the
// ring's capacity keeps the goodput at its unflooded peak, with nothing
// dropped, memory bounded and lookups fast; without control the same flood
// fills the queues, most requests are sent again, and less gets through.
// (On four nodes paths are short and the collapse mild; the benchmark's
// eight show it: docs/congestion.md.)
func TestBenchFlood(t *testing.T) {
	if testing.Short() {
		t.Skip("starts node processes")
	}
	bin := e2e.Build(t)
	run := func(scheme string) (map[string]any, error) {
		out, err := exec.Command(bin, "bench", "flood", "--nodes", "4", "--ramp", "40,160", "--measure", "3s", "--duration", "20s",
			"--scheme", scheme, "--dir", t.TempDir(), "--json").Output()
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		var res map[string]any
		if jerr := json.Unmarshal([]byte(lines[len(lines)-1]), &res); jerr != nil {
			t.Fatalf("%s: last line is not JSON (%v): %s", scheme, jerr, out)
		}
		t.Logf("%s: goodput %.2f of the peak %.0f, %v MiB, lookup max %v ms", scheme, res["goodput_over_peak"], res["peak_goodput"], res["max_rss_mb"], res["lookup_max_ms"])
		return res, err
	}
	m, err := run("marking")
	if err != nil || m["pass"] != true || m["goodput_over_peak"].(float64) < 0.8 || m["lookups_failed"].(float64) != 0 || m["queue_drops"].(float64) != 0 {
		t.Errorf("marking: %v, %v", err, m)
	}
	n, _ := run("none")
	// Less gets through: the flood's goodput itself, not each run's over
	// its own unflooded peak, since without control the ramp's peak is
	// already cut by the queues (176 against 280 in one run), which made
	// the ratios a coin toss on four nodes.
	goodput := func(r map[string]any) float64 {
		return r["goodput_over_peak"].(float64) * r["peak_goodput"].(float64)
	}
	if n["queue_drops"].(float64) == 0 || n["retransmit_fraction"].(float64) < 0.2 || goodput(n) >= goodput(m) {
		t.Errorf("without control the flood was carried as well as with marking (%.0f against %.0f a second): %v", goodput(n), goodput(m), n)
	}
}

// A benchmark killed outright (SIGKILL: no chance to stop its nodes) leaves
// none of its node processes running: the kernel kills them with it.
func TestBenchKilledLeavesNoNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("real processes")
	}
	cmd := exec.Command(e2e.Build(t), "bench", "dhash", "--nodes", "3", "--ops", "1000000", "--size", "1000", "--dir", t.TempDir())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var nodes []int
	if !testutil.Poll(30*time.Second, func() bool { nodes = childrenOf(t, cmd.Process.Pid); return len(nodes) >= 3 }) {
		t.Fatalf("the benchmark started %d of its 3 nodes in 30s", len(nodes))
	}
	t.Cleanup(func() {
		// If they outlived the benchmark, the test fails, and they are
		// not left running after it.
		for _, pid := range nodes {
			if alive(pid) && isTriadNode(pid) {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	testutil.WaitFor(t, 10*time.Second, "the node processes to exit after their benchmark was killed", func() bool { return !slices.ContainsFunc(nodes, alive) })
}

// childrenOf lists the processes whose parent is pid, from /proc.
func childrenOf(t *testing.T, pid int) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	var kids []int
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, err := bench.ReadProcStat(child); err == nil && st.PPID == pid {
			kids = append(kids, child)
		}
	}
	return kids
}

// alive reports whether pid is a process that has not exited (a zombie
// waiting for its new parent to reap it has exited).
func alive(pid int) bool {
	st, err := bench.ReadProcStat(pid)
	return err == nil && st.State != "Z"
}

// isTriadNode reports whether pid runs `triad node` (a check that the pid
// has not been reused since it was recorded).
func isTriadNode(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	args := strings.Split(string(b), "\x00")
	return err == nil && len(args) > 1 && args[1] == "node"
}

// bench dhash --nodes 1,2 runs once per count on a fresh cluster, at the
// same k (1: one node cannot hold 2 copies), with 16 operations in flight
// per node, and ends with the scaling table and its JSON line. As root,
// with --cpu-per-node, each node runs in a CPU cgroup, none of which is
// left behind.
func TestBenchDHashScaling(t *testing.T) {
	if testing.Short() {
		t.Skip("starts node processes")
	}
	args := []string{"bench", "dhash", "--nodes", "1,2", "--ops", "200", "--size", "1000", "--dir", t.TempDir(), "--json"}
	// In CPU cgroups where this machine can make them (root, with a cpu
	// controller); a container without one runs the same counts without.
	if cg, err := bench.OpenCPUCgroups(); err == nil {
		if _, err := cg.Make("probe", 0.5); err == nil {
			args = append(args, "--cpu-per-node", "0.5")
		}
		cg.RemoveAll()
	}
	cmd := exec.Command(e2e.Build(t), args...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("triad %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var res struct {
		Replicas   int
		CPUPerNode float64 `json:"cpu_per_node"`
		Route      string
		Runs       []struct {
			Nodes, Concurrency, Replicas int
			Put, Get                     struct{ Done, Failed int }
		}
		PutSpeedup []float64 `json:"put_speedup"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
		t.Fatalf("last line is not JSON: %v\n%s", err, out)
	}
	if res.Replicas != 1 || res.Route != "any node, with the lookup (a block of 16 KiB or more then moved to or from its holders)" || len(res.Runs) != 2 || len(res.PutSpeedup) != 2 || res.PutSpeedup[0] != 1 {
		t.Fatalf("scaling run: %+v; want k=1, any node, 2 runs and speed-ups from 1\n%s", res, out)
	}
	for i, r := range res.Runs {
		if r.Nodes != i+1 || r.Concurrency != 16*(i+1) || r.Replicas != 1 || r.Put.Done != 200 || r.Get.Done != 200 || r.Put.Failed+r.Get.Failed != 0 {
			t.Errorf("run %d: %+v; want %d nodes, %d in flight, k=1, 200 puts and gets, none failed", i, r, i+1, 16*(i+1))
		}
	}
	if !strings.Contains(string(out), "k=1 copies of every block") {
		t.Errorf("the table does not say the durability:\n%s", out)
	}
	if os.Geteuid() == 0 {
		if res.CPUPerNode != 0.5 {
			t.Errorf("cpu_per_node %v, want 0.5", res.CPUPerNode)
		}
		left, _ := filepath.Glob(fmt.Sprintf("/sys/fs/cgroup/*/triad-bench-%d-node*", cmd.Process.Pid))
		more, _ := filepath.Glob(fmt.Sprintf("/sys/fs/cgroup/triad-bench-%d-node*", cmd.Process.Pid))
		if len(left)+len(more) > 0 {
			t.Errorf("cgroups left behind: %v", append(left, more...))
		}
	}
}

// chaos picks its loop by --d2 or --tapestry before parsing the flags,
// whose sets differ; each loop's --help is its own.
func TestChaosPicksTheLoop(t *testing.T) {
	for arg, on := range map[string]bool{"--d2": true, "-d2": true, "--d2=true": true, "-d2=1": true,
		"d2": false, "--d2=false": false, "---d2": false, "--d2x": false} {
		if turnsOn("d2")(arg) != on {
			t.Errorf("%q turns --d2 on: %v, want %v", arg, !on, on)
		}
	}
	for args, want := range map[string]string{"--help": "Usage: triad chaos [--nodes 6]", "--d2 --help": "Usage: triad chaos --d2", "--help --tapestry=true": "Usage: triad chaos --tapestry"} {
		var out, errb strings.Builder
		if code := run(append([]string{"chaos"}, strings.Fields(args)...), &out, &errb); code != 0 || !strings.HasPrefix(errb.String(), want) {
			t.Errorf("chaos %s: exit %d, help %.80q, want %q", args, code, errb.String(), want)
		}
	}
}
