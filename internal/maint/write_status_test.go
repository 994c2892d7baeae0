package maint_test

import (
	"strings"
	"testing"
	"time"

	"triad/internal/maint"
	"triad/internal/wire"
)

func TestWriteStatus(t *testing.T) {
	now := time.Unix(1000, 0)
	st := &wire.MaintStatus{Paused: true, Counters: []wire.Counter{{Name: "rounds", Value: 7}},
		Vnodes: []wire.MaintVnode{{Succ: wire.NodeRef{Addr: "s:1"}, Pred: wire.NodeRef{Addr: "p:1"}, LastRound: now.Add(-90 * time.Second).UnixNano(), Running: true, Queued: 3, QueuedSize: 300}}}
	var b strings.Builder
	if err := maint.WriteStatus(&b, "n:1", st, now); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"maintenance on n:1: paused", "rounds", "7", "successor s:1, predecessor p:1; last round ended 1m30s ago; a round is running, 3 keys (300 bytes)"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("status lacks %q:\n%s", want, b.String())
		}
	}
	if js := maint.StatusJSON(st); js["paused"] != true || js["counters"].(map[string]uint64)["rounds"] != 7 {
		t.Errorf("JSON %v", js)
	}
}
