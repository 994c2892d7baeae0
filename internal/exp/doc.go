// Package exp holds the experiments `triad sim` runs: each builds a
// simulated deployment of the real node code, applies a workload and faults,
// and measures against an oracle. They print a table for people and return
// a result for the final JSON line.
//
// The experiments reproduce the papers' measurements: lookups on a churning
// ring (the Chord design as DHash++ and UsenetDHT use it), and DHash puts
// and gets under faults (DHash++, "Erasure-coding vs. replication";
// UsenetDHT §6).
//
// Each command's flags (RingConfig, DHashConfig, PassingToneFlags,
// CongestionFlags, TapestryFlags, D2Flags) implement Sim: they register
// and check their flags, and run to an Output that takes the table, the
// figure and the JSON line in the command's order, so that each `triad
// sim` command is one entry of cmd/triad's table:
//
//	cfg := exp.DefaultRingConfig()
//	err := cfg.Run(exp.Output{Text: os.Stdout}) // the invariant checker's verdict
//
// Layer: a tool above the system, used by cmd/triad. It may import the
// simulator, node logic and the storage engine's Mem; it must not import
// the tcp driver, and nothing under internal/ may import it but figure,
// which draws its results.
package exp
