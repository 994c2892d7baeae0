package mem

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"triad/internal/id"
	"triad/internal/merkle"
	"triad/internal/store"
	"triad/internal/store/storetest"
)

func TestContract(t *testing.T) {
	storetest.RunContract(t, func(t *testing.T, opt store.Options) store.Engine { return New(opt) })
}

// TestDamageQuarantines damages stored copies: a read quarantines one (it
// leaves the store and the tree), and a put stores a good copy again, as a
// put of the same opaque object does at once.
func TestDamageQuarantines(t *testing.T) {
	c := storetest.NewClock()
	m := New(store.Options{Now: c.Now})
	exp := c.Now().Add(time.Hour)
	whole := []byte("a whole block")
	wkey := id.Key(whole)
	fkey, frag := id.Key([]byte("a fragmented block")), []byte("a fragment")
	if err := m.Put(wkey, whole, exp, store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := m.Put(fkey, frag, exp, store.PutOptions{Opaque: true}); err != nil {
		t.Fatal(err)
	}
	for _, k := range []id.ID{wkey, fkey} {
		if err := m.Damage(k); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := m.Get(wkey); !errors.Is(err, store.ErrCorrupt) {
		t.Fatalf("read of a damaged copy: %v, want store.ErrCorrupt", err)
	}
	if _, err := m.Stat(wkey); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a quarantined copy is still there: %v", err)
	}
	if n, _ := m.TreeNode(merkle.Root()); n.Count != 1 {
		t.Fatalf("tree holds %d keys, want 1 without the quarantined one", n.Count)
	}
	if err := m.Put(wkey, whole, exp, store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := m.Put(fkey, frag, exp, store.PutOptions{Opaque: true}); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[id.ID][]byte{wkey: whole, fkey: frag} {
		if got, _, err := m.Get(k); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%v after a good copy was put: %q %v", k.Short(), got, err)
		}
	}
	if s := m.Stats(); s.Quarantined != 2 || s.Objects != 2 {
		t.Fatalf("stats %+v, want 2 quarantined and 2 objects", s)
	}
	if err := m.CheckTree(); err != nil {
		t.Fatal(err)
	}
}
