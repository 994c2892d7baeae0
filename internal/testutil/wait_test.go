package testutil

import (
	"fmt"
	"testing"
	"time"
)

// recorder is a testing.TB that records a failure instead of ending the
// test.
type recorder struct {
	testing.TB
	failed string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) { r.failed = fmt.Sprintf(format, args...) }

func TestWaitFor(t *testing.T) {
	// Holds at the fifth poll.
	polls := 0
	r := &recorder{TB: t}
	WaitFor(r, time.Minute, "five polls", func() bool { polls++; return polls == 5 })
	if r.failed != "" || polls != 5 {
		t.Errorf("after %d polls, failed %q; want 5 polls and no failure", polls, r.failed)
	}

	// Never holds: fails naming what and the timeout, after polling at
	// least until the deadline.
	start := time.Now()
	polls = 0
	WaitFor(r, 20*time.Millisecond, "the impossible", func() bool { polls++; return false })
	if waited := time.Since(start); waited < 20*time.Millisecond {
		t.Errorf("gave up after %v, before the 20ms timeout", waited)
	}
	if want := "waited 20ms for the impossible"; r.failed != want {
		t.Errorf("failed %q, want %q", r.failed, want)
	}
	if polls < 2 {
		t.Errorf("%d polls in 20ms", polls)
	}
}

func TestPoll(t *testing.T) {
	if !Poll(0, func() bool { return true }) {
		t.Error("a condition that holds at once did not hold with no time to wait")
	}
	if Poll(0, func() bool { return false }) {
		t.Error("a condition that never holds held")
	}
	// A condition that comes true after the polls have backed off to
	// their longest pause is still seen.
	at := time.Now().Add(300 * time.Millisecond)
	if !Poll(5*time.Second, func() bool { return time.Now().After(at) }) {
		t.Fatal("a condition that came true was not seen")
	}
}
