package bench

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// CPU cgroups give each node process of a benchmark a machine's worth of
// CPU of its own (bench dhash --cpu-per-node): a quota of C cores per
// 100 ms period, as scripts/compare-inn.sh gives each site. The cgroup v1
// cpu controller (cpu.cfs_quota_us) is used where it is mounted, else
// v2's cpu.max. It takes root.

// cgroupRoot is where the cgroup file systems are mounted.
const cgroupRoot = "/sys/fs/cgroup"

// cfsPeriodMicros is the quota's period: 100 ms, the kernel's default.
const cfsPeriodMicros = 100000

// minQuotaMicros is the least quota the kernel takes (1 ms a period).
const minQuotaMicros = 1000

// QuotaMicros is the CPU time per 100 ms period that cores cores get, in
// microseconds: the value of cpu.cfs_quota_us (v1) or of cpu.max's first
// field (v2). It refuses a share under 0.01 cores (the kernel's least
// quota) and more cores than ncpu, which could not throttle anything.
func QuotaMicros(cores float64, ncpu int) (int64, error) {
	if math.IsNaN(cores) || cores <= 0 || cores > float64(ncpu) {
		return 0, fmt.Errorf("bench: %g cores per process: want more than 0 and at most this machine's %d", cores, ncpu)
	}
	q := int64(math.Round(cores * cfsPeriodMicros))
	if q < minQuotaMicros {
		return 0, fmt.Errorf("bench: %g cores per process: want at least %g (a quota of 1 ms per 100 ms)", cores, float64(minQuotaMicros)/cfsPeriodMicros)
	}
	return q, nil
}

// CPUCgroups makes CPU cgroups under one controller's root and removes
// them again. It is not safe for concurrent use.
type CPUCgroups struct {
	root string   // the controller's root cgroup
	v2   bool     // cpu.max rather than cpu.cfs_*
	made []string // cgroups made, in order
}

// ErrNoCPUCgroups says this machine offers no cgroup CPU controller that
// this process may use.
var ErrNoCPUCgroups = errors.New("bench: no CPU cgroups")

// OpenCPUCgroups finds the CPU controller of this machine: v1's at
// /sys/fs/cgroup/cpu, else v2's at /sys/fs/cgroup (enabling it for the
// root's children). It fails unless this process runs as root.
func OpenCPUCgroups() (*CPUCgroups, error) {
	if uid := os.Geteuid(); uid != 0 {
		return nil, fmt.Errorf("%w: CPU cgroups take root (this is uid %d): run as root, or without --cpu-per-node", ErrNoCPUCgroups, uid)
	}
	cg, err := findCPUCgroups(cgroupRoot)
	if err != nil {
		return nil, err
	}
	if cg.v2 {
		if err := writeFile(filepath.Join(cg.root, "cgroup.subtree_control"), "+cpu"); err != nil {
			return nil, fmt.Errorf("%w: enabling the v2 cpu controller: %v", ErrNoCPUCgroups, err)
		}
	}
	return cg, nil
}

// findCPUCgroups looks for the CPU controller under mount: v1's cpu
// hierarchy first, then a v2 hierarchy that lists cpu.
func findCPUCgroups(mount string) (*CPUCgroups, error) {
	v1 := filepath.Join(mount, "cpu")
	if _, err := os.Stat(filepath.Join(v1, "cpu.cfs_quota_us")); err == nil {
		return &CPUCgroups{root: v1}, nil
	}
	ctl, err := os.ReadFile(filepath.Join(mount, "cgroup.controllers"))
	if err == nil && hasField(string(ctl), "cpu") {
		return &CPUCgroups{root: mount, v2: true}, nil
	}
	return nil, fmt.Errorf("%w: neither v1's %s/cpu.cfs_quota_us nor cpu in v2's %s/cgroup.controllers", ErrNoCPUCgroups, v1, mount)
}

func hasField(s, f string) bool {
	for _, x := range strings.Fields(s) {
		if x == f {
			return true
		}
	}
	return false
}

// Version is 1 or 2, the cgroup interface in use.
func (c *CPUCgroups) Version() int {
	if c.v2 {
		return 2
	}
	return 1
}

// Make creates the cgroup name under the controller's root with a quota
// of cores cores, and returns its folder. RemoveAll removes it.
func (c *CPUCgroups) Make(name string, cores float64) (string, error) {
	quota, err := QuotaMicros(cores, runtime.NumCPU())
	if err != nil {
		return "", err
	}
	dir := filepath.Join(c.root, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", fmt.Errorf("bench: making cgroup: %w", err)
	}
	c.made = append(c.made, dir)
	if c.v2 {
		return dir, writeFile(filepath.Join(dir, "cpu.max"), fmt.Sprintf("%d %d", quota, cfsPeriodMicros))
	}
	if err := writeFile(filepath.Join(dir, "cpu.cfs_period_us"), strconv.Itoa(cfsPeriodMicros)); err != nil {
		return dir, err
	}
	return dir, writeFile(filepath.Join(dir, "cpu.cfs_quota_us"), strconv.FormatInt(quota, 10))
}

// Add moves process pid (all its threads) into the cgroup at dir.
func (c *CPUCgroups) Add(dir string, pid int) error {
	return writeFile(filepath.Join(dir, "cgroup.procs"), strconv.Itoa(pid))
}

// RemoveAll moves any process still in the cgroups made back to the root
// cgroup and removes them, the last made first.
func (c *CPUCgroups) RemoveAll() error {
	var errs []error
	for i := len(c.made) - 1; i >= 0; i-- {
		dir := c.made[i]
		if err := c.remove(dir); err != nil {
			errs = append(errs, err)
		}
	}
	c.made = nil
	return errors.Join(errs...)
}

// rmdirTries bounds the retries of removing a cgroup whose last process is
// still exiting (EBUSY), 10 ms apart.
const rmdirTries = 50

func (c *CPUCgroups) remove(dir string) error {
	for try := 0; ; try++ {
		if err := c.evacuate(dir); err != nil {
			return err
		}
		err := os.Remove(dir)
		if err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if try == rmdirTries {
			return fmt.Errorf("bench: removing cgroup: %w", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// evacuate moves the processes listed in dir to the root cgroup. One that
// has exited meanwhile (ESRCH) needs no moving.
func (c *CPUCgroups) evacuate(dir string) error {
	raw, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("bench: listing cgroup: %w", err)
	}
	for _, pid := range strings.Fields(string(raw)) {
		err := writeFile(filepath.Join(c.root, "cgroup.procs"), pid)
		if err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("bench: moving process %s out of %s: %w", pid, dir, err)
		}
	}
	return nil
}

// writeFile writes s to an existing cgroup file (or makes it, in a test's
// folder) in one write, as the kernel wants.
func writeFile(path, s string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	if _, err := f.WriteString(s); err != nil {
		f.Close()
		return fmt.Errorf("bench: writing %q to %s: %w", s, path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("bench: writing %q to %s: %w", s, path, err)
	}
	return nil
}
