package exp

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"triad/internal/cc"
	"triad/internal/host"
	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/sim"
	"triad/internal/wire"
)

// The congestion paper's setups (§V-B, §V-C).
const (
	// CongestionPeers is the peers of both setups.
	CongestionPeers = 128
	// congestionPayload is the bytes each request carries besides its
	// headers: it sets what a 600 kbit/s peer can forward, and it is
	// chosen so that, as in the paper's Figure 4 (collapse from about 65),
	// the uncontrolled ring peaks at 60-65 requests per peer per second.
	congestionPayload = 120
)

// CongestionSetup is a network the experiment runs on.
type CongestionSetup uint8

// Setups.
const (
	// Uniform is §V-B: 600 kbit/s links, 20 ms between any two peers.
	Uniform CongestionSetup = iota
	// Mixed is §V-C: links of 600-1000 kbit/s and 5-15 ms delays,
	// assigned at random.
	Mixed
)

// CongestionRun is one point of an experiment.
type CongestionRun struct {
	Seed      uint64
	Setup     CongestionSetup
	Scheme    cc.Scheme
	Offered   float64 // requests per peer per second the application offers
	CrossLoad float64 // the share of time each peer stops forwarding
	Gamma     float64
	// Threshold is marking's t and MinRTO the sources' floor on their
	// retransmission timeout; zero takes cc.DefaultConfig's (20 and 1 s).
	Threshold float64
	MinRTO    time.Duration
	Peers     int           // CongestionPeers if 0
	Warmup    time.Duration // 5 s if 0
	Measure   time.Duration // 15 s if 0
}

// CongestionPoint is what one run measured, over its measurement window.
type CongestionPoint struct {
	Scheme    string  `json:"scheme"`
	Offered   float64 `json:"offered"`
	CrossLoad float64 `json:"crossload"`
	Gamma     float64 `json:"gamma"`
	// Threshold is marking's t, and MinRTOMs the sources' timeout floor.
	Threshold float64 `json:"threshold"`
	MinRTOMs  int64   `json:"min_rto_ms"`
	// Throughput is routed requests acknowledged per peer per second (those
	// for a key their source holds cross no link and are not counted, as
	// in the paper's A, §III-D).
	Throughput float64 `json:"throughput"`
	// RetransmitFraction is retransmissions over requests sent.
	RetransmitFraction float64 `json:"retransmit_fraction"`
	// DelayMs is the mean time from a request's first sending to its
	// acknowledgement.
	DelayMs float64 `json:"delay_ms"`
	// Outstanding is the mean number of requests in flight per peer.
	Outstanding float64 `json:"outstanding"`
	// RateDeviation is the mean absolute deviation of the sources'
	// request rates (x, sampled every 100 ms and averaged per source),
	// over their mean: what the fairness term evens out (§V-D).
	RateDeviation float64 `json:"rate_deviation"`
	Dropped       uint64  `json:"dropped"`
	Lost          uint64  `json:"lost"`
	Marked        uint64  `json:"marked"`
	MessageBytes  int     `json:"message_bytes"`
	// NetworkDrops is messages the simulated network lost or dropped
	// (its links' queues, unlike the nodes', are not the schemes' to
	// manage; with the uplink the bottleneck they stay empty).
	NetworkDrops uint64 `json:"network_drops"`
}

// RunCongestion runs one point: every peer offers r.Offered requests per
// second for random keys, routed recursively on a static Chord ring under
// r.Scheme, and the acknowledged requests are counted after a warm-up.
func RunCongestion(r CongestionRun) (CongestionPoint, error) {
	if r.Peers == 0 {
		r.Peers = CongestionPeers
	}
	if r.Warmup == 0 {
		r.Warmup = 5 * time.Second
	}
	if r.Measure == 0 {
		r.Measure = 15 * time.Second
	}
	if r.Peers < 2 || r.Offered <= 0 || r.CrossLoad < 0 || r.CrossLoad >= 1 {
		return CongestionPoint{}, fmt.Errorf("congestion: want at least 2 peers, a positive load and a cross-load in [0, 1)")
	}
	c, err := newCongestionRing(r)
	if err != nil {
		return CongestionPoint{}, err
	}
	return c.measure(r), nil
}

// congestionRing is the static Chord ring of one congestion point: its
// simulator, its peers' cc nodes and their configuration.
type congestionRing struct {
	s       *sim.Sim
	members []wire.NodeRef
	nodes   []*cc.Node
	base    cc.Config // every peer's, but for its uplink
}

// newCongestionRing builds the ring of r's peers on a flat topology of
// r.Setup's links.
func newCongestionRing(r CongestionRun) (*congestionRing, error) {
	rng := rand.New(rand.NewPCG(r.Seed, 0xcc))
	flat := make([]sim.FlatHost, r.Peers)
	for i := range flat {
		switch r.Setup {
		case Uniform:
			flat[i] = sim.FlatHost{Delay: 20 * time.Millisecond, UpBps: 600e3, DownBps: 4 * 600e3}
		case Mixed:
			bps := 600e3 + 400e3*rng.Float64()
			flat[i] = sim.FlatHost{Delay: time.Duration((5 + 10*rng.Float64()) * float64(time.Millisecond)), UpBps: bps, DownBps: 4 * bps}
		}
	}
	c := &congestionRing{s: sim.New(sim.Config{Seed: r.Seed}, sim.NewFlatTopology(flat)), members: make([]wire.NodeRef, r.Peers), nodes: make([]*cc.Node, r.Peers)}
	for i := range c.members {
		// Evenly spaced: the symmetric ring of the paper's analysis (§III),
		// where no peer routes more than another.
		c.members[i] = wire.NodeRef{ID: id.Spaced(i, r.Peers), Addr: node.Addr(fmt.Sprintf("h%d", i))}
	}
	ring := cc.NewStaticRing(c.members)
	c.base = cc.DefaultConfig()
	c.base.Scheme, c.base.Gamma, c.base.Offered, c.base.PayloadBytes = r.Scheme, r.Gamma, r.Offered, congestionPayload
	c.base.PauseFraction = r.CrossLoad
	if r.Threshold > 0 {
		c.base.Threshold = r.Threshold
	}
	if r.MinRTO > 0 {
		c.base.MinRTO = r.MinRTO
	}
	for i := range c.members {
		cfg := c.base
		cfg.UplinkBps = flat[i].UpBps
		_, err := c.s.AddHost(func(addr node.Addr, _ node.Storage, _ *rand.Rand) (node.Handler, error) {
			h, err := host.New(host.DefaultConfig(), addr)
			if err != nil {
				return nil, err
			}
			n, err := cc.New(cfg, h, ring.Router(addr))
			if err != nil {
				return nil, err
			}
			c.nodes[i] = n
			return h, nil
		})
		if err != nil {
			return nil, err
		}
	}
	return c, nil
}

// measure runs the warm-up, then the measurement window, sampling the
// requests in flight and the sources' rates every 100 ms, and sums the
// peers' counters over the window.
func (c *congestionRing) measure(r CongestionRun) CongestionPoint {
	s, nodes, members := c.s, c.nodes, c.members
	s.RunFor(r.Warmup)
	before := make([]cc.Stats, r.Peers)
	for i, n := range nodes {
		before[i] = n.Snapshot()
	}
	var outstanding, samples float64
	rates := make([]float64, r.Peers)
	for t := time.Duration(0); t < r.Measure; t += 100 * time.Millisecond {
		s.RunFor(100 * time.Millisecond)
		for i, n := range nodes {
			outstanding += float64(n.Snapshot().Outstanding)
			rates[i] += n.Rate()
		}
		samples++
	}
	p := CongestionPoint{Scheme: r.Scheme.String(), Offered: r.Offered, CrossLoad: r.CrossLoad, Gamma: r.Gamma,
		Threshold: c.base.Threshold, MinRTOMs: c.base.MinRTO.Milliseconds(), Outstanding: outstanding / samples / float64(r.Peers)}
	var acked, sent, retrans uint64
	var delay time.Duration
	for i, n := range nodes {
		a, b := before[i], n.Snapshot()
		acked += b.Acked - a.Acked - (b.AckedHere - a.AckedHere)
		sent += b.Injected - a.Injected + b.Retransmits - a.Retransmits
		retrans += b.Retransmits - a.Retransmits
		delay += b.DelaySum - a.DelaySum
		p.Dropped += b.Dropped - a.Dropped
		p.Lost += b.Lost - a.Lost
		p.Marked += b.Marked - a.Marked
	}
	p.Throughput = float64(acked) / r.Measure.Seconds() / float64(r.Peers)
	if sent > 0 {
		p.RetransmitFraction = float64(retrans) / float64(sent)
	}
	if acked > 0 {
		p.DelayMs = float64(delay) / float64(acked) / float64(time.Millisecond)
	}
	p.RateDeviation = meanDeviation(rates)
	tot := s.Totals()
	p.NetworkDrops = tot.Dropped + tot.Lost + tot.QueueDrops
	sample := wire.Envelope{Kind: wire.OneWay, From: members[0], To: members[1].ID,
		Msg: &wire.CCRequest{Seq: 1 << 20, Key: members[2].ID, Source: members[3], Rate: 65000, Hops: 3, Payload: make([]byte, congestionPayload)}}
	p.MessageBytes = wire.Size(sample) + 4
	return p
}

// meanDeviation is the mean absolute deviation of xs over their mean.
func meanDeviation(xs []float64) float64 {
	var mean float64
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	if mean == 0 {
		return 0
	}
	var dev float64
	for _, x := range xs {
		dev += math.Abs(x - mean)
	}
	return dev / float64(len(xs)) / mean
}

// CongestionConfig is the whole experiment: Figure 4, Figure 5 and the
// fairness comparison.
type CongestionConfig struct {
	Seed    uint64
	Peers   int           // CongestionPeers if 0
	Warmup  time.Duration // per point
	Measure time.Duration
	// Threshold and MinRTO, if set, replace cc.DefaultConfig's in every run.
	Threshold float64
	MinRTO    time.Duration
	// Loads are the offered loads of Figure 4, requests per peer per
	// second (5 to 80 if nil); CrossLoads those of Figure 5 (0 to 20%).
	Loads, CrossLoads []float64
	// Schemes limits the runs to these (all four if nil).
	Schemes []cc.Scheme
	Log     io.Writer // progress, one line per point
}

// Congestion is the experiment's results and its summary.
type Congestion struct {
	Figure4  []CongestionPoint `json:"figure4"`
	Figure5  []CongestionPoint `json:"figure5"`
	Fairness []CongestionPoint `json:"fairness"`
	Summary  CongestionSummary `json:"summary"`
}

// CongestionSummary is what the issue checks.
type CongestionSummary struct {
	// CollapseRatio: without control, throughput at the highest offered
	// load over the peak throughput.
	CollapseRatio float64 `json:"collapse_ratio"`
	// MarkingMinOverPeak: with marking, the least throughput at an offered
	// load at or past the load where the uncontrolled ring peaked, over
	// that peak.
	MarkingMinOverPeak float64 `json:"marking_min_over_peak"`
	// MarkingRetransmitFraction is marking's largest retransmission
	// fraction in Figure 4.
	MarkingRetransmitFraction float64 `json:"marking_retransmit_fraction"`
	// FairnessCut is 1 - deviation(γ=16)/deviation(γ=0) of the sources'
	// rates under marking on the mixed links, without cross-load.
	FairnessCut float64 `json:"fairness_cut"`
	// At 10% cross-load: marking's throughput over loss's, and
	// back-pressure's delay over marking's.
	MarkingOverLossThroughput    float64 `json:"marking_over_loss_throughput_10pct"`
	BackpressureOverMarkingDelay float64 `json:"backpressure_over_marking_delay_10pct"`
	WallSeconds                  float64 `json:"wall_seconds"`
}

// DefaultLoads and DefaultCrossLoads are the figures' x axes.
var (
	DefaultLoads      = []float64{5, 10, 20, 40, 60, 70, 80}
	DefaultCrossLoads = []float64{0, 0.05, 0.10, 0.15, 0.20}
)

// ElasticLoad is what the application offers in Figure 5 and the fairness
// runs: more than the ring carries, so that the schemes set the rate.
const ElasticLoad = 150

// RunCongestionExperiment runs every point.
func RunCongestionExperiment(cfg CongestionConfig) (Congestion, error) {
	wall := time.Now()
	if cfg.Loads == nil {
		cfg.Loads = DefaultLoads
	}
	if cfg.CrossLoads == nil {
		cfg.CrossLoads = DefaultCrossLoads
	}
	schemes := cfg.Schemes
	if schemes == nil {
		schemes = []cc.Scheme{cc.None, cc.Loss, cc.BackPressure, cc.Marking}
	}
	var out Congestion
	run := func(r CongestionRun, into *[]CongestionPoint) error {
		r.Seed, r.Peers, r.Warmup, r.Measure = cfg.Seed, cfg.Peers, cfg.Warmup, cfg.Measure
		r.Threshold, r.MinRTO = cfg.Threshold, cfg.MinRTO
		p, err := RunCongestion(r)
		if err != nil {
			return err
		}
		*into = append(*into, p)
		if cfg.Log != nil {
			fmt.Fprintf(cfg.Log, "congestion: %-12s offered %5.0f  cross-load %3.0f%%  gamma %2.0f: %6.1f req/s per peer, %.2f%% retransmitted, %7.1f ms, %.1f in flight (%.0fs)\n",
				p.Scheme, p.Offered, 100*p.CrossLoad, p.Gamma, p.Throughput, 100*p.RetransmitFraction, p.DelayMs, p.Outstanding, time.Since(wall).Seconds())
		}
		return nil
	}
	for _, s := range schemes {
		for _, x := range cfg.Loads {
			if err := run(CongestionRun{Setup: Uniform, Scheme: s, Offered: x}, &out.Figure4); err != nil {
				return out, err
			}
		}
	}
	for _, s := range schemes {
		if s == cc.None {
			continue
		}
		for _, c := range cfg.CrossLoads {
			if err := run(CongestionRun{Setup: Mixed, Scheme: s, Offered: ElasticLoad, CrossLoad: c}, &out.Figure5); err != nil {
				return out, err
			}
		}
	}
	if slices.Contains(schemes, cc.Marking) {
		// §V-D: "a setup as presented in the previous subsection", the
		// links of 600-1000 kbit/s and delays of 5-15 ms; cross-load was
		// what that subsection varied, and the fairness runs leave it out.
		for _, g := range []float64{0, 16} {
			if err := run(CongestionRun{Setup: Mixed, Scheme: cc.Marking, Offered: ElasticLoad, Gamma: g}, &out.Fairness); err != nil {
				return out, err
			}
		}
	}
	out.Summary = summarizeCongestion(out)
	out.Summary.WallSeconds = time.Since(wall).Seconds()
	return out, nil
}

func summarizeCongestion(c Congestion) CongestionSummary {
	var s CongestionSummary
	by := func(pts []CongestionPoint, scheme string) []CongestionPoint {
		var out []CongestionPoint
		for _, p := range pts {
			if p.Scheme == scheme {
				out = append(out, p)
			}
		}
		return out
	}
	none := by(c.Figure4, "none")
	peak, peakAt := 0.0, 0.0
	for _, p := range none {
		if p.Throughput > peak {
			peak, peakAt = p.Throughput, p.Offered
		}
	}
	if len(none) > 0 && peak > 0 {
		s.CollapseRatio = none[len(none)-1].Throughput / peak
	}
	s.MarkingMinOverPeak = math.Inf(1)
	for _, p := range by(c.Figure4, "marking") {
		if peak > 0 && p.Offered >= peakAt {
			s.MarkingMinOverPeak = min(s.MarkingMinOverPeak, p.Throughput/peak)
		}
		s.MarkingRetransmitFraction = max(s.MarkingRetransmitFraction, p.RetransmitFraction)
	}
	if math.IsInf(s.MarkingMinOverPeak, 1) {
		s.MarkingMinOverPeak = 0
	}
	at := func(scheme string, cross float64) (CongestionPoint, bool) {
		for _, p := range by(c.Figure5, scheme) {
			if math.Abs(p.CrossLoad-cross) < 1e-9 {
				return p, true
			}
		}
		return CongestionPoint{}, false
	}
	m, okM := at("marking", 0.10)
	l, okL := at("loss", 0.10)
	b, okB := at("backpressure", 0.10)
	if okM && okL && l.Throughput > 0 {
		s.MarkingOverLossThroughput = m.Throughput / l.Throughput
	}
	if okM && okB && m.DelayMs > 0 {
		s.BackpressureOverMarkingDelay = b.DelayMs / m.DelayMs
	}
	if len(c.Fairness) == 2 && c.Fairness[0].RateDeviation > 0 {
		s.FairnessCut = 1 - c.Fairness[1].RateDeviation/c.Fairness[0].RateDeviation
	}
	return s
}
