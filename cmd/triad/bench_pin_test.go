package main

import (
	"testing"
	"time"

	"triad/internal/e2e"

	"triad/internal/bench"
)

// TestBenchPin: triad bench pin's two attacks run against a real node and
// measure what they claim: the stalled frames were written, the gets
// asked, the operator's ring answered throughout, and the node's
// anonymous memory stayed under a bound that holds with its default
// soft limit (the figures themselves come from the command: docs).
func TestBenchPin(t *testing.T) {
	if testing.Short() {
		t.Skip("starts node processes")
	}
	c := e2e.NewCluster(t)
	res, err := bench.Pin(bench.PinConfig{Binary: c.Bin, Dir: t.TempDir(), Frames: 20, Readers: 5, Gets: 100, BlockBytes: 1 << 20,
		Hold: 3 * time.Second, MaxAnonMB: 320, RingLimit: 5 * time.Second, Log: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Attacks) != 2 {
		t.Fatalf("%d attacks ran, want 2", len(res.Attacks))
	}
	frames, replies := res.Attacks[0], res.Attacks[1]
	if frames.Asked != 20 || frames.SentMB < 20 {
		t.Errorf("stalled frames: %d frames, %.0f MB written; want 20 and at least 20 MB", frames.Asked, frames.SentMB)
	}
	if replies.Asked != 500 {
		t.Errorf("unread replies: %d gets asked, want 500", replies.Asked)
	}
	for _, a := range res.Attacks {
		if a.Rings == 0 || a.RingFailed > 0 || a.GetError != "" || a.PeakAnonMB <= 0 {
			t.Errorf("%s: %d rings (%d failed), get %q, peak %.0f MB", a.Name, a.Rings, a.RingFailed, a.GetError, a.PeakAnonMB)
		}
	}
	if !res.Pass {
		t.Errorf("bench pin failed: %+v", res.Attacks)
	}
}
