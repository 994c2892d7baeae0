package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"slices"
	"time"

	"triad/internal/client"
	"triad/internal/id"
	"triad/internal/stats"
	"triad/internal/wire"
)

// FloodConfig is the congestion benchmark of issue 18: real `triad node`
// processes on 127.0.0.1 whose cc load generators route small requests
// through the ring.
type FloodConfig struct {
	Binary     string
	Dir        string
	Nodes      int
	UplinkKbps int           // each node's paced uplink for routed requests
	Scheme     string        // the nodes' --cc-scheme
	Ramp       []float64     // offered requests/s per node of the unflooded runs
	Flood      float64       // offered requests/s per node of the flood
	Duration   time.Duration // of the flood
	Measure    time.Duration // of each ramp step, after a warm-up of the same length / 3
	MemCapMB   int           // the cap no node's resident memory may pass
	Log        func(format string, args ...any)
}

// FloodStep is one load level's goodput: routed requests acknowledged per
// second, all nodes together (a request for a key its source holds is no
// load on the ring, and is not counted).
type FloodStep struct {
	Offered float64 `json:"offered_per_node"`
	Goodput float64 `json:"goodput"`
}

// FloodResult is what the benchmark measured.
type FloodResult struct {
	Nodes      int         `json:"nodes"`
	UplinkKbps int         `json:"uplink_kbps"`
	Scheme     string      `json:"scheme"`
	Ramp       []FloodStep `json:"ramp"`
	// Peak is the median of three windows at the ramp's best rate.
	Peak    float64 `json:"peak_goodput"`
	Flood   float64 `json:"flood_offered_per_node"`
	Seconds float64 `json:"flood_seconds"`
	// The median and the least of the flood's 5 s windows after its
	// first, over Peak.
	GoodputOverPeak   float64 `json:"goodput_over_peak"`
	MinWindowOverPeak float64 `json:"min_window_over_peak"`
	Retransmitted     float64 `json:"retransmit_fraction"`
	QueueDrops        uint64  `json:"queue_drops"`
	MaxRSSMB          float64 `json:"max_rss_mb"`
	MemCapMB          int     `json:"mem_cap_mb"`
	Lookups           int     `json:"lookups"`
	LookupsFailed     int     `json:"lookups_failed"`
	LookupMaxMs       float64 `json:"lookup_max_ms"`
	LookupP99Ms       float64 `json:"lookup_p99_ms"`
	Pass              bool    `json:"pass"`
}

// Flood starts one ring and runs the ramp on it (unflooded, at each
// offered load in turn, to find its peak goodput), then the flood: every node offering cfg.Flood
// requests per second for cfg.Duration, while a client looks a random key
// up every 200 ms and the nodes' memory is read from /proc every second.
// It passes when no node passes the memory cap, the median 5 s window's
// goodput is 80% of the peak or more, and every lookup answers within 1 s.
func Flood(cfg FloodConfig) (res FloodResult, err error) {
	if cfg.Nodes < 2 || cfg.UplinkKbps < 1 || cfg.Flood <= 0 || cfg.Duration < 10*time.Second || len(cfg.Ramp) == 0 {
		return res, errors.New("bench flood: want 2 or more nodes, an uplink, a flood rate, a ramp and at least 10 s")
	}
	if cfg.Measure <= 0 {
		cfg.Measure = 10 * time.Second
	}
	if cfg.Log == nil {
		cfg.Log = func(string, ...any) {}
	}
	res = FloodResult{Nodes: cfg.Nodes, UplinkKbps: cfg.UplinkKbps, Scheme: cfg.Scheme, Flood: cfg.Flood, MemCapMB: cfg.MemCapMB}
	dir, err := os.MkdirTemp(cfg.Dir, "triad-bench-flood-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	// One ring for the ramp and the flood: its capacity depends on where
	// its random IDs fell.
	err = withFloodCluster(cfg, dir, func(c *floodCluster) error {
		measure := func(x float64) (float64, error) {
			if err := c.setFlood(x); err != nil {
				return 0, err
			}
			time.Sleep(cfg.Measure / 3)
			a, err := c.counters()
			if err != nil {
				return 0, err
			}
			time.Sleep(cfg.Measure)
			b, err := c.counters()
			if err != nil {
				return 0, err
			}
			return float64(b.acked-a.acked) / cfg.Measure.Seconds(), nil
		}
		var best FloodStep
		for _, x := range cfg.Ramp {
			g, err := measure(x)
			if err != nil {
				return err
			}
			res.Ramp = append(res.Ramp, FloodStep{Offered: x, Goodput: g})
			if g > best.Goodput {
				best = FloodStep{Offered: x, Goodput: g}
			}
			cfg.Log("bench flood: unflooded, %.0f requests/s offered per node: %.0f acknowledged/s in all", x, g)
		}
		// The peak is the median of three windows at the best rate, not
		// the best of the ramp's single windows: on shared cores one
		// window can run 10% over the ring's rate, which made a sound
		// flood fail the 80% bound (0.77 of a 284 that later runs put near
		// 250).
		peaks := []float64{best.Goodput}
		for range 2 {
			g, err := measure(best.Offered)
			if err != nil {
				return err
			}
			peaks = append(peaks, g)
		}
		res.Peak = stats.Median(peaks)
		cfg.Log("bench flood: the peak, %.0f requests/s offered per node, again: %.0f acknowledged/s in all (median of %.0f)", best.Offered, res.Peak, peaks)
		if err := c.setFlood(cfg.Flood); err != nil {
			return err
		}
		return c.flood(cfg, &res)
	})
	if err != nil {
		return res, err
	}
	res.Pass = res.Peak > 0 && res.GoodputOverPeak >= 0.8 && res.MaxRSSMB <= float64(cfg.MemCapMB) && res.LookupsFailed == 0 && res.LookupMaxMs <= 1000
	return res, nil
}

// floodCluster is a cluster whose nodes serve /metrics.
type floodCluster struct {
	*cluster
	http []string
}

type floodCounters struct{ acked, injected, retrans, drops uint64 }

func withFloodCluster(cfg FloodConfig, dir string, fn func(*floodCluster) error) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	fc := &floodCluster{}
	args := []string{"--cc-scheme", cfg.Scheme, "--cc-uplink-kbps", fmt.Sprint(cfg.UplinkKbps), "--maint-interval", "0"}
	var perNode [][]string
	for range cfg.Nodes {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		fc.http = append(fc.http, ln.Addr().String())
		ln.Close()
		perNode = append(perNode, []string{"--http", fc.http[len(fc.http)-1]})
	}
	c, err := startCluster(DHashConfig{Binary: cfg.Binary, Nodes: cfg.Nodes, NodeArgs: args, PerNodeArgs: perNode, Log: cfg.Log}, dir)
	fc.cluster = c
	defer c.stop(cfg.Log)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.waitRing(ctx); err != nil {
		return err
	}
	// The generators start (fn sets them) once the ring is whole: a node
	// that flooded while it joined would route on half a ring.
	return fn(fc)
}

// setFlood sets every node's load generator to rate, each call with a
// time bound of its own (one bound for the whole ramp ran out once the
// ramp took more than a minute).
func (c *floodCluster) setFlood(rate float64) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, a := range c.addrs {
		m, err := client.Call(ctx, a, &wire.CCFlood{MilliRate: uint64(1000 * rate)}, client.Options{TLS: c.tls})
		if err != nil {
			return fmt.Errorf("bench flood: starting %s's generator: %w", a, err)
		}
		if _, ok := m.(*wire.Ack); !ok {
			return fmt.Errorf("bench flood: %s answered %T", a, m)
		}
	}
	return nil
}

// counters sums the nodes' cc counters, read from their /metrics.
func (c *floodCluster) counters() (floodCounters, error) {
	var sum floodCounters
	hc := http.Client{Timeout: 5 * time.Second}
	for _, a := range c.http {
		fams, err := scrape(&hc, a)
		if err != nil {
			return sum, err
		}
		get := func(name string) uint64 {
			v, _ := counterValue(fams, name) // a counter not yet counted is 0
			return v
		}
		// Requests for keys a node holds itself cross no link: the
		// goodput counts the routed ones (the paper's A, §III-D).
		sum.acked += get("triad_cc_requests_acked_total") - get("triad_cc_requests_acked_here_total")
		sum.injected += get("triad_cc_requests_injected_total")
		sum.retrans += get("triad_cc_retransmissions_total")
		sum.drops += get("triad_cc_queue_drops_total")
	}
	return sum, nil
}

// rssMB is the largest resident set of the nodes, in MiB.
func (c *floodCluster) rssMB() float64 {
	most := 0.0
	for _, p := range c.nodes {
		if r, err := ProcessRSS(p.Pid()); err == nil {
			most = max(most, r.Current)
		}
	}
	return most
}

// flood measures the flood: goodput per 5 s window for cfg.Duration,
// memory every second, a lookup every 200 ms.
func (c *floodCluster) flood(cfg FloodConfig, res *FloodResult) error {
	const window = 5 * time.Second
	start, err := c.counters()
	if err != nil {
		return err
	}
	prev, began := start, time.Now()
	rng := rand.New(rand.NewPCG(uint64(began.UnixNano()), 18))
	var lookups []float64
	next := time.Now().Add(window)
	// The first window is the generators' start and is not counted.
	var goodputs []float64
	windows := max(2, int(cfg.Duration/window))
	for i, seen := 0, 0; seen < windows; i++ {
		t := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		m, err := client.Call(ctx, c.addrs[i%len(c.addrs)], &wire.ClientLookup{Key: id.Random(rng, id.Bytes)}, client.Options{TLS: c.tls})
		cancel()
		res.Lookups++
		if done, ok := m.(*wire.LookupDone); err != nil || !ok || done.Failed != "" {
			res.LookupsFailed++
		} else {
			lookups = append(lookups, float64(time.Since(t))/float64(time.Millisecond))
		}
		if i%5 == 0 {
			res.MaxRSSMB = max(res.MaxRSSMB, c.rssMB())
		}
		if time.Now().After(next) {
			cur, err := c.counters()
			if err != nil {
				return err
			}
			g := float64(cur.acked-prev.acked) / window.Seconds()
			if seen++; seen > 1 {
				goodputs = append(goodputs, g)
			}
			cfg.Log("bench flood: %.0fs: %.0f acknowledged/s, %d retransmitted, %d dropped in queues, largest node %.0f MiB, %d lookups",
				time.Since(began).Seconds(), g, cur.retrans-start.retrans, cur.drops-start.drops, res.MaxRSSMB, res.Lookups)
			prev, next = cur, next.Add(window)
		}
		time.Sleep(time.Until(t.Add(200 * time.Millisecond)))
	}
	end, err := c.counters()
	if err != nil {
		return err
	}
	res.Seconds = time.Since(began).Seconds()
	if res.Peak > 0 {
		res.GoodputOverPeak = stats.Median(goodputs) / res.Peak
		res.MinWindowOverPeak = slices.Min(goodputs) / res.Peak
	}
	if sent := end.injected - start.injected + end.retrans - start.retrans; sent > 0 {
		res.Retransmitted = float64(end.retrans-start.retrans) / float64(sent)
	}
	res.QueueDrops = end.drops - start.drops
	if len(lookups) > 0 {
		slices.Sort(lookups)
		res.LookupMaxMs = lookups[len(lookups)-1]
		res.LookupP99Ms = lookups[len(lookups)*99/100]
	}
	return nil
}
