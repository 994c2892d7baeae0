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
	if _, err := (&savePositionWork{data: encodePosition(first)}).Run(st); err != nil {
		t.Fatal(err)
	}
	again, err := LoadPosition(st, r)
	if err != nil || again != first {
		t.Fatalf("after a save LoadPosition gives %v, %v; want %v", again, err, first)
	}
	for _, bad := range []string{"", "# only a comment\n", "zz\n", strings.Repeat("ab", 20) + "\n"} {
		if _, err := decodePosition([]byte(bad)); err == nil {
			t.Errorf("decodePosition(%q) took it", bad)
		}
	}
}
