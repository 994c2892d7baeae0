package testutil

import (
	"testing"
	"time"
)

// maxPause bounds the pause between two polls. A wait's pauses also stay
// under a fiftieth of its timeout: a long timeout is for something slow,
// and a poll may be costly (asking every node of a cluster).
const maxPause = time.Second

// WaitFor polls cond until it holds, and fails t, naming what it waited
// for and how long, if it does not within timeout. cond runs on the
// caller's goroutine (it may fail t itself, say when a process it waits
// on has exited); the polls are as Poll's.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Poll(timeout, cond) {
		t.Fatalf("waited %v for %s", timeout, what)
	}
}

// Poll polls cond until it holds and reports whether it did within
// timeout: for a caller that explains a timeout with what it last saw, or
// carries on after one. It polls at once, then after pauses that start at
// a millisecond and double up to a fiftieth of timeout (at most maxPause),
// and once more at the deadline.
func Poll(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	longest := min(max(timeout/50, time.Millisecond), maxPause)
	for pause := time.Millisecond; !cond(); pause = min(2*pause, longest) {
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		time.Sleep(min(pause, left))
	}
	return true
}
