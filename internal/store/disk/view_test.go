package disk

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"triad/internal/id"
	"triad/internal/store"
	"triad/internal/store/storetest"
)

func view(d *Disk, key id.ID) ([]byte, error) {
	var out []byte
	err := d.View(key, func(data []byte, _ store.Meta) error {
		out = bytes.Clone(data)
		return nil
	})
	return out, err
}

// View lends the same bytes Get copies: in a segment mapped before later
// appends grew it, and after a reopen.
func TestViewMatchesGet(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(store.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(9, 9))
	objs := map[id.ID][]byte{}
	for i := range 200 {
		data, key := storetest.Blob(r, 100+r.IntN(300_000))
		if err := d.Put(key, data, time.Now().Add(time.Hour), store.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		objs[key] = data
		if i%20 == 0 { // map the segment early, then keep appending
			if got, err := view(d, key); err != nil || !bytes.Equal(got, data) {
				t.Fatalf("view of a fresh object: %v", err)
			}
		}
	}
	check := func(d *Disk) {
		t.Helper()
		for key, data := range objs {
			if got, err := view(d, key); err != nil || !bytes.Equal(got, data) {
				t.Fatalf("view of %v: %v, equal %v", key.Short(), err, bytes.Equal(got, data))
			}
		}
	}
	check(d)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if d, err = Open(store.Options{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	check(d)
	_, missing := storetest.Blob(r, 10)
	if _, err := view(d, missing); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("view of a missing key: %v", err)
	}
	stop := errors.New("the reader's own error")
	if err := d.View(anyKey(objs), func([]byte, store.Meta) error { return stop }); err != stop {
		t.Fatalf("View returned %v, want fn's error", err)
	}
}

func TestViewDetectsFlippedByte(t *testing.T) {
	dir := t.TempDir()
	objs := putSome(t, dir, 50)
	victim := anyKey(objs)
	flip(t, dir, victim)
	d, err := Open(store.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	called := false
	err = d.View(victim, func([]byte, store.Meta) error { called = true; return nil })
	if !errors.Is(err, store.ErrCorrupt) || called {
		t.Fatalf("damaged object lent: fn called %v, %v", called, err)
	}
	if _, err := d.Stat(victim); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("damaged object still indexed: %v", err)
	}
}

// A segment reclaimed while a view of it runs stays mapped until the view
// ends: the reader's bytes stay intact, and reclamation does not wait.
func TestViewOutlivesReclaim(t *testing.T) {
	c := storetest.NewClock()
	d, err := Open(store.Options{Dir: t.TempDir(), Now: c.Now, Capacity: 100 * int64(store.ObjectBytes(id.Bytes, 5000)), HighWater: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	r := rand.New(rand.NewPCG(10, 10))
	data, key := storetest.Blob(r, 5000)
	if err := d.Put(key, data, c.Now().Add(10*time.Minute), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	err = d.View(key, func(lent []byte, _ store.Meta) error {
		// Expire the object's window and fill past the high-water mark.
		c.Advance(time.Hour)
		for range 60 {
			more, k := storetest.Blob(r, 5000)
			if err := d.Put(k, more, c.Now().Add(time.Hour), store.PutOptions{}); err != nil {
				return err
			}
		}
		if err := d.Maintain(); err != nil {
			return err
		}
		if d.Stats().Reclaimed == 0 {
			t.Error("the viewed segment was not reclaimed")
		}
		if !bytes.Equal(lent, data) {
			t.Error("lent bytes changed under the view")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := view(d, key); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("reclaimed object: %v", err)
	}
}
