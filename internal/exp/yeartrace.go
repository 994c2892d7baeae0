package exp

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"triad/internal/deploy"
	"triad/internal/dhash"
	"triad/internal/id"
	"triad/internal/maint"
	"triad/internal/merkle"
	"triad/internal/node"
	"triad/internal/ring"
	"triad/internal/sim"
	"triad/internal/store"
	"triad/internal/wire"
)

// TraceConfig is `triad sim passingtone` without a scenario: UsenetDHT's
// durability experiment (§6.2). Objects are inserted at the start on
// their first k successors, then the hosts fail and return as the trace
// says, and Passing Tone's maintenance (the real code of internal/maint,
// on every host) is all that makes copies again.
type TraceConfig struct {
	Seed  uint64
	Trace *FailureTrace // nil: SyntheticTrace(PlanetLabShape(), Seed)
	// Objects inserted at the start (50,000), each standing for
	// ObjectBytes (20 MiB): a stand-in of standInBytes is stored, and
	// maintenance weighs each byte it moves as ObjectBytes/standInBytes
	// against the budget and in the bytes it reports.
	Objects     int
	ObjectBytes int64
	Budget      int           // repair bytes per second per host (150 KB/s)
	Interval    time.Duration // local maintenance period (10 minutes)
	// SweepInterval is global maintenance's period (0: Interval).
	SweepInterval time.Duration
	Until         time.Duration // stop there (0: the whole trace), for shorter runs
	// Progress, if set, is called about every simulated month.
	Progress func(TraceProgress)

	noMaint bool // tests: run no maintenance, to see objects lost
}

// TraceProgress is how far a trace run is.
type TraceProgress struct {
	Virtual, Total time.Duration
	Wall           time.Duration
	Repaired       uint64
	Lost           int
}

// expiringEvery makes every fifth object expire during the run, at a
// random time, so that the run checks that maintenance never makes a copy
// of an expired object (the paper's objects outlive its trace).
const expiringEvery = 5

// standInBytes is the size of a stand-in object: its first 8 bytes are
// its number, the rest random.
const standInBytes = 64

// TraceResult is what a trace run found. The paper's Figure 5 is
// ReplicaCDF.
type TraceResult struct {
	TraceStats
	Seed        uint64  `json:"seed"`
	Objects     int     `json:"objects"`
	ObjectBytes int64   `json:"object_bytes"`
	Replicas    int     `json:"k"`
	Budget      int     `json:"repair_budget_bytes_per_second"`
	IntervalSec int     `json:"maintenance_interval_seconds"`
	SweepSec    int     `json:"global_maintenance_interval_seconds"`
	SimDays     float64 `json:"simulated_days"`
	// ObjectsLost counts objects that had no copy on any disk at some
	// point (they cannot come back).
	ObjectsLost int `json:"objects_lost"`
	// ObjectsExpired counts the objects that expired during the run
	// (every fifth, at random times). ExpiredRepairs counts the copies of
	// them that appeared on a disk after their expiry: found by looking,
	// not by maintenance's own counters, and never allowed.
	// ExpiredNotRepaired is maintenance's count of objects it did not
	// fetch or hand over because they had expired by their turn.
	ObjectsExpired     int    `json:"objects_expired"`
	ExpiredRepairs     int    `json:"expired_repairs"`
	ExpiredNotRepaired uint64 `json:"expired_not_repaired"`
	// ReplicaCDF[i] is the fraction of the objects still live at the end
	// with at most i durable copies (on any disk, of a host up or down).
	ReplicaCDF      []float64 `json:"replica_cdf"`
	MinReplicas     int       `json:"min_replicas"`
	ObjectsRepaired uint64    `json:"objects_repaired"`
	BytesRepaired   uint64    `json:"bytes_repaired"` // at ObjectBytes an object
	HandedOver      uint64    `json:"objects_handed_over"`
	RepairsPerDisk  float64   `json:"repairs_per_disk_failure"`
	Rounds          uint64    `json:"rounds"`
	Syncs           uint64    `json:"syncs"`
	Membership      string    `json:"membership"`
	Events          uint64    `json:"sim_events"`
	WallSeconds     float64   `json:"wall_seconds"`
}

// RunTrace runs the durability experiment.
func RunTrace(cfg TraceConfig) (TraceResult, error) {
	t, err := newTraceRun(cfg)
	if err != nil {
		return TraceResult{}, err
	}
	if err := t.addHosts(); err != nil {
		return t.res, err
	}
	if err := t.placeObjects(); err != nil {
		return t.res, err
	}
	if err := t.replay(); err != nil {
		return t.res, err
	}
	t.advance(t.end)
	t.tally()
	return t.res, nil
}

// traceRun is one run of RunTrace: the simulated hosts, the objects they
// hold, and what the run has seen so far. Its steps run in this order:
// addHosts, placeObjects, replay (which advances through the trace's
// events), then the last advance and tally.
type traceRun struct {
	cfg  TraceConfig // with its defaults filled in
	end  time.Duration
	wall time.Time // when the run started, for WallSeconds and progress
	res  TraceResult

	s     *sim.Sim
	view  *ringView // the idealized membership: the hosts up
	opts  deploy.Options
	hosts []*sim.Host

	// The objects: keys[i] expires at expiries[i] (from the epoch);
	// expiring lists those that expire during the run, by expiry.
	keys     []id.ID
	expiries []time.Duration
	expiring []int

	total maint.Stats    // of every incarnation of every host, gathered as they go
	lost  map[id.ID]bool // objects that had no copy on any disk at some point
	// atExpiry notes who held each expiring object when it expired: a
	// holder beyond those later is a copy made of an expired object.
	atExpiry     map[int][]int
	nextExpiring int           // the next of expiring to note
	nextReport   time.Duration // the next progress report's virtual time
}

// traceMonth is how often a run reports its progress, in virtual time.
const traceMonth = 30 * 24 * time.Hour

// newTraceRun fills in cfg's defaults and checks it.
func newTraceRun(cfg TraceConfig) (*traceRun, error) {
	wall := time.Now()
	if cfg.Trace == nil {
		t, err := SyntheticTrace(PlanetLabShape(), cfg.Seed)
		if err != nil {
			return nil, err
		}
		cfg.Trace = t
	}
	cfg.Objects = cmp.Or(cfg.Objects, 50000)
	cfg.ObjectBytes = cmp.Or(cfg.ObjectBytes, 20<<20)
	cfg.Budget = cmp.Or(cfg.Budget, 150<<10)
	cfg.Interval = cmp.Or(cfg.Interval, 10*time.Minute)
	end := cfg.Trace.Duration
	if cfg.Until > 0 && cfg.Until < end {
		end = cfg.Until
	}
	if cfg.ObjectBytes < standInBytes {
		return nil, fmt.Errorf("trace: objects of at least %d bytes", standInBytes)
	}
	res := TraceResult{TraceStats: cfg.Trace.Stats(), Seed: cfg.Seed, Objects: cfg.Objects, ObjectBytes: cfg.ObjectBytes,
		Replicas: dhash.DefaultConfig().Replicas, Budget: cfg.Budget, IntervalSec: int(cfg.Interval.Seconds()), SweepSec: int(cmp.Or(cfg.SweepInterval, cfg.Interval).Seconds()), SimDays: end.Hours() / 24,
		Membership: "idealized: every host's successor and predecessor lists and lookups come from the true set of hosts up, updated at each failure and return; maintenance, its messages and the stores are the real code"}
	return &traceRun{cfg: cfg, end: end, wall: wall, res: res, lost: make(map[id.ID]bool), nextReport: traceMonth}, nil
}

// addHosts starts the trace's hosts, every one up, with the idealized
// membership and Passing Tone weighing each stand-in as a whole object.
func (t *traceRun) addHosts() error {
	cfg := t.cfg
	t.view = &ringView{}
	t.s = sim.New(sim.Config{Seed: cfg.Seed}, sim.NewTopology(cfg.Trace.Hosts, cfg.Seed))
	t.opts = deploy.DefaultOptions()
	t.opts.Ring.Membership = t.view
	t.opts.Ring.Succs, t.opts.Ring.Preds = 4, 4
	mc := maint.DefaultConfig()
	mc.Interval = cfg.Interval
	mc.SweepInterval = cfg.SweepInterval
	mc.Budget = cfg.Budget
	mc.Weight = int(cfg.ObjectBytes / standInBytes)
	t.opts.Maint = &mc
	if cfg.noMaint {
		t.opts.Maint = nil
	}
	factory := deploy.Factory(t.opts, nil)
	t.hosts = make([]*sim.Host, cfg.Trace.Hosts)
	for i := range t.hosts {
		h, err := t.s.AddHost(factory)
		if err != nil {
			return err
		}
		t.hosts[i] = h
		t.view.add(selfOf(h))
	}
	return nil
}

// placeObjects stores the objects on their first k successors. Every
// expiringEvery-th expires between a tenth of the run and its end; the
// rest outlive it.
func (t *traceRun) placeObjects() error {
	s, end := t.s, t.end
	r := rand.New(rand.NewPCG(t.cfg.Seed, 0x0b1ec7))
	t.keys = make([]id.ID, t.cfg.Objects)
	t.expiries = make([]time.Duration, t.cfg.Objects)
	for i := range t.keys {
		t.expiries[i] = end + 365*24*time.Hour
		if i%expiringEvery == 0 {
			t.expiries[i] = end/10 + time.Duration(r.Int64N(int64(end-end/10)))
			t.expiring = append(t.expiring, i)
		}
	}
	slices.SortFunc(t.expiring, func(a, b int) int { return cmp.Compare(t.expiries[a], t.expiries[b]) })
	t.atExpiry = make(map[int][]int, len(t.expiring))
	for i := range t.keys {
		expiry := s.Epoch().Add(t.expiries[i])
		data := make([]byte, standInBytes)
		binary.BigEndian.PutUint64(data, uint64(i))
		for j := 8; j < len(data); j += 8 {
			binary.BigEndian.PutUint64(data[j:], r.Uint64())
		}
		t.keys[i] = id.Key(data)
		for _, n := range t.view.Succs(t.keys[i], t.res.Replicas) {
			if err := s.HostAt(n.Addr).Storage().Engine().Put(t.keys[i], data, expiry, store.PutOptions{}); err != nil {
				return err
			}
		}
	}
	for _, h := range t.hosts {
		s.DoAt(h, 0, func(env node.Env) { deploy.Of(h).Ring.Refresh(env) })
	}
	return nil
}

// replay applies the trace's events up to the run's end: a host goes
// down (its disk kept or wiped) or comes back, and the hosts whose lists
// change hear of it.
func (t *traceRun) replay() error {
	s := t.s
	for _, e := range t.cfg.Trace.Events {
		if e.At > t.end {
			break
		}
		t.advance(e.At)
		h := t.hosts[e.Host]
		switch e.Kind {
		case Down, Disk:
			if !h.Up() {
				continue
			}
			me := selfOf(h)
			t.collect(h)
			if e.Kind == Disk {
				s.Wipe(h)
				t.noteLost()
			} else {
				s.Crash(h)
			}
			t.view.remove(me.ID)
			t.refreshAround(me.ID)
		case Up:
			if h.Up() {
				continue
			}
			if err := s.Restart(h); err != nil {
				return err
			}
			me := selfOf(h)
			t.view.add(me)
			t.refreshAround(me.ID)
		}
	}
	return nil
}

// advance runs the simulation to at, noting the expiries and reporting
// progress on the way.
func (t *traceRun) advance(at time.Duration) {
	s, end := t.s, t.end
	for {
		nextExp := end + 1
		if t.nextExpiring < len(t.expiring) {
			nextExp = t.expiries[t.expiring[t.nextExpiring]]
		}
		report := t.nextReport
		if t.cfg.Progress == nil {
			report = end + 1
		}
		switch {
		case nextExp <= at && nextExp <= report:
			s.RunUntil(nextExp)
			i := t.expiring[t.nextExpiring]
			t.atExpiry[i] = t.holders(t.keys[i])
			t.nextExpiring++
		case report <= at:
			s.RunUntil(report)
			t.cfg.Progress(TraceProgress{Virtual: report, Total: end, Wall: time.Since(t.wall), Repaired: t.total.Repaired + liveRepaired(t.hosts), Lost: len(t.lost)})
			t.nextReport += traceMonth
		default:
			s.RunUntil(at)
			return
		}
	}
}

// collect adds the counters of h's maintenance, before h goes down.
func (t *traceRun) collect(h *sim.Host) {
	if n := deploy.Of(h); n != nil && n.Maint != nil {
		addStats(&t.total, n.Maint.Stats)
	}
}

// copies counts the copies of every key on the disks of all hosts, up or
// down.
func (t *traceRun) copies() map[id.ID]int {
	c := make(map[id.ID]int, len(t.keys))
	for _, h := range t.hosts {
		for _, key := range storedKeys(h) {
			c[key]++
		}
	}
	return c
}

// noteLost marks lost every unexpired object with no copy left.
func (t *traceRun) noteLost() {
	c := t.copies()
	for i, key := range t.keys {
		if c[key] == 0 && t.expiries[i] > t.s.Now() {
			t.lost[key] = true
		}
	}
}

// refreshAround tells the hosts whose lists may have changed with a
// change at x.
func (t *traceRun) refreshAround(x id.ID) {
	s := t.s
	near := append(t.view.Succs(x, t.opts.Ring.Preds+1), t.view.Preds(x, t.opts.Ring.Succs+1)...)
	for _, n := range near {
		h := s.HostAt(n.Addr)
		s.DoAt(h, s.Now(), func(env node.Env) {
			if d := deploy.Of(h); d != nil {
				d.Ring.Refresh(env)
			}
		})
	}
}

// holders lists the hosts whose disk holds key, expired or not.
func (t *traceRun) holders(key id.ID) []int {
	var out []int
	for i, h := range t.hosts {
		if _, err := h.Storage().Engine().Stat(key); err == nil {
			out = append(out, i)
		}
	}
	return out
}

// tally fills in the result at the end: the copies of the objects still
// live, the copies of expired objects made after their expiry, and
// maintenance's counters.
func (t *traceRun) tally() {
	res, end := &t.res, t.end
	for _, h := range t.hosts {
		t.collect(h)
	}
	c := t.copies()
	counts := make([]int, 0, len(t.keys))
	for i, key := range t.keys {
		if t.expiries[i] <= end {
			continue
		}
		if c[key] == 0 {
			t.lost[key] = true
		}
		counts = append(counts, c[key])
	}
	for i, before := range t.atExpiry {
		res.ObjectsExpired++
		for _, h := range t.holders(t.keys[i]) {
			if !slices.Contains(before, h) {
				res.ExpiredRepairs++
			}
		}
	}
	slices.Sort(counts)
	res.MinReplicas = counts[0]
	res.ReplicaCDF = make([]float64, counts[len(counts)-1]+1)
	for i := range res.ReplicaCDF {
		n, _ := slices.BinarySearch(counts, i+1) // objects with at most i copies
		res.ReplicaCDF[i] = float64(n) / float64(len(counts))
	}
	total := t.total
	res.ObjectsLost = len(t.lost)
	res.ExpiredNotRepaired = total.Expired
	res.ObjectsRepaired = total.Repaired
	res.BytesRepaired = total.BytesRepaired + total.BytesHandedOver
	res.HandedOver = total.HandedOver
	if res.DiskFailures > 0 {
		res.RepairsPerDisk = float64(total.Repaired+total.HandedOver) / float64(res.DiskFailures)
	}
	res.Rounds, res.Syncs = total.Rounds, total.Syncs
	res.Events = t.s.Totals().Events
	res.WallSeconds = time.Since(t.wall).Seconds()
}

func selfOf(h *sim.Host) wire.NodeRef { return deploy.Of(h).Ring.Vnodes()[0].Self() }

func liveRepaired(hosts []*sim.Host) uint64 {
	var n uint64
	for _, h := range hosts {
		if d := deploy.Of(h); d != nil && d.Maint != nil {
			n += d.Maint.Stats.Repaired + d.Maint.Stats.HandedOver
		}
	}
	return n
}

// storedKeys lists every key on h's disk, whether h is up or not.
func storedKeys(h *sim.Host) []id.ID {
	all := id.Min(id.Bytes)
	keys, _ := h.Storage().Engine().TreeKeys(merkle.Root(), all, all, 1<<30)
	return keys
}

func addStats(t *maint.Stats, s maint.Stats) {
	t.Rounds += s.Rounds
	t.Syncs += s.Syncs
	t.Repaired += s.Repaired
	t.BytesRepaired += s.BytesRepaired
	t.Expired += s.Expired
	t.HandedOver += s.HandedOver
	t.BytesHandedOver += s.BytesHandedOver
	t.Failed += s.Failed
}

// ringView is the idealized membership (ring.Membership): the vnodes of
// the hosts up, sorted by ID.
type ringView struct{ live []wire.NodeRef }

func (v *ringView) search(x id.ID) int {
	i, _ := slices.BinarySearchFunc(v.live, x, func(n wire.NodeRef, x id.ID) int { return n.ID.Cmp(x) })
	return i
}

func (v *ringView) add(n wire.NodeRef) {
	i := v.search(n.ID)
	v.live = slices.Insert(v.live, i, n)
}

func (v *ringView) remove(x id.ID) {
	if i := v.search(x); i < len(v.live) && v.live[i].ID == x {
		v.live = slices.Delete(v.live, i, i+1)
	}
}

// Succs implements ring.Membership.
func (v *ringView) Succs(x id.ID, n int) []wire.NodeRef {
	n = min(n, len(v.live))
	out := make([]wire.NodeRef, 0, n)
	for i, j := v.search(x), 0; j < n; j++ {
		out = append(out, v.live[(i+j)%len(v.live)])
	}
	return out
}

// Preds implements ring.Membership.
func (v *ringView) Preds(x id.ID, n int) []wire.NodeRef {
	n = min(n, len(v.live))
	out := make([]wire.NodeRef, 0, n)
	for i, j := v.search(x), 1; j <= n; j++ {
		out = append(out, v.live[((i-j)%len(v.live)+len(v.live))%len(v.live)])
	}
	return out
}

var _ ring.Membership = (*ringView)(nil)
