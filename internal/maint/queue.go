package maint

import (
	"slices"
	"sort"
	"time"

	"triad/internal/id"
)

// A repairQueue holds the keys a synchronization has yet to fetch or hand
// over, latest expiry first (UsenetDHT §4: repairs queue, the objects
// that expire soonest last; keys of one expiry keep the order the walk
// found them in), and knows which are queued or in flight.
type repairQueue struct {
	keys   []id.ID
	expiry map[id.ID]int64 // queued or in flight: Unix nanoseconds, 0 unknown
	sizes  map[id.ID]uint64
	bytes  uint64 // the sizes of keys, as far as known
}

func (q *repairQueue) reset() {
	q.keys = q.keys[:0]
	q.expiry = make(map[id.ID]int64)
	q.sizes = make(map[id.ID]uint64)
	q.bytes = 0
}

// drop forgets what is queued (in flight stays known until finished).
func (q *repairQueue) drop() {
	for _, k := range q.keys {
		delete(q.expiry, k)
		delete(q.sizes, k)
	}
	q.keys = nil
	q.bytes = 0
}

func (q *repairQueue) len() int { return len(q.keys) }

// add queues the keys of d.missing that are not queued or in flight yet,
// and that skip, if set, does not rule out; it returns how many it added.
func (q *repairQueue) add(d diff, skip func(id.ID) bool) int {
	added := 0
	for i, k := range d.missing {
		if _, ok := q.expiry[k]; ok || skip != nil && skip(k) {
			continue
		}
		exp, size := at(d.expiry, i), at(d.size, i)
		q.sizes[k] = size
		q.bytes += size
		q.expiry[k] = exp
		at := sort.Search(len(q.keys), func(j int) bool { return q.expiry[q.keys[j]] < exp })
		q.keys = slices.Insert(q.keys, at, k)
		added++
	}
	return added
}

// take takes the key to fetch or hand over next; it stays known until
// finished. Keys whose expiry has passed by their turn are dropped on the
// way, unfetched, and counted in expired; false: none was left.
func (q *repairQueue) take(now time.Time, expired *uint64) (id.ID, bool) {
	for len(q.keys) > 0 {
		k := q.keys[0]
		q.keys = q.keys[1:]
		q.bytes -= q.sizes[k]
		if exp := q.expiry[k]; exp == 0 || exp > now.UnixNano() {
			return k, true
		}
		*expired++
		q.finished(k)
	}
	return id.ID{}, false
}

// listed is the expiry a neighbour listed for k, queued or in flight;
// zero when unknown.
func (q *repairQueue) listed(k id.ID) time.Time {
	if exp := q.expiry[k]; exp != 0 {
		return time.Unix(0, exp)
	}
	return time.Time{}
}

func (q *repairQueue) finished(k id.ID) {
	delete(q.expiry, k)
	delete(q.sizes, k)
}

// maxAside bounds Maint.aside.
const maxAside = 1 << 16

// setAside keeps rounds from fetching key again for setAsideFor: a
// fragment whose rebuild failed (fewer than m holders answered), or a
// whole block in a fragment arc, which is not ours to keep.
func (m *Maint) setAside(now time.Time, key id.ID) {
	if m.aside == nil || len(m.aside) >= maxAside {
		m.aside = make(map[id.ID]time.Time)
	}
	m.aside[key] = now
}

// skipped reports whether key was set aside less than setAsideFor ago.
func (m *Maint) skipped(now time.Time, key id.ID) bool {
	at, ok := m.aside[key]
	if ok && now.Sub(at) >= m.setAsideFor() {
		delete(m.aside, key)
		return false
	}
	return ok
}

// setAsideFor is six rounds' time.
func (m *Maint) setAsideFor() time.Duration { return 6 * m.cfg.Interval }
