package tapestry

import (
	"encoding/binary"
	"slices"
	"strings"
	"time"

	"triad/internal/id"
	"triad/internal/wire"
)

// pointer is one location mapping ⟨GUID, server⟩ held at a node.
type pointer struct {
	server  wire.NodeRef
	app     uint32
	expires time.Time
	rtt     time.Duration // from this node to the server, to sort by
	level   uint32        // digits the publish path had resolved here
	next    string        // where this node forwarded it; "" at the root or for an extra pointer
	// backup is where the root's backup of this pointer went from here
	// (backupRoot, or on its way there: handlePointers), backupLevel the
	// digits it had resolved on arriving here; "" for none.
	backup      string
	backupLevel uint32
	from        string // the peer it came from; "" when this node made it (its own publish, a repath)
	root        bool   // this node is the key's root for it
	extra       bool   // an extra pointer of §V-B3: kept here, never forwarded
	// confirmed: the server said it serves the key, or the pointer came
	// from the server itself (confirm.go).
	confirmed bool
}

// pointers is a node's pointer table, bounded, with a Bloom filter in
// front for the negative lookups that most hops make (§IV-D).
type pointers struct {
	byKey map[id.ID][]pointer
	count int
	max   int
	// perServer counts the pointers naming each server, at most
	// maxPerServer.
	perServer    map[string]int
	maxPerServer int
	bloom        *bloom // nil when off

	Evicted, Expired uint64
	// Bloom counters: lookups the filter answered "absent", and lookups it
	// let through for a key the table did not hold (false positives).
	BloomNegative, BloomFalsePositive, BloomLookups uint64
}

func newPointers(max, maxPerServer int, useBloom bool) pointers {
	p := pointers{byKey: map[id.ID][]pointer{}, max: max, perServer: map[string]int{}, maxPerServer: maxPerServer}
	if useBloom {
		p.bloom = newBloom(1024)
	}
	return p
}

// lookup returns the pointers held for key, nearest server first.
func (p *pointers) lookup(key id.ID) []pointer {
	if p.bloom != nil {
		p.BloomLookups++
		if !p.bloom.mayHave(key) {
			p.BloomNegative++
			return nil
		}
	}
	l := p.byKey[key]
	if len(l) == 0 && p.bloom != nil {
		p.BloomFalsePositive++
	}
	return l
}

// put adds or refreshes the pointer of (key, ptr.server) and returns
// whether it was new. An extra copy never stands in for a pointer on the
// publish path: that one's next hop and root flag would be lost.
func (p *pointers) put(key id.ID, ptr pointer) bool {
	l := p.byKey[key]
	if i := slices.IndexFunc(l, func(x pointer) bool { return x.server.Addr == ptr.server.Addr }); i >= 0 {
		switch old := l[i]; {
		case ptr.extra && !old.extra:
		case old.extra && !ptr.extra || !ptr.expires.Before(old.expires):
			ptr.confirmed = ptr.confirmed || old.confirmed
			l[i] = ptr
		case !ptr.extra:
			// Sent on again along a changed path (its TTL rounded down):
			// the expiry stays, but where it goes from here is the new one.
			l[i].root, l[i].next, l[i].level, l[i].from = ptr.root, ptr.next, ptr.level, ptr.from
			l[i].backup = ptr.backup
		}
		sortPointers(l)
		return false
	}
	if p.count >= p.max {
		p.evict()
	}
	l = p.byKey[key] // evict may have dropped some of key's
	l = append(l, ptr)
	p.perServer[ptr.server.Addr]++
	sortPointers(l)
	p.byKey[key] = l
	p.count++
	if p.bloom != nil {
		if p.bloom.full(p.count) {
			p.rebuildBloom()
		}
		p.bloom.add(key)
	}
	return true
}

func sortPointers(l []pointer) {
	slices.SortStableFunc(l, func(a, b pointer) int {
		if a.rtt != b.rtt {
			return int(a.rtt - b.rtt)
		}
		return a.server.ID.Cmp(b.server.ID)
	})
}

// admits reports whether a pointer naming server may be added for key:
// it is held already, or the server names fewer than maxPerServer here.
func (p *pointers) admits(key id.ID, server string) bool {
	return p.perServer[server] < p.maxPerServer ||
		slices.ContainsFunc(p.byKey[key], func(x pointer) bool { return x.server.Addr == server })
}

// mayRemove reports whether a removal of (key, server) sent by from is
// taken: from this node itself, from the server, or from the peer that
// gave the pointer (the server's publish path); a pointer not held is
// sent on by nobody here, so the answer is no.
func (p *pointers) mayRemove(key id.ID, server, from string) bool {
	if from == "" || from == server {
		return true
	}
	i := slices.IndexFunc(p.byKey[key], func(x pointer) bool { return x.server.Addr == server })
	return i >= 0 && p.byKey[key][i].from == from
}

// confirm marks the pointer of (key, server) confirmed.
func (p *pointers) confirm(key id.ID, server string) {
	l := p.byKey[key]
	if i := slices.IndexFunc(l, func(x pointer) bool { return x.server.Addr == server }); i >= 0 {
		l[i].confirmed = true
	}
}

// confirmed reports whether the pointer of (key, server) is held and
// confirmed.
func (p *pointers) confirmed(key id.ID, server string) bool {
	l := p.byKey[key]
	i := slices.IndexFunc(l, func(x pointer) bool { return x.server.Addr == server })
	return i >= 0 && l[i].confirmed
}

// remove drops the pointer of (key, server) and returns it.
func (p *pointers) remove(key id.ID, server string) (pointer, bool) {
	l := p.byKey[key]
	i := slices.IndexFunc(l, func(x pointer) bool { return x.server.Addr == server })
	if i < 0 {
		return pointer{}, false
	}
	old := l[i]
	p.drop(key, i)
	return old, true
}

// setBackup records where the backup of (key, server)'s pointer went
// from here, on the pointer held for it.
func (p *pointers) setBackup(key id.ID, server, next string, level uint32) {
	l := p.byKey[key]
	if i := slices.IndexFunc(l, func(x pointer) bool { return x.server.Addr == server }); i >= 0 {
		l[i].backup, l[i].backupLevel = next, level
	}
}

// removeExtra removes the pointer of (key, server) if it is an extra
// one: the removal of a backup on its way leaves a path pointer be.
func (p *pointers) removeExtra(key id.ID, server string) {
	l := p.byKey[key]
	if i := slices.IndexFunc(l, func(x pointer) bool { return x.server.Addr == server }); i >= 0 && l[i].extra {
		p.drop(key, i)
	}
}

func (p *pointers) drop(key id.ID, i int) {
	if s := p.byKey[key][i].server.Addr; p.perServer[s] > 1 {
		p.perServer[s]--
	} else {
		delete(p.perServer, s)
	}
	l := slices.Delete(p.byKey[key], i, i+1)
	if len(l) == 0 {
		delete(p.byKey, key)
	} else {
		p.byKey[key] = l
	}
	p.count--
	if p.bloom != nil {
		p.bloom.removed++
		if p.bloom.stale(p.count) {
			p.rebuildBloom()
		}
	}
}

// evict drops the soonest-expiring hundredth of the pointers (at least
// one), so that a full table pays for a scan once per many inserts.
func (p *pointers) evict() {
	type at struct {
		key     id.ID
		server  string
		expires time.Time
	}
	var all []at
	for k, l := range p.byKey {
		for _, x := range l {
			all = append(all, at{k, x.server.Addr, x.expires})
		}
	}
	slices.SortFunc(all, func(a, b at) int {
		if c := a.expires.Compare(b.expires); c != 0 {
			return c
		}
		if c := a.key.Cmp(b.key); c != 0 {
			return c
		}
		return strings.Compare(a.server, b.server)
	})
	n := max(1, p.max/100)
	for _, x := range all[:min(n, len(all))] {
		p.remove(x.key, x.server)
		p.Evicted++
	}
}

// expire drops the pointers past their time and returns how many.
func (p *pointers) expire(now time.Time) int {
	n := 0
	for _, k := range p.sortedKeys() {
		l := p.byKey[k]
		for i := len(l) - 1; i >= 0; i-- {
			if !l[i].expires.After(now) {
				p.drop(k, i)
				n++
				l = p.byKey[k]
			}
		}
	}
	p.Expired += uint64(n)
	return n
}

// sortedKeys returns the keys held, in order, so that what a node does
// over its pointers never depends on map order.
func (p *pointers) sortedKeys() []id.ID { return sortedIDs(p.byKey) }

// sortedIDs returns a map's keys in order.
func sortedIDs[V any](m map[id.ID]V) []id.ID {
	keys := make([]id.ID, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, id.ID.Cmp)
	return keys
}

func (p *pointers) rebuildBloom() {
	p.bloom = newBloom(max(1024, 2*p.count))
	for k := range p.byKey {
		p.bloom.add(k)
	}
}

// bloom is a Bloom filter over pointer keys, sized at 10 bits per key of
// its capacity, with 7 probes (about 0.8% false positives when full).
// Keys are hashes already, so the probes are taken from the key's own
// bits by double hashing. Removal is not possible: the filter counts the
// keys removed since it was built and is rebuilt when they outnumber the
// keys left.
type bloom struct {
	bits     []uint64
	capacity int
	added    int
	removed  int
}

const (
	bloomBitsPerKey = 10
	bloomProbes     = 7
)

func newBloom(capacity int) *bloom {
	n := (capacity*bloomBitsPerKey + 63) / 64
	return &bloom{bits: make([]uint64, n), capacity: capacity}
}

func (b *bloom) probes(key id.ID, fn func(bit uint64)) {
	var buf [id.MaxBytes]byte
	k := key.AppendTo(buf[:0])
	if len(k) < 16 {
		k = append(k, make([]byte, 16-len(k))...)
	}
	h1 := binary.BigEndian.Uint64(k[0:8])
	h2 := binary.BigEndian.Uint64(k[8:16]) | 1
	m := uint64(len(b.bits)) * 64
	for i := range uint64(bloomProbes) {
		fn((h1 + i*h2) % m)
	}
}

func (b *bloom) add(key id.ID) {
	b.probes(key, func(bit uint64) { b.bits[bit/64] |= 1 << (bit % 64) })
	b.added++
}

func (b *bloom) mayHave(key id.ID) bool {
	ok := true
	b.probes(key, func(bit uint64) {
		if b.bits[bit/64]&(1<<(bit%64)) == 0 {
			ok = false
		}
	})
	return ok
}

// full reports that count keys exceed the capacity.
func (b *bloom) full(count int) bool { return count > b.capacity }

// stale reports that removed keys outnumber the count left (and a
// minimum), so the filter answers "maybe" for too many absent keys.
func (b *bloom) stale(count int) bool { return b.removed > count && b.removed > 256 }
