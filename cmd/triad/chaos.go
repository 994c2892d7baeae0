package main

import (
	"fmt"
	"io"
	"os"
	"time"

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
	nodes := fs.Int("nodes", 6, "node processes")
	duration := fs.Duration("duration", time.Hour, "how long to write and kill")
	seed := fs.Uint64("seed", 1, "which nodes die when, and the blocks written")
	dir := fs.String("dir", os.TempDir(), "folder for the nodes' data")
	asJSON := fs.Bool("json", false, "end with one JSON line of results")
	ackAndDrop := fs.Int("ack-and-drop", 0, "for tests: run the last `N` nodes as liars that acknowledge puts and keep only the keys, their disks wiped at every restart")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErr(fs, "unexpected argument %q", fs.Arg(0))
	}
	if *nodes < 3 || *nodes > 32 || *duration <= 0 || *duration > 24*time.Hour {
		return usageErr(fs, "want 3-32 nodes and a duration up to 24h")
	}
	if *ackAndDrop < 0 || *ackAndDrop > (*nodes-1)/3 {
		return usageErr(fs, "--ack-and-drop %d: want 0 to %d of %d nodes", *ackAndDrop, (*nodes-1)/3, *nodes)
	}
	bin, err := os.Executable()
	if err != nil {
		return err
	}
	res, err := bench.Chaos(bench.ChaosConfig{Binary: bin, Dir: *dir, Nodes: *nodes, Duration: *duration, Seed: *seed, AckAndDrop: *ackAndDrop,
		Log: func(format string, args ...any) { fmt.Fprintf(stderr, format+"\n", args...) }})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "chaos: %d nodes, %.0fs, %d kills (SIGKILL) and restarts\n", res.Nodes, res.Seconds, res.Kills)
	fmt.Fprintf(stdout, "puts: %d acknowledged, %d not (the writer moved on)\n", res.Acked, res.PutsFailed)
	fmt.Fprintf(stdout, "read back: %d of %d acknowledged blocks in %.1fs; lost: %d\n", res.Read, res.Acked, res.RecoverySeconds, res.Lost)
	if *asJSON {
		if err := printJSON(stdout, res); err != nil {
			return err
		}
	}
	if res.Lost > 0 {
		return fmt.Errorf("chaos: %d acknowledged blocks lost (first %s)", res.Lost, res.FirstLost)
	}
	if res.Acked == 0 {
		return fmt.Errorf("chaos: no put was acknowledged")
	}
	return nil
}
