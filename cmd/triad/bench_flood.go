package main

import (
	"fmt"
	"io"
	"os"

	"triad/internal/bench"
)

const benchFloodAbout = `
Starts --nodes real 'triad node' processes on 127.0.0.1 whose routed requests
(internal/cc) go through a forwarding queue paced at --uplink-kbps, and uses
their own load generators (set over the node protocol, from this machine
only) to route small requests for random keys recursively through the ring,
each acknowledged end to end by the node responsible for its key.

  ramp    the ring unflooded: each node offers each rate of --ramp in turn,
          and the best goodput (routed requests acknowledged per second, all
          nodes) is the peak;
  flood   each node offers --flood requests per second for --duration, far
          past what the ring carries; every 5 s the goodput is printed, every
          second the largest node's resident memory read from /proc, and
          every 200 ms a client looks a random key up through a node.

The ramp and the flood run on one ring (its capacity depends on where its
random IDs fell).

It passes when no node's memory passes --mem-cap-mb, the goodput over the
flood stays at 80% of the peak or more, and every lookup answers within 1 s;
it exits non-zero otherwise.`

func runBenchFlood(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench flood", "bench flood [--nodes N] [--uplink-kbps K] [--flood R] [--duration D] [--json]", benchFloodAbout, stderr)
	cfg := bench.DefaultFloodConfig()
	cfg.RegisterFlags(fs)
	asJSON := fs.Bool("json", false, "end with one JSON line of results")
	if err := parseConfig(fs, args, &cfg); err != nil {
		return err
	}
	var err error
	if cfg.Binary, err = os.Executable(); err != nil {
		return err
	}
	relaxGC()
	cfg.Log = logTo(stderr)
	res, err := bench.Flood(cfg)
	if err != nil {
		return err
	}
	res.WriteText(stdout)
	if err := maybeJSON(stdout, *asJSON, res); err != nil {
		return err
	}
	if !res.Pass {
		return fmt.Errorf("bench flood: the flood's goodput, memory or lookups missed their bounds")
	}
	return nil
}
