package exp

// What each command says of its run above its flags (--help); the
// flags themselves are each config's RegisterFlags.

// RingHelp is what `triad sim ring` --help says of the run.
const RingHelp = `
Builds a Chord ring of --nodes hosts on a synthetic wide-area topology (regions,
median RTT around 140 ms, heavy-tailed access links, per-host bandwidth), lets it
stabilize, and measures --lookups random lookups against the true ring.

  --fail F   after stabilization, crash a fraction F of the hosts at once, wait
             for the ring to heal, then measure.
  --churn    measure during churn: new hosts join with exponential interarrival
             times (mean 20 s) and live for an exponential time (mean 4 min),
             as in the Tapestry paper's "churn 1"; lookups start at the stable
             hosts.

The same --seed gives the same run (same trace_hash). Progress goes to stderr;
the results table to stdout, and with --json a final JSON line.`

// DHashHelp is what `triad sim dhash` --help says of the run.
const DHashHelp = `
Reproduces the DHash++ latency comparisons ("Designing a DHT for low latency and
high throughput", NSDI 2004) on the synthetic wide-area topology. For each PNS
setting (--pns, default 1,4,16,64) it builds a ring of --nodes block-store
hosts, lets it stabilize and its fingers and Vivaldi coordinates settle, and
measures --lookups random recursive lookups. On the PNS 16 ring it also
measures iterative lookups, lookups with integration (stopping at a node that
knows 2 successors of the key), and gets of 8 KiB blocks stored as 2 replicas
and as 7-of-14 fragments, against the direct RTT from the client to the key's
first holder.

Then comes a crash phase on that ring: every holder of some keys crashes at
once and restarts a minute later (a transient failure: disks kept), and every
holder of a few other keys loses its disk. Every crashed key must read back
("lost: 0"); the wiped ones are gone, as this experiment runs without
maintenance (sim passingtone runs it).

It checks the issue's claims: recursive <= 0.7 x iterative; PNS 16 cuts the
median by >= 30% (when --pns includes 1); PNS + integration <= 1.5 x the
direct RTT; nothing lost in the crash phase. --check also runs the invariant
checker and prints "violations: N". The table goes to stdout; --json adds one
JSON line; --plot writes an SVG bar chart. It exits non-zero when a check
fails.`

// PassingToneHelp is what `triad sim passingtone` --help says of the run.
const PassingToneHelp = `
Passing Tone's maintenance (internal/maint, the real code) in the simulator.

Without --scenario it runs the paper's durability experiment (UsenetDHT
§6.2): a failure trace (by default a synthetic year with the statistics of
the paper's PlanetLab trace: 632 hosts, 21,255 transient and 219 disk
failures, 466 hosts that never lose a disk, 56 that never fail, about 490
online, up to 9 disk failures within 8 hours; or --trace FILE, format in
docs/maint.md), 50,000 objects of 20 MiB inserted at the start on their
first 2 successors (every fifth expires during the run, at a random time,
to check that no expired object is repaired), and 150 KiB/s of repair
bandwidth per host. Objects are
64-byte stand-ins whose every byte maintenance counts as 20 MiB/64 against
the budget and in the bytes it reports. The ring's membership is
idealized (lists and lookups come from the true set of hosts up); the
maintenance, its messages and the stores are the real code. It prints
objects lost, the CDF of durable copies per object at the end (the paper's
Figure 5), bytes repaired and repairs per disk failure, and exits non-zero
if an object was lost or an expired one repaired.

With --scenario, a ring of --hosts hosts: --objects objects of --size bytes
as 2 replicas, maintenance every --interval, then one event:

  restart    a host restarts within a second with its disk: nothing may move
  transient  a host fails for 15 minutes while writes go on, then returns
             with its disk: the bytes it receives back must be at most 1.2x
             the bytes written to its range while it was down
  addition   a host joins: it must pull exactly its range's bytes
  wipe       a host's disk fails and it returns empty at new positions: the
             copies lost and its new range are made again (at most 1.2x),
             with a repair budget of 16 KiB/s per host unless
             --repair-budget is given, within the time that budget allows
             (the most one host had to fetch, over the budget) plus 15 s
  partition  the hosts split in two for 3 maintenance periods while writes go
             on, then heal
  liars      two hosts spaced around the ring turn Byzantine (one
             acknowledges stores but keeps only the keys its Merkle tree
             lists, one returns forged bytes); the first forges Leaves in
             an honest host's name, which must be refused; half as many
             objects again are put, then the disk of the first liar's
             honest successor fails: audits must find the liars out, with
             no acknowledged object lost ("lost: 0"), every object at 2
             honest copies within 3 periods, and the invariant checker
             (copies, reads through honest hosts, placement) silent
  all        each in turn

Each prints bytes moved against bytes needed, how long until every object
was back at 2 copies on its replica set, and whether it passed; it exits
non-zero when one failed. Scenarios other than wipe run with no repair
budget (a LAN's default) unless --repair-budget is given.`

// CongestionHelp is what `triad sim congestion` --help says of the run.
const CongestionHelp = `
Reproduces "Handling Very Large Numbers Of Messages In DHTs" (congestion
paper, §V) with the real cc protocol: 128 peers route requests for random
keys recursively on a Chord ring (evenly spaced IDs), each request
acknowledged end to end; each peer forwards through one queue of 200
served at its uplink. Without --scheme it runs everything:

  Figure 4   600 kbit/s peers 20 ms apart; each peer offers 5 to 80
             requests/s; throughput of each scheme (none, loss,
             backpressure, marking) against the offered load.
  Figure 5   links of 600-1000 kbit/s and 5-15 ms; peers pause forwarding
             for exponential intervals (mean 500 ms) 0-20% of the time;
             the application offers more than the ring carries; throughput,
             retransmissions, delay and requests in flight per scheme.
  Fairness   marking on the mixed links (no cross-load) with gamma 0 and 16:
             the mean deviation of the sources' rates.

--scheme runs one scheme's Figure 4 curve, or with --crossload P one point of
Figure 5. Each point simulates --warmup then measures for --measure. The
last --json line of a full run is the summary: collapse_ratio,
marking_min_over_peak, marking_retransmit_fraction, fairness_cut and the
cross-load comparisons, and wall_seconds. The same --seed gives the same
figures.`

// TapestryHelp is what `triad sim tapestry` --help says of the run.
const TapestryHelp = `
Runs issue 29's Tapestry experiments on meshes of simulated hosts that run
Tapestry alone (no ring; vs-chord's run both), on the synthetic wide-area
topology:

  rdp       route-to-node RDP over pairs of --nodes (default 400) nodes: the
            round trip through the overlay (A to B plus B to A) over the ping
            RTT, for far (> 100 ms) and near (< 20 ms) pairs (Fig. 13); and
            route-to-object RDP, one way, with 10,000 objects on one server
            (Fig. 14).
  optim     the extra pointers (k, l, m) = (1, 1, 1) against none: 1,092 nodes,
            25 objects on each, 100 random locates per node (Fig. 15).
  insert    bytes and seconds per insertion, base 4, N = 16, 64, 256, 1,024,
            20 insert/leave cycles each (Figs. 16-17).
  parallel  5, 10, 25 and 50% of a 200-node mesh joining at once; a run ends
            when the checker finds nothing (Fig. 18).
  massive   20% of --nodes (default 830) fail at once; 15 minutes later 50%
            more join; success of routes to nodes and objects (Figs. 19-20).
  churn     Poisson joins every 20 s with 4-minute lifetimes, then 10 s and 2
            minutes (Figs. 21-22).
  vs-chord  Tapestry against DHash++ on --nodes (default 400) hosts running
            both: 1,000 blocks of 8 KB put into DHash++ and published in
            Tapestry from the same two replica holders, each got from a random
            client and from a client near a copy, through DHash++ (lookup and
            fetch) and through Tapestry (route to the object, which answers
            with the bytes): median and p90 latency, nodes reached. Printed
            only; no threshold.
  rogue     insiders (5% of --nodes, default 830) lie while honest nodes
            locate 100 objects of 20 servers: each round every insider sends
            16 random nodes pointers naming an honest node, which serves
            none of it, or an address where nothing runs, as server of real
            objects and of keys nobody serves, and removals of the real
            servers' pointers (issue 44). At least 99% of locates must end
            at the object's real server, no locate of a key nobody serves
            may end found, and no locate --all may name another server.

--quick runs all of them smaller (256 nodes, fewer runs) in a few minutes.
The invariant checker runs over every live node where a mesh is claimed
stable. Each threshold of the issue is printed with ok or FAIL; --check
exits non-zero on a FAIL. The same --seed gives the same figures.

--plot FILE draws the paper's figures of the experiments that ran into one
file, two panels to a row, in the format its extension names (.png, .svg or
.pdf): Figs. 13 and 14 from rdp (route-to-node RDP by the pair's RTT in
10-ms bins, route-to-object RDP by the one-way latency in 5-ms bins: each
bin's minimum, median and 90th percentile); Fig. 15 from optim (median and
90th percentile with (k, l, m) = (1, 1, 1) and without, pointers per object
in brackets); Figs. 19-20 from massive and 21-22 from churn (the percentage
of routes to nodes and to objects that were correct, per 10 s of start
time, the failure, join or churn phase marked). An --experiment that draws
none of them is refused with --plot.`
