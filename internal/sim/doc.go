// Package sim is the discrete-event simulator: it runs many node.Handlers
// (the same code the tcp driver runs) under virtual time, on one goroutine
// or, with Config.Parallel, on two: the hosts of each half of the topology
// (Topology.Partition) run in windows shorter than any delay between the
// halves, and what crosses waits for the window's end.
//
// A priority queue orders events by (time, sequence), seeded random sources
// drive the network model, and each host gets its own seeded source, so a
// seed gives the same run bit for bit; TraceHash fingerprints the run to
// prove it. The network model is a synthetic wide-area topology
// (Topology): per-pair latency from regions, in-region distance and
// heavy-tailed access links; per-host access-link bandwidth with FIFO
// queueing and tail drop; random loss; partitions. Hosts crash with or
// without their disk, restart, join and leave, by hand, from a churn
// process (Poisson arrivals, exponential lifetimes) or from a trace file
// (see ParseTrace and docs/sim.md).
//
//	s := sim.New(sim.Config{Seed: 1}, sim.NewTopology(1000, 1))
//	h := s.AddHost(factory)
//	s.RunFor(10 * time.Minute)
//
// Layer: a driver, beside tcp and below cmd/triad and exp. It may import
// node and wire; it must not import the tcp driver or do network I/O, and
// node logic must never import it. It reads no wall clock either: virtual
// time is the only time, so that a seed replays exactly. It imports no
// protocol (ring, dhash, maint, d2, tapestry, usenet): a host's stores are
// made by name on first use (Storage.Store).
package sim
