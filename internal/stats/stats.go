package stats

import (
	"cmp"
	"slices"
)

// Quantile is the q-quantile (0 <= q <= 1) of sorted, by the nearest rank
// below: sorted[floor(q·(n-1))]. It is the zero value for an empty slice.
func Quantile[T cmp.Ordered](sorted []T, q float64) T {
	if len(sorted) == 0 {
		var zero T
		return zero
	}
	return sorted[int(q*float64(len(sorted)-1))]
}

// Median is the middle value of xs, which need not be sorted (an even
// count gives the upper of the two middle values); the zero value for an
// empty slice. xs is not changed.
func Median[T cmp.Ordered](xs []T) T {
	if len(xs) == 0 {
		var zero T
		return zero
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
