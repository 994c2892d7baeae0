// Package lie is storage that lies, for tests: an engine wrapper that
// acknowledges and drops, keeps keys without their bytes, or returns
// forged bytes (issue 27's Byzantine hosts). The simulator's liars run the
// real node code on it, and `triad node --test-lie` runs a real node on it
// (issue 44). It is not a paper's mechanism; it is what the audits of
// Passing Tone (maint) and D2 (internal/d2's audit.go) are tested against.
package lie
