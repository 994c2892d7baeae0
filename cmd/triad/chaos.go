package main

import (
	"io"
	"os"

	"triad/internal/bench"
)

const chaosAbout = `
Kills and restarts real 'triad node' processes on 127.0.0.1 while a writer
stores blocks, then checks that nothing acknowledged was lost:

  - --nodes nodes start (this same binary, data under --dir, maintenance
    every 30 s) and form a ring;
  - for --duration, four writers put random blocks (100 B to 3 KB, 2
    replicas) through random running nodes and log every acknowledged key;
    meanwhile, every 2-6 s a random node is killed with SIGKILL and started
    again 2-6 s later on its own data (one node down at a time);
  - then, with every node up, every acknowledged block is read back, 8 at
    a time, through the nodes in turn (the client checks each block against
    its key); gets that fail are retried for up to a minute.

It prints the puts acknowledged and failed, the kills, and how many
acknowledged blocks could not be read back, and fails unless that is 0.

For tests, --ack-and-drop N runs the last N nodes (at most a third) as
liars: each acknowledges every put and keeps only the keys, which its
Merkle tree lists ('triad node --test-lie lying-tree'), and its data
folder is wiped before every restart. Maintenance's audits must find them
out; nothing acknowledged may be lost all the same.`

func runChaos(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("chaos", "chaos [--nodes 6] [--duration 1h] [--seed S] [--ack-and-drop N] [--json]", chaosAbout, stderr)
	cfg := bench.DefaultChaosConfig()
	cfg.RegisterFlags(fs)
	asJSON := fs.Bool("json", false, "end with one JSON line of results")
	if err := parseConfig(fs, args, &cfg); err != nil {
		return err
	}
	var err error
	if cfg.Binary, err = os.Executable(); err != nil {
		return err
	}
	cfg.Log = logTo(stderr)
	res, err := bench.Chaos(cfg)
	if err != nil {
		return err
	}
	res.WriteText(stdout)
	if err := maybeJSON(stdout, *asJSON, res); err != nil {
		return err
	}
	return res.Err()
}
