// Package stats holds the order statistics the experiments and benchmarks
// report (medians, percentiles of latencies), written once. It follows no
// paper; the figures it summarizes do (internal/exp, internal/bench).
//
// Layer: pure functions over slices; it imports only the standard library.
package stats
