// Command funclen checks that, outside a dispatch switch, no function is
// longer than 100 lines (issue 28), and CI runs it. It reads the non-test
// Go files under the directories given (default "."), skipping testdata
// and hidden directories, prints one line per long function, longest
// first, then the count, and exits 1 if any is not a dispatch.
//
// A dispatch is a function whose largest top-level switch, type switch or
// select (a statement of its body, or of a loop that is one) spans at least
// half its lines: one handler per case, as STYLE.md asks, grows with the
// cases and is read one case at a time.
//
//	go run ./scripts/funclen ./internal ./cmd
package main
