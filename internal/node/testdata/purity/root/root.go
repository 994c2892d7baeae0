// Package root stands for a node-logic package.
package root

import "triad/internal/node/testdata/purity/clean"

// Deadline is a pure use of time.
var Deadline = clean.Timeout
