package d2

import (
	"math/rand/v2"
	"testing"
	"time"

	"triad/internal/id"
	"triad/internal/wire"
)

// TestTombsBounded: the deleted keys remembered are at most max, the
// oldest forgotten first; they are forgotten after the ttl, and at once
// when put again; the list behind them stays bounded however often keys
// are deleted and put again.
func TestTombsBounded(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	var ts tombs
	t0 := time.Unix(0, 0)
	const max, ttl = 8, time.Hour
	keys := make([]id.ID, 12)
	for i := range keys {
		keys[i] = id.Random(r, KeyBytes)
		ts.add(keys[i], t0.Add(time.Duration(i)*time.Minute), wire.D2Auth{Sig: []byte{byte(i)}}, max)
	}
	now := t0.Add(20 * time.Minute)
	for i, k := range keys {
		if got, want := ts.has(k, now, ttl), i >= len(keys)-max; got != want {
			t.Errorf("key %d remembered: %v, want %v", i, got, want)
		}
	}
	ts.clear(keys[11])
	if ts.has(keys[11], now, ttl) {
		t.Error("a key put again is still deleted")
	}
	ts.prune(t0.Add(time.Hour+5*time.Minute+30*time.Second), ttl) // keys 4, 5 expire
	if len(ts.at) != 5 || ts.has(keys[5], now, ttl) || !ts.has(keys[6], now, ttl) {
		t.Errorf("after the prune: %d remembered", len(ts.at))
	}
	if len(ts.auth) != len(ts.at) || ts.auth[keys[6]].Sig[0] != 6 {
		t.Errorf("after the prune: %d consents kept for %d deletes", len(ts.auth), len(ts.at))
	}
	for i := 0; i < 1000; i++ {
		k := keys[i%3]
		ts.add(k, now, wire.D2Auth{}, max)
		ts.clear(k)
	}
	if len(ts.order) > 2*max+16 || len(ts.at) > max {
		t.Errorf("%d entries listed, %d remembered", len(ts.order), len(ts.at))
	}
}
