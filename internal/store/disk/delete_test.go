package disk

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"triad/internal/id"
	"triad/internal/merkle"
	"triad/internal/store"
	"triad/internal/store/storetest"
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
