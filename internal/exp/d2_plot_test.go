package exp

import (
	"reflect"
	"testing"
)

// hourlyMean averages hour i over the trials laid one after another, and
// refuses samples that do not divide into the trials.
func TestHourlyMean(t *testing.T) {
	for _, tc := range []struct {
		hourly []float64
		trials int
		want   []float64
	}{
		{[]float64{1, 2, 3}, 1, []float64{1, 2, 3}},
		{[]float64{1, 2, 3, 3, 4, 5}, 2, []float64{2, 3, 4}},
		{[]float64{1, 2, 3}, 2, nil},
		{nil, 0, nil},
		{[]float64{}, 2, []float64{}},
	} {
		if got := hourlyMean(tc.hourly, tc.trials); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("hourlyMean(%v, %d) = %v, want %v", tc.hourly, tc.trials, got, tc.want)
		}
	}
}
