package usenet

import (
	"fmt"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// TestTrimCatchesUp: records every peer took are deleted however many
// there are, a bounded transaction at a time.
func TestTrimCatchesUp(t *testing.T) {
	old := maxTrim
	t.Cleanup(func() { maxTrim = old })
	maxTrim = 10
	l, err := OpenList(ListConfig{Path: filepath.Join(t.TempDir(), "news.db"), PathHost: "sitea", Relay: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.AddGroup("local.test", "y", ""); err != nil {
		t.Fatal(err)
	}
	if err := l.StartCursor("siteb"); err != nil {
		t.Fatal(err)
	}
	for i := range 35 {
		e := announced(fmt.Sprintf("<t-%d@x>", i), "local.test")
		e.Head = []byte("Path: x\r\nSubject: s\r\n")
		if n, err := l.Add(e); err != nil || n != 1 {
			t.Fatalf("Add: %d, %v", n, err)
		}
	}
	recs, err := l.ReadLog("siteb", 100, 1<<20)
	if err != nil || len(recs) != 35 {
		t.Fatalf("%d records queued for the peer (%v), want 35", len(recs), err)
	}
	l.Advance("siteb", recs[len(recs)-1].Seq)
	if err := l.Trim([]string{"siteb"}, 0, 0); err != nil {
		t.Fatal(err)
	}
	left := 0
	err = l.db.b.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bucketOutLog); b != nil {
			left = b.Stats().KeyN
		}
		return nil
	})
	if err != nil || left != 0 {
		t.Fatalf("%d records left after trimming what the peer took (%v)", left, err)
	}
}
