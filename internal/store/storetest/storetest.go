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

// Clock is a fake clock that tests move by hand; its Now goes in
// store.Options.Now and its Elapsed in store.Options.Elapsed. It is safe
// for concurrent use.
type Clock struct {
	mu      sync.Mutex
	t       time.Time
	elapsed time.Duration
}

// NewClock returns a clock stopped at a fixed time in 2027.
func NewClock() *Clock { return &Clock{t: time.Unix(1_800_000_000, 0)} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock d forward: time passes.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.elapsed += d
	c.mu.Unlock()
}

// Step moves the wall clock by d and not the monotonic one, as an
// operator's date command or a bad time server does.
func (c *Clock) Step(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// Elapsed is the monotonic clock: the time Advance has moved.
func (c *Clock) Elapsed() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.elapsed
}

// Blob returns n bytes from r and their key, the content hash.
func Blob(r *rand.Rand, n int) ([]byte, id.ID) {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b, id.Key(b)
}

// RunContract runs the contract every store.Engine must keep, one subtest
// per clause, each on its own engine from open. Open returns a new engine
// with opt, closed when t ends; one that keeps files makes a directory of
// its own when opt.Dir is empty.
func RunContract(t *testing.T, open func(t *testing.T, opt store.Options) store.Engine) {
	for _, c := range []struct {
		name string
		run  func(t *testing.T, open func(store.Options) store.Engine)
	}{
		{"PutGetStat", contractPutGetStat},
		{"RejectsBadPuts", contractRejectsBadPuts},
		{"ReputExtendsOnly", contractReputExtendsOnly},
		{"TreeQueries", contractTreeQueries},
		{"Expiry", contractExpiry},
		{"Concurrent", contractConcurrent},
		{"NoTree", contractNoTree},
		{"FreshPutKeepsLaterExpiry", contractFreshPutKeepsLaterExpiry},
		{"FreshPutOfAStoredKeyInAFullStore", contractFreshPutOfAStoredKeyInAFullStore},
		{"ReputNeverReplaces", contractReputNeverReplaces},
		{"FreshPutNeverReplaces", contractFreshPutNeverReplaces},
		{"ConcurrentConflictingPuts", contractConcurrentConflictingPuts},
		{"UsageByExpiry", contractUsageByExpiry},
		{"ClockStepExpiresNothing", contractClockStepExpiresNothing},
		{"RetentionIsCapped", contractRetentionIsCapped},
		{"Delete", contractDelete},
		{"DeleteMissing", contractDeleteMissing},
		{"PutAfterDelete", contractPutAfterDelete},
		{"ConcurrentDeletes", contractConcurrentDeletes},
		{"WideKeys", contractWideKeys},
		{"DeleteCompacts", contractDeleteCompacts},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.run(t, func(opt store.Options) store.Engine { return open(t, opt) })
		})
	}
}

func contractPutGetStat(t *testing.T, open func(store.Options) store.Engine) {
	c := NewClock()
	e := open(store.Options{Now: c.Now, MaxObject: 1 << 20})
	r := rand.New(rand.NewPCG(1, 1))
	exp := c.Now().Add(time.Hour)
	stored := map[id.ID][]byte{}
	for i := 0; i < 200; i++ {
		data, key := Blob(r, r.IntN(5000))
		if err := e.Put(key, data, exp, store.PutOptions{NoWait: i%3 == 0}); err != nil {
			t.Fatal(err)
		}
		stored[key] = data
	}
	for key, data := range stored {
		got, m, err := e.Get(key)
		if err != nil || !bytes.Equal(got, data) || m.Size != len(data) || !m.Expiry.Equal(exp) || m.Key != key {
			t.Fatalf("get %v: %d bytes, %+v, %v", key.Short(), len(got), m, err)
		}
		if m, err := e.Stat(key); err != nil || m.Size != len(data) || !m.InTree {
			t.Fatalf("stat %v: %+v %v", key.Short(), m, err)
		}
	}
	_, missing := Blob(r, 10)
	if _, _, err := e.Get(missing); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("get of a missing key: %v", err)
	}
	if _, err := e.Stat(missing); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("stat of a missing key: %v", err)
	}
	if s := e.Stats(); s.Objects != len(stored) || s.TreeKeys != len(stored) {
		t.Fatalf("stats %+v, want %d objects in index and tree", s, len(stored))
	}
}

func contractRejectsBadPuts(t *testing.T, open func(store.Options) store.Engine) {
	c := NewClock()
	e := open(store.Options{Now: c.Now, MaxObject: 1000})
	big := make([]byte, 1001)
	short, _ := id.FromBytes([]byte{1, 2, 3})
	for _, tc := range []struct {
		key    id.ID
		data   []byte
		expiry time.Time
		want   error
	}{
		{id.Key(big), big, c.Now().Add(time.Hour), store.ErrTooLarge},
		{id.Key(nil), nil, c.Now(), store.ErrExpired},
		{id.Key(nil), nil, c.Now().Add(-time.Hour), store.ErrExpired},
		{short, nil, c.Now().Add(time.Hour), store.ErrBadKey},
		{id.Key([]byte("other")), []byte("data"), c.Now().Add(time.Hour), store.ErrBadKey},
	} {
		if err := e.Put(tc.key, tc.data, tc.expiry, store.PutOptions{}); !errors.Is(err, tc.want) {
			t.Errorf("put %d bytes expiring %v: got %v, want %v", len(tc.data), tc.expiry.Sub(c.Now()), err, tc.want)
		}
	}
	// An opaque object (a fragment) is stored under any key.
	frag := id.Key([]byte("block"))
	if err := e.Put(frag, []byte("fragment"), c.Now().Add(time.Hour), store.PutOptions{Opaque: true}); err != nil {
		t.Fatal(err)
	}
	if got, m, err := e.Get(frag); err != nil || string(got) != "fragment" || !m.Opaque {
		t.Fatalf("opaque object: %q %+v %v", got, m, err)
	}
	if _, _, err := e.Get(short); !errors.Is(err, store.ErrBadKey) {
		t.Errorf("get with a 3-byte key: %v", err)
	}
	if s := e.Stats(); s.Objects != 1 {
		t.Fatalf("refused puts left %+v", s)
	}
}

func contractReputExtendsOnly(t *testing.T, open func(store.Options) store.Engine) {
	c := NewClock()
	e := open(store.Options{Now: c.Now})
	data, key := Blob(rand.New(rand.NewPCG(2, 2)), 100)
	t1, t2 := c.Now().Add(time.Hour), c.Now().Add(3*time.Hour)
	for _, exp := range []time.Time{t1, t2, t1} {
		if err := e.Put(key, data, exp, store.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if m, err := e.Stat(key); err != nil || !m.Expiry.Equal(t2) {
		t.Fatalf("after puts expiring in 1h, 3h, 1h: %+v %v; want the 3h expiry", m, err)
	}
	if n, _ := e.TreeNode(merkle.Root()); n.Count != 1 {
		t.Fatalf("tree holds %d keys after three puts of one key", n.Count)
	}
	c.Advance(2 * time.Hour) // past the first expiry only
	if n, _ := e.TreeNode(merkle.Root()); n.Count != 1 {
		t.Fatal("key left the tree at its superseded expiry")
	}
	if err := e.CheckTree(); err != nil {
		t.Fatal(err)
	}
	// Once expired out of the tree, a new put brings the key back.
	c.Advance(2 * time.Hour)
	if n, _ := e.TreeNode(merkle.Root()); n.Count != 0 {
		t.Fatal("expired key still in the tree")
	}
	if err := e.Put(key, data, c.Now().Add(time.Hour), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if n, _ := e.TreeNode(merkle.Root()); n.Count != 1 {
		t.Fatal("re-put key did not return to the tree")
	}
	if err := e.CheckTree(); err != nil {
		t.Fatal(err)
	}
}

func contractTreeQueries(t *testing.T, open func(store.Options) store.Engine) {
	c := NewClock()
	e := open(store.Options{Now: c.Now})
	r := rand.New(rand.NewPCG(3, 3))
	var keys [][]byte
	var ids []id.ID
	for i := 0; i < 3000; i++ {
		data, key := Blob(r, 16)
		if err := e.Put(key, data, c.Now().Add(time.Hour), store.PutOptions{NoWait: true}); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, key.Bytes())
		ids = append(ids, key)
	}
	want := merkle.NewMem()
	merkle.Update(want, keys, nil)

	root, err := e.TreeNode(merkle.Root())
	if err != nil || root != merkle.Lookup(want, merkle.Root()) {
		t.Fatalf("root %+v (%v), want %+v", root, err, merkle.Lookup(want, merkle.Root()))
	}
	kids, _ := e.TreeChildren(merkle.Root())
	if len(kids) != merkle.Fanout {
		t.Fatalf("%d children of the root for 3000 keys", len(kids))
	}
	for _, k := range kids[:3] {
		grand, _ := e.TreeChildren(k.Prefix)
		if fmt.Sprint(grand) != fmt.Sprint(merkle.Children(want, k.Prefix)) {
			t.Fatalf("children of %v differ from a fresh tree's", k.Prefix)
		}
	}
	lo, hi := ids[0], ids[1]
	got, _ := e.TreeKeys(merkle.Root(), hi, lo, 1<<20) // a wrapping arc
	var in []id.ID
	for _, k := range ids {
		if k.In(hi, lo) {
			in = append(in, k)
		}
	}
	sort.Slice(in, func(i, j int) bool { return in[i].Cmp(in[j]) < 0 })
	if fmt.Sprint(got) != fmt.Sprint(in) {
		t.Fatalf("keys in (hi, lo]: %d, want %d", len(got), len(in))
	}
	if err := e.CheckTree(); err != nil {
		t.Fatal(err)
	}
}

// contractExpiry fills the engine to capacity under a fake clock: the
// oldest windows go first, nothing unexpired is lost, keys leave the tree at
// their expiry and keys about to expire never enter it.
func contractExpiry(t *testing.T, open func(store.Options) store.Engine) {
	c := NewClock()
	const size = 1000
	e := open(store.Options{Now: c.Now, Capacity: 400 * recLen(size), HighWater: 0.9})
	r := rand.New(rand.NewPCG(4, 4))
	var all []expiringObj
	put := func(ttl time.Duration) error {
		data, key := Blob(r, size)
		o := expiringObj{key, data, c.Now().Add(ttl)}
		err := e.Put(key, data, o.expiry, store.PutOptions{})
		if err == nil {
			all = append(all, o)
		}
		return err
	}

	// A key expiring inside the buffer is stored but not in the tree.
	if err := put(10 * time.Minute); err != nil {
		t.Fatal(err)
	}
	if m, _ := e.Stat(all[0].key); m.InTree {
		t.Fatal("a key expiring in 10 minutes entered the tree")
	}
	if n, _ := e.TreeNode(merkle.Root()); n.Count != 0 {
		t.Fatal("tree is not empty")
	}

	// Keys leave the tree at their expiry, to the nanosecond.
	if err := put(time.Hour); err != nil {
		t.Fatal(err)
	}
	c.Advance(time.Hour - time.Nanosecond)
	if n, _ := e.TreeNode(merkle.Root()); n.Count != 1 {
		t.Fatalf("before its expiry the tree holds %d keys, want 1", n.Count)
	}
	c.Advance(time.Nanosecond)
	if n, _ := e.TreeNode(merkle.Root()); n.Count != 0 {
		t.Fatalf("at its expiry the tree still holds %d keys", n.Count)
	}
	if _, _, err := e.Get(all[1].key); err != nil {
		t.Fatalf("an expired object must stay readable while there is room: %v", err)
	}

	// Fill, one window of objects per step, far past capacity.
	for step := 0; step < 40; step++ {
		for i := 0; i < 30; i++ {
			if err := put(time.Duration(20+r.IntN(10)) * time.Minute); err != nil {
				t.Fatalf("step %d: %v", step, err)
			}
		}
		c.Advance(5 * time.Minute)
		if err := e.Maintain(); err != nil {
			t.Fatal(err)
		}
		checkReclaimed(t, e, all, c.Now(), step)
	}
	if st := e.Stats(); st.Reclaimed == 0 || st.ReclaimedBytes < int64(st.Reclaimed)*recLen(0) {
		t.Fatalf("reclaimed %d windows of %d bytes", st.Reclaimed, st.ReclaimedBytes)
	}

	// With everything unexpired and no room, a put fails with store.ErrFull.
	var err error
	for i := 0; i < 500 && err == nil; i++ {
		err = put(48 * time.Hour)
	}
	if !errors.Is(err, store.ErrFull) {
		t.Fatalf("filling with unexpired objects: %v, want store.ErrFull", err)
	}
}

// expiringObj is an object put in contractExpiry.
type expiringObj struct {
	key    id.ID
	data   []byte
	expiry time.Time
}

// checkReclaimed checks the engine after a fill step at now: every
// unexpired object of all survives; among expired ones, a gone object
// never expires later than a kept one's window; usage is within capacity
// and the tree is sound.
func checkReclaimed(t *testing.T, e store.Engine, all []expiringObj, now time.Time, step int) {
	t.Helper()
	var newestGone, oldestKept time.Time
	for _, o := range all {
		_, _, err := e.Get(o.key)
		switch {
		case err == nil:
			if o.expiry.Before(now) && (oldestKept.IsZero() || o.expiry.Before(oldestKept)) {
				oldestKept = o.expiry
			}
		case errors.Is(err, store.ErrNotFound):
			if o.expiry.After(now) {
				t.Fatalf("step %d: unexpired object lost", step)
			}
			if o.expiry.After(newestGone) {
				newestGone = o.expiry
			}
		default:
			t.Fatal(err)
		}
	}
	if !newestGone.IsZero() && !oldestKept.IsZero() &&
		(&store.Options{Window: store.DefaultWindow}).WindowOf(newestGone) > (&store.Options{Window: store.DefaultWindow}).WindowOf(oldestKept) {
		t.Fatalf("step %d: reclaimed a window expiring %v while keeping one expiring %v", step, newestGone, oldestKept)
	}
	s := e.Stats()
	if s.Usage > s.Capacity {
		t.Fatalf("step %d: usage %d over capacity %d", step, s.Usage, s.Capacity)
	}
	if err := e.CheckTree(); err != nil {
		t.Fatalf("step %d: %v", step, err)
	}
}

func recLen(size int) int64 { return int64(store.ObjectBytes(id.Bytes, size)) }

func contractConcurrent(t *testing.T, open func(store.Options) store.Engine) {
	e := open(store.Options{})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 9))
			for i := 0; i < 100; i++ {
				data, key := Blob(r, 1+r.IntN(3000))
				if err := e.Put(key, data, time.Now().Add(time.Hour), store.PutOptions{NoWait: i%2 == 0}); err != nil {
					errs <- err
					return
				}
				if got, _, err := e.Get(key); err != nil || !bytes.Equal(got, data) {
					errs <- fmt.Errorf("read back: %v", err)
					return
				}
				if i%20 == 0 {
					if _, err := e.TreeNode(merkle.Root()); err != nil {
						errs <- err
						return
					}
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := e.CheckTree(); err != nil {
		t.Fatal(err)
	}
}

func contractNoTree(t *testing.T, open func(store.Options) store.Engine) {
	c := NewClock()
	e := open(store.Options{Now: c.Now, NoTree: true})
	r := rand.New(rand.NewPCG(7, 7))
	for range 20 {
		data, key := Blob(r, 300)
		if err := e.Put(key, data, c.Now().Add(24*time.Hour), store.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		if got, m, err := e.Get(key); err != nil || !bytes.Equal(got, data) || m.InTree {
			t.Fatalf("Get: %v, in tree %v, equal %v", err, m.InTree, bytes.Equal(got, data))
		}
	}
	if err := e.Maintain(); err != nil {
		t.Fatal(err)
	}
	if n, _ := e.TreeNode(merkle.Root()); n.Count != 0 {
		t.Fatalf("a store without a tree counts %d keys in it", n.Count)
	}
	if s := e.Stats(); s.Objects != 20 {
		t.Fatalf("%d objects, want 20", s.Objects)
	}
	if err := e.CheckTree(); err != nil {
		t.Fatal(err)
	}
}

// A Fresh put skips the index read; a key stored after all keeps the later
// of its expiries, before and after a checkpoint.
func contractFreshPutKeepsLaterExpiry(t *testing.T, open func(store.Options) store.Engine) {
	c := NewClock()
	e := open(store.Options{Now: c.Now})
	data, key := Blob(rand.New(rand.NewPCG(8, 8)), 100)
	t1, t2 := c.Now().Add(time.Hour), c.Now().Add(3*time.Hour)
	for i, exp := range []time.Time{t2, t1} {
		if err := e.Put(key, data, exp, store.PutOptions{Fresh: true}); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			if err := e.Maintain(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := e.Maintain(); err != nil {
		t.Fatal(err)
	}
	if m, err := e.Stat(key); err != nil || !m.Expiry.Equal(t2) {
		t.Fatalf("after Fresh puts expiring in 3h, then 1h: %+v %v; want the 3h expiry", m, err)
	}
	if got, _, err := e.Get(key); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("Get: %v", err)
	}
	if err := e.CheckTree(); err != nil {
		t.Fatal(err)
	}
}

// A Fresh put whose key is stored after all (a news site's article put
// again after a crash) succeeds in a full store as a plain put does: the
// stored copy lasts as long, so the put needs no room.
func contractFreshPutOfAStoredKeyInAFullStore(t *testing.T, open func(store.Options) store.Engine) {
	c := NewClock()
	r := rand.New(rand.NewPCG(9, 9))
	a, keyA := Blob(r, 100)
	b, keyB := Blob(r, 100)
	e := open(store.Options{Now: c.Now, Capacity: 2 * int64(store.ObjectBytes(keyA.Width(), 100))})
	exp := c.Now().Add(time.Hour)
	for _, put := range []struct {
		key  id.ID
		data []byte
	}{{keyA, a}, {keyB, b}} {
		if err := e.Put(put.key, put.data, exp, store.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if more, moreKey := Blob(r, 100); e.Put(moreKey, more, exp, store.PutOptions{Fresh: true}) == nil {
		t.Fatal("a third object fit in a store with room for two")
	}
	if err := e.Put(keyA, a, exp, store.PutOptions{Fresh: true}); err != nil {
		t.Fatalf("a Fresh put of a stored object in a full store: %v", err)
	}
	if got, _, err := e.Get(keyA); err != nil || !bytes.Equal(got, a) {
		t.Fatalf("Get: %v", err)
	}
}

// A put of a stored key with another object, however late its expiry, is
// refused with store.ErrConflict and changes nothing: opaque bytes that
// differ, or an object of the other kind. The same object again only
// extends the expiry. It holds for keys still pending and for keys in the
// index (after Maintain).
func contractReputNeverReplaces(t *testing.T, open func(store.Options) store.Engine) {
	c := NewClock()
	e := open(store.Options{Now: c.Now})
	whole, wkey := []byte("a whole block"), id.Key([]byte("a whole block"))
	fkey := id.Key([]byte("a fragmented block"))
	frag := []byte("fragment 1 of a fragmented block")
	t1, t2, t3 := c.Now().Add(time.Hour), c.Now().Add(2*time.Hour), c.Now().Add(3*time.Hour)
	if err := e.Put(fkey, frag, t1, store.PutOptions{Opaque: true}); err != nil {
		t.Fatal(err)
	}
	if err := e.Put(wkey, whole, t1, store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	check := func(when string, key id.ID, want []byte, opaque bool, exp time.Time) {
		t.Helper()
		got, m, err := e.Get(key)
		if err != nil || !bytes.Equal(got, want) || m.Opaque != opaque || !m.Expiry.Equal(exp) {
			t.Fatalf("%s: %q %+v %v; want %q (opaque %v) expiring %v", when, got, m, err, want, opaque, exp.Sub(c.Now()))
		}
	}
	for _, phase := range []string{"pending", "indexed"} {
		if phase == "indexed" {
			if err := e.Maintain(); err != nil {
				t.Fatal(err)
			}
		}
		for _, tc := range []struct {
			what string
			key  id.ID
			data []byte
			opt  store.PutOptions
		}{
			{"other opaque bytes", fkey, []byte("fragment 2 of a fragmented block"), store.PutOptions{Opaque: true}},
			{"other opaque bytes, NoWait", fkey, []byte("forged"), store.PutOptions{Opaque: true, NoWait: true}},
			{"a whole object where an opaque one is", fkey, []byte("a fragmented block"), store.PutOptions{}},
			{"an opaque object where a whole one is", wkey, []byte("forged"), store.PutOptions{Opaque: true}},
			{"the whole object's bytes, as opaque", wkey, whole, store.PutOptions{Opaque: true}},
		} {
			if err := e.Put(tc.key, tc.data, t3, tc.opt); !errors.Is(err, store.ErrConflict) {
				t.Errorf("%s: putting %s: %v, want store.ErrConflict", phase, tc.what, err)
			}
		}
		check(phase+", after conflicting puts", fkey, frag, true, t1)
		check(phase+", after conflicting puts", wkey, whole, false, t1)
	}
	// The same object again extends the expiry, and never shortens it.
	for _, exp := range []time.Time{t2, t1} {
		if err := e.Put(fkey, frag, exp, store.PutOptions{Opaque: true}); err != nil {
			t.Fatal(err)
		}
		if err := e.Put(wkey, whole, exp, store.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	check("after re-puts expiring in 2h, then 1h", fkey, frag, true, t2)
	check("after re-puts expiring in 2h, then 1h", wkey, whole, false, t2)
	if err := e.Maintain(); err != nil {
		t.Fatal(err)
	}
	check("after re-puts and Maintain", fkey, frag, true, t2)
	if s := e.Stats(); s.Objects != 2 {
		t.Fatalf("%d objects, want 2", s.Objects)
	}
	if err := e.CheckTree(); err != nil {
		t.Fatal(err)
	}
}

// A Fresh put whose key holds an opaque object after all (the caller was
// wrong) may return nil or store.ErrConflict, but the opaque object stays,
// whether the engine still has it pending or in its index.
func contractFreshPutNeverReplaces(t *testing.T, open func(store.Options) store.Engine) {
	for _, phase := range []string{"pending", "indexed"} {
		c := NewClock()
		e := open(store.Options{Now: c.Now})
		whole := []byte("a block")
		key := id.Key(whole)
		frag := []byte("a fragment of a block")
		t1, t2 := c.Now().Add(time.Hour), c.Now().Add(2*time.Hour)
		if err := e.Put(key, frag, t1, store.PutOptions{Opaque: true}); err != nil {
			t.Fatal(err)
		}
		if phase == "indexed" {
			if err := e.Maintain(); err != nil {
				t.Fatal(err)
			}
		}
		if err := e.Put(key, whole, t2, store.PutOptions{Fresh: true}); err != nil && !errors.Is(err, store.ErrConflict) {
			t.Fatalf("%s: Fresh put over an opaque object: %v, want nil or store.ErrConflict", phase, err)
		}
		if err := e.Maintain(); err != nil {
			t.Fatal(err)
		}
		if got, m, err := e.Get(key); err != nil || !bytes.Equal(got, frag) || !m.Opaque || !m.Expiry.Equal(t1) {
			t.Fatalf("%s: after a Fresh put over an opaque object: %q %+v %v; want the opaque object", phase, got, m, err)
		}
		if err := e.CheckTree(); err != nil {
			t.Fatal(err)
		}
	}
}

// Puts of one opaque key with two different objects race: the first to land
// is kept, the other is refused every time, and no put in between slips
// through.
func contractConcurrentConflictingPuts(t *testing.T, open func(store.Options) store.Engine) {
	e := open(store.Options{})
	key := id.Key([]byte("a fragmented block"))
	objs := [2][]byte{[]byte("fragment 1"), []byte("fragment 2")}
	var mu sync.Mutex
	var won [2]int
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				exp := time.Now().Add(time.Hour + time.Duration(i)*time.Second)
				err := e.Put(key, objs[w%2], exp, store.PutOptions{Opaque: true, NoWait: i%2 == 0})
				mu.Lock()
				switch {
				case err == nil:
					won[w%2]++
				case !errors.Is(err, store.ErrConflict):
					t.Errorf("put: %v", err)
				}
				mu.Unlock()
			}
		}(w)
	}
	wg.Wait()
	if won[0] > 0 && won[1] > 0 || won[0]+won[1] == 0 {
		t.Fatalf("puts of two objects under one key: %v succeeded; want those of one only", won)
	}
	want := objs[0]
	if won[1] > 0 {
		want = objs[1]
	}
	if got, _, err := e.Get(key); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("stored %q %v, want %q", got, err, want)
	}
}

// contractUsageByExpiry: Stats.ByExpiry puts the bytes of objects under
// the horizon their expiry window ends within, and they add up to Usage;
// Stats.ObjectsByExpiry counts the objects so.
func contractUsageByExpiry(t *testing.T, open func(store.Options) store.Engine) {
	c := NewClock()
	e := open(store.Options{Now: c.Now, MaxObject: 1 << 20})
	r := rand.New(rand.NewPCG(7, 7))
	for i, left := range []time.Duration{30 * time.Minute, 30 * time.Minute, 10 * 24 * time.Hour, 400 * 24 * time.Hour} {
		data, key := Blob(r, 1000*(i+1))
		if err := e.Put(key, data, c.Now().Add(left), store.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	s := e.Stats()
	var sum int64
	for i, b := range s.ByExpiry {
		sum += b
		if (b > 0) != (i == 0 || i == 3 || i == len(store.ExpiryHorizons)) {
			t.Errorf("ByExpiry[%d] = %d: %v", i, b, s.ByExpiry)
		}
	}
	if sum != s.Usage || s.ByExpiry[0] < recLen(1000)+recLen(2000) || s.ByExpiry[3] < recLen(3000) {
		t.Fatalf("by expiry %v, usage %d", s.ByExpiry, s.Usage)
	}
	want := s.ObjectsByExpiry
	want[0], want[3], want[len(store.ExpiryHorizons)] = 2, 1, 1
	if s.ObjectsByExpiry != want || s.Objects != 4 {
		t.Fatalf("objects by expiry %v (of %d), want %v", s.ObjectsByExpiry, s.Objects, want)
	}
}

// contractClockStepExpiresNothing: a store past its high-water mark holds
// 20 objects acknowledged for 30 days; the wall clock steps 31 days ahead
// (issue 27: every one of them was deleted). The engine sees the step
// against its monotonic clock: it keeps all 20, readable byte for byte
// and in the tree, while still reclaiming what expires in real time.
func contractClockStepExpiresNothing(t *testing.T, open func(store.Options) store.Engine) {
	c := NewClock()
	const size = 1000
	e := open(store.Options{Now: c.Now, Elapsed: c.Elapsed, Capacity: 100 * recLen(size), HighWater: 0.5})
	r := rand.New(rand.NewPCG(27, 7))
	acked := map[id.ID][]byte{}
	for range 20 {
		data, key := Blob(r, size)
		if err := e.Put(key, data, c.Now().Add(30*24*time.Hour), store.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		acked[key] = data
	}
	// Others put the store past its high-water mark: 40 that outlive
	// the acknowledged ones, so that theirs would be the first windows
	// reclaimed, and 10 that live an hour.
	for i := range 50 {
		data, key := Blob(r, size)
		life := 35 * 24 * time.Hour
		if i%5 == 0 {
			life = time.Hour
		}
		if err := e.Put(key, data, c.Now().Add(life), store.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	check := func(when string) {
		t.Helper()
		for key, data := range acked {
			got, _, err := e.Get(key)
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("%s: an object acknowledged for 30 days: %v", when, err)
			}
		}
		if n, _ := e.TreeNode(merkle.Root()); n.Count < uint64(len(acked)) {
			t.Fatalf("%s: the tree holds %d keys, want the %d acknowledged", when, n.Count, len(acked))
		}
	}
	if err := e.Maintain(); err != nil {
		t.Fatal(err)
	}
	c.Step(31 * 24 * time.Hour)
	if err := e.Maintain(); err != nil {
		t.Fatal(err)
	}
	check("after the wall clock stepped 31 days ahead")
	if st := e.Stats(); st.ClockSteps != 1 || st.Reclaimed != 0 {
		t.Fatalf("%d clock steps seen, %d windows reclaimed; want 1 and 0", st.ClockSteps, st.Reclaimed)
	}
	// Two hours of real time: the hour-long objects are past their
	// expiry and the margin, and go; the acknowledged ones stay.
	c.Advance(2 * time.Hour)
	if err := e.Maintain(); err != nil {
		t.Fatal(err)
	}
	check("two hours later")
	if st := e.Stats(); st.Reclaimed == 0 {
		t.Fatalf("nothing reclaimed two hours after the hour-long objects expired")
	}
	// The clock is set right: it agrees with the monotonic one again.
	c.Step(-31 * 24 * time.Hour)
	if err := e.Maintain(); err != nil {
		t.Fatal(err)
	}
	check("after the clock was set right")
	if err := e.CheckTree(); err != nil {
		t.Fatal(err)
	}
}

// contractRetentionIsCapped: an expiry past MaxRetention is kept until
// now plus MaxRetention, on a first put and on a re-put alike.
func contractRetentionIsCapped(t *testing.T, open func(store.Options) store.Engine) {
	c := NewClock()
	e := open(store.Options{Now: c.Now, MaxRetention: 100 * 24 * time.Hour})
	r := rand.New(rand.NewPCG(27, 8))
	limit := c.Now().Add(100 * 24 * time.Hour)
	data, key := Blob(r, 100)
	if err := e.Put(key, data, c.Now().Add(10*365*24*time.Hour), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if m, err := e.Stat(key); err != nil || !m.Expiry.Equal(limit) {
		t.Fatalf("stored until %v (%v), want %v", m.Expiry, err, limit)
	}
	data, key = Blob(r, 100)
	if err := e.Put(key, data, c.Now().Add(time.Hour), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := e.Put(key, data, c.Now().Add(1000*24*time.Hour), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if m, err := e.Stat(key); err != nil || !m.Expiry.Equal(limit) {
		t.Fatalf("re-put: stored until %v (%v), want %v", m.Expiry, err, limit)
	}
}
