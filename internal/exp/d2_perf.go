package exp

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"triad/internal/d2/workload"
	"triad/internal/sim"
)

// The perf experiment (§9, Figs. 7-9): internal/d2's node code on N
// simulated hosts, users' reads replayed through gateways under three
// placements of the same blocks on the same code.

// d2PerfSizes is how big a perf run is.
type d2PerfSizes struct {
	Nodes []int
	Users int
	// Period is the part of each user's trace replayed, from its first
	// access; MaxGroups bounds a user's access groups in it.
	Period    time.Duration
	MaxGroups int
}

func (c D2Config) perfSize() d2PerfSizes {
	switch {
	case c.perfSizes != nil:
		return *c.perfSizes
	case c.sizes != nil:
		return d2PerfSizes{} // a test of the other experiments: no perf run
	case c.Quick:
		return d2PerfSizes{Nodes: []int{200}, Users: 12, Period: 15 * time.Minute, MaxGroups: 40}
	}
	return d2PerfSizes{Nodes: []int{200, 500, 1000}, Users: 24, Period: 15 * time.Minute, MaxGroups: 40}
}

// Access-link classes (§9) and replay modes.
var (
	perfKbps  = []int{1500, 384}
	perfModes = []string{"seq", "para"}
	perfPlace = []d2Placement{placeD2, placeBlock, placeFile}
)

// d2PerfScenario is one replay: a size, link class, mode and placement.
type d2PerfScenario struct {
	Nodes     int    `json:"nodes"`
	Kbps      int    `json:"kbps"`
	Mode      string `json:"mode"`
	Placement string `json:"placement"`
	Groups    int    `json:"groups"`
	OK        int    `json:"ok"`
	Failed    int    `json:"failed"`
	// Errors counts the failed reads by the error the node gave (before
	// the 10 s timeout).
	Errors    map[string]int `json:"errors,omitempty"`
	TimedOut  int            `json:"timed_out"`
	CacheHits uint64         `json:"cache_hits"`
	CacheMiss uint64         `json:"cache_misses"`
	// Local is the reads of keys their gateway owned, each a miss to the
	// node\'s counter though no lookup message was needed.
	Local   int    `json:"local"`
	Lookups uint64 `json:"lookups"`
	// LookupMsgs is the lookup requests the gateways sent (D2FindSucc).
	LookupMsgs       uint64  `json:"lookup_msgs"`
	GroupSecondsMean float64 `json:"group_seconds_mean"`
	VirtualSeconds   float64 `json:"virtual_seconds"`

	times [][]time.Duration
}

// d2PerfHops is the mean steps of lookups from random nodes of a ring
// to the keys its users read, caches aside.
type d2PerfHops struct {
	Nodes     int     `json:"nodes"`
	Placement string  `json:"placement"`
	Mean      float64 `json:"mean"`
	Failed    int     `json:"failed"`
}

// d2Perf is the perf run's detail.
type d2Perf struct {
	Nodes         []int            `json:"nodes"`
	Users         int              `json:"users"`
	PeriodMinutes float64          `json:"period_minutes"`
	Groups        int              `json:"groups"`
	Reads         int              `json:"reads"`
	MeanRTTms     []float64        `json:"mean_rtt_ms"` // per size
	StoreShort    []int            `json:"store_short"` // puts with fewer than r copies, per size and placement
	Hops          []d2PerfHops     `json:"hops"`
	Scenarios     []d2PerfScenario `json:"scenarios"`
}

// perf runs the experiment into r.
func (r *D2Result) perf(cfg D2Config, m *workload.Manifest) error {
	sz := cfg.perfSize()
	w := newPerfWorkload(m, cfg.Seed, sz.Users, sz.Period, sz.MaxGroups)
	p := &d2Perf{Nodes: sz.Nodes, Users: sz.Users, PeriodMinutes: sz.Period.Minutes(), Groups: w.Groups(), Reads: w.Reads()}
	blocks := perfBlocks(w)
	for _, n := range sz.Nodes {
		if n < 4*sz.Users+1 {
			return fmt.Errorf("sim d2 perf: %d nodes cannot give %d users a fresh gateway in each of 4 phases", n, sz.Users)
		}
		for _, place := range perfPlace {
			t0 := time.Now()
			ring, err := newPerfRing(cfg.Seed, perfPositions(place, w, n, cfg.Seed), perfConfig())
			if err != nil {
				return err
			}
			if place == placeD2 {
				p.MeanRTTms = append(p.MeanRTTms, meanRTT(ring.s.Topology(), cfg.Seed))
			}
			gws, loaders := perfGateways(ring, sz.Users, cfg.Seed)
			p.StoreShort = append(p.StoreShort, ring.store(place, w, blocks, loaders))
			mean, failed := ring.hops(place, w, loaders, cfg.Seed)
			p.Hops = append(p.Hops, d2PerfHops{Nodes: n, Placement: place.String(), Mean: mean, Failed: failed})
			for i, kbps := range perfKbps {
				ring.setAccess(float64(kbps) * 1000)
				for j, mode := range perfModes {
					ph := &perfPhase{r: ring, place: place, para: mode == "para", w: w, blocks: blocks, gws: gws[2*i+j]}
					ph.run()
					p.Scenarios = append(p.Scenarios, scenarioOf(n, kbps, mode, place, ph))
					ring.s.RunFor(time.Minute)
				}
			}
			logf(cfg.Log, "sim d2 perf: %d nodes, %s: %.0fs of wall time", n, place, time.Since(t0).Seconds())
		}
	}
	r.Perf = p
	r.perfFigures()
	r.perfChecks()
	return nil
}

// perfGateways are, for each of the 4 phases, one fresh host per user,
// and the hosts left over, which store the volumes.
func perfGateways(r *perfRing, users int, seed uint64) (gws [][]*sim.Host, loaders []*sim.Host) {
	order := rand.New(rand.NewPCG(seed, 0x6a7e)).Perm(len(r.hosts))
	for ph := range len(perfKbps) * len(perfModes) {
		var g []*sim.Host
		for _, i := range order[ph*users : (ph+1)*users] {
			g = append(g, r.hosts[i])
		}
		gws = append(gws, g)
	}
	for _, i := range order[len(gws)*users:] {
		loaders = append(loaders, r.hosts[i])
	}
	return gws, loaders
}

// meanRTT is the mean round trip between random pairs of hosts.
func meanRTT(t *sim.Topology, seed uint64) float64 {
	r := rand.New(rand.NewPCG(seed, 0x377))
	sum, n := 0.0, 0
	for range 20000 {
		a, b := r.IntN(t.Len()), r.IntN(t.Len())
		if a != b {
			sum += ms(t.RTT(a, b))
			n++
		}
	}
	return sum / float64(max(n, 1))
}

func scenarioOf(n, kbps int, mode string, place d2Placement, ph *perfPhase) d2PerfScenario {
	sc := d2PerfScenario{Nodes: n, Kbps: kbps, Mode: mode, Placement: place.String(), OK: ph.OK, Failed: ph.Failed, Errors: ph.Errors, TimedOut: ph.TimedOut,
		CacheHits: ph.CacheHits, CacheMiss: ph.CacheMiss, Local: ph.Local, Lookups: ph.Lookups, LookupMsgs: ph.LookupHops,
		VirtualSeconds: (ph.Ended - ph.Started).Seconds(), times: ph.Times}
	var sum time.Duration
	for _, ts := range ph.Times {
		sc.Groups += len(ts)
		for _, t := range ts {
			sum += t
		}
	}
	if sc.Groups > 0 {
		sc.GroupSecondsMean = sum.Seconds() / float64(sc.Groups)
	}
	return sc
}

// find is the scenario with these values, or nil.
func (p *d2Perf) find(n, kbps int, mode, place string) *d2PerfScenario {
	for i := range p.Scenarios {
		s := &p.Scenarios[i]
		if s.Nodes == n && s.Kbps == kbps && s.Mode == mode && s.Placement == place {
			return s
		}
	}
	return nil
}

// speedup is the paper's (§9): per user, the geometric mean over its
// access groups of base's completion time over d2's; then the geometric
// mean over users.
func speedup(d2, base *d2PerfScenario) float64 {
	var users []float64
	for u := range min(len(d2.times), len(base.times)) {
		a, b := d2.times[u], base.times[u]
		var logs float64
		n := min(len(a), len(b))
		for g := range n {
			logs += math.Log(b[g].Seconds() / a[g].Seconds())
		}
		if n > 0 {
			users = append(users, logs/float64(n))
		}
	}
	if len(users) == 0 {
		return 0
	}
	var sum float64
	for _, l := range users {
		sum += l
	}
	return math.Exp(sum / float64(len(users)))
}

// missRate is misses over cache lookups at the gateways of the scenarios
// given (both link classes of a size and mode), as the nodes count them.
func missRate(ss ...*d2PerfScenario) float64 { return missRateOf(false, ss...) }

// remoteMissRate leaves out the reads of keys the gateway owned.
func remoteMissRate(ss ...*d2PerfScenario) float64 { return missRateOf(true, ss...) }

func missRateOf(remote bool, ss ...*d2PerfScenario) float64 {
	var hits, miss uint64
	for _, s := range ss {
		if s != nil {
			hits += s.CacheHits
			miss += s.CacheMiss
			if remote {
				miss -= min(uint64(s.Local), s.CacheMiss)
			}
		}
	}
	if hits+miss == 0 {
		return 0
	}
	return float64(miss) / float64(hits+miss)
}

// perfFigures fills the figures the issue checks: speedup per placement,
// size, link and mode; cache miss rate per placement, size and mode (both
// link classes pooled); lookup messages block over d2, in seq (the case
// §9 reports with the miss rates) and in all scenarios; mean lookup hops at
// the largest size, d2's and uniform (block's ring: random positions and
// hashed keys), from lookups apart from the replay.
func (r *D2Result) perfFigures() {
	p := r.Perf
	r.Speedup, r.CacheMissRate, r.CacheMissRemote, r.HopsMean = map[string]float64{}, map[string]float64{}, map[string]float64{}, map[string]float64{}
	var msgs, seqMsgs [len(placementNames)]uint64
	for _, s := range p.Scenarios {
		for i, name := range placementNames {
			if s.Placement == name {
				msgs[i] += s.LookupMsgs
				if s.Mode == "seq" {
					seqMsgs[i] += s.LookupMsgs
				}
			}
		}
	}
	r.LookupMsgsRatio = float64(seqMsgs[placeBlock]) / float64(max(seqMsgs[placeD2], 1))
	r.LookupMsgsRatioAll = float64(msgs[placeBlock]) / float64(max(msgs[placeD2], 1))
	for _, n := range p.Nodes {
		for _, mode := range perfModes {
			for _, place := range perfPlace {
				a, b := p.find(n, perfKbps[0], mode, place.String()), p.find(n, perfKbps[1], mode, place.String())
				r.CacheMissRate[fmt.Sprintf("%s/%d/%s", place, n, mode)] = missRate(a, b)
				r.CacheMissRemote[fmt.Sprintf("%s/%d/%s", place, n, mode)] = remoteMissRate(a, b)
			}
			for _, kbps := range perfKbps {
				d := p.find(n, kbps, mode, "d2")
				for _, base := range []d2Placement{placeBlock, placeFile} {
					if b := p.find(n, kbps, mode, base.String()); d != nil && b != nil {
						r.Speedup[fmt.Sprintf("%s/%d/%d/%s", base, n, kbps, mode)] = speedup(d, b)
					}
				}
			}
		}
	}
	top := p.Nodes[len(p.Nodes)-1]
	for _, h := range p.Hops {
		switch {
		case h.Nodes != top:
		case h.Placement == "d2":
			r.HopsMean["d2"] = h.Mean
		case h.Placement == "block":
			r.HopsMean["uniform"] = h.Mean
		}
	}
	for _, s := range p.Scenarios {
		r.PerfTimeouts += s.TimedOut
		r.PerfFailed += s.Failed
	}
	r.MeanRTTms = p.MeanRTTms[len(p.MeanRTTms)-1] // the largest size's
}
