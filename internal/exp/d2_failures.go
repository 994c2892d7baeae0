package exp

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"time"
)

// d2WeekShape is the synthetic stand-in for the PlanetLab week of §8.1
// (247 hosts, 22-28 February 2003, "a week with a particularly large
// number of failures"): independent transient failures, and a few
// correlated events that take a large group of hosts down at once.
type d2WeekShape struct {
	Hosts    int
	Duration time.Duration
	// FailingFraction of hosts fail on their own, Independent times each
	// on average, down for an exponential time of mean Downtime.
	FailingFraction float64
	Independent     float64
	Downtime        time.Duration
	// Events correlated failures, each of a group of GroupMin to GroupMax
	// of the hosts, down from EventMin to EventMax.
	Events             int
	GroupMin, GroupMax float64
	EventMin, EventMax time.Duration
}

func defaultD2WeekShape(hosts int, d time.Duration) d2WeekShape {
	return d2WeekShape{Hosts: hosts, Duration: d, FailingFraction: 0.7, Independent: 3, Downtime: 90 * time.Minute,
		Events: 4, GroupMin: 0.05, GroupMax: 0.2, EventMin: 20 * time.Minute, EventMax: 2 * time.Hour}
}

// syntheticWeek makes a trace of shape; events scale with its duration
// (shape's counts are per week).
func syntheticWeek(shape d2WeekShape, seed uint64) *FailureTrace {
	r := rand.New(rand.NewPCG(seed, 0x3eee))
	week := float64(shape.Duration) / float64(7*24*time.Hour)
	down := make([][][2]time.Duration, shape.Hosts)
	add := func(h int, from, length time.Duration) {
		length = max(length, time.Minute)
		down[h] = append(down[h], [2]time.Duration{from, min(from+length, shape.Duration)})
	}
	for h := range shape.Hosts {
		if r.Float64() >= shape.FailingFraction {
			continue
		}
		n := poisson(r, shape.Independent*week)
		for range n {
			add(h, time.Duration(r.Int64N(int64(shape.Duration))), time.Duration(r.ExpFloat64()*float64(shape.Downtime)))
		}
	}
	events := max(1, int(float64(shape.Events)*week+0.5))
	for range events {
		at := time.Duration(r.Int64N(int64(shape.Duration)))
		frac := shape.GroupMin + r.Float64()*(shape.GroupMax-shape.GroupMin)
		length := shape.EventMin + time.Duration(r.Int64N(int64(shape.EventMax-shape.EventMin)))
		for _, h := range r.Perm(shape.Hosts)[:int(frac*float64(shape.Hosts))] {
			skew := time.Duration(r.Int64N(int64(5 * time.Minute)))
			add(h, at+skew, time.Duration(float64(length)*(0.5+r.Float64())))
		}
	}
	t := &FailureTrace{Hosts: shape.Hosts, Duration: shape.Duration}
	for h, ivs := range down {
		slices.SortFunc(ivs, func(a, b [2]time.Duration) int { return cmp.Compare(a[0], b[0]) })
		var cur [2]time.Duration
		open := false
		flush := func() {
			if open && cur[0] < shape.Duration {
				t.Events = append(t.Events, FailureEvent{At: cur[0], Host: h, Kind: Down})
				if cur[1] < shape.Duration {
					t.Events = append(t.Events, FailureEvent{At: cur[1], Host: h, Kind: Up})
				}
			}
		}
		for _, iv := range ivs {
			if open && iv[0] <= cur[1] {
				cur[1] = max(cur[1], iv[1])
				continue
			}
			flush()
			cur, open = iv, true
		}
		flush()
	}
	slices.SortStableFunc(t.Events, func(a, b FailureEvent) int {
		if c := cmp.Compare(a.At, b.At); c != 0 {
			return c
		}
		return cmp.Compare(a.Host, b.Host)
	})
	return t
}

// poisson draws from a Poisson distribution of mean m (small m).
func poisson(r *rand.Rand, m float64) int {
	n, t := 0, r.ExpFloat64()
	for t < m {
		n++
		t += r.ExpFloat64()
	}
	return n
}
