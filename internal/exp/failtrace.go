package exp

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"
)

// A FailureTrace is the failures a set of hosts goes through: which host
// goes down when, whether it comes back with its disk (a transient
// failure) or empty (a disk failure). Every host is up at time zero.
// UsenetDHT's durability experiment (§6.2) ran a year of PlanetLab's; see
// docs/maint.md for the file format ParseFailureTrace reads.
type FailureTrace struct {
	Hosts    int
	Duration time.Duration
	Events   []FailureEvent // in time order
}

// FailureEvent is one line of a trace.
type FailureEvent struct {
	At   time.Duration
	Host int
	Kind FailureKind
}

// FailureKind is what happens to a host.
type FailureKind uint8

const (
	Down FailureKind = iota // a transient failure begins: the host stops, its disk kept
	Up                      // the host runs again, on whatever disk it has
	Disk                    // the host stops and its disk is lost: it comes Up empty
)

var kindNames = [...]string{Down: "down", Up: "up", Disk: "disk"}

func (k FailureKind) String() string { return kindNames[k] }

// TraceStats sums a trace up, as the paper describes PlanetLab's.
type TraceStats struct {
	Hosts             int     `json:"hosts"`
	TransientFailures int     `json:"transient_failures"`
	DiskFailures      int     `json:"disk_failures"`
	HostsNoDisk       int     `json:"hosts_no_disk_failure"`
	HostsNoFailure    int     `json:"hosts_no_failure"`
	AvgOnline         float64 `json:"avg_online"`
	MaxDiskIn8h       int     `json:"max_disk_failures_in_8h"`
	Days              float64 `json:"days"`
}

// Stats counts the trace's failures and the hosts online on average.
func (t *FailureTrace) Stats() TraceStats {
	s := TraceStats{Hosts: t.Hosts, Days: t.Duration.Hours() / 24}
	disks := make([]int, t.Hosts)
	any := make([]bool, t.Hosts)
	up := make([]bool, t.Hosts)
	for i := range up {
		up[i] = true
	}
	online, last := t.Hosts, time.Duration(0)
	var area float64
	var diskTimes []time.Duration
	for _, e := range t.Events {
		area += float64(online) * float64(e.At-last)
		last = e.At
		switch e.Kind {
		case Down:
			s.TransientFailures++
			any[e.Host] = true
		case Disk:
			s.DiskFailures++
			disks[e.Host]++
			any[e.Host] = true
			diskTimes = append(diskTimes, e.At)
		}
		if now := e.Kind == Up; now != up[e.Host] {
			up[e.Host] = now
			if now {
				online++
			} else {
				online--
			}
		}
	}
	area += float64(online) * float64(t.Duration-last)
	if t.Duration > 0 {
		s.AvgOnline = area / float64(t.Duration)
	}
	for h := range t.Hosts {
		if disks[h] == 0 {
			s.HostsNoDisk++
		}
		if !any[h] {
			s.HostsNoFailure++
		}
	}
	for i := range diskTimes {
		j := i
		for j < len(diskTimes) && diskTimes[j]-diskTimes[i] < 8*time.Hour {
			j++
		}
		s.MaxDiskIn8h = max(s.MaxDiskIn8h, j-i)
	}
	return s
}

// TraceShape is what a synthetic trace is made to match.
type TraceShape struct {
	Hosts, Transient, Disk    int
	HostsNoDisk, HostsNoFail  int
	AvgOnline                 float64
	Duration                  time.Duration
	Burst                     int           // the most disk failures within BurstWindow
	BurstWindow               time.Duration // 8 hours
	DiskDowntime, MinDowntime time.Duration // mean time a failed disk's host stays down; shortest failure
}

// PlanetLabShape is the paper's trace (UsenetDHT §6.2, Figure 6): 632
// hosts over a year, 21,255 transient and 219 disk failures, 466 hosts
// with no disk failure and 56 with no failure at all, 490 online on
// average, up to 9 disk failures within 8 hours.
func PlanetLabShape() TraceShape {
	return TraceShape{Hosts: 632, Transient: 21255, Disk: 219, HostsNoDisk: 466, HostsNoFail: 56, AvgOnline: 490,
		Duration: 365 * 24 * time.Hour, Burst: 9, BurstWindow: 8 * time.Hour, DiskDowntime: 24 * time.Hour, MinDowntime: time.Minute}
}

// SyntheticTrace makes a trace with the counts of shape exactly and its
// average online hosts closely. Transient failures are spread over the
// hosts unevenly (a few fail very often, as on PlanetLab) with
// heavy-tailed downtimes; disk failures come as one burst of shape.Burst
// within the burst window, a few smaller bursts, and the rest at random.
func SyntheticTrace(shape TraceShape, seed uint64) (*FailureTrace, error) {
	if err := shape.check(); err != nil {
		return nil, err
	}
	r := rand.New(rand.NewPCG(seed, 0x7ace))
	order := r.Perm(shape.Hosts)
	failing := order[shape.HostsNoFail:] // hosts with some failure
	counts := transientCounts(r, shape, failing)
	down := downFractions(r, shape, failing, counts)
	t := &FailureTrace{Hosts: shape.Hosts, Duration: shape.Duration}
	ups := t.addTransient(r, shape, counts, down)
	if err := t.addDisk(r, shape, failing, ups); err != nil {
		return nil, err
	}
	for i := range t.Events {
		t.Events[i].At = t.Events[i].At.Truncate(time.Second) // as the file keeps it
	}
	slices.SortStableFunc(t.Events, func(a, b FailureEvent) int {
		return cmp.Or(cmp.Compare(a.At, b.At), cmp.Compare(a.Host, b.Host))
	})
	return t, nil
}

// check reports a shape no trace can have.
func (shape TraceShape) check() error {
	switch {
	case shape.Hosts < 2 || shape.HostsNoFail > shape.HostsNoDisk || shape.HostsNoDisk > shape.Hosts:
		return fmt.Errorf("trace: host counts do not fit")
	case shape.Hosts-shape.HostsNoDisk > shape.Disk || (shape.Disk > 0) != (shape.Hosts > shape.HostsNoDisk):
		return fmt.Errorf("trace: %d disk failures cannot cover %d hosts", shape.Disk, shape.Hosts-shape.HostsNoDisk)
	case shape.Transient < shape.Hosts-shape.HostsNoFail:
		return fmt.Errorf("trace: %d transient failures cannot cover %d hosts", shape.Transient, shape.Hosts-shape.HostsNoFail)
	case shape.AvgOnline <= 0 || shape.AvgOnline > float64(shape.Hosts) || shape.Duration <= 0:
		return fmt.Errorf("trace: bad online average or duration")
	}
	return nil
}

// transientCounts gives each host its number of transient failures: at
// least one per failing host, the rest by Pareto weights.
func transientCounts(r *rand.Rand, shape TraceShape, failing []int) []int {
	counts := make([]int, shape.Hosts)
	weights := make([]float64, len(failing))
	var sum float64
	for i := range weights {
		weights[i] = 1 / math.Pow(1-r.Float64(), 1/1.2) // Pareto, shape 1.2
		sum += weights[i]
	}
	left := shape.Transient - len(failing)
	for i, h := range failing {
		counts[h] = 1 + int(float64(left)*weights[i]/sum)
	}
	given := 0
	for _, c := range counts {
		given += c
	}
	for given < shape.Transient {
		counts[failing[r.IntN(len(failing))]]++
		given++
	}
	return counts
}

// downFractions gives each failing host the fraction of the time it is
// down, drawn at random and scaled so that the average online matches.
func downFractions(r *rand.Rand, shape TraceShape, failing, counts []int) []float64 {
	down := make([]float64, shape.Hosts)
	target := float64(shape.Hosts) - shape.AvgOnline
	var raw float64
	for _, h := range failing {
		down[h] = math.Exp(r.NormFloat64()) * math.Sqrt(float64(counts[h]))
		raw += down[h]
	}
	for range 20 { // scale, capping any host at 90% down
		var got float64
		for _, h := range failing {
			down[h] = min(0.9, down[h]*target/raw)
			got += down[h]
		}
		raw = got
		if math.Abs(got-target) < 1e-6 {
			break
		}
	}
	return down
}

// upPeriod is a time a host is up, from its start to its end.
type upPeriod struct{ from, to time.Duration }

// addTransient makes each host alternate up and down: counts[h] down
// periods of total length down[h]*Duration between counts[h]+1 up
// periods, both split at random (log-normal pieces: many short, a few
// long). It returns each host's up periods.
func (t *FailureTrace) addTransient(r *rand.Rand, shape TraceShape, counts []int, down []float64) [][]upPeriod {
	ups := make([][]upPeriod, shape.Hosts)
	for h := range shape.Hosts {
		n := counts[h]
		if n == 0 {
			ups[h] = []upPeriod{{0, shape.Duration}}
			continue
		}
		downs := split(r, n, time.Duration(down[h]*float64(shape.Duration)), shape.MinDowntime)
		upsLen := split(r, n+1, shape.Duration-sumDur(downs), shape.MinDowntime)
		at := time.Duration(0)
		for i := range n {
			ups[h] = append(ups[h], upPeriod{at, at + upsLen[i]})
			at += upsLen[i]
			t.Events = append(t.Events, FailureEvent{At: at, Host: h, Kind: Down})
			at += downs[i]
			t.Events = append(t.Events, FailureEvent{At: at, Host: h, Kind: Up})
		}
		ups[h] = append(ups[h], upPeriod{at, shape.Duration})
	}
	return ups
}

// addDisk places the disk failures: their times first (clustered), then
// for each a host that is up then and has room before its next failure.
// The first disk failures go to failing hosts that have not lost a disk
// yet, until enough hosts have; the rest to those hosts again (some fail
// twice or more).
func (t *FailureTrace) addDisk(r *rand.Rand, shape TraceShape, failing []int, ups [][]upPeriod) error {
	wantHosts := shape.Hosts - shape.HostsNoDisk
	diskHosts := make(map[int]bool)
	for _, at := range diskTimes(r, shape) {
		placed := false
		for try := 0; !placed && try < 48; try++ {
			fresh := len(diskHosts) < wantHosts
			for _, i := range r.Perm(len(failing)) {
				h := failing[i]
				if diskHosts[h] != !fresh {
					continue
				}
				k := slices.IndexFunc(ups[h], func(p upPeriod) bool { return p.from <= at && at < p.to })
				if k < 0 || ups[h][k].to-at < 2*shape.MinDowntime {
					continue
				}
				p := ups[h][k]
				d := min(time.Duration(r.ExpFloat64()*float64(shape.DiskDowntime)), p.to-at-shape.MinDowntime)
				d = max(d, shape.MinDowntime)
				t.Events = append(t.Events, FailureEvent{At: at, Host: h, Kind: Disk}, FailureEvent{At: at + d, Host: h, Kind: Up})
				ups[h] = slices.Replace(ups[h], k, k+1, upPeriod{p.from, at}, upPeriod{at + d, p.to})
				diskHosts[h] = true
				placed = true
				break
			}
			if placed {
				break
			}
			at += time.Duration(r.Int64N(int64(time.Hour))) // nobody up with room: a little later
		}
		if !placed {
			return fmt.Errorf("trace: no disk host up to fail at %v", at)
		}
	}
	if len(diskHosts) != wantHosts {
		return fmt.Errorf("trace: %d hosts lost a disk, not %d", len(diskHosts), wantHosts)
	}
	return nil
}

// split cuts total into n log-normal pieces of at least least each.
func split(r *rand.Rand, n int, total, least time.Duration) []time.Duration {
	w := make([]float64, n)
	var sum float64
	for i := range w {
		w[i] = math.Exp(1.5 * r.NormFloat64())
		sum += w[i]
	}
	spare := total - time.Duration(n)*least
	out := make([]time.Duration, n)
	for i := range w {
		out[i] = least + time.Duration(float64(max(spare, 0))*w[i]/sum)
	}
	return out
}

func sumDur(ds []time.Duration) time.Duration {
	var s time.Duration
	for _, d := range ds {
		s += d
	}
	return s
}

// diskTimes places shape.Disk failure times: a burst of shape.Burst within
// the burst window, bursts of 3 to 5, and the rest alone, keeping every
// window at or under shape.Burst.
func diskTimes(r *rand.Rand, shape TraceShape) []time.Duration {
	at := func() time.Duration {
		return time.Duration(r.Int64N(int64(shape.Duration - shape.BurstWindow - shape.DiskDowntime)))
	}
	var out []time.Duration
	burst := func(n int) {
		start := at()
		for range n {
			out = append(out, start+time.Duration(r.Int64N(int64(shape.BurstWindow))))
		}
	}
	burst(min(shape.Burst, shape.Disk))
	for len(out)+5 < shape.Disk/2 {
		burst(3 + r.IntN(3))
	}
	for len(out) < shape.Disk {
		out = append(out, at())
	}
	slices.Sort(out)
	return out
}

// WriteTo writes the trace in the text format ParseFailureTrace reads.
func (t *FailureTrace) WriteTo(w io.Writer) (int64, error) {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "# triad failure trace: seconds host event\nhosts %d\nduration %d\n", t.Hosts, int64(t.Duration.Seconds()))
	for _, e := range t.Events {
		fmt.Fprintf(bw, "%d %d %s\n", int64(e.At.Seconds()), e.Host, e.Kind)
	}
	return 0, bw.Flush()
}

// ParseFailureTrace reads a trace: a "hosts N" line and a "duration S"
// line, then one event per line, "SECONDS HOST down|up|disk", in time
// order; "#" starts a comment. A host must be up to go down or lose its
// disk, and down to come up.
func ParseFailureTrace(rd io.Reader) (*FailureTrace, error) {
	t := &FailureTrace{}
	sc := bufio.NewScanner(rd)
	var up []bool
	line := 0
	for sc.Scan() {
		line++
		text, _, _ := strings.Cut(sc.Text(), "#")
		f := strings.Fields(text)
		if len(f) == 0 {
			continue
		}
		bad := func(format string, args ...any) error {
			return fmt.Errorf("trace line %d: %s", line, fmt.Sprintf(format, args...))
		}
		switch {
		case f[0] == "hosts" && len(f) == 2:
			n, err := strconv.Atoi(f[1])
			if err != nil || n < 1 || n > 1<<16 || t.Hosts != 0 {
				return nil, bad("want one \"hosts N\" with 1 <= N <= 65536")
			}
			t.Hosts = n
			up = make([]bool, n)
			for i := range up {
				up[i] = true
			}
		case f[0] == "duration" && len(f) == 2:
			s, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil || s < 1 || s > 10*365*86400 {
				return nil, bad("want \"duration SECONDS\", at most ten years")
			}
			t.Duration = time.Duration(s) * time.Second
		case len(f) == 3:
			if t.Hosts == 0 || t.Duration == 0 {
				return nil, bad("events before the hosts and duration lines")
			}
			s, err1 := strconv.ParseInt(f[0], 10, 64)
			h, err2 := strconv.Atoi(f[1])
			kind := slices.Index(kindNames[:], f[2])
			if err1 != nil || err2 != nil || kind < 0 {
				return nil, bad("want \"SECONDS HOST down|up|disk\"")
			}
			at := time.Duration(s) * time.Second
			if h < 0 || h >= t.Hosts || at < 0 || at > t.Duration {
				return nil, bad("host %d or time %ds out of range", h, s)
			}
			if n := len(t.Events); n > 0 && at < t.Events[n-1].At {
				return nil, bad("events out of time order")
			}
			if (FailureKind(kind) == Up) == up[h] {
				return nil, bad("host %d is already %s", h, map[bool]string{true: "up", false: "down"}[up[h]])
			}
			up[h] = FailureKind(kind) == Up
			t.Events = append(t.Events, FailureEvent{At: at, Host: h, Kind: FailureKind(kind)})
		default:
			return nil, bad("cannot read %q", sc.Text())
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if t.Hosts == 0 || t.Duration == 0 {
		return nil, fmt.Errorf("trace: no hosts or duration line")
	}
	return t, nil
}
