package disk

import (
	"fmt"
	"testing"
	"time"

	"triad/internal/id"
	"triad/internal/merkle"
	"triad/internal/store"
	"triad/internal/store/storetest"
)

// With TreeLag, a tree read catches the index up only when the last
// checkpoint began longer ago than the lag: maintenance comparing trees
// node by node during a feed costs one checkpoint per lag, not one per
// node compared. Without it (the default), every read sees every put.
func TestTreeLagBoundsCatchUps(t *testing.T) {
	c := storetest.NewClock()
	d, err := Open(store.Options{Dir: t.TempDir(), Now: c.Now, Elapsed: c.Elapsed, TreeLag: 10 * time.Second, CheckpointInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	count := func() uint64 {
		t.Helper()
		n, err := d.TreeNode(merkle.Root())
		if err != nil {
			t.Fatal(err)
		}
		return n.Count
	}
	put := func(i int) {
		t.Helper()
		data := []byte(fmt.Sprintf("block %d", i))
		if err := d.Put(id.Key(data), data, c.Now().Add(24*time.Hour), store.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	c.Advance(11 * time.Second)
	put(1)
	if n := count(); n != 1 {
		t.Fatalf("the first read after the lag counts %d keys, want 1", n)
	}
	put(2)
	for range 100 {
		if n := count(); n != 1 {
			t.Fatalf("a read within the lag counts %d keys: it caught up", n)
		}
	}
	c.Advance(11 * time.Second)
	if n := count(); n != 2 {
		t.Fatalf("once the lag passed, the tree counts %d keys, want 2", n)
	}

	exact, err := Open(store.Options{Dir: t.TempDir(), Now: c.Now, Elapsed: c.Elapsed, CheckpointInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer exact.Close()
	for i := range 3 {
		data := []byte(fmt.Sprintf("exact %d", i))
		if err := exact.Put(id.Key(data), data, c.Now().Add(24*time.Hour), store.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		if n, err := exact.TreeNode(merkle.Root()); err != nil || n.Count != uint64(i+1) {
			t.Fatalf("without a lag, after %d puts the tree counts %d (%v)", i+1, n.Count, err)
		}
	}
}
