package bench

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"syscall"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// What a phase of `triad bench dhash --explain` cost per operation, end
// to end: the kernel's counts of the processes (CPU time, syscalls,
// context switches, from /proc), the nodes' own counters (frames sent,
// lookup hops, the block store's file syncs, heap allocations, from their
// /metrics),
// and what the least a put needs is to compare them with (floor.go).

// Explain is one phase's use per operation done: the nodes' summed, and
// apart this load generator's.
type Explain struct {
	Nodes  Cost `json:"nodes"`
	Client Cost `json:"client"`
}

// Cost is processes' use per operation. FramesSent, LookupHops and Syncs
// are the nodes' counters; the load generator has none and leaves them 0.
type Cost struct {
	CPUMicros     float64 `json:"cpu_us"`
	SysMicros     float64 `json:"sys_cpu_us"`           // the part in the kernel: syscalls, and the interrupts they raise
	ReadSyscalls  float64 `json:"read_syscalls"`        // /proc/PID/io syscr: read, pread, readv...
	WriteSyscalls float64 `json:"write_syscalls"`       // syscw: write, pwrite, writev...
	Wakeups       float64 `json:"voluntary_switches"`   // a thread blocked, then was woken
	Preemptions   float64 `json:"involuntary_switches"` // a thread that could run was taken off its core
	FramesSent    float64 `json:"frames_sent,omitempty"`
	LookupHops    float64 `json:"lookup_hops,omitempty"` // a lookup forwarded to another node: a hop
	Syncs         float64 `json:"syncs,omitempty"`       // the block store's file syncs (fdatasync)
	Mallocs       float64 `json:"mallocs"`
}

// usage is what processes have used so far.
type usage struct {
	cpu, sys       time.Duration // sys: the kernel's part of cpu
	syscr, syscw   uint64
	vol, invol     uint64 // context switches, over all threads
	frames, hops   uint64
	syncs, mallocs uint64
}

func (u usage) plus(v usage) usage {
	return usage{u.cpu + v.cpu, u.sys + v.sys, u.syscr + v.syscr, u.syscw + v.syscw, u.vol + v.vol, u.invol + v.invol,
		u.frames + v.frames, u.hops + v.hops, u.syncs + v.syncs, u.mallocs + v.mallocs}
}

// since is what was used from then to u. A count that went down (a thread
// that ended took its switches with it) is 0.
func (u usage) since(then usage) usage {
	d := func(a, b uint64) uint64 { return a - min(a, b) }
	return usage{max(u.cpu-then.cpu, 0), max(u.sys-then.sys, 0), d(u.syscr, then.syscr), d(u.syscw, then.syscw), d(u.vol, then.vol), d(u.invol, then.invol),
		d(u.frames, then.frames), d(u.hops, then.hops), d(u.syncs, then.syncs), d(u.mallocs, then.mallocs)}
}

// per is u per operation of ops.
func (u usage) per(ops int) Cost {
	n := float64(max(ops, 1))
	return Cost{CPUMicros: float64(u.cpu.Microseconds()) / n, SysMicros: float64(u.sys.Microseconds()) / n, ReadSyscalls: float64(u.syscr) / n, WriteSyscalls: float64(u.syscw) / n,
		Wakeups: float64(u.vol) / n, Preemptions: float64(u.invol) / n, FramesSent: float64(u.frames) / n, LookupHops: float64(u.hops) / n,
		Syncs: float64(u.syncs) / n, Mallocs: float64(u.mallocs) / n}
}

// procFields reads the named "name: count" lines of a /proc file such as
// /proc/PID/io or /proc/PID/status, in the order asked; a name missing or
// not followed by a count is an error.
func procFields(raw []byte, names ...string) ([]uint64, error) {
	vals := make([]uint64, len(names))
	seen := make([]bool, len(names))
	for line := range bytes.Lines(raw) {
		k, v, ok := bytes.Cut(line, []byte(":"))
		i := slices.Index(names, string(k))
		if !ok || i < 0 {
			continue
		}
		n, err := strconv.ParseUint(string(bytes.TrimSpace(v)), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: not a count: %q", k, bytes.TrimSpace(v))
		}
		vals[i], seen[i] = n, true
	}
	if i := slices.Index(seen, false); i >= 0 {
		return nil, fmt.Errorf("no %s", names[i])
	}
	return vals, nil
}

// readProcUse reads a process's syscalls (/proc/PID/io) and its threads'
// context switches (/proc/PID/task/*/status); pid is a number or "self".
// A thread that ends meanwhile is left out.
func readProcUse(pid string) (usage, error) {
	dir := "/proc/" + pid
	raw, err := os.ReadFile(dir + "/io")
	if err != nil {
		return usage{}, err
	}
	sys, err := procFields(raw, "syscr", "syscw")
	if err != nil {
		return usage{}, fmt.Errorf("%s/io: %w", dir, err)
	}
	u := usage{syscr: sys[0], syscw: sys[1]}
	threads, err := filepath.Glob(dir + "/task/*/status")
	if err != nil {
		return u, err
	}
	for _, t := range threads {
		raw, err := os.ReadFile(t)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
			continue
		}
		if err != nil {
			return u, err
		}
		sw, err := procFields(raw, "voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")
		if err != nil {
			return u, fmt.Errorf("%s: %w", t, err)
		}
		u.vol, u.invol = u.vol+sw[0], u.invol+sw[1]
	}
	return u, nil
}

// selfUsage is this process's use so far: getrusage's CPU time, what
// /proc/self counts, and the Go runtime's heap allocations.
func selfUsage() (usage, error) {
	u, err := readProcUse("self")
	if err != nil {
		return u, err
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	u.cpu, u.sys = selfCPUSplit()
	u.mallocs = ms.Mallocs
	return u, nil
}

// scrape reads and parses the metrics page of the daemon serving HTTP at
// addr.
func scrape(hc *http.Client, addr string) (map[string]*dto.MetricFamily, error) {
	resp, err := hc.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s/metrics: %s", addr, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	return parser.TextToMetricFamilies(io.LimitReader(resp.Body, 8<<20))
}

// counterValue is the counter name (without labels) of fams, or the sum
// of the histogram name; false if there is neither.
func counterValue(fams map[string]*dto.MetricFamily, name string) (uint64, bool) {
	f := fams[name]
	switch {
	case f == nil || len(f.Metric) == 0:
		return 0, false
	case f.Metric[0].Counter != nil:
		return uint64(f.Metric[0].Counter.GetValue()), true
	case f.Metric[0].Histogram != nil:
		return uint64(f.Metric[0].Histogram.GetSampleSum()), true
	}
	return 0, false
}

// nodeCounters are the counters Explain reads from a node's /metrics:
// frames sent, lookup hops (a histogram's sum), file syncs, heap
// allocations, in usage's order.
var nodeCounters = [...]string{"triad_net_frames_sent_total", "triad_ring_lookup_hops", "triad_store_syncs_total", "go_memstats_mallocs_total"}

// scrapeNodes sums the nodes' nodeCounters.
func (c *cluster) scrapeNodes() (usage, error) {
	var u usage
	hc := http.Client{Timeout: 5 * time.Second}
	for _, a := range c.http {
		fams, err := scrape(&hc, a)
		if err != nil {
			return u, fmt.Errorf("bench: the metrics of the node at %s: %w", a, err)
		}
		var v [len(nodeCounters)]uint64
		for i, name := range nodeCounters {
			var ok bool
			if v[i], ok = counterValue(fams, name); !ok {
				return u, fmt.Errorf("bench: the node at %s has no %s", a, name)
			}
		}
		u = u.plus(usage{frames: v[0], hops: v[1], syncs: v[2], mallocs: v[3]})
	}
	return u, nil
}

// procNodes sums the nodes' CPU time, syscalls and context switches.
func (c *cluster) procNodes() (usage, error) {
	var u usage
	for _, p := range c.nodes {
		st, err := ReadProcStat(p.Pid())
		if err != nil {
			return u, err
		}
		pu, err := readProcUse(strconv.Itoa(p.Pid()))
		if err != nil {
			return u, err
		}
		pu.cpu, pu.sys = st.CPU, st.Sys
		u = u.plus(pu)
	}
	return u, nil
}

// explainMeter counts a phase's use from its start. The nodes' metrics
// are scraped before their /proc and this process's are read, and after
// again, so that neither /proc count holds the scrapes.
type explainMeter struct {
	c                    *cluster
	metrics, procs, self usage
}

// startExplain takes the counts at the start of a phase.
func (c *cluster) startExplain() (*explainMeter, error) {
	m := &explainMeter{c: c}
	var err error
	if m.metrics, err = c.scrapeNodes(); err != nil {
		return nil, err
	}
	if m.procs, err = c.procNodes(); err != nil {
		return nil, err
	}
	if m.self, err = selfUsage(); err != nil {
		return nil, err
	}
	return m, nil
}

// stop is the use since startExplain per operation of ops.
func (m *explainMeter) stop(ops int) (*Explain, error) {
	self, err := selfUsage()
	if err != nil {
		return nil, err
	}
	procs, err := m.c.procNodes()
	if err != nil {
		return nil, err
	}
	metrics, err := m.c.scrapeNodes()
	if err != nil {
		return nil, err
	}
	nodes := procs.since(m.procs).plus(metrics.since(m.metrics))
	return &Explain{Nodes: nodes.per(ops), Client: self.since(m.self).per(ops)}, nil
}
