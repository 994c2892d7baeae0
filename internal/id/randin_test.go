package id_test

import (
	"math/rand/v2"
	"testing"

	"triad/internal/id"
)

// RandomIn stays in its arc, wrapping or not, and spreads over it.
func TestRandomInStaysInItsArc(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		lo, hi := id.Random(r, id.Bytes), id.Random(r, id.Bytes)
		if lo == hi {
			continue
		}
		span := lo.Distance(hi).Float()
		var low, high int
		for range 50 {
			x := id.RandomIn(r, lo, hi)
			if x != lo && !x.In(lo, hi) || x == hi {
				t.Fatalf("%s not in [%s, %s)", x, lo, hi)
			}
			if lo.Distance(x).Float() < span/2 {
				low++
			} else {
				high++
			}
		}
		if low == 0 || high == 0 {
			t.Fatalf("[%s, %s): %d in the first half, %d in the second", lo, hi, low, high)
		}
	}
}
