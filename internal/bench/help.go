package bench

// What each command says of its run above its flags (--help); the
// flags themselves are each config's RegisterFlags.

// StoreHelp is what `triad bench store` --help says of the run.
const StoreHelp = `
Writes --objects objects of --size bytes to a fresh storage engine from
--writers goroutines (each put waits until its object is durable), then reads
them all back in random order from --readers goroutines, every read checked
against its record checksums. Puts are made as DHash makes them, after it has
checked each block against its key; --check-keys has the store hash them too
(about one core per GB/s here). In the same run it writes the same bytes to one
plain file, with an fdatasync every --sync interval as the engine's group
commit does, and reads that file sequentially: the ratios compare the engine
with the disk itself. Before the read phases both the file and the segments
are dropped from the page cache, so both reads come from the disk.

With --reopen N it instead builds a store of N small objects, closes it, and
times opening it again.

Files go to a temporary folder under --dir, removed at the end. Progress goes
to stderr when it is a terminal; the table to stdout, and with --json a final
JSON line.`

// DHashHelp is what `triad bench dhash` --help says of the run.
const DHashHelp = `
Starts --nodes real 'triad node' processes on 127.0.0.1 (this same binary, each
with its own data folder under --dir and the default block-store settings:
2 replicas, every put durable on disk before it is acknowledged), waits until
their ring is consistent, then from this process:

  put   --ops distinct random blocks of --size bytes, with --concurrency
        operations in flight in all;
  get   each block back, checking every byte.

Operations go to the nodes in turn, as a client that knows any node sends them
(gets through a different node than the put), and that node looks the key up:
the lookup is part of the cost. A block of 16 KiB or more is then moved as a
DHash client moves one: the node asked answers the lookup, and the client sends
the block to the key's first holder, or fetches it from the holders, so that
it crosses the network once to each holder. A smaller block goes through the
node asked, which saves the lookup's round trip. With --holder-direct they go straight to the
node holding the key's first copy, as the Go client's Cluster does (it learns
the ring from the nodes), and the output says so.

A phase with failed operations prints how many and the first errors, and the
comparison scripts give it no ratio.

It prints operations per second, MB/s (10^6 bytes) and p50/p99 latency of each
phase, then stops the nodes and removes their data. A deferred put (full write
window) is retried after 1 ms and counted. Each phase is bounded by --max-phase.
Use the same --nodes, --size and --concurrency as the OpenDHT anchor
(../shared/anchors/opendht) to compare; scripts/compare-opendht.sh does both.

Scaling (UsenetDHT's Table 2): with a list, --nodes 1,2,4,6, it runs once per
count, each on a fresh cluster, prints each run's table, then one line per
count: the aggregate put and get ops/s and MB/s, the failures, the speed-up
over the first count, the nodes' CPU per put and the busiest node's use of
CPU, and the load generator's CPU per put (with --json, one JSON line of it
all). Every count stores the same k copies of a block: the nodes' default of
2, or the smallest count if less (1 node cannot hold 2 copies; a put wants k
live hosts), so --nodes 1,... runs at k=1 throughout and --nodes 2,4,6 at
k=2; the output says which. Unless --concurrency is given (then it is the
total at every count), 16 operations per node are in flight, so that the load
grows with the nodes, as the paper ran one client per server. With --profile
DIR, each count's profiles go to DIR/nodes<N>.

--explain counts a put's path end to end. After the table it prints, per
put of the put phase and per get of the get phase, the node processes summed
and this load generator apart: CPU time (/proc/PID/stat; getrusage for this
process), read-like and write-like syscalls (/proc/PID/io syscr, syscw),
context switches summed over all threads (/proc/PID/task/*/status: wake-ups
are voluntary switches, a thread that blocked and was woken; preemptions
involuntary ones), and from the nodes' /metrics, served on free ports for the
run, frames sent (triad_net_frames_sent_total), lookup hops (the sum of
triad_ring_lookup_hops: lookups forwarded to another node), the block store's
fdatasyncs (triad_store_syncs_total) and heap allocations
(go_memstats_mallocs_total; runtime.MemStats for this process). A paragraph then gives the floor of a
put: the frames of its path for k copies (request, lookup, a copy to each
holder and its acknowledgement, reply), the fdatasyncs its holders' group
commits need, and one loopback TCP round trip's CPU and wall time, timed in
this process before the nodes start (10,000 small messages in turn), as its
unit. With --json the figures are in each phase's "explain" and the run's
"floor".

--cpu-per-node C runs each node in a CPU cgroup of its own with a quota of C
cores (C x 100 ms per 100 ms period: cgroup v1's cpu.cfs_quota_us under
/sys/fs/cgroup/cpu where mounted, else v2's cpu.max), as if each had a small
machine to itself; the load generator stays outside. It takes root and a CPU
controller, and refuses to start without them; C is more than 0 and at most
the machine's cores. The cgroups are removed when the run ends. Each node then
runs with GOMAXPROCS of C rounded up. Example (the issue-31 check, 6 nodes at
least 4.5x one node's put MB/s):

  triad bench dhash --cpu-per-node 0.25 --nodes 1,2,4,6 --size 65536`

// NNTPHelp is what `triad bench nntp` --help says of the run.
const NNTPHelp = `
Loads any running NNTP server on this machine (triad's, or INN through
../shared/anchors/inn2) and prints what it sustains, in the shapes of that
anchor's nntpbench.py so the figures compare. Only loopback addresses
(127.0.0.0/8, ::1) are accepted. The phases, in order (--phases picks some):

  takethis  feeds --articles articles with TAKETHIS after MODE STREAM
            (RFC 4644) over --conns connections, 64 in flight on each: a
            writer sends, a reader collects the 239/439 replies in order.
  post      POSTs a fifth as many (the anchor's 2,000 next to 10,000) on
            one connection after MODE READER, one at a time.
  article   ARTICLE of the articles just fed, then
  body      BODY, each with 1, 4 and 16 lockstep connections (one command
            in flight on each), by number after GROUP (the group's newest
            --articles) or with --read-by id by message-id. Every article
            this run sent is checked: its body must come back byte for byte.
  over      OVER of the whole group after GROUP, 5 times; the median.
  plain     ARTICLE from one connection that does not re-arm TCP_QUICKACK,
            for at most 5 s: what a plain newsreader sees. All other phases
            re-arm it before every read, as the anchor does, so a server
            that writes a reply in two pieces under Nagle's algorithm (INN's
            nnrpd) is not measured by the client's 40 ms delayed ACK.

Articles are exactly --size bytes of wire text (headers, dot-stuffed body,
final "."), with Path, From, Newsgroups, Subject, Message-ID (unique to the
run) and Date; bodies are lines of words up to 78 characters, some starting
with a dot, or above 16 KiB base64 lines as binaries are posted. The group
must exist on the server (INN: ctlinnd newgroup triad.bench). They are all
made before the clock starts.

Rates are articles per second and MB/s (10^6 bytes of article wire text);
latencies run from a command to its whole reply. Each phase is bounded by
--max-seconds; a phase in which nothing succeeds stops the run with the
command and the server's reply. The table goes to stdout, progress to
stderr, and with --json a final JSON line.`

// FloodHelp is what `triad bench flood` --help says of the run.
const FloodHelp = `
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

// LimitsHelp is what `triad bench limits` --help says of the run.
const LimitsHelp = `
The news server's bounded totals, measured on a real 'triad nntp' process on
127.0.0.1 (this same binary, a fresh data folder under --dir):

  1. --articles small articles are fed to one group (TAKETHIS, 4 connections);
  2. --idle connections are opened and left idle;
  3. at once: a reader sends OVER 1-1000000 and reads none of the reply, a
     second reader reads the whole OVER, and a normal client runs GROUP, STAT
     and ARTICLE for --normal, timing every answer.

It prints the server's peak resident memory (VmHWM), the normal client's
latencies and what the OVER reader got, and fails unless the peak stays under
512 MB and every normal answer comes in under 100 ms.`

// SyncHelp is what `triad bench sync` --help says of the run.
const SyncHelp = `
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

// ChaosHelp is what `triad chaos` --help says of the run.
const ChaosHelp = `
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
out; nothing acknowledged may be lost all the same.

With --tapestry it runs Tapestry's churn loop instead (Fig. 23: a kill or a
start every 5 s, lifetimes of 60 s on average, for 2 minutes, under
continuous locates), with flags and defaults of its own: see
'triad chaos --tapestry --help'.`
