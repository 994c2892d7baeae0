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
	wall := time.Now()
	if cfg.Trace == nil {
		t, err := SyntheticTrace(PlanetLabShape(), cfg.Seed)
		if err != nil {
			return TraceResult{}, err
		}
		cfg.Trace = t
	}
	if cfg.Objects == 0 {
		cfg.Objects = 50000
	}
	if cfg.ObjectBytes == 0 {
		cfg.ObjectBytes = 20 << 20
	}
	if cfg.Budget == 0 {
		cfg.Budget = 150 << 10
	}
	if cfg.Interval == 0 {
		cfg.Interval = 10 * time.Minute
	}
	end := cfg.Trace.Duration
	if cfg.Until > 0 && cfg.Until < end {
		end = cfg.Until
	}
	if cfg.ObjectBytes < standInBytes {
		return TraceResult{}, fmt.Errorf("trace: objects of at least %d bytes", standInBytes)
	}
	k := dhash.DefaultConfig().Replicas
	res := TraceResult{TraceStats: cfg.Trace.Stats(), Seed: cfg.Seed, Objects: cfg.Objects, ObjectBytes: cfg.ObjectBytes,
		Replicas: k, Budget: cfg.Budget, IntervalSec: int(cfg.Interval.Seconds()), SweepSec: int(cmp.Or(cfg.SweepInterval, cfg.Interval).Seconds()), SimDays: end.Hours() / 24,
		Membership: "idealized: every host's successor and predecessor lists and lookups come from the true set of hosts up, updated at each failure and return; maintenance, its messages and the stores are the real code"}

	view := &ringView{}
	s := sim.New(sim.Config{Seed: cfg.Seed}, sim.NewTopology(cfg.Trace.Hosts, cfg.Seed))
	opts := deploy.DefaultOptions()
	opts.Ring.Membership = view
	opts.Ring.Succs, opts.Ring.Preds = 4, 4
	mc := maint.DefaultConfig()
	mc.Interval = cfg.Interval
	mc.SweepInterval = cfg.SweepInterval
	mc.Budget = cfg.Budget
	mc.Weight = int(cfg.ObjectBytes / standInBytes)
	opts.Maint = &mc
	if cfg.noMaint {
		opts.Maint = nil
	}
	factory := deploy.Factory(opts, nil)
	hosts := make([]*sim.Host, cfg.Trace.Hosts)
	for i := range hosts {
		h, err := s.AddHost(factory)
		if err != nil {
			return res, err
		}
		hosts[i] = h
		view.add(selfOf(h))
	}

	// The objects, on their first k successors. Every expiringEvery-th
	// expires between a tenth of the run and its end; the rest outlive it.
	r := rand.New(rand.NewPCG(cfg.Seed, 0x0b1ec7))
	keys := make([]id.ID, cfg.Objects)
	expiries := make([]time.Duration, cfg.Objects) // from the epoch
	var expiring []int                             // by expiry
	for i := range keys {
		expiries[i] = end + 365*24*time.Hour
		if i%expiringEvery == 0 {
			expiries[i] = end/10 + time.Duration(r.Int64N(int64(end-end/10)))
			expiring = append(expiring, i)
		}
	}
	slices.SortFunc(expiring, func(a, b int) int { return cmp.Compare(expiries[a], expiries[b]) })
	for i := range keys {
		expiry := s.Epoch().Add(expiries[i])
		data := make([]byte, standInBytes)
		binary.BigEndian.PutUint64(data, uint64(i))
		for j := 8; j < len(data); j += 8 {
			binary.BigEndian.PutUint64(data[j:], r.Uint64())
		}
		keys[i] = id.Key(data)
		for _, n := range view.Succs(keys[i], k) {
			if err := s.HostAt(n.Addr).Storage().Engine().Put(keys[i], data, expiry, store.PutOptions{}); err != nil {
				return res, err
			}
		}
	}
	for _, h := range hosts {
		s.DoAt(h, 0, func(env node.Env) { deploy.Of(h).Ring.Refresh(env) })
	}

	// Counters of the maintenance of every incarnation of every host.
	var total maint.Stats
	collect := func(h *sim.Host) {
		if n := deploy.Of(h); n != nil && n.Maint != nil {
			addStats(&total, n.Maint.Stats)
		}
	}
	lost := make(map[id.ID]bool)
	copies := func() map[id.ID]int {
		c := make(map[id.ID]int, len(keys))
		for _, h := range hosts {
			for _, key := range storedKeys(h) {
				c[key]++
			}
		}
		return c
	}
	// refreshAround tells the hosts whose lists may have changed with a
	// change at x.
	refreshAround := func(x id.ID) {
		near := append(view.Succs(x, opts.Ring.Preds+1), view.Preds(x, opts.Ring.Succs+1)...)
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
	holders := func(key id.ID) []int {
		var out []int
		for i, h := range hosts {
			if _, err := h.Storage().Engine().Stat(key); err == nil {
				out = append(out, i)
			}
		}
		return out
	}
	// atExpiry notes who held each expiring object when it expired: a
	// holder beyond those later is a copy made of an expired object.
	atExpiry := make(map[int][]int, len(expiring))
	nextExpiring := 0
	month := 30 * 24 * time.Hour
	nextReport := month
	// advance runs the simulation to t, noting the expiries and reporting
	// progress on the way.
	advance := func(t time.Duration) {
		for {
			nextExp := end + 1
			if nextExpiring < len(expiring) {
				nextExp = expiries[expiring[nextExpiring]]
			}
			report := nextReport
			if cfg.Progress == nil {
				report = end + 1
			}
			switch {
			case nextExp <= t && nextExp <= report:
				s.RunUntil(nextExp)
				i := expiring[nextExpiring]
				atExpiry[i] = holders(keys[i])
				nextExpiring++
			case report <= t:
				s.RunUntil(report)
				cfg.Progress(TraceProgress{Virtual: report, Total: end, Wall: time.Since(wall), Repaired: total.Repaired + liveRepaired(hosts), Lost: len(lost)})
				nextReport += month
			default:
				s.RunUntil(t)
				return
			}
		}
	}
	for _, e := range cfg.Trace.Events {
		if e.At > end {
			break
		}
		advance(e.At)
		h := hosts[e.Host]
		switch e.Kind {
		case Down, Disk:
			if !h.Up() {
				continue
			}
			me := selfOf(h)
			collect(h)
			if e.Kind == Disk {
				s.Wipe(h)
				c := copies()
				for i, key := range keys {
					if c[key] == 0 && expiries[i] > s.Now() {
						lost[key] = true
					}
				}
			} else {
				s.Crash(h)
			}
			view.remove(me.ID)
			refreshAround(me.ID)
		case Up:
			if h.Up() {
				continue
			}
			if err := s.Restart(h); err != nil {
				return res, err
			}
			me := selfOf(h)
			view.add(me)
			refreshAround(me.ID)
		}
	}
	advance(end)
	for _, h := range hosts {
		collect(h)
	}
	c := copies()
	counts := make([]int, 0, len(keys))
	for i, key := range keys {
		if expiries[i] <= end {
			continue
		}
		if c[key] == 0 {
			lost[key] = true
		}
		counts = append(counts, c[key])
	}
	for i, before := range atExpiry {
		res.ObjectsExpired++
		for _, h := range holders(keys[i]) {
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
	res.ObjectsLost = len(lost)
	res.ExpiredNotRepaired = total.Expired
	res.ObjectsRepaired = total.Repaired
	res.BytesRepaired = total.BytesRepaired + total.BytesHandedOver
	res.HandedOver = total.HandedOver
	if res.DiskFailures > 0 {
		res.RepairsPerDisk = float64(total.Repaired+total.HandedOver) / float64(res.DiskFailures)
	}
	res.Rounds, res.Syncs = total.Rounds, total.Syncs
	res.Events = s.Totals().Events
	res.WallSeconds = time.Since(wall).Seconds()
	return res, nil
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
