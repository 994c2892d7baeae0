package sim

import (
	"math/bits"
	"time"

	"triad/internal/node"
)

// event is one scheduled happening: a node.Event for a host, or a
// simulator-level action fn. Events live in the queue's slots and are
// reused, so that scheduling one allocates nothing.
type event struct {
	host  *Host
	inc   uint64
	ev    node.Event
	timer node.Timer // set instead of ev for a timer
	fn    func()
	// bits, when not zero, marks a message (ev) reaching the host's
	// downlink: it queues there, in the order of arrival, before the host
	// takes it.
	bits float64
}

// entry is one queued event: the ordering key next to the slot, so that
// ordering never touches the events.
type entry struct {
	at   time.Duration
	seq  uint64 // ties at the same time run in scheduling order
	slot int32
}

func (a entry) less(b entry) bool { return a.at < b.at || a.at == b.at && a.seq < b.seq }

// The wheel's buckets are 2^bucketShift ns (about 0.5 ms) wide and cover
// wheelBuckets of them (about 4.3 s): message deliveries, maintenance
// rounds and RPC timeouts all fall inside.
const (
	bucketShift  = 19
	wheelBuckets = 1 << 13
)

func bucketOf(at time.Duration) int64 { return int64(at) >> bucketShift }

// eventQueue orders events by (at, seq) over a slab of reusable events. It
// is a calendar queue: a wheel of time buckets, unsorted until a bucket's
// turn comes, holds the near future; a 4-ary heap holds the rest (timers
// far ahead, and events scheduled before the wheel's current bucket after
// the wheel ran ahead to find the next event). The earlier of the two
// heads runs first.
//
// A cancelled event frees its slot at once; its entry stays where it is,
// recognised as stale because its seq no longer matches the slot's, and is
// dropped when it comes up. Most RPC timeouts are cancelled by the reply,
// so this costs O(1) per cancel.
type eventQueue struct {
	slots []event
	seqs  []uint64 // seqs[slot] is the seq of the entry that owns slot; 0 while free
	free  []int32

	wheel   [][]entry // wheel[b % wheelBuckets] holds bucket b's entries
	cur     int64     // the current bucket: sorted, consumed from head
	head    int
	inWheel int // entries in the wheel, stale ones included
	// used has bit b%wheelBuckets set while that bucket holds entries, so
	// that a sparse wheel (a quiet ring: events seconds apart) jumps to
	// its next entry instead of stepping through empty buckets.
	used    [wheelBuckets / 64]uint64
	far     []entry // 4-ary min-heap
	fromFar bool    // peek's answer came from far
}

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
		q.seqs = append(q.seqs, 0)
	}
	q.slots[slot] = e
	q.seqs[slot] = seq
	q.insert(entry{at: at, seq: seq, slot: slot})
	return slot
}

func (q *eventQueue) insert(x entry) {
	if q.wheel == nil {
		q.wheel = make([][]entry, wheelBuckets)
	}
	b := bucketOf(x.at)
	switch {
	case b < q.cur || b >= q.cur+wheelBuckets:
		q.pushFar(x)
		return
	case b == q.cur:
		// The current bucket is sorted: x goes after every entry not
		// later than it (its seq is the largest yet).
		l := q.wheel[b&(wheelBuckets-1)]
		l = append(l, x)
		i := len(l) - 1
		for i > q.head && x.less(l[i-1]) {
			l[i] = l[i-1]
			i--
		}
		l[i] = x
		q.wheel[b&(wheelBuckets-1)] = l
	default:
		q.wheel[b&(wheelBuckets-1)] = append(q.wheel[b&(wheelBuckets-1)], x)
	}
	q.mark(b)
	q.inWheel++
}

// cancel drops the event queued in slot under seq, if it is still there.
func (q *eventQueue) cancel(slot int32, seq uint64) {
	if q.seqs[slot] == seq {
		q.release(slot)
	}
}

func (q *eventQueue) release(slot int32) {
	q.slots[slot] = event{}
	q.seqs[slot] = 0
	q.free = append(q.free, slot)
}

// stale reports whether x's event was cancelled. The seqs live apart from
// the events so that skipping stale entries stays within a small array.
func (q *eventQueue) stale(x entry) bool { return q.seqs[x.slot] != x.seq }

// peek returns the earliest live entry, dropping stale ones on the way.
func (q *eventQueue) peek() (entry, bool) {
	w, wok := q.wheelHead()
	for len(q.far) > 0 && q.stale(q.far[0]) {
		q.popFar()
	}
	if len(q.far) > 0 && (!wok || q.far[0].less(w)) {
		q.fromFar = true
		return q.far[0], true
	}
	q.fromFar = false
	return w, wok
}

// take removes the entry that peek just returned and hands over its
// event; the slot is free again.
func (q *eventQueue) take(top entry) event {
	if q.fromFar {
		q.popFar()
	} else {
		q.head++
		q.inWheel--
	}
	e := q.slots[top.slot]
	q.release(top.slot)
	return e
}

// wheelHead returns the wheel's earliest live entry, moving on to later
// buckets as the current one runs out.
func (q *eventQueue) wheelHead() (entry, bool) {
	if q.wheel == nil {
		return entry{}, false
	}
	for {
		l := q.wheel[q.cur&(wheelBuckets-1)]
		for q.head < len(l) {
			if x := l[q.head]; !q.stale(x) {
				return x, true
			}
			q.head++
			q.inWheel--
		}
		q.wheel[q.cur&(wheelBuckets-1)] = l[:0]
		q.used[(q.cur&(wheelBuckets-1))/64] &^= 1 << (q.cur & 63)
		q.head = 0
		switch {
		case q.inWheel > 0:
			q.cur = q.nextUsed()
		case len(q.far) > 0 && bucketOf(q.far[0].at) > q.cur:
			q.cur = bucketOf(q.far[0].at) // nothing near: jump ahead
		default:
			return entry{}, false
		}
		// Far entries that the wheel now reaches move in.
		for len(q.far) > 0 {
			x := q.far[0]
			b := bucketOf(x.at)
			if b < q.cur || b >= q.cur+wheelBuckets {
				break
			}
			q.popFar()
			if !q.stale(x) {
				q.wheel[b&(wheelBuckets-1)] = append(q.wheel[b&(wheelBuckets-1)], x)
				q.mark(b)
				q.inWheel++
			}
		}
		sortEntries(q.wheel[q.cur&(wheelBuckets-1)])
	}
}

func (q *eventQueue) mark(b int64) { q.used[(b&(wheelBuckets-1))/64] |= 1 << (b & 63) }

// nextUsed is the first bucket after the current one that holds entries
// (there is one: the wheel is not empty).
func (q *eventQueue) nextUsed() int64 {
	for d := int64(1); d < wheelBuckets; {
		b := q.cur + d
		word := q.used[(b&(wheelBuckets-1))/64] >> (b & 63)
		if word != 0 {
			return b + int64(bits.TrailingZeros64(word))
		}
		d += 64 - b&63
	}
	return q.cur + 1
}

// sortEntries is an insertion sort: a bucket holds a few dozen entries,
// mostly in order already.
func sortEntries(l []entry) {
	for i := 1; i < len(l); i++ {
		x := l[i]
		j := i
		for j > 0 && x.less(l[j-1]) {
			l[j] = l[j-1]
			j--
		}
		l[j] = x
	}
}

func (q *eventQueue) pushFar(x entry) {
	q.far = append(q.far, x)
	h := q.far
	i := len(h) - 1
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

func (q *eventQueue) popFar() {
	n := len(q.far) - 1
	h := q.far
	x := h[n]
	q.far = h[:n]
	h = h[:n]
	if n == 0 {
		return
	}
	i := 0
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
