package sim

import (
	"math"
	"math/rand/v2"
	"sort"
	"time"
)

// region is a part of the world with its share of hosts.
type region struct {
	name   string
	weight float64
	spread float64 // ms of one-way delay across the region
}

// regions and their base round-trip times (ms) between each other, shaped
// after measured Internet latencies (King / PlanetLab era): a few dense
// regions, long trans-oceanic paths.
var (
	regions = []region{
		{"na-east", 0.28, 14},
		{"na-west", 0.18, 12},
		{"europe", 0.27, 14},
		{"east-asia", 0.15, 16},
		{"south-america", 0.06, 18},
		{"oceania", 0.06, 12},
	}
	regionRTT = [][]float64{
		//  nae  naw   eu  asia   sa   oc
		{0, 60, 80, 180, 120, 200},
		{60, 0, 140, 110, 160, 140},
		{80, 140, 0, 220, 190, 280},
		{180, 110, 220, 0, 300, 110},
		{120, 160, 190, 300, 0, 290},
		{200, 140, 280, 110, 290, 0},
	}
)

// Partitions is how many halves Partition splits the topology into.
const Partitions = 2

// partitionOf splits the regions in two of about equal weight (0.52 and
// 0.48) with the shortest path between the halves as long as it can be:
// the Americas, and the rest.
var partitionOf = []int{0, 0, 1, 1, 0, 1}

// Partition is the half of the topology that host h is in: a parallel
// simulation runs each half on its own goroutine.
func (t *Topology) Partition(h int) int { return partitionOf[t.hosts[h].region] }

// Lookahead is the least one-way delay of any path between the two halves
// of Partition: the base round trip between their closest regions, at its
// lowest per-pair factor, halved. Distance and access links only add to it.
func (t *Topology) Lookahead() time.Duration { return lookahead }

var lookahead = func() time.Duration {
	least := math.Inf(1)
	for a := range regions {
		for b := range regions {
			if partitionOf[a] != partitionOf[b] {
				least = math.Min(least, regionRTT[a][b])
			}
		}
	}
	return time.Duration(least*minPairFactor/2*float64(time.Millisecond)) - time.Microsecond // below any rounding
}()

// minPairFactor is the least of RTT's per-pair factors.
const minPairFactor = 0.85

// Bits per second of the access-link classes hosts are drawn from.
const (
	mbit = 1e6
)

// hostGeo is one host's place in the topology.
type hostGeo struct {
	region   int
	x, y     float64 // position inside the region, ms of one-way delay
	accessMs float64 // one-way delay of the access link
	upBps    float64
	downBps  float64
}

// Topology is a synthetic wide-area network of hosts: per-pair latencies
// and per-host access-link bandwidths, deterministic from a seed.
type Topology struct {
	seed  uint64
	hosts []hostGeo
	flat  bool // NewFlatTopology: no regions, no per-pair factor
}

// FlatHost is a host of a flat topology: Delay is its one-way delay to any
// host with the same Delay (between two hosts, the mean of theirs), and
// its access link's bandwidths in bits per second.
type FlatHost struct {
	Delay          time.Duration
	UpBps, DownBps float64
}

// NewFlatTopology is a network with no geography, as an emulated cluster
// has (the congestion paper's ModelNet setups): each pair of hosts a
// fixed delay apart, each host with its own access link. It does not
// grow, and all its hosts are in one half for Partition.
func NewFlatTopology(hosts []FlatHost) *Topology {
	if len(hosts) < 1 || len(hosts) > MaxHosts {
		panic("sim: topology size out of range")
	}
	t := &Topology{flat: true}
	for _, h := range hosts {
		ms := float64(h.Delay) / float64(time.Millisecond)
		t.hosts = append(t.hosts, hostGeo{accessMs: ms / 2, upBps: h.UpBps, downBps: h.DownBps})
	}
	return t
}

// MaxHosts bounds a topology (the issue asks for 2,048; churn adds hosts).
const MaxHosts = 1 << 16

// NewTopology draws n hosts from seed.
func NewTopology(n int, seed uint64) *Topology {
	if n < 1 || n > MaxHosts {
		panic("sim: topology size out of range")
	}
	r := rand.New(rand.NewPCG(seed, 0x70b0))
	t := &Topology{seed: seed}
	for i := 0; i < n; i++ {
		t.hosts = append(t.hosts, drawHost(r))
	}
	return t
}

func drawHost(r *rand.Rand) hostGeo {
	w := r.Float64()
	reg := 0
	for i, g := range regions {
		if w < g.weight {
			reg = i
			break
		}
		w -= g.weight
		reg = i
	}
	g := regions[reg]
	// Access delay: lognormal around 2 ms, and a heavy tail (DSL, wireless,
	// satellite and overloaded hosts) from a Pareto distribution.
	access := math.Exp(math.Log(2) + 0.8*r.NormFloat64())
	if r.Float64() < 0.08 {
		access += 10 * math.Pow(r.Float64(), -1/1.5) // Pareto, alpha 1.5, min 10 ms
	}
	access = math.Min(access, 150)
	// Access links from 2 Mbit/s to 1 Gbit/s, log-uniform; downlinks 4x faster.
	up := 2 * mbit * math.Pow(500, r.Float64())
	return hostGeo{
		region:   reg,
		x:        g.spread * r.Float64(),
		y:        g.spread * r.Float64(),
		accessMs: access,
		upBps:    up,
		downBps:  math.Min(4*up, 1000*mbit),
	}
}

// Len is the number of hosts.
func (t *Topology) Len() int { return len(t.hosts) }

// Grow adds hosts drawn from the same distribution, up to n in all.
func (t *Topology) Grow(n int) {
	if t.flat {
		return
	}
	r := rand.New(rand.NewPCG(t.seed, uint64(len(t.hosts))))
	for len(t.hosts) < n && len(t.hosts) < MaxHosts {
		t.hosts = append(t.hosts, drawHost(r))
	}
}

// RTT is the round-trip time between hosts a and b without queueing.
func (t *Topology) RTT(a, b int) time.Duration {
	if a == b {
		return 0
	}
	ha, hb := t.hosts[a], t.hosts[b]
	if t.flat {
		return time.Duration(2 * (ha.accessMs + hb.accessMs) * float64(time.Millisecond))
	}
	dx, dy := ha.x-hb.x, ha.y-hb.y
	ms := regionRTT[ha.region][hb.region] + 2*math.Sqrt(dx*dx+dy*dy) + 2*(ha.accessMs+hb.accessMs)
	// Routing is not geometry: a fixed per-pair factor in [0.85, 1.15) breaks
	// the triangle inequality the way real paths do.
	ms *= minPairFactor + 0.3*pairNoise(t.seed, a, b)
	return time.Duration(ms * float64(time.Millisecond))
}

// pairNoise is a deterministic value in [0, 1) for the unordered pair.
func pairNoise(seed uint64, a, b int) float64 {
	if a > b {
		a, b = b, a
	}
	x := seed ^ uint64(a)*0x9e3779b97f4a7c15 ^ uint64(b)*0xc2b2ae3d27d4eb4f
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return float64(x>>11) / (1 << 53)
}

// UpBps and DownBps are host h's access-link bandwidths in bits per second.
func (t *Topology) UpBps(h int) float64   { return t.hosts[h].upBps }
func (t *Topology) DownBps(h int) float64 { return t.hosts[h].downBps }

// SetAccess gives host h an access link of upBps and downBps bits per
// second, keeping its latencies: an experiment that fixes the links' class
// (1,500 or 384 kbps in one of the papers' experiments) on the wide-area
// topology. It takes effect for the messages sent after it.
func (t *Topology) SetAccess(h int, upBps, downBps float64) {
	if upBps <= 0 || downBps <= 0 {
		panic("sim: an access link needs a positive bandwidth")
	}
	t.hosts[h].upBps, t.hosts[h].downBps = upBps, downBps
}

// Region names host h's region.
func (t *Topology) Region(h int) string { return regions[t.hosts[h].region].name }

// RTTStats summarises the RTT distribution over up to samples random pairs.
type RTTStats struct {
	Median, P10, P90, P99, Max time.Duration
}

// Stats samples pairs of hosts and returns RTT percentiles.
func (t *Topology) Stats(samples int) RTTStats {
	r := rand.New(rand.NewPCG(t.seed, 0x57a7))
	var rtts []time.Duration
	for i := 0; i < samples && len(t.hosts) > 1; i++ {
		a, b := r.IntN(len(t.hosts)), r.IntN(len(t.hosts))
		if a != b {
			rtts = append(rtts, t.RTT(a, b))
		}
	}
	if len(rtts) == 0 {
		return RTTStats{}
	}
	sort.Slice(rtts, func(i, j int) bool { return rtts[i] < rtts[j] })
	q := func(p float64) time.Duration { return rtts[int(p*float64(len(rtts)-1))] }
	return RTTStats{Median: q(0.5), P10: q(0.1), P90: q(0.9), P99: q(0.99), Max: rtts[len(rtts)-1]}
}
