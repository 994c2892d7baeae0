package bench

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"triad/internal/client"
	"triad/internal/wire"
)

// TapestryConfig is Tapestry's routing microbenchmark (§V-B1, Figs. 11
// and 12): two real `triad node --tapestry` processes on 127.0.0.1, one
// routing messages of Size bytes to the other's ID through its router,
// Window in flight, each acknowledged by the hop that takes it.
type TapestryConfig struct {
	Binary string
	Dir    string
	Size   int // bytes of each message's payload
	Count  int // messages per round
	Window int // messages in flight
	Rounds int // the median round is reported
	// Target is the messages/s the median round must reach to pass:
	// five times the paper's 7,100 for 4 KB on a 2.4 GHz P-IV.
	Target float64
	Port   int // node i's port, Port+i (0: free ports)
	Log    func(format string, args ...any)
}

// TapestryRound is one round's figures.
type TapestryRound struct {
	PerSecond float64 `json:"messages_per_s"`
	MBps      float64 `json:"mb_per_s"`
	Failed    uint64  `json:"failed"`
	HopP50Ms  float64 `json:"hop_rtt_p50_ms"`
	HopP90Ms  float64 `json:"hop_rtt_p90_ms"`
}

// TapestryResult is what the benchmark measured.
type TapestryResult struct {
	Nodes  []string        `json:"nodes"` // the two nodes' addresses
	Size   int             `json:"size"`
	Window int             `json:"window"`
	Rounds []TapestryRound `json:"rounds"`
	Median float64         `json:"messages_per_s_median"`
	// IdleHopP50Ms and IdleHopP90Ms are a hop's round trip with one
	// message in flight: the per-hop latency of Fig. 11.
	IdleHopP50Ms float64 `json:"idle_hop_rtt_p50_ms"`
	IdleHopP90Ms float64 `json:"idle_hop_rtt_p90_ms"`
	HopP50Ms     float64 `json:"hop_rtt_p50_ms_median"`
	Target       float64 `json:"target"`
	PaperRate    float64 `json:"paper_messages_per_s"`
	Pass         bool    `json:"pass"`
}

// Tapestry runs the benchmark.
func Tapestry(cfg TapestryConfig) (res TapestryResult, err error) {
	if err := cfg.Validate(); err != nil {
		return res, err
	}
	if cfg.Log == nil {
		cfg.Log = func(string, ...any) {}
	}
	res = TapestryResult{Size: cfg.Size, Window: cfg.Window, Target: cfg.Target, PaperRate: 7100}
	dir, err := os.MkdirTemp(cfg.Dir, "triad-bench-tapestry-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	c, err := startCluster(DHashConfig{Binary: cfg.Binary, Nodes: 2, Port: cfg.Port, NodeArgs: []string{"--tapestry", "--maint-interval", "0"}, Log: cfg.Log}, dir)
	defer c.stop(cfg.Log)
	if err != nil {
		return res, err
	}
	res.Nodes = c.addrs
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	target, err := c.waitTapestry(ctx)
	if err != nil {
		return res, err
	}
	run := func(count, window int) (*wire.TapBenchDone, error) {
		m, err := client.Call(ctx, c.addrs[0], &wire.TapBench{Key: target.ID, Count: uint32(count), Size: uint32(cfg.Size), Window: uint32(window)},
			client.Options{TLS: c.tls})
		if err != nil {
			return nil, err
		}
		d, ok := m.(*wire.TapBenchDone)
		if !ok || d.Micros == 0 {
			return nil, fmt.Errorf("answered %T", m)
		}
		return d, nil
	}
	// One message at a time first: the hop's own latency, unqueued (Fig. 11).
	lat, err := run(min(cfg.Count, 5000), 1)
	if err != nil {
		return res, fmt.Errorf("bench tapestry: latency round: %w", err)
	}
	res.IdleHopP50Ms, res.IdleHopP90Ms = float64(lat.P50Micros)/1e3, float64(lat.P90Micros)/1e3
	cfg.Log("bench tapestry: one message at a time: hop round trip p50 %.3f ms, p90 %.3f ms", res.IdleHopP50Ms, res.IdleHopP90Ms)
	for i := range cfg.Rounds {
		d, err := run(cfg.Count, cfg.Window)
		if err != nil {
			return res, fmt.Errorf("bench tapestry: round %d: %w", i+1, err)
		}
		secs := float64(d.Micros) / 1e6
		r := TapestryRound{PerSecond: float64(d.Acked) / secs, MBps: float64(d.Acked) * float64(cfg.Size) / secs / 1e6, Failed: d.Failed,
			HopP50Ms: float64(d.P50Micros) / 1e3, HopP90Ms: float64(d.P90Micros) / 1e3}
		cfg.Log("bench tapestry: round %d: %.0f messages/s of %d bytes, hop round trip p50 %.2f ms, %d failed", i+1, r.PerSecond, cfg.Size, r.HopP50Ms, r.Failed)
		res.Rounds = append(res.Rounds, r)
	}
	rates := make([]float64, 0, len(res.Rounds))
	hops := make([]float64, 0, len(res.Rounds))
	failed := uint64(0)
	for _, r := range res.Rounds {
		rates, hops, failed = append(rates, r.PerSecond), append(hops, r.HopP50Ms), failed+r.Failed
	}
	slices.Sort(rates)
	slices.Sort(hops)
	res.Median, res.HopP50Ms = rates[len(rates)/2], hops[len(hops)/2]
	res.Pass = failed == 0 && res.Median >= cfg.Target
	return res, nil
}

// waitTapestry waits until both nodes have joined and know each other,
// and returns the second node's Tapestry reference.
func (c *cluster) waitTapestry(ctx context.Context) (wire.NodeRef, error) {
	for {
		var last *wire.TapTable
		ready := true
		for _, a := range c.addrs {
			m, err := client.Call(ctx, a, &wire.TapGetTable{}, client.Options{TLS: c.tls})
			t, ok := m.(*wire.TapTable)
			if err != nil || !ok || !t.Joined || len(t.Entries) == 0 {
				ready = false
				break
			}
			last = t
		}
		if ready {
			return last.Self, nil
		}
		select {
		case <-ctx.Done():
			return wire.NodeRef{}, errors.New("bench tapestry: the two nodes did not join each other in time")
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// DefaultTapestryConfig is 4 KB messages, 200,000 a round, 256 in flight,
// three rounds, a target of 35,000/s.
func DefaultTapestryConfig() TapestryConfig {
	return TapestryConfig{Dir: os.TempDir(), Size: 4096, Count: 200_000, Window: 256, Rounds: 3, Target: 35_000}
}

// Validate reports a configuration that cannot run.
func (c TapestryConfig) Validate() error {
	if c.Size < 0 || c.Size > wire.MaxTapPayload || c.Count < 1 || c.Count > wire.MaxTapBenchCount || c.Window < 1 || c.Window > wire.MaxTapBenchWindow || c.Rounds < 1 || c.Rounds > 20 {
		return fmt.Errorf("bench tapestry: want a size up to %d bytes, 1 to %d messages, a window of 1 to %d and 1 to 20 rounds", wire.MaxTapPayload, wire.MaxTapBenchCount, wire.MaxTapBenchWindow)
	}
	return checkPort(c.Port, 2)
}

// RegisterFlags defines `triad bench tapestry`'s flags.
func (c *TapestryConfig) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Dir, "dir", c.Dir, "folder for the nodes' data")
	fs.IntVar(&c.Size, "size", c.Size, "bytes of each message's payload")
	fs.IntVar(&c.Count, "count", c.Count, "messages per round")
	fs.IntVar(&c.Window, "window", c.Window, "messages in flight")
	fs.IntVar(&c.Rounds, "rounds", c.Rounds, "rounds; the median is reported")
	fs.Float64Var(&c.Target, "target", c.Target, "messages/s the median round must reach")
	addPortFlag(fs, &c.Port)
}

// TapestryHelp is what `triad bench tapestry` --help says of the run.
const TapestryHelp = `
Starts two real 'triad node --tapestry' processes on 127.0.0.1 (as the
paper's microbenchmark put two nodes on one machine, §V-B1) and has the
first route --count messages of --size bytes to the second's ID through
its Tapestry router, --window in flight; each is a TapRoute request the
second node routes (it is the key's root) and acknowledges. A round's rate
is messages acknowledged over the time from the first send to the last
acknowledgement; the hop's round trip is timed per message. It prints each
round, the median, and its ratio to the paper's 7,100 messages/s of 4 KB
(Fig. 12); it fails below --target or if any message failed.
`

// Err is the run's verdict: nil if no message failed and the median
// rate met the target.
func (r TapestryResult) Err() error {
	if !r.Pass {
		return fmt.Errorf("bench tapestry: the median rate %.0f/s missed the target %.0f/s (or a message failed)", r.Median, r.Target)
	}
	return nil
}

// WriteText prints the result.
func (r TapestryResult) WriteText(w io.Writer) {
	fmt.Fprintf(w, "2 node processes on 127.0.0.1, one routing %d-byte messages to the other's ID, %d in flight, each acknowledged by the hop that takes it\n", r.Size, r.Window)
	for i, x := range r.Rounds {
		fmt.Fprintf(w, "round %d: %.0f messages/s (%.1f MB/s), hop round trip p50 %.2f ms p90 %.2f ms, %d failed\n", i+1, x.PerSecond, x.MBps, x.HopP50Ms, x.HopP90Ms, x.Failed)
	}
	verdict := "PASS"
	if !r.Pass {
		verdict = "FAIL"
	}
	fmt.Fprintf(w, "one message at a time: hop round trip p50 %.3f ms, p90 %.3f ms (the paper's Fig. 11: ~0.1 ms of processing per hop on a 2.4 GHz P-IV)\n", r.IdleHopP50Ms, r.IdleHopP90Ms)
	fmt.Fprintf(w, "median %.0f messages/s: %.1fx the paper's %.0f (2.4 GHz P-IV, Fig. 12); target %.0f: %s\n",
		r.Median, r.Median/r.PaperRate, r.PaperRate, r.Target, verdict)
}
