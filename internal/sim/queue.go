package sim

import (
	"time"

	"triad/internal/node"
)

// event is one scheduled happening: a node.Event for a host, or a
// simulator-level action fn.
type event struct {
	at        time.Duration
	seq       uint64 // ties at the same time run in scheduling order
	host      *Host
	inc       uint64
	ev        node.Event
	fn        func()
	cancelled bool
}

// eventQueue is a binary min-heap on (at, seq), typed to avoid the
// interface calls of container/heap on the simulator's hottest path.
type eventQueue struct{ items []*event }

func (q *eventQueue) Len() int     { return len(q.items) }
func (q *eventQueue) peek() *event { return q.items[0] }
func less(a, b *event) bool        { return a.at < b.at || a.at == b.at && a.seq < b.seq }

func (q *eventQueue) push(e *event) {
	q.items = append(q.items, e)
	i := len(q.items) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !less(q.items[i], q.items[p]) {
			break
		}
		q.items[i], q.items[p] = q.items[p], q.items[i]
		i = p
	}
}

func (q *eventQueue) pop() *event {
	top := q.items[0]
	n := len(q.items) - 1
	q.items[0] = q.items[n]
	q.items[n] = nil
	q.items = q.items[:n]
	i := 0
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && less(q.items[l], q.items[m]) {
			m = l
		}
		if r < n && less(q.items[r], q.items[m]) {
			m = r
		}
		if m == i {
			break
		}
		q.items[i], q.items[m] = q.items[m], q.items[i]
		i = m
	}
	return top
}
