package main

import (
	"io"
	"os"

	"triad/internal/bench"
)

const benchSyncAbout = `
What one synchronization of Passing Tone's local maintenance costs between
two nodes that agree: it fills two real storage engines (each with its
persisted Merkle tree) with the same --keys keys of one replica range, then
runs the synchronization a round runs (the neighbour describes its tree
nodes restricted to the range, this node compares and descends only where
they differ) three times:

  - the two stores equal;
  - the neighbour also holding --outside keys past the range (its own
    range, as a successor does): only the paths along the range's ends
    differ;
  - and one key of the range only on the neighbour: found with one more
    path walked.

It prints the tree queries and the bytes they and their answers weigh on
the wire. No key list is sent where the trees agree; it fails if the first
two cases find a key missing or cost more than 512 queries or 1 MiB, or if
the third does not find exactly the one key. (Rounds also skip a
synchronization whose trees have not changed since the last clean one
after one query: docs/maint.md.)`

func runBenchSync(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench sync", "bench sync [--keys 1000000] [--outside 100000] [--dir D] [--json]", benchSyncAbout, stderr)
	cfg := bench.DefaultSyncConfig()
	cfg.RegisterFlags(fs)
	asJSON := fs.Bool("json", false, "print a final JSON line")
	if err := parseConfig(fs, args, &cfg); err != nil {
		return err
	}
	tmp, err := bench.ScratchDir(cfg.Dir, "bench-sync-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	cfg.Dir, cfg.Progress = tmp, progressTo(stderr)
	res, err := bench.Sync(cfg)
	if err != nil {
		return err
	}
	res.WriteText(stdout)
	if err := maybeJSON(stdout, *asJSON, res); err != nil {
		return err
	}
	return res.Err()
}
