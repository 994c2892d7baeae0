// Command funclen lists the functions longer than 100 lines that are not
// dispatch switches, for CI's log (issue 28: outside a dispatch switch, no
// function is longer than 100 lines). It reads the non-test Go files under
// the directories given (default "."), skipping testdata and hidden
// directories, and prints one line per function, longest first, then the
// count. It does not fail on a long function: there are some still.
//
// A dispatch is a function whose largest top-level switch, type switch or
// select (a statement of its body, or of a loop that is one) spans at least
// half its lines: one handler per case, as STYLE.md asks, grows with the
// cases and is read one case at a time.
//
//	go run ./scripts/funclen ./internal ./cmd
package main
