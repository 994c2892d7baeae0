package exp

import (
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"time"

	"triad/internal/deploy"
	"triad/internal/dhash"
	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/ring"
	"triad/internal/sim"
	"triad/internal/stats"
	"triad/internal/wire"
)

// DHashConfig describes a `triad sim dhash` run: the DHash++ latency
// comparisons on the synthetic wide-area topology.
type DHashConfig struct {
	Nodes int
	Seed  uint64
	// Samples are the PNS settings compared; each gets a ring of its own.
	// The one with 16 (or else the last) also runs the other comparisons.
	// Default 1, 4, 16, 64.
	Samples []int
	// Lookups per measured mode. Default 2,000.
	Lookups int
	// Blocks put and fetched per redundancy mode. Default 300 of 8 KiB
	// (DHash++'s block size).
	Blocks, BlockSize int
	// Settle is how long fingers, coordinates and RTT estimates settle
	// after the ring is correct. Default 3 min.
	Settle time.Duration
	Log    io.Writer
	// Check runs the invariant checker (Checker): the ring once it is
	// stable, and the copies of every acknowledged put.
	Check bool
}

// DefaultDHashConfig returns the 2,048-node run with seed 1.
func DefaultDHashConfig() DHashConfig {
	return DHashConfig{Nodes: 2048, Seed: 1, Samples: []int{1, 4, 16, 64}, Lookups: 2000, Blocks: 300, BlockSize: 8192, Settle: 3 * time.Minute}
}

// LatencyRow is one measured mode.
type LatencyRow struct {
	Name     string  `json:"name"`
	Count    int     `json:"count"`
	Failed   int     `json:"failed"`
	MedianMs float64 `json:"median_ms"`
	P90Ms    float64 `json:"p90_ms"`
	MeanHops float64 `json:"mean_hops,omitempty"`
}

// DHashResult is what a run measured; its JSON form is the last line of
// `triad sim dhash --json`.
type DHashResult struct {
	Nodes       int          `json:"nodes"`
	Seed        uint64       `json:"seed"`
	RTTMedianMs float64      `json:"rtt_median_ms"`
	Rows        []LatencyRow `json:"rows"`
	// The checks, computed from the rows.
	DirectRTTMs          float64 `json:"direct_rtt_median_ms"` // client to the key's first holder
	RecursiveOverIter    float64 `json:"recursive_over_iterative"`
	PNS16Cut             float64 `json:"pns16_cut"` // 1 - median(PNS 16) / median(no PNS)
	IntegratedOverDirect float64 `json:"pns_integration_over_direct_rtt"`
	// Durability is the crash phase on the main ring.
	Durability  Durability `json:"durability"`
	Pass        bool       `json:"pass"`
	WallSeconds float64    `json:"wall_seconds"`
	Events      uint64     `json:"events"`
	// Checked is the invariant checker's verdict, with Check.
	Checked
}

// Row returns the row with the given name.
func (r DHashResult) Row(name string) (LatencyRow, bool) {
	for _, row := range r.Rows {
		if row.Name == name {
			return row, true
		}
	}
	return LatencyRow{}, false
}

// Row names.
const (
	RowIterative  = "iterative, PNS 16"
	RowRecursive  = "recursive, PNS 16"
	RowIntegrated = "recursive, PNS 16, integration"
	RowFetchWhole = "get: 2 replicas (lookup + fetch)"
	RowFetchFrags = "get: 7-of-14 fragments (lookup + fetch)"
	RowDirect     = "direct RTT client -> first holder"
)

func pnsRow(samples int) string {
	if samples == 1 {
		return "recursive, no PNS"
	}
	return fmt.Sprintf("recursive, PNS %d", samples)
}

// RunDHash builds one ring per PNS setting and measures lookup and fetch
// latencies.
func RunDHash(cfg DHashConfig) (DHashResult, error) {
	def := DefaultDHashConfig()
	if len(cfg.Samples) == 0 {
		cfg.Samples = def.Samples
	}
	if cfg.Lookups <= 0 {
		cfg.Lookups = def.Lookups
	}
	if cfg.Blocks <= 0 {
		cfg.Blocks = def.Blocks
	}
	if cfg.BlockSize <= 0 {
		cfg.BlockSize = def.BlockSize
	}
	if cfg.Settle <= 0 {
		cfg.Settle = def.Settle
	}
	if cfg.Nodes < 16 || cfg.Nodes > sim.MaxHosts/2 {
		return DHashResult{}, fmt.Errorf("nodes %d not in [16, %d]", cfg.Nodes, sim.MaxHosts/2)
	}
	main := cfg.Samples[len(cfg.Samples)-1]
	if slices.Contains(cfg.Samples, 16) {
		main = 16
	}
	wall := time.Now()
	res := DHashResult{Nodes: cfg.Nodes, Seed: cfg.Seed}
	var chk *Checker
	if cfg.Check {
		chk = &Checker{Succs: deploy.DefaultOptions().Ring.Succs}
	}
	for _, samples := range cfg.Samples {
		s, err := buildDHash(cfg, samples)
		if err != nil {
			return res, err
		}
		chk.CheckRing(s, fmt.Sprintf("PNS %d ring settled", samples), true)
		res.RTTMedianMs = ms(s.Topology().Stats(20000).Median)
		r := rand.New(rand.NewPCG(cfg.Seed, 0xd4a5))
		row, direct := measureLookups(s, r, cfg.Lookups, pnsRow(samples), ring.LookupOptions{})
		res.Rows = append(res.Rows, row)
		if samples == main {
			it, _ := measureLookups(s, r, cfg.Lookups, RowIterative, ring.LookupOptions{Iterative: true})
			in, _ := measureLookups(s, r, cfg.Lookups, RowIntegrated, ring.LookupOptions{MinSuccs: dhash.DefaultConfig().Replicas})
			res.Rows = append(res.Rows, it, in,
				measureGets(s, r, cfg, RowFetchWhole, wire.RedundancyReplicas, chk),
				measureGets(s, r, cfg, RowFetchFrags, wire.RedundancyFragments, chk),
				summarize(RowDirect, direct, 0, nil))
			res.DirectRTTMs = stats.Quantile(sorted(direct), 0.5)
			chk.CheckCopies("after the gets")
			chk.CheckReads(s, "after the gets", r.IntN)
			res.Durability = measureDurability(s, r, cfg, chk)
		}
		res.Events += s.Totals().Events
		if cfg.Log != nil {
			fmt.Fprintf(cfg.Log, "sim dhash: PNS %d measured at %.0fs virtual, %.0fs wall\n", samples, s.Now().Seconds(), time.Since(wall).Seconds())
		}
	}
	rec, _ := res.Row(pnsRow(main))
	if it, ok := res.Row(RowIterative); ok && it.MedianMs > 0 {
		res.RecursiveOverIter = rec.MedianMs / it.MedianMs
	}
	none, noPNS := res.Row(pnsRow(1))
	if noPNS && none.MedianMs > 0 {
		res.PNS16Cut = 1 - rec.MedianMs/none.MedianMs
	}
	if in, ok := res.Row(RowIntegrated); ok && res.DirectRTTMs > 0 {
		res.IntegratedOverDirect = in.MedianMs / res.DirectRTTMs
	}
	// The PNS claim needs a ring without PNS to compare with.
	res.Pass = res.RecursiveOverIter > 0 && res.RecursiveOverIter <= 0.7 &&
		(res.PNS16Cut >= 0.3 || !noPNS) && res.IntegratedOverDirect > 0 && res.IntegratedOverDirect <= 1.5 &&
		res.Durability.Lost == 0 && res.Durability.WipedLost > 0
	res.Checked = chk.report()
	res.WallSeconds = time.Since(wall).Seconds()
	return res, nil
}

// buildDHash joins cfg.Nodes block-store hosts with the given PNS samples,
// waits until the ring is correct, and lets fingers and coordinates settle.
func buildDHash(cfg DHashConfig, samples int) (*sim.Sim, error) {
	topo := sim.NewTopology(cfg.Nodes, cfg.Seed)
	epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := sim.New(sim.Config{Seed: cfg.Seed, Epoch: epoch}, topo)
	opts := deploy.DefaultOptions()
	opts.Ring.PNSSamples = samples
	var joinErr error
	for i := 0; i < cfg.Nodes; i++ {
		s.At(time.Duration(i)*20*time.Millisecond, func() {
			var boot node.Addr
			if up := upHosts(s, len(s.Hosts())); len(up) > 0 {
				boot = up[s.Rand().IntN(len(up))].Addr
			}
			_, err := s.AddHost(deploy.Factory(opts, func() node.Addr { return boot }))
			if err != nil && joinErr == nil {
				joinErr = err
			}
		})
	}
	s.RunUntil(time.Duration(cfg.Nodes) * 20 * time.Millisecond)
	if joinErr != nil {
		return nil, joinErr
	}
	if err := waitStable(s, 10*time.Minute); err != nil {
		return nil, err
	}
	s.RunFor(cfg.Settle)
	return s, nil
}

// measureLookups runs n lookups from random hosts for random keys, 10 ms
// apart, and also returns the direct RTT from each origin to the host that
// holds the key.
func measureLookups(s *sim.Sim, r *rand.Rand, n int, name string, opts ring.LookupOptions) (LatencyRow, []float64) {
	var lat, hops, direct []float64
	failed, outstanding := 0, 0
	up := upHosts(s, len(s.Hosts()))
	start := s.Now()
	for i := 0; i < n; i++ {
		h := up[r.IntN(len(up))]
		key := id.Random(r, id.Bytes)
		s.At(start+time.Duration(i)*10*time.Millisecond, func() {
			outstanding++
			s.Do(h, func(env node.Env) {
				chordOf(h).Lookup(env, key, opts, func(env node.Env, lr ring.Result) {
					outstanding--
					if lr.Err != nil || len(lr.Succs) == 0 {
						failed++
						return
					}
					lat = append(lat, ms(lr.Latency))
					hops = append(hops, float64(lr.Hops))
					if holder := s.HostAt(lr.Succs[0].Addr); holder != nil {
						direct = append(direct, ms(s.Topology().RTT(h.Index, holder.Index)))
					}
				})
			})
		})
	}
	drain(s, start+time.Duration(n)*10*time.Millisecond, &outstanding)
	return summarize(name, lat, failed+outstanding, hops), direct
}

// measureGets puts cfg.Blocks blocks from random hosts, then gets each from
// another random host, and reports the gets' latency.
func measureGets(s *sim.Sim, r *rand.Rand, cfg DHashConfig, name string, red wire.Redundancy, chk *Checker) LatencyRow {
	up := upHosts(s, len(s.Hosts()))
	puts := putBlocks(s, r, cfg.Blocks, cfg.BlockSize, red, chk)
	outstanding, failed := 0, 0
	var lat []float64
	start := s.Now()
	for i, p := range puts {
		key := p.key
		if key.IsZero() {
			failed++
			continue
		}
		h := up[r.IntN(len(up))]
		s.At(start+time.Duration(i)*10*time.Millisecond, func() {
			outstanding++
			s.Do(h, func(env node.Env) {
				// The host's clock: the simulator's own stands at its last
				// action while hosts run, not at this event.
				t0 := env.Now()
				deploy.Of(h).Blocks.Get(env, key, red, func(env node.Env, _ dhash.Block, err error) {
					outstanding--
					if err != nil {
						failed++
						return
					}
					lat = append(lat, ms(env.Now().Sub(t0)))
				})
			})
		})
	}
	drain(s, start+time.Duration(len(puts))*10*time.Millisecond, &outstanding)
	return summarize(name, lat, failed+outstanding, nil)
}

// put is one block put by putBlocks: its key and holders once
// acknowledged (a zero key if the put failed), and its place in the order
// in which the puts were acknowledged.
type put struct {
	key     id.ID
	holders []wire.NodeRef
	acked   int
}

// putBlocks puts n random blocks of size bytes, from random running hosts
// 10 ms apart, and runs until every put has ended (at most a minute more).
// Acknowledged puts are reported to chk.
func putBlocks(s *sim.Sim, r *rand.Rand, n, size int, red wire.Redundancy, chk *Checker) []put {
	up := upHosts(s, len(s.Hosts()))
	puts := make([]put, n)
	outstanding, acked := 0, 0
	start := s.Now()
	for i := range puts {
		h := up[r.IntN(len(up))]
		data := make([]byte, size)
		for j := range data {
			data[j] = byte(r.Uint32())
		}
		s.At(start+time.Duration(i)*10*time.Millisecond, func() {
			outstanding++
			s.Do(h, func(env node.Env) {
				expiry := env.Now().Add(24 * time.Hour)
				deploy.Of(h).Blocks.Put(env, data, expiry, red, func(env node.Env, key id.ID, holders []wire.NodeRef, err error) {
					outstanding--
					if err == nil {
						puts[i] = put{key: key, holders: holders, acked: acked}
						acked++
						chk.Acked(s, key, data, expiry, red, holders)
					}
				})
			})
		})
	}
	drain(s, start+time.Duration(n)*10*time.Millisecond, &outstanding)
	return puts
}

// drain runs until end, then until nothing is outstanding (at most a
// minute more).
func drain(s *sim.Sim, end time.Duration, outstanding *int) {
	s.RunUntil(end)
	for deadline := s.Now() + time.Minute; *outstanding > 0 && s.Now() < deadline; {
		s.RunFor(time.Second)
	}
}

func summarize(name string, lat []float64, failed int, hops []float64) LatencyRow {
	lat = sorted(lat)
	return LatencyRow{Name: name, Count: len(lat), Failed: failed, MedianMs: stats.Quantile(lat, 0.5), P90Ms: stats.Quantile(lat, 0.9), MeanHops: mean(hops)}
}

func sorted(xs []float64) []float64 {
	xs = slices.Clone(xs)
	slices.Sort(xs)
	return xs
}
