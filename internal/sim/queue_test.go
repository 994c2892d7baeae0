package sim

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestQueueOrder checks the calendar queue against a sorted list: random
// delays from zero to minutes (inside the wheel, beyond it, and at the
// current bucket), cancellations, pushes before the wheel's current bucket
// (after a peek ran ahead), and the clock stopping short of the next event.
func TestQueueOrder(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		r := rand.New(rand.NewPCG(seed, 0))
		var q eventQueue
		var want []queued // by seq-1
		var seq uint64
		var now time.Duration
		push := func(at time.Duration) {
			seq++
			slot := q.push(at, seq, event{inc: seq})
			want = append(want, queued{entry{at: at, seq: seq, slot: slot}, true})
		}
		delay := func() time.Duration {
			switch r.IntN(5) {
			case 0:
				return 0
			case 1:
				return time.Duration(r.Int64N(int64(time.Millisecond)))
			case 2:
				return time.Duration(r.Int64N(int64(4 * time.Second)))
			case 3:
				return time.Duration(r.Int64N(int64(10 * time.Second)))
			}
			return time.Duration(r.Int64N(int64(10 * time.Minute)))
		}
		for step := 0; step < 5000; step++ {
			switch k := r.IntN(10); {
			case k < 4:
				push(now + delay())
			case k < 5 && len(want) > 0:
				x := &want[r.IntN(len(want))]
				if x.live {
					q.cancel(x.e.slot, x.e.seq)
					x.live = false
				}
			case k < 6:
				// Run until a time that may fall short of the next event.
				limit := now + delay()
				for {
					top, ok := q.peek()
					if !ok || top.at > limit {
						break
					}
					checkNext(t, q.take(top), top, want, now)
					want[top.seq-1].live = false
					now = top.at
				}
				now = limit
			default:
				top, ok := q.peek()
				if !ok {
					continue
				}
				checkNext(t, q.take(top), top, want, now)
				want[top.seq-1].live = false
				now = top.at
			}
		}
	}
}

type queued struct {
	e    entry
	live bool
}

// checkNext checks that got is the earliest live entry of want, not
// earlier than now, and that its slot held its event.
func checkNext(t *testing.T, ev event, got entry, want []queued, now time.Duration) {
	t.Helper()
	var live []entry
	for _, w := range want {
		if w.live {
			live = append(live, w.e)
		}
	}
	best := slices.MinFunc(live, func(a, b entry) int {
		if a.less(b) {
			return -1
		}
		if b.less(a) {
			return 1
		}
		return 0
	})
	if got.seq != best.seq || got.at != best.at || got.at < now || ev.inc != got.seq {
		t.Fatalf("got (%v, %d) event %d, want (%v, %d); now %v", got.at, got.seq, ev.inc, best.at, best.seq, now)
	}
}
