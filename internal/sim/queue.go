package sim

import (
	"time"

	"triad/internal/node"
)

// event is one scheduled happening: a node.Event for a host, or a
// simulator-level action fn. Events live in the queue's slots and are
// reused, so that scheduling one allocates nothing.
type event struct {
	host *Host
	inc  uint64
	ev   node.Event
	fn   func()
	seq  uint64 // of the heap entry that owns this slot; 0 while free
}

// entry is one heap element: the ordering key next to the slot, so that
// sifting compares without touching the events.
type entry struct {
	at   time.Duration
	seq  uint64 // ties at the same time run in scheduling order
	slot int32
}

func (a entry) less(b entry) bool { return a.at < b.at || a.at == b.at && a.seq < b.seq }

// eventQueue is a 4-ary min-heap on (at, seq) over a slab of reusable
// events. A cancelled event frees its slot at once and leaves a stale entry
// in the heap (its seq no longer matches the slot's); stale entries are
// skipped when they surface and swept out whenever they are more than half
// the heap, so that the many RPC timeouts cancelled by replies cost
// amortized O(1) and do not grow the heap.
type eventQueue struct {
	heap  []entry
	slots []event
	free  []int32
	stale int // entries in heap whose slot was cancelled
}

// live is the number of events still due.
func (q *eventQueue) live() int { return len(q.heap) - q.stale }

// push queues e at time at under seq (unique and increasing) and returns
// its slot.
func (q *eventQueue) push(at time.Duration, seq uint64, e event) int32 {
	var slot int32
	if n := len(q.free); n > 0 {
		slot = q.free[n-1]
		q.free = q.free[:n-1]
	} else {
		slot = int32(len(q.slots))
		q.slots = append(q.slots, event{})
	}
	e.seq = seq
	q.slots[slot] = e
	q.heap = append(q.heap, entry{at: at, seq: seq, slot: slot})
	q.up(len(q.heap) - 1)
	return slot
}

// cancel drops the event queued in slot under seq, if it is still there.
func (q *eventQueue) cancel(slot int32, seq uint64) {
	if q.slots[slot].seq != seq {
		return // already run or cancelled
	}
	q.release(slot)
	q.stale++
	if q.stale > 1024 && q.stale > len(q.heap)/2 {
		q.sweep()
	}
}

func (q *eventQueue) release(slot int32) {
	q.slots[slot] = event{}
	q.free = append(q.free, slot)
}

// peek returns the earliest live entry, dropping stale ones above it.
func (q *eventQueue) peek() (entry, bool) {
	for len(q.heap) > 0 {
		top := q.heap[0]
		if q.slots[top.slot].seq == top.seq {
			return top, true
		}
		q.removeTop()
		q.stale--
	}
	return entry{}, false
}

// take removes the live entry that peek just returned and hands over its
// event; the slot is free again.
func (q *eventQueue) take(top entry) event {
	q.removeTop()
	e := q.slots[top.slot]
	q.release(top.slot)
	return e
}

func (q *eventQueue) removeTop() {
	n := len(q.heap) - 1
	q.heap[0] = q.heap[n]
	q.heap = q.heap[:n]
	if n > 0 {
		q.down(0)
	}
}

// sweep drops every stale entry and restores the heap order.
func (q *eventQueue) sweep() {
	h := q.heap[:0]
	for _, x := range q.heap {
		if q.slots[x.slot].seq == x.seq {
			h = append(h, x)
		}
	}
	q.heap, q.stale = h, 0
	for i := (len(h) - 2) / 4; i >= 0; i-- {
		q.down(i)
	}
}

func (q *eventQueue) up(i int) {
	h := q.heap
	x := h[i]
	for i > 0 {
		p := (i - 1) / 4
		if !x.less(h[p]) {
			break
		}
		h[i] = h[p]
		i = p
	}
	h[i] = x
}

func (q *eventQueue) down(i int) {
	h := q.heap
	n := len(h)
	x := h[i]
	for {
		c := 4*i + 1
		if c >= n {
			break
		}
		m := c
		for k := c + 1; k < c+4 && k < n; k++ {
			if h[k].less(h[m]) {
				m = k
			}
		}
		if !h[m].less(x) {
			break
		}
		h[i] = h[m]
		i = m
	}
	h[i] = x
}
