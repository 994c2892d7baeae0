// Package figure draws the papers' figures from the simulator's results,
// with gonum/plot, for `triad sim ... --plot FILE` (PNG, SVG or PDF by the
// file's extension).
//
//   - RingHops: the probability density of a lookup's path length, with
//     ½·log2 N marked (Chord's path-length figure, which DHash++ §3
//     builds on).
//   - DHashLatency: the median and 90th-percentile latency of each way of
//     fetching a block (DHash++ §5-6: the comparisons of its Figures on
//     lookup and fetch latency).
//   - ReplicaCDF: the fraction of objects with at most n durable copies
//     after the year of failures (UsenetDHT §6.2, Figure 5).
//   - Congestion: throughput, retransmissions and delay against offered
//     load and cross-load (Figures 4 and 5 of the congestion paper).
//   - Tapestry: the Tapestry paper's Figs. 13-15 (route-to-node and
//     route-to-object RDP by distance, with and without extra pointers)
//     and 19-22 (success of routes under massive failure, join and churn),
//     those whose experiments ran.
//   - Scenarios: the bytes Passing Tone's maintenance moved against the
//     bytes that had to move, per scenario (UsenetDHT §6.1).
//
// Draw picks one of them by the result's type: it is what the commands
// hand to an experiment as exp.Output's Plot.
package figure
