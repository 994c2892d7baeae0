package stats

import (
	"testing"
	"time"
)

func TestQuantileAndMedian(t *testing.T) {
	xs := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, tc := range []struct {
		q    float64
		want float64
	}{{0, 1}, {0.5, 5}, {0.9, 9}, {0.99, 9}, {1, 10}} {
		if got := Quantile(xs, tc.q); got != tc.want {
			t.Errorf("Quantile(1..10, %v) = %v, want %v", tc.q, got, tc.want)
		}
	}
	if got := Quantile([]time.Duration(nil), 0.5); got != 0 {
		t.Errorf("Quantile of nothing = %v", got)
	}
	unsorted := []int{5, 1, 4, 2, 3}
	if got := Median(unsorted); got != 3 {
		t.Errorf("Median(%v) = %v, want 3", unsorted, got)
	}
	if unsorted[0] != 5 {
		t.Errorf("Median sorted its argument: %v", unsorted)
	}
	if got := Median([]int{4, 1, 3, 2}); got != 3 {
		t.Errorf("Median of an even count = %v, want the upper middle, 3", got)
	}
}
