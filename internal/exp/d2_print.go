package exp

import (
	"fmt"
	"io"
)

// D2Help is what `triad sim d2` --help says of the run.
const D2Help = `
Runs issue 30's D2 experiments ("Defragmenting DHT-based Distributed File
Systems") on a workload made from a real tree: by default Go 1.26.8's src
(11,478 files, 127.6 MB; a manifest embedded in the binary), or --tree DIR,
or --manifest FILE (write one with --tree DIR --write-manifest FILE). Each
user has its own copy of the tree, a volume, and seeded sessions of tasks:
read a package, grep a subtree, edit files, browse, create and delete files;
think time over a second between access groups. Block keys are D2's (Fig. 3)
as a file system assigns them.

  locality  Fig. 2: nodes each user meets per hour, 250 MB per node, for
            the same blocks placed traditionally (keys hashed), ordered (D2
            keys, nodes cut at equal loads) and the lower bound (blocks
            accessed over blocks per node, rounded up).
  avail     Fig. 6, Table 2: an event-driven simulator of 247 hosts under a
            one-week failure trace (synthetic, with correlated group
            failures, or --trace FILE in docs/maint.md's format), 3 replicas
            on each key's successors, after 3 days of balancing on the
            initial volumes. Routing is idealized as in the paper's
            simulator (§8.1): a block is available when one of its holders
            is up. Tasks are a user's accesses less than inter apart (1, 10,
            60 s), at most 5 minutes; a task fails if a block it needs has no
            live replica. Placements d2 (ordered keys and balancing), block
            (hashed keys) and file (hashed per file), 5 trials of random node
            IDs. block/d2 counts d2 at one failed task at least.
  balance   Fig. 11 and §10's overhead: storage imbalance (std/mean of each
            host's primary and secondary bytes, hourly) for d2, block, file
            and block with balancing; the p95 of max/min primary load for d2;
            bytes migrated by balancing over bytes written by users (every
            copy counted on both sides); and the same d2 run without block
            pointers.
  perf      Figs. 7-9: internal/d2's node code on 200, 500 and 1,000
            simulated hosts (latencies from the simulator's wide-area
            topology, mean RTT printed; every uplink 1,500 or 384 kbps,
            downlinks not the limit), 4 replicas, lookup cache on,
            balancing off with D2's positions cut at equal block counts of
            the users' volumes (where balancing leaves them). The blocks the
            users read are stored first; then each user's first 15 minutes
            of reads, cut into access groups at think times over 1 s, are
            replayed through a gateway whose cache starts empty: seq (each
            read waits for the one before) and para (15 in flight), 10 s
            timeouts, think times kept. The same code places blocks three
            ways: d2 (D2's keys), block (SHA-512 of the key) and file
            (SHA-512 of the file's key, its block and version bytes kept).
            Speedup: block's (or file's) group time over d2's, geometric
            mean per user, then over users; cache miss at the gateways;
            lookup messages block over d2; mean lookup hops.

The balance experiment also runs internal/d2's node code (t = 4, 10-minute
probes, 1-hour pointer stabilization, 3 replicas) on simulated hosts at
random positions: 247 nodes and 4 users' volumes over 24 hours (--quick: 48
and 1 over 12), each volume's files written in a random order evenly over
the hours, on three rings: d2, d2 with balancing off, and block (keys
hashed, balancing off). Hourly: std/mean of the bytes each node's engine
holds, max/min primary load (blocks in a node's range), moves and bytes
migrated; the figures checked are those of the run's second half (the first
is warm-up).

The avail experiment's balancing is a model of D2's (§6), not the node code:
every 10 minutes each live host samples a random live host and, if one's
primary load is over 4 times the other's, the lighter leaves and rejoins as
the heavier's predecessor taking half (both ways, as in Karger and Ruhl's
algorithm that D2 cites); it holds block pointers for an hour, then fetches
at 750 kbps, its range served meanwhile by the hosts after it (the old
holders). Users write at 1,500 kbps. Idle volumes, stored but never read,
fill the hosts to the paper's load (83 GB over 247 hosts, 336 MB each).

--quick runs 200 hosts, 16 users, 2 days after warm-up and 2 trials (and 60
users for locality; perf at 200 nodes only, 12 users instead of 24). Each threshold of issue 30 is printed with ok or FAIL;
--check exits non-zero when one fails; --json ends with one JSON line of
every figure; --plot FILE draws the figures of the experiments that ran
(Figs. 2, 6, 7-9, 11 and Table 2) into one file, PNG, SVG or PDF by its
extension.`

// WriteText prints the run for people.
func (r D2Result) WriteText(w io.Writer) {
	fmt.Fprintf(w, "sim d2, seed %d, experiment %s, quick %v: tree of %d files, %d directories, %.1f MB per volume\n",
		r.Seed, r.Experiment, r.Quick, r.Tree.Files, r.Tree.Dirs, float64(r.Tree.Bytes)/1e6)
	if l := r.Locality; l != nil {
		fmt.Fprintf(w, "locality: %d users, %d nodes of 250 MB, %d user-hours: nodes per user-hour traditional %.2f, ordered %.2f, lower bound %.2f\n",
			l.Users, l.Nodes, l.UserHours, l.Traditional, l.Ordered, l.LowerBound)
	}
	if r.Hosts > 0 {
		fmt.Fprintf(w, "avail/balance: %d hosts, %d users and %d idle volumes, %d trials; failures: %s; routing idealized (§8.1); balancing is a model of D2's\n",
			r.Hosts, r.Users, r.BackgroundVolumes, r.Trials, r.TraceSource)
	}
	for i, s := range r.InterSeconds {
		fmt.Fprintf(w, "avail: inter %3.0f s:", s)
		for _, run := range d2AvailRuns {
			fmt.Fprintf(w, "  %s %d/%d failed (%.5f), %.1f groups", run.name, r.TasksFailed[run.name][i], r.Tasks[run.name][i], r.Unavail[run.name][i], r.GroupsPerTask[run.name][i])
		}
		fmt.Fprintf(w, "  block/d2 %.1f\n", r.UnavailRatio[i])
	}
	if r.Imbalance != nil {
		fmt.Fprintf(w, "balance: imbalance (std/mean of storage, mean over hours)")
		for _, name := range []string{"d2", "block", "file", "block+balancing"} {
			if v, ok := r.Imbalance[name]; ok {
				fmt.Fprintf(w, "  %s %.3f", name, v)
			}
		}
		fmt.Fprintln(w)
		fmt.Fprintf(w, "balance: d2 moves %d in warm-up, %d after; migrated over the run %.1f MB with pointers, %.1f MB without (initial volumes %.1f MB)\n",
			r.WarmupMoves, r.Moves, float64(r.LBBytes)/1e6, float64(r.LBBytesNoPointers)/1e6, float64(r.InitialBytes)/1e6)
		fmt.Fprintf(w, "balance: after warm-up users wrote %.1f MB and balancing moved %.1f MB (every copy): %.3f; whole run over initial and written %.3f\n",
			float64(r.WrittenBytes)/1e6, float64(r.LBBytesAfterWarmup)/1e6, r.LBOverWritten, r.LBOverWrittenWithInitial)
	}
	if r.NodeBalance != nil {
		r.writeNodeBalance(w)
	}
	if r.Perf != nil {
		r.writePerf(w)
	}
	fmt.Fprintf(w, "violations: %d\n", r.Violations)
	for _, v := range r.Violated {
		fmt.Fprintf(w, "  %s\n", v)
	}
	for _, c := range r.Checks {
		fmt.Fprintf(w, "%-32s %10.3f  (want %s)  %s\n", c.Name, c.Value, c.Want, verdict(c.Pass))
	}
	fmt.Fprintf(w, "wall time %.0fs\n", r.WallSeconds)
}
