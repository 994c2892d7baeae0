// Package clean is clean itself but imports a package that is not.
package clean

import (
	"time"

	"triad/internal/node/testdata/purity/dirty"
)

// Timeout is a duration, which is fine.
const Timeout = 2 * time.Second

var _ = dirty.Poll
