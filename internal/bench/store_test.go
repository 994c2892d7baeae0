package bench

import (
	"testing"
	"time"
)

// TestStoreRuns runs a small benchmark end to end: every object written is
// read back (Store fails otherwise) and found again after reopening.
func TestStoreRuns(t *testing.T) {
	res, err := Store(StoreConfig{Dir: t.TempDir(), Size: 4096, Objects: 300, Writers: 8, Readers: 4, SyncInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if res.WriteMBps <= 0 || res.RawWriteMBps <= 0 || res.ReadMBps <= 0 || res.RawReadMBps <= 0 {
		t.Fatalf("missing figures: %+v", res)
	}
	if res.ReopenKeys != 300 {
		t.Fatalf("reopened store has %d keys, want 300", res.ReopenKeys)
	}
}

func TestStoreReopenRuns(t *testing.T) {
	res, err := Store(StoreConfig{Dir: t.TempDir(), Size: 100, Reopen: 2000, SyncInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if res.ReopenKeys != 2000 || res.ReopenSeconds <= 0 {
		t.Fatalf("reopen: %+v", res)
	}
}
