package d2

import (
	"math/rand/v2"
	"strings"
	"testing"

	"time"
	"triad/internal/sim"
)

func TestPositionRoundTrip(t *testing.T) {
	st := sim.NewStorage(func() time.Time { return time.Unix(0, 0) })
	r := rand.New(rand.NewPCG(1, 2))
	first, err := LoadPosition(st, r)
	if err != nil || first.Width() != KeyBytes {
		t.Fatalf("a first position: %v, %v", first, err)
	}
	if _, err := (&savePositionWork{data: encodePosition(first, nil)}).Run(st); err != nil {
		t.Fatal(err)
	}
	again, err := LoadPosition(st, r)
	if err != nil || again != first {
		t.Fatalf("after a save LoadPosition gives %v, %v; want %v", again, err, first)
	}
	if _, ok := loadHeld(st, first); ok {
		t.Errorf("a format 1 file gave a held range")
	}
	held := first.Add(first) // any other position
	if _, err := (&savePositionWork{data: encodePosition(first, &held)}).Run(st); err != nil {
		t.Fatal(err)
	}
	if again, err := LoadPosition(st, r); err != nil || again != first {
		t.Fatalf("format 2: LoadPosition gives %v, %v; want %v", again, err, first)
	}
	if got, ok := loadHeld(st, first); !ok || got != held {
		t.Errorf("format 2: held range from %v (%v), want %v", got, ok, held)
	}
	if _, ok := loadHeld(st, held); ok {
		t.Errorf("a range held at another position was taken")
	}
	for _, bad := range []string{"", "# only a comment\n", "zz\n", strings.Repeat("ab", 20) + "\n", "held-from " + first.String() + "\n"} {
		if _, err := decodePosition([]byte(bad)); err == nil {
			t.Errorf("decodePosition(%q) took it", bad)
		}
	}
}
