package disk

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"triad/internal/id"
	"triad/internal/merkle"
	"triad/internal/store"
	"triad/internal/store/storetest"
	"triad/internal/vfs"
	"triad/internal/vfs/powercut"
)

// checkStore checks that d holds exactly want (each key reads back its
// bytes and is in the tree) and none of gone, and that the tree is sound.
func checkStore(t *testing.T, when string, d *Disk, want map[id.ID][]byte, gone map[id.ID]bool) {
	t.Helper()
	for k, data := range want {
		if got, _, err := d.Get(k); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%s: %v: %d bytes, %v", when, k.Short(), len(got), err)
		}
	}
	for k := range gone {
		if _, _, err := d.Get(k); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("%s: deleted %v: %v, want store.ErrNotFound", when, k.Short(), err)
		}
	}
	if n, err := d.TreeNode(merkle.Root()); err != nil || n.Count != uint64(len(want)) {
		t.Fatalf("%s: the tree counts %d keys (%v), want %d", when, n.Count, err, len(want))
	}
	if err := d.CheckTree(); err != nil {
		t.Fatalf("%s: %v", when, err)
	}
	if s := d.Stats(); s.Objects != len(want) {
		t.Fatalf("%s: %d objects, want %d", when, s.Objects, len(want))
	}
}

// TestDeleteSurvivesReopen deletes keys in the index and keys still
// pending, and puts some of them again (shorter-lived, of the other kind),
// then reopens the store twice: with its index, and with the index lost,
// rebuilt from the segments alone, where the records of a key meet in
// whatever order the files are read. Deleted keys stay deleted, and the
// objects put after a delete stay.
func TestDeleteSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	c := storetest.NewClock()
	opt := store.Options{Dir: dir, Now: c.Now, MaxSegment: 16 << 10}
	d, err := Open(opt)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(30, 30))
	want := map[id.ID][]byte{}
	var keys []id.ID
	for i := range 120 {
		data, key := storetest.Blob(r, 100+r.IntN(1000))
		// Expiries over several windows, so a key's records and its
		// tombstone land in different files.
		exp := c.Now().Add(2*time.Hour + time.Duration(i%5)*10*time.Minute)
		if err := d.Put(key, data, exp, store.PutOptions{Opaque: i%2 == 0}); err != nil {
			t.Fatal(err)
		}
		want[key] = data
		keys = append(keys, key)
	}
	gone := map[id.ID]bool{}
	del := func(ks []id.ID) {
		for _, k := range ks {
			if err := d.Delete(k); err != nil {
				t.Fatal(err)
			}
			delete(want, k)
			gone[k] = true
		}
	}
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	del(keys[:40]) // indexed
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	del(keys[40:60]) // pending at close
	// Put again after the delete, to live less long than the deleted
	// object, and of the other kind; half of them deleted once more.
	for i, k := range keys[:20] {
		data := []byte{byte(i), 'x'}
		if err := d.Put(k, data, c.Now().Add(time.Hour), store.PutOptions{Opaque: true}); err != nil {
			t.Fatal(err)
		}
		want[k] = data
		delete(gone, k)
	}
	del(keys[:10])
	checkStore(t, "before closing", d, want, gone)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	for _, how := range []string{"with its index", "with the index rebuilt from the segments"} {
		if how != "with its index" {
			if err := os.Remove(filepath.Join(dir, indexFile)); err != nil {
				t.Fatal(err)
			}
		}
		d, err := Open(opt)
		if err != nil {
			t.Fatal(err)
		}
		checkStore(t, "reopened "+how, d, want, gone)
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRewriteKeepsTombstones: a key has a record in an early window's
// segment, kept more than half live by others, and a later one, with its
// tombstone, in a segment that deletes leave less than half live. The
// rewrite of that segment copies the tombstone, so the early record stays
// dead, in the index and in a rebuild from the segments alone.
func TestRewriteKeepsTombstones(t *testing.T) {
	dir := t.TempDir()
	c := storetest.NewClock()
	opt := store.Options{Dir: dir, Now: c.Now, Window: time.Minute}
	d, err := Open(opt)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(30, 31))
	early, late := c.Now().Add(time.Hour), c.Now().Add(2*time.Hour)
	want := map[id.ID][]byte{}
	put := func(exp time.Time) id.ID {
		data, key := storetest.Blob(r, 1000)
		if err := d.Put(key, data, exp, store.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		want[key] = data
		return key
	}
	victim := put(early)
	for range 10 {
		put(early)
	}
	if err := d.Put(victim, want[victim], late, store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	var fillers []id.ID
	for range 10 {
		fillers = append(fillers, put(late))
	}
	gone := map[id.ID]bool{}
	for _, k := range append(fillers, victim) {
		if err := d.Delete(k); err != nil {
			t.Fatal(err)
		}
		delete(want, k)
		gone[k] = true
	}
	if err := d.Maintain(); err != nil {
		t.Fatal(err)
	}
	if st := d.Stats(); st.Compacted != 1 {
		t.Fatalf("%d segments rewritten; want the late window's", st.Compacted)
	}
	checkStore(t, "after the rewrite", d, want, gone)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	for _, how := range []string{"with its index", "with the index rebuilt from the segments"} {
		if how != "with its index" {
			if err := os.Remove(filepath.Join(dir, indexFile)); err != nil {
				t.Fatal(err)
			}
		}
		d, err := Open(opt)
		if err != nil {
			t.Fatal(err)
		}
		checkStore(t, "reopened "+how, d, want, gone)
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestReadsDuringRewrite: readers Get and View live objects without pause
// while deletes leave their segments less than half live and Maintain
// rewrites them; no read misses a live object, however its record moves.
func TestReadsDuringRewrite(t *testing.T) {
	d, err := Open(store.Options{Dir: t.TempDir(), MaxSegment: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	r := rand.New(rand.NewPCG(30, 32))
	exp := time.Now().Add(time.Hour)
	put := func(n int) (map[id.ID][]byte, []id.ID) {
		objs, keys := map[id.ID][]byte{}, []id.ID(nil)
		for range n {
			data, key := storetest.Blob(r, 500+r.IntN(3000))
			if err := d.Put(key, data, exp, store.PutOptions{NoWait: true}); err != nil {
				t.Fatal(err)
			}
			objs[key] = data
			keys = append(keys, key)
		}
		return objs, keys
	}
	live, _ := put(60)
	stop := make(chan struct{})
	errs := make(chan error, 4)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for {
				for k, data := range live {
					select {
					case <-stop:
						return
					default:
					}
					var got []byte
					var err error
					if w%2 == 0 {
						got, _, err = d.Get(k)
					} else {
						err = d.View(k, func(b []byte, _ store.Meta) error { got = bytes.Clone(b); return nil })
					}
					if err != nil || !bytes.Equal(got, data) {
						errs <- fmt.Errorf("reading %v during rewrites: %d bytes, %v", k.Short(), len(got), err)
						return
					}
				}
			}
		})
	}
	for range 8 {
		_, doomed := put(60)
		for _, k := range doomed {
			if err := d.Delete(k); err != nil {
				t.Fatal(err)
			}
		}
		if err := d.Maintain(); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	st := d.Stats()
	if st.Compacted < 4 {
		t.Fatalf("%d segments rewritten, want several", st.Compacted)
	}
	t.Logf("%d segments rewritten, %d bytes given back, %d left of %d bytes", st.Compacted, st.CompactedBytes, st.Segments, st.Usage)
	if err := d.CheckTree(); err != nil {
		t.Fatal(err)
	}
}

// TestGetFollowsAMovedRecord: a read that found a record just before a
// rewrite moved it, and its segment went, reads it where it went.
func TestGetFollowsAMovedRecord(t *testing.T) {
	for _, fs := range []string{"os", "mem"} {
		opt := store.Options{Dir: t.TempDir()}
		var d *Disk
		var err error
		if fs == "mem" {
			d, err = OpenFS(vfs.NewMem(), opt)
		} else {
			d, err = Open(opt)
		}
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(30, 33))
		exp := time.Now().Add(time.Hour)
		data, key := storetest.Blob(r, 1000)
		if err := d.Put(key, data, exp, store.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		for range 5 {
			other, k := storetest.Blob(r, 1000)
			if err := d.Put(k, other, exp, store.PutOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := d.Delete(k); err != nil {
				t.Fatal(err)
			}
		}
		stale, _, err := d.find(key)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Maintain(); err != nil {
			t.Fatal(err)
		}
		if now, _, _ := d.find(key); now.at(stale) || d.Stats().Compacted != 1 {
			t.Fatalf("%s: the rewrite did not move the record", fs)
		}
		if got, _, err := d.getFrom(key, stale, nil); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%s: reading from where the record was: %d bytes, %v", fs, len(got), err)
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestReplayIgnoresOrder: recovery meets a key's records in file-name
// order, not the order they were written. However they come, a tombstone
// kills the objects expiring by its cutoff, and an object put after the
// delete (of the other kind, expiring just past the cutoff) survives it.
func TestReplayIgnoresOrder(t *testing.T) {
	whole := entry{seg: 1, off: 0, size: 10, expiry: 100}
	later := entry{seg: 2, off: 0, size: 10, expiry: 160}                     // the same object, put again
	tombstone := deadEntry(tomb{seg: 3, off: 50, cutoff: 160})                // the delete
	after := entry{seg: 3, off: 90, size: 4, expiry: 161, flags: entryOpaque} // put after it
	stale := entry{seg: 4, off: 0, size: 10, expiry: 150, flags: entryOpaque} // a Fresh put's stray copy
	for _, tc := range []struct {
		name string
		recs []entry
		want entry // the object kept; seg 0: none
	}{
		{"deleted", []entry{whole, later, tombstone, stale}, entry{}},
		{"put after the delete", []entry{whole, later, tombstone, after, stale}, after},
		{"no delete", []entry{whole, later}, later},
	} {
		permute(tc.recs, func(order []entry) {
			r := &replayed{}
			for _, e := range order {
				r.add(e)
			}
			d := &Disk{segs: map[uint64]*segment{}}
			got := d.resolve(map[id.ID]*replayed{{}: r})[id.ID{}]
			if !got.at(tc.want) || got.live() != (tc.want.seg != 0) {
				t.Fatalf("%s, records in the order %v: kept %+v, want %+v", tc.name, order, got, tc.want)
			}
		})
	}
}

// permute calls fn with every order of es.
func permute(es []entry, fn func([]entry)) {
	var walk func(k int)
	walk = func(k int) {
		if k == len(es) {
			fn(es)
			return
		}
		for i := k; i < len(es); i++ {
			es[k], es[i] = es[i], es[k]
			walk(k + 1)
			es[k], es[i] = es[i], es[k]
		}
	}
	walk(0)
}

// TestDeleteInARetiredWindow: an object whose window reclamation has
// retired (it takes no appends) but not yet dropped is still readable, so
// it can be deleted: the tombstone goes to the next window, and the
// delete holds across a reopen, with the index and rebuilt without.
func TestDeleteInARetiredWindow(t *testing.T) {
	dir := t.TempDir()
	c := storetest.NewClock()
	opt := store.Options{Dir: dir, Now: c.Now}
	d, err := Open(opt)
	if err != nil {
		t.Fatal(err)
	}
	data, key := storetest.Blob(rand.New(rand.NewPCG(30, 34)), 500)
	exp := c.Now().Add(time.Hour)
	if err := d.Put(key, data, exp, store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	d.mu.Lock()
	d.retired = d.opt.WindowOf(exp)
	delete(d.open, d.retired)
	d.mu.Unlock()
	if err := d.Delete(key); err != nil {
		t.Fatalf("delete in a retired window: %v", err)
	}
	if _, _, err := d.Get(key); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("get after the delete: %v", err)
	}
	if st := d.Stats(); st.Segments != 2 {
		t.Fatalf("%d segments; want the tombstone in a second one, of the next window", st.Segments)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	for _, how := range []string{"with its index", "with the index rebuilt"} {
		if how != "with its index" {
			if err := os.Remove(filepath.Join(dir, indexFile)); err != nil {
				t.Fatal(err)
			}
		}
		d, err := Open(opt)
		if err != nil {
			t.Fatal(err)
		}
		checkStore(t, how, d, nil, map[id.ID]bool{key: true})
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRewrittenSegmentBackAfterACrash: compaction removes a segment from
// the index and then unlinks it; a power cut before the unlink is durable
// brings the file back, and recovery replays it whole. A key's record
// there, of an object since put again and deleted, must not win over the
// opaque object put after the delete and not yet indexed (also replayed):
// recovery weighs the two against the tombstone the index keeps, not only
// against the tombstones it replays.
func TestRewrittenSegmentBackAfterACrash(t *testing.T) {
	dir := t.TempDir()
	c := storetest.NewClock()
	opt := store.Options{Dir: dir, Now: c.Now, Window: time.Minute, CheckpointInterval: time.Hour}
	d, err := Open(opt)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(30, 35))
	early, late := c.Now().Add(time.Hour), c.Now().Add(2*time.Hour)
	data, key := storetest.Blob(r, 1000)
	if err := d.Put(key, data, early, store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	earlySegs := segmentFiles(dir)
	if len(earlySegs) != 1 {
		t.Fatalf("segments %v; want the early window's alone", earlySegs)
	}
	saved, err := os.ReadFile(earlySegs[0])
	if err != nil {
		t.Fatal(err)
	}
	// The same object to last longer, then deleted; fillers keep the late
	// window's segment more than half live.
	if err := d.Put(key, data, late, store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	want := map[id.ID][]byte{}
	for range 4 {
		fill, k := storetest.Blob(r, 1000)
		if err := d.Put(k, fill, late, store.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		want[k] = fill
	}
	if err := d.Delete(key); err != nil {
		t.Fatal(err)
	}
	if err := d.Maintain(); err != nil {
		t.Fatal(err)
	}
	if st := d.Stats(); st.Compacted != 1 {
		t.Fatalf("%d segments rewritten; want the early window's", st.Compacted)
	}
	checkStore(t, "after the rewrite", d, want, map[id.ID]bool{key: true})
	again := []byte("other bytes, put after the delete")
	if err := d.Put(key, again, c.Now().Add(time.Hour), store.PutOptions{Opaque: true}); err != nil {
		t.Fatal(err)
	}
	want[key] = again
	// The power cut: the index as last committed, without the opaque put,
	// and the rewritten segment back.
	index, err := powercut.Committed(d.db, filepath.Join(dir, indexFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := powercut.Restore(filepath.Join(dir, indexFile), index); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(earlySegs[0], saved, 0o644); err != nil {
		t.Fatal(err)
	}
	d, err = Open(opt)
	if err != nil {
		t.Fatal(err)
	}
	checkStore(t, "reopened with the rewritten segment back", d, want, nil)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
}
