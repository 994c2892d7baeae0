package exp

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"triad/internal/d2/key"
	"triad/internal/d2/workload"
)

// d2SimConfig is one run of the availability and balance simulator (§8.1):
// event-driven, routing idealized (a block's holders are its r successors
// on the true ring), a model of D2's balancing rather than the node code.
type d2SimConfig struct {
	Seed  uint64 // node IDs
	Hosts int
	// Positions, if set, are the hosts' ring positions at the start (one
	// per host); else they are random from Seed.
	Positions []key.Key
	Replicas  int
	Placement d2Placement
	Balance   bool
	Pointers  bool
	// Probe interval, threshold t, pointer stabilization time and the
	// per-node migration cap (§6, §8.1).
	Probe       time.Duration
	T           float64
	PointerHold time.Duration
	MigrateBps  int64
	// Warmup runs balancing alone over the initial volumes; then the
	// users' trace (Workload.Duration long) and the failures run.
	Warmup   time.Duration
	Workload workload.Config
	Manifest *workload.Manifest
	// Background volumes, each of BackgroundBytes, are stored but never
	// accessed: the other users' data that fills the hosts to the paper's
	// load (83 GB over 247 hosts, about 336 MB each). They are kept as
	// 1 MB extents, in key order within each volume.
	Background      int
	BackgroundBytes int64
	Failures        *FailureTrace
	Inters          []time.Duration
}

// d2SimResult is what one run measured after warm-up.
type d2SimResult struct {
	Tasks, Failed []int     // per inter
	Groups        []float64 // mean replica groups (distinct primaries) per task, per inter
	Hourly        []float64 // each hour's std/mean of total storage per host
	Ratios        []float64 // each hour's max/min primary load
	Migrated      int64     // bytes moved by balancing after warm-up (every copy)
	Written       int64     // bytes written by users after warm-up (every copy)
	Moves         int
	// The same during warm-up, and the bytes of the initial volumes
	// (every copy).
	WarmupMigrated, Initial int64
	WarmupMoves             int
	Violations              []string
}

// d2Task is a task in the making: one user's accesses less than inter
// apart, at most MaxTask long.
type d2Task struct {
	start, last time.Duration
	open        bool
	failed      bool
	groups      []int
}

type d2Sim struct {
	cfg   d2SimConfig
	rng   *rand.Rand
	ring  d2Ring
	index *blockIndex
	now   time.Duration
	tasks [][]d2Task // user, inter
	res   d2SimResult
}

// runD2Sim runs one simulation.
func runD2Sim(cfg d2SimConfig) (d2SimResult, error) {
	s := &d2Sim{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, 0xd2))}
	s.res.Tasks = make([]int, len(cfg.Inters))
	s.res.Failed = make([]int, len(cfg.Inters))
	s.res.Groups = make([]float64, len(cfg.Inters))
	s.tasks = make([][]d2Task, cfg.Workload.Users)
	for u := range s.tasks {
		s.tasks[u] = make([]d2Task, len(cfg.Inters))
	}
	s.ring.hosts = make([]d2Host, cfg.Hosts)
	for h := range s.ring.hosts {
		for i := 0; i < len(s.ring.hosts[h].pos); i += 8 {
			v := s.rng.Uint64()
			for j := range 8 {
				s.ring.hosts[h].pos[i+j] = byte(v >> (8 * j))
			}
		}
		if cfg.Positions != nil {
			s.ring.hosts[h].pos = cfg.Positions[h]
		}
		s.ring.hosts[h].up = true
		s.ring.order = append(s.ring.order, h)
	}
	s.ring.sort()
	tr, err := workload.NewTrace(cfg.Manifest, cfg.Workload)
	if err != nil {
		return d2SimResult{}, err
	}
	s.insertVolumes(tr)
	s.warmup()
	if err := s.replay(tr); err != nil {
		return d2SimResult{}, err
	}
	s.finish()
	return s.res, nil
}

// insertVolumes stores every user's copy of the tree at time zero.
func (s *d2Sim) insertVolumes(tr *workload.Trace) {
	var es []d2Entry
	for u := range s.cfg.Workload.Users {
		fs := tr.FS(u)
		for i := range fs.Nodes {
			for b := range fs.Blocks(i) {
				es = append(es, d2Entry{pos: placePosition(s.cfg.Placement, fs.BlockKey(i, b)), bytes: fs.BlockBytesOf(i, b)})
			}
		}
	}
	es = s.background(es)
	for _, e := range es {
		s.res.Initial += int64(e.bytes) * int64(s.cfg.Replicas)
	}
	s.index = newBlockIndex(es)
	s.recountLoads()
}

// background appends the background volumes' data to es: 1 MB extents
// in key order within each volume; under file placement a file over
// 64 KB is a unit of its own instead, as it would be there.
func (s *d2Sim) background(es []d2Entry) []d2Entry {
	const extent, bigFile = 1 << 20, 64 << 10
	for v := range s.cfg.Background {
		root := key.Root(workload.VolumeFor(s.cfg.Workload.Seed, s.cfg.Workload.Users+v))
		n := uint32(0)
		add := func(bytes int64) {
			n++
			k := root
			binary.BigEndian.PutUint32(k[20:], n)
			es = append(es, d2Entry{pos: placePosition(s.cfg.Placement, k), bytes: int32(bytes)})
		}
		rest := s.cfg.BackgroundBytes
		if s.cfg.Placement == placeFile {
			for _, e := range s.cfg.Manifest.Entries {
				if e.Size > bigFile && e.Size < 1<<31 {
					add(e.Size)
					rest -= e.Size
				}
			}
		}
		for ; rest > 0; rest -= extent {
			add(min(extent, rest))
		}
	}
	return es
}

// recountLoads sets every host's primary load from the index.
func (s *d2Sim) recountLoads() {
	for h := range s.ring.hosts {
		s.ring.hosts[h].load = 0
	}
	for _, c := range s.index.chunks {
		for _, e := range c {
			s.ring.hosts[s.ring.primary(e.pos)].load += int64(e.bytes)
		}
	}
}

// checkLoads compares the kept loads with a recount, as the invariant
// checker of this model.
func (s *d2Sim) checkLoads(when string) {
	kept := make([]int64, len(s.ring.hosts))
	for h := range kept {
		kept[h] = s.ring.hosts[h].load
	}
	s.recountLoads()
	for h, l := range kept {
		if l != s.ring.hosts[h].load {
			s.res.Violations = append(s.res.Violations, fmt.Sprintf("%s: host %d kept load %d, holds %d", when, h, l, s.ring.hosts[h].load))
		}
	}
}

// warmup runs balancing alone for cfg.Warmup.
func (s *d2Sim) warmup() {
	for s.now = 0; s.now < s.cfg.Warmup; s.now += s.cfg.Probe {
		s.probeAll()
	}
	s.checkLoads("after warm-up")
	s.res.WarmupMigrated, s.res.WarmupMoves = s.res.Migrated, s.res.Moves
	s.res.Migrated, s.res.Moves = 0, 0
}

// replay runs the trace after warm-up, with failures, probes and hourly
// samples between its accesses.
func (s *d2Sim) replay(tr *workload.Trace) error {
	base := s.cfg.Warmup
	nextProbe, nextHour := base, base+time.Hour
	var fails []FailureEvent
	if s.cfg.Failures != nil {
		fails = s.cfg.Failures.Events
	}
	a, more := tr.Next()
	end := base + s.cfg.Workload.Duration
	for {
		at := end
		if more {
			at = base + a.At
		}
		for {
			switch {
			case len(fails) > 0 && base+fails[0].At <= min(at, nextProbe, nextHour):
				s.now = base + fails[0].At
				s.fail(fails[0])
				fails = fails[1:]
				continue
			case nextProbe <= min(at, nextHour):
				s.now = nextProbe
				s.probeAll()
				nextProbe += s.cfg.Probe
				continue
			case nextHour <= at:
				s.now = nextHour
				s.sample()
				nextHour += time.Hour
				continue
			}
			break
		}
		if !more {
			return nil
		}
		s.now = at
		s.access(a)
		a, more = tr.Next()
	}
}

// fail applies one failure event: the host stops or runs again, its
// position kept (transient failures; a disk failure is treated as one, its
// data assumed restored when it is back).
func (s *d2Sim) fail(e FailureEvent) {
	if e.Host < len(s.ring.hosts) {
		s.ring.hosts[e.Host].up = e.Kind == Up
	}
}

// access applies a block access and adds it to its user's tasks.
func (s *d2Sim) access(a workload.Access) {
	pos := placePosition(s.cfg.Placement, a.Key)
	switch a.Op {
	case workload.Write:
		old := s.index.put(d2Entry{pos: pos, bytes: a.Bytes})
		s.ring.hosts[s.ring.primary(pos)].load += int64(a.Bytes - old)
		s.res.Written += int64(a.Bytes) * int64(s.cfg.Replicas)
	case workload.Delete:
		if b, ok := s.index.remove(pos); ok {
			s.ring.hosts[s.ring.primary(pos)].load -= int64(b)
		}
		return // deletion is lazy: it needs no live replica
	}
	ok := s.ring.available(pos, s.cfg.Replicas, s.now)
	group := s.ring.primary(pos)
	for i, inter := range s.cfg.Inters {
		t := &s.tasks[a.User][i]
		if t.open && (s.now-t.last >= inter || s.now-t.start > workload.MaxTask) {
			s.closeTask(i, t)
		}
		if !t.open {
			*t = d2Task{start: s.now, open: true, groups: t.groups[:0]}
		}
		t.last = s.now
		t.failed = t.failed || !ok
		if !slices.Contains(t.groups, group) {
			t.groups = append(t.groups, group)
		}
	}
}

func (s *d2Sim) closeTask(i int, t *d2Task) {
	s.res.Tasks[i]++
	if t.failed {
		s.res.Failed[i]++
	}
	s.res.Groups[i] += float64(len(t.groups))
	t.open = false
}

// sample records the hour's imbalance and max/min primary load.
func (s *d2Sim) sample() {
	st := s.ring.storage(s.cfg.Replicas)
	var sum, sq float64
	for _, v := range st {
		sum += v
	}
	mean := sum / float64(len(st))
	for _, v := range st {
		sq += (v - mean) * (v - mean)
	}
	if mean > 0 {
		s.res.Hourly = append(s.res.Hourly, math.Sqrt(sq/float64(len(st)))/mean)
	}
	lo, hi := int64(math.MaxInt64), int64(0)
	for _, h := range s.ring.hosts {
		lo, hi = min(lo, max(h.load, workload.BlockBytes)), max(hi, h.load)
	}
	s.res.Ratios = append(s.res.Ratios, float64(hi)/float64(lo))
}

// finish closes the open tasks and sums the samples up.
func (s *d2Sim) finish() {
	for u := range s.tasks {
		for i := range s.tasks[u] {
			if t := &s.tasks[u][i]; t.open {
				s.closeTask(i, t)
			}
		}
	}
	for i := range s.res.Groups {
		if s.res.Tasks[i] > 0 {
			s.res.Groups[i] /= float64(s.res.Tasks[i])
		}
	}
	s.checkLoads("at the end")
}
