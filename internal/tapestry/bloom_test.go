package tapestry

import (
	"math/rand/v2"
	"testing"
	"time"

	"triad/internal/id"
	"triad/internal/wire"
)

// TestBloomFalsePositives: the pointer table's filter, at 10 bits per
// pointer, lets through at most 1% of lookups for absent keys when it is
// as full as it gets (its capacity reached, just before a rebuild), and
// never answers "absent" for a key held, also after removals and the
// rebuilds they cause.
func TestBloomFalsePositives(t *testing.T) {
	r := rand.New(rand.NewPCG(29, 1))
	p := newPointers(1_000_000, 1<<30, true)
	server := wire.NodeRef{ID: id.Random(r, id.Bytes), Addr: "h1"}
	expires := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	var held []id.ID
	fill := func(count int) {
		for len(held) < count {
			k := id.Random(r, id.Bytes)
			p.put(k, pointer{server: server, app: AppDOLR, expires: expires})
			held = append(held, k)
		}
	}
	neverAbsent := func(when string) {
		t.Helper()
		for _, k := range held {
			if len(p.lookup(k)) != 1 {
				t.Fatalf("%s: a held key %s was answered absent", when, k.Short())
			}
		}
	}
	falsePositives := func(when string) {
		t.Helper()
		const absent = 100_000
		lookups, fp := p.BloomLookups, p.BloomFalsePositive
		for range absent {
			if len(p.lookup(id.Random(r, id.Bytes))) != 0 {
				t.Fatalf("%s: an absent key was found", when)
			}
		}
		if got := p.BloomLookups - lookups; got != absent {
			t.Fatalf("%s: %d lookups counted, want %d", when, got, absent)
		}
		rate := float64(p.BloomFalsePositive-fp) / absent
		t.Logf("%s: %d keys in a filter of %d bits: %.3f%% false positives", when, p.count, 64*len(p.bloom.bits), 100*rate)
		if rate > 0.01 {
			t.Errorf("%s: false-positive rate %.4f, want at most 0.01", when, rate)
		}
	}

	fill(p.bloom.capacity) // the first filter, full
	neverAbsent("full first filter")
	falsePositives("full first filter")
	for p.bloom.capacity < 8000 {
		fill(p.bloom.capacity + 1) // past it: rebuilt for twice the keys
	}
	fill(p.bloom.capacity)
	if p.count != p.bloom.capacity || p.bloom.capacity < 8000 {
		t.Fatalf("%d keys in a filter for %d: the test wants a full grown filter", p.count, p.bloom.capacity)
	}
	neverAbsent("full grown filter")
	falsePositives("full grown filter")

	// Removals past the keys left force a rebuild; held keys stay "maybe".
	removed := 0
	for len(held) > 1000 {
		k := held[len(held)-1]
		held = held[:len(held)-1]
		if _, ok := p.remove(k, server.Addr); !ok {
			t.Fatalf("removing %s: not held", k.Short())
		}
		removed++
	}
	if p.bloom.removed >= removed {
		t.Fatalf("%d removals and no rebuild", removed)
	}
	neverAbsent("after removals")
	falsePositives("after removals")
}

// TestExtraPointerKeepsThePathPointer: an extra copy of a pointer (§V-B3)
// that reaches the node holding the publish path's pointer for the same
// server, later-expiring, leaves that pointer's root flag, next hop and
// level alone; a path pointer replaces an extra one.
func TestExtraPointerKeepsThePathPointer(t *testing.T) {
	r := rand.New(rand.NewPCG(29, 2))
	p := newPointers(100, 1<<30, true)
	key := id.Random(r, id.Bytes)
	server := wire.NodeRef{ID: id.Random(r, id.Bytes), Addr: "h1"}
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	p.put(key, pointer{server: server, expires: t0, level: 3, root: true})
	p.put(key, pointer{server: server, expires: t0.Add(time.Minute), extra: true})
	if l := p.lookup(key); len(l) != 1 || l[0].extra || !l[0].root || l[0].level != 3 {
		t.Fatalf("after an extra copy: %+v, want the root pointer kept", l)
	}
	other := wire.NodeRef{ID: id.Random(r, id.Bytes), Addr: "h2"}
	p.put(key, pointer{server: other, expires: t0, extra: true})
	p.put(key, pointer{server: other, expires: t0.Add(-time.Minute), next: "h3", level: 1})
	l := p.lookup(key)
	if len(l) != 2 || p.count != 2 {
		t.Fatalf("pointers %+v (count %d), want two", l, p.count)
	}
	for _, x := range l {
		if x.server.Addr == "h2" && (x.extra || x.next != "h3") {
			t.Errorf("a path pointer did not replace the extra one: %+v", x)
		}
	}
}
