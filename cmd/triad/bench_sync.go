package main

import (
	"fmt"
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
	keys := fs.Int("keys", 1_000_000, "keys in the replica range, on both stores")
	outside := fs.Int("outside", 100_000, "keys the neighbour also holds past the range")
	dir := fs.String("dir", "triad-data", "folder for the two stores (removed after)")
	asJSON := fs.Bool("json", false, "print a final JSON line")
	if err := parse(fs, args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return usageErr(fs, "unexpected argument %q", fs.Arg(0))
	case *keys < 1 || *keys > 100_000_000:
		return usageErr(fs, "--keys must be between 1 and 100,000,000")
	case *outside < 0 || *outside > 100_000_000:
		return usageErr(fs, "--outside must be between 0 and 100,000,000")
	}
	tmp, err := scratchDir(*dir, "bench-sync-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	res, err := bench.Sync(bench.SyncConfig{Dir: tmp, Keys: *keys, Outside: *outside, Progress: progressTo(stderr)})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "two stores built in %.1f s\n", res.BuildSeconds)
	var bad []string
	for i, c := range res.Cases {
		fmt.Fprintf(stdout, "%-60s %6d queries %10d bytes  %d missing\n", c.Name, c.Queries, c.Bytes, c.Missing)
		last := i == len(res.Cases)-1
		switch {
		case !last && (c.Missing != 0 || c.Queries > 512 || c.Bytes > 1<<20):
			bad = append(bad, c.Name)
		case last && c.Missing != 1:
			bad = append(bad, c.Name)
		}
	}
	if *asJSON {
		if err := printJSON(stdout, res); err != nil {
			return err
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("bench sync: out of bounds: %q", bad)
	}
	return nil
}
