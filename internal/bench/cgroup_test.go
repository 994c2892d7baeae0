package bench

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
)

// A share of cores is a quota per 100 ms period; nothing, less than the
// kernel's 1 ms or more than the machine has is refused.
func TestQuotaMicros(t *testing.T) {
	for _, tc := range []struct {
		cores float64
		ncpu  int
		want  int64 // 0: refused
	}{
		{0.25, 2, 25000},
		{0.6, 2, 60000},
		{1, 1, 100000},
		{2, 2, 200000},
		{0.01, 2, 1000},
		{0.333333, 4, 33333},
		{0, 2, 0},
		{-1, 2, 0},
		{0.005, 2, 0},
		{2.5, 2, 0},
		{3, 2, 0},
	} {
		got, err := QuotaMicros(tc.cores, tc.ncpu)
		if tc.want == 0 {
			if err == nil {
				t.Errorf("QuotaMicros(%g, %d) = %d, want an error", tc.cores, tc.ncpu, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("QuotaMicros(%g, %d) = %d, %v; want %d", tc.cores, tc.ncpu, got, err, tc.want)
		}
	}
}

// The controller is found as the kernel lays it out: v1's cpu hierarchy
// wins over a v2 one; v2 only if it lists cpu; else a clear error. Make
// writes the quota files of its version (here into plain folders).
func TestFindCPUCgroups(t *testing.T) {
	mk := func(t *testing.T, files map[string]string) string {
		dir := t.TempDir()
		for name, body := range files {
			p := filepath.Join(dir, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	hybrid := mk(t, map[string]string{"cpu/cpu.cfs_quota_us": "-1\n", "cgroup.controllers": "cpu io memory\n"})
	v2 := mk(t, map[string]string{"cgroup.controllers": "cpuset cpu io\n"})
	none := mk(t, map[string]string{"cgroup.controllers": "cpuset io memory\n"})

	cg, err := findCPUCgroups(hybrid)
	if err != nil || cg.Version() != 1 || cg.root != filepath.Join(hybrid, "cpu") {
		t.Fatalf("hybrid: %+v, %v; want v1 at %s/cpu", cg, err, hybrid)
	}
	dir, err := cg.Make("n0", 0.25)
	if err != nil {
		t.Fatal(err)
	}
	checkFile(t, filepath.Join(dir, "cpu.cfs_period_us"), "100000")
	checkFile(t, filepath.Join(dir, "cpu.cfs_quota_us"), "25000")

	cg, err = findCPUCgroups(v2)
	if err != nil || cg.Version() != 2 {
		t.Fatalf("v2: %+v, %v; want v2", cg, err)
	}
	dir, err = cg.Make("n0", 0.25)
	if err != nil {
		t.Fatal(err)
	}
	checkFile(t, filepath.Join(dir, "cpu.max"), "25000 100000")
	if _, err := cg.Make("n1", 0); err == nil {
		t.Error("Make with 0 cores: no error")
	}

	if cg, err := findCPUCgroups(none); !errors.Is(err, ErrNoCPUCgroups) {
		t.Errorf("no cpu controller: %+v, %v; want ErrNoCPUCgroups", cg, err)
	}
}

func checkFile(t *testing.T, path, want string) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil || string(got) != want {
		t.Errorf("%s holds %q (%v), want %q", path, got, err, want)
	}
}

// As root, on a machine with a CPU controller: a process added to a cgroup
// is listed in it by /proc/PID/cgroup, and RemoveAll moves it back out and
// removes the cgroup while the process still runs.
func TestCPUCgroupsLive(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("CPU cgroups take root")
	}
	cg, err := OpenCPUCgroups()
	if errors.Is(err, ErrNoCPUCgroups) {
		t.Skipf("no CPU controller: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("triad-bench-test-%d", os.Getpid())
	dir, err := cg.Make(name, min(0.5, float64(runtime.NumCPU())))
	defer func() {
		if err := cg.RemoveAll(); err != nil {
			t.Error(err)
		}
	}()
	if errors.Is(err, os.ErrPermission) || errors.Is(err, syscall.EROFS) {
		t.Skipf("this machine's cgroups are not writable: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	sleep := exec.Command("sleep", "30")
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := sleep.Process.Kill(); err != nil {
			t.Error(err)
		}
		sleep.Wait()
	}()
	if err := cg.Add(dir, sleep.Process.Pid); err != nil {
		t.Fatal(err)
	}
	if !inCgroup(t, sleep.Process.Pid, name) {
		t.Fatalf("/proc/%d/cgroup does not name %s after Add", sleep.Process.Pid, name)
	}
	if err := cg.RemoveAll(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s still there after RemoveAll (%v)", dir, err)
	}
	if inCgroup(t, sleep.Process.Pid, name) {
		t.Errorf("/proc/%d/cgroup still names %s after RemoveAll", sleep.Process.Pid, name)
	}
}

// inCgroup says whether /proc/pid/cgroup places pid in a cgroup called
// name, in any hierarchy.
func inCgroup(t *testing.T, pid int, name string) bool {
	t.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasSuffix(line, "/"+name) {
			return true
		}
	}
	return false
}
