// Package exp holds the experiments `triad sim` runs: each builds a
// simulated deployment of the real node code, applies a workload and faults,
// and measures against an oracle. They print a table for people and return
// a result for the final JSON line.
package exp
