// Package metrics exposes what a triad daemon counts to Prometheus, in
// its text format at /metrics, over the daemon's HTTP address (--http).
//
// It implements no paper; it is operations (issue 17). Node logic stays
// free of it: the ring, block store, maintenance and RPC layers keep plain
// counters in their state machines (the simulator drives thousands of
// them), and a collector here takes a snapshot of them on the node's own
// event loop at each scrape (Driver.Do) and turns it into metrics. The news
// server's counters are atomics read at the scrape. Every daemon has its
// own registry, with the Go runtime's and the process's collectors, so
// that several daemons in one process (triad up) do not mix.
//
// Names follow Prometheus' conventions: a triad_ prefix, the subsystem
// (ring, rpc, dhash, store, maint, net, nntp), base units in the name
// (_seconds, _bytes) and _total on counters.
package metrics
