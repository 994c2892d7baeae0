package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"testing"
	"time"

	"triad/internal/id"
	"triad/internal/merkle"
	"triad/internal/store"
)

// The contract of Delete (store.Engine): the key leaves the index and the
// tree at once, a missing key is store.ErrNotFound, a put after a delete
// stores again, and it all holds under concurrency and with 64-byte keys.

// treeKeys returns every key in e's tree, in order.
func treeKeys(t *testing.T, e store.Engine, width int) []id.ID {
	t.Helper()
	keys, err := e.TreeKeys(merkle.Root(), id.Max(width), id.Max(width), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// sortedKeys returns the keys of m in order.
func sortedKeys[V any](m map[id.ID]V) []id.ID {
	keys := make([]id.ID, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].Cmp(keys[j]) < 0 })
	return keys
}

// checkHolds checks that e holds exactly want: each key reads back its
// bytes, each of gone is not found, the tree holds want's keys (all put to
// enter it), CheckTree passes and Stats counts them.
func checkHolds(t *testing.T, when string, e store.Engine, want map[id.ID][]byte, gone []id.ID, width int) {
	t.Helper()
	for k, data := range want {
		if got, _, err := e.Get(k); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%s: get %v: %d bytes, %v", when, k.Short(), len(got), err)
		}
	}
	for _, k := range gone {
		if _, _, err := e.Get(k); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("%s: get of deleted %v: %v, want store.ErrNotFound", when, k.Short(), err)
		}
		if _, err := e.Stat(k); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("%s: stat of deleted %v: %v, want store.ErrNotFound", when, k.Short(), err)
		}
	}
	if got, want := fmt.Sprint(treeKeys(t, e, width)), fmt.Sprint(sortedKeys(want)); got != want {
		t.Fatalf("%s: the tree holds\n%s\nwant\n%s", when, got, want)
	}
	if n, err := e.TreeNode(merkle.Root()); err != nil || n.Count != uint64(len(want)) {
		t.Fatalf("%s: the tree's root counts %d keys (%v), want %d", when, n.Count, err, len(want))
	}
	if err := e.CheckTree(); err != nil {
		t.Fatalf("%s: %v", when, err)
	}
	if s := e.Stats(); s.Objects != len(want) || s.TreeKeys != len(want) {
		t.Fatalf("%s: stats count %d objects, %d in the tree; want %d", when, s.Objects, s.TreeKeys, len(want))
	}
}

// contractDelete deletes keys still pending and keys in the index (after
// Maintain): each is gone from reads and the tree at once; the rest stay.
func contractDelete(t *testing.T, open func(store.Options) store.Engine) {
	c := NewClock()
	e := open(store.Options{Now: c.Now})
	r := rand.New(rand.NewPCG(30, 1))
	want := map[id.ID][]byte{}
	var gone []id.ID
	put := func(n int) []id.ID {
		var keys []id.ID
		for i := range n {
			data, key := Blob(r, 50+r.IntN(500))
			opt := store.PutOptions{NoWait: i%3 == 0, Opaque: i%4 == 0}
			if err := e.Put(key, data, c.Now().Add(time.Hour), opt); err != nil {
				t.Fatal(err)
			}
			want[key] = data
			keys = append(keys, key)
		}
		return keys
	}
	del := func(keys []id.ID) {
		for _, k := range keys {
			if err := e.Delete(k); err != nil {
				t.Fatalf("delete %v: %v", k.Short(), err)
			}
			delete(want, k)
			gone = append(gone, k)
		}
	}
	keys := put(200)
	checkHolds(t, "after puts", e, want, nil, id.Bytes)
	del(keys[:50]) // indexed
	checkHolds(t, "after deleting indexed keys", e, want, gone, id.Bytes)
	keys = put(100)
	del(keys[:40]) // pending
	checkHolds(t, "after deleting pending keys", e, want, gone, id.Bytes)
	if err := e.Maintain(); err != nil {
		t.Fatal(err)
	}
	checkHolds(t, "after Maintain", e, want, gone, id.Bytes)
	// An object past its expiry but still readable can be deleted too.
	data, key := Blob(r, 100)
	if err := e.Put(key, data, c.Now().Add(time.Hour+time.Minute), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	c.Advance(2 * time.Hour)
	if err := e.Delete(key); err != nil {
		t.Fatalf("delete of an expired object still stored: %v", err)
	}
	if _, _, err := e.Get(key); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("get after deleting an expired object: %v", err)
	}
}

// contractDeleteMissing: deleting what is not stored is store.ErrNotFound
// and changes nothing; a key of the wrong width is store.ErrBadKey.
func contractDeleteMissing(t *testing.T, open func(store.Options) store.Engine) {
	c := NewClock()
	e := open(store.Options{Now: c.Now})
	r := rand.New(rand.NewPCG(30, 2))
	data, key := Blob(r, 100)
	_, missing := Blob(r, 100)
	if err := e.Put(key, data, c.Now().Add(time.Hour), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := e.Delete(missing); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("delete of a key never stored: %v, want store.ErrNotFound", err)
	}
	short, _ := id.FromBytes([]byte{1, 2, 3})
	if err := e.Delete(short); !errors.Is(err, store.ErrBadKey) {
		t.Fatalf("delete of a 3-byte key: %v, want store.ErrBadKey", err)
	}
	if err := e.Delete(key); err != nil {
		t.Fatal(err)
	}
	for _, phase := range []string{"pending", "indexed"} {
		if err := e.Delete(key); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("%s: second delete: %v, want store.ErrNotFound", phase, err)
		}
		if err := e.Maintain(); err != nil {
			t.Fatal(err)
		}
	}
	if s := e.Stats(); s.Objects != 0 || s.TreeKeys != 0 {
		t.Fatalf("stats after the delete: %+v", s)
	}
}

// contractPutAfterDelete: a key deleted holds nothing, so a put of any
// object stores it, however it differs from the deleted one (other opaque
// bytes, the other kind, a shorter expiry), pending or indexed; the put
// lasts at least as long as asked and enters the tree.
func contractPutAfterDelete(t *testing.T, open func(store.Options) store.Engine) {
	c := NewClock()
	e := open(store.Options{Now: c.Now})
	whole := []byte("a whole block")
	key := id.Key(whole)
	steps := []struct {
		data []byte
		opt  store.PutOptions
		life time.Duration
	}{
		{[]byte("fragment 1"), store.PutOptions{Opaque: true}, 3 * time.Hour},
		{[]byte("fragment 2"), store.PutOptions{Opaque: true}, time.Hour},
		{whole, store.PutOptions{}, 2 * time.Hour},
		{[]byte("fragment 3"), store.PutOptions{Opaque: true, NoWait: true}, time.Hour},
		{whole, store.PutOptions{Fresh: true}, time.Hour},
	}
	for i, s := range steps {
		if i > 0 {
			if err := e.Delete(key); err != nil {
				t.Fatalf("step %d: delete: %v", i, err)
			}
		}
		if i%2 == 1 {
			if err := e.Maintain(); err != nil {
				t.Fatal(err)
			}
		}
		exp := c.Now().Add(s.life)
		if err := e.Put(key, s.data, exp, s.opt); err != nil {
			t.Fatalf("step %d: put after delete: %v", i, err)
		}
		got, m, err := e.Get(key)
		if err != nil || !bytes.Equal(got, s.data) || m.Opaque != s.opt.Opaque || m.Expiry.Before(exp) || !m.InTree {
			t.Fatalf("step %d: %q %+v %v; want %q (opaque %v) until at least %v, in the tree", i, got, m, err, s.data, s.opt.Opaque, exp)
		}
		// What is stored now decides a conflict.
		if err := e.Put(key, []byte("other"), exp, store.PutOptions{Opaque: true}); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("step %d: a put of other bytes over the new object: %v, want store.ErrConflict", i, err)
		}
		checkHolds(t, fmt.Sprintf("step %d", i), e, map[id.ID][]byte{key: s.data}, nil, id.Bytes)
	}
	if err := e.Maintain(); err != nil {
		t.Fatal(err)
	}
	checkHolds(t, "at the end", e, map[id.ID][]byte{key: whole}, nil, id.Bytes)
}

// contractConcurrentDeletes: writers put, delete and put again keys of
// their own and of a shared set while tree queries and Maintain run (run
// it with the race detector); in the end the engine holds exactly what the
// last acknowledged operation on each key says.
func contractConcurrentDeletes(t *testing.T, open func(store.Options) store.Engine) {
	e := open(store.Options{})
	const writers = 6
	var wg sync.WaitGroup
	finals := make([]map[id.ID][]byte, writers)
	gones := make([][]id.ID, writers)
	errs := make(chan error, writers+1)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 30))
			final := map[id.ID][]byte{}
			for i := range 120 {
				data, key := Blob(r, 1+r.IntN(2000))
				exp := time.Now().Add(time.Hour)
				if err := e.Put(key, data, exp, store.PutOptions{NoWait: i%2 == 0, Opaque: i%3 == 0}); err != nil {
					errs <- err
					return
				}
				final[key] = data
				if i%3 == 1 {
					if err := e.Delete(key); err != nil {
						errs <- fmt.Errorf("delete: %w", err)
						return
					}
					delete(final, key)
					gones[w] = append(gones[w], key)
				}
				if i%10 == 0 {
					if _, err := e.TreeNode(merkle.Root()); err != nil {
						errs <- err
						return
					}
				}
			}
			finals[w] = final
		}()
	}
	// Deletes of one shared key race: exactly one finds it.
	shared := id.Key([]byte("shared"))
	if err := e.Put(shared, []byte("shared"), time.Now().Add(time.Hour), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	found := 0
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := e.Delete(shared)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				found++
			case !errors.Is(err, store.ErrNotFound):
				errs <- err
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range 5 {
			if err := e.Maintain(); err != nil {
				errs <- err
				return
			}
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if found != 1 {
		t.Fatalf("%d of 4 racing deletes of one key found it, want 1", found)
	}
	want := map[id.ID][]byte{}
	gone := []id.ID{shared}
	for w := range writers {
		for k, v := range finals[w] {
			want[k] = v
		}
		gone = append(gone, gones[w]...)
	}
	checkHolds(t, "after the writers", e, want, gone, id.Bytes)
}

// contractWideKeys runs an engine with 64-byte keys (D2's): opaque puts,
// reads, the tree queries and deletes work, and a key of the ring's width
// is refused.
func contractWideKeys(t *testing.T, open func(store.Options) store.Engine) {
	c := NewClock()
	e := open(store.Options{Now: c.Now, KeyWidth: id.MaxBytes})
	r := rand.New(rand.NewPCG(30, 64))
	want := map[id.ID][]byte{}
	var gone []id.ID
	for i := range 300 {
		key := id.Random(r, id.MaxBytes)
		data, _ := Blob(r, r.IntN(300))
		if err := e.Put(key, data, c.Now().Add(time.Hour), store.PutOptions{Opaque: true, NoWait: i%2 == 0}); err != nil {
			t.Fatal(err)
		}
		if m, err := e.Stat(key); err != nil || m.Key != key || m.Size != len(data) {
			t.Fatalf("stat %v: %+v %v", key.Short(), m, err)
		}
		want[key] = data
	}
	checkHolds(t, "64-byte keys", e, want, nil, id.MaxBytes)
	ordered := sortedKeys(want)
	lo, hi := ordered[10], ordered[100]
	if got, _ := e.TreeKeys(merkle.Root(), lo, hi, 1000); fmt.Sprint(got) != fmt.Sprint(ordered[11:101]) {
		t.Fatalf("keys in (lo, hi]: %d, want 90", len(got))
	}
	for _, k := range ordered[:100] {
		if err := e.Delete(k); err != nil {
			t.Fatal(err)
		}
		delete(want, k)
		gone = append(gone, k)
	}
	checkHolds(t, "64-byte keys after deletes", e, want, gone, id.MaxBytes)
	ref := merkle.NewMem()
	var raw [][]byte
	for _, k := range ordered[100:] {
		raw = append(raw, k.Bytes())
	}
	merkle.Update(ref, raw, nil)
	kids, err := e.TreeChildren(merkle.Root())
	if err != nil || fmt.Sprint(kids) != fmt.Sprint(merkle.Children(ref, merkle.Root())) {
		t.Fatalf("children of the root differ from a fresh tree's (%v)", err)
	}
	narrow := id.Key([]byte("x"))
	if err := e.Put(narrow, []byte("x"), c.Now().Add(time.Hour), store.PutOptions{}); !errors.Is(err, store.ErrBadKey) {
		t.Fatalf("a 20-byte key in a 64-byte store: %v, want store.ErrBadKey", err)
	}
}

// contractDeleteCompacts: a window's objects, three quarters deleted, take
// less than half of its bytes: Maintain gives the dead bytes back (usage
// falls, Stats.Compacted counts it), and everything live still reads.
func contractDeleteCompacts(t *testing.T, open func(store.Options) store.Engine) {
	c := NewClock()
	e := open(store.Options{Now: c.Now, MaxObject: 1 << 20})
	r := rand.New(rand.NewPCG(30, 3))
	want := map[id.ID][]byte{}
	var keys []id.ID
	exp := c.Now().Add(time.Hour)
	for range 100 {
		data, key := Blob(r, 4000)
		if err := e.Put(key, data, exp, store.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		want[key] = data
		keys = append(keys, key)
	}
	if err := e.Maintain(); err != nil {
		t.Fatal(err)
	}
	before := e.Stats()
	var gone []id.ID
	for _, k := range keys[:75] {
		if err := e.Delete(k); err != nil {
			t.Fatal(err)
		}
		delete(want, k)
		gone = append(gone, k)
	}
	if err := e.Maintain(); err != nil {
		t.Fatal(err)
	}
	after := e.Stats()
	if after.Compacted == 0 || after.Usage >= before.Usage/2 || after.CompactedBytes < 75*recLen(4000) {
		t.Fatalf("usage %d before the deletes, %d after Maintain; %d compacted of %d bytes", before.Usage, after.Usage, after.Compacted, after.CompactedBytes)
	}
	checkHolds(t, "after compaction", e, want, gone, id.Bytes)
	// Deletes keep their word after compaction, and puts store again.
	for _, k := range keys[75:] {
		if err := e.Delete(k); err != nil {
			t.Fatal(err)
		}
		delete(want, k)
		gone = append(gone, k)
	}
	if err := e.Maintain(); err != nil {
		t.Fatal(err)
	}
	checkHolds(t, "after deleting the rest", e, want, gone, id.Bytes)
}
