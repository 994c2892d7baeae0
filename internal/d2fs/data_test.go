package d2fs

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"triad/internal/d2/key"
)

// gatedGets holds each Get until four are in flight at once.
type gatedGets struct {
	*MemBlocks
	mu       sync.Mutex
	inflight int
	open     chan struct{}
}

func (g *gatedGets) Get(ctx context.Context, k key.Key, sum [32]byte) ([]byte, error) {
	g.mu.Lock()
	g.inflight++
	if g.inflight == 4 {
		close(g.open)
	}
	g.mu.Unlock()
	select {
	case <-g.open:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return g.MemBlocks.Get(ctx, k, sum)
}

// A read of many blocks asks the store for them at once (issue 46: a
// 64 MiB file read back at 15 MB/s, one round trip per 8 KB block).
func TestLargeReadFetchesInParallel(t *testing.T) {
	ctx := context.Background()
	w, mem, vol, c := newVolume(t)
	want := pattern(40*BlockBytes+5, 9)
	writeFile(t, w, "big", want)
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	g := &gatedGets{MemBlocks: mem, open: make(chan struct{})}
	r, err := Open(ctx, mem, vol, true, testConfig(c)) // loads through the ungated store
	if err != nil {
		t.Fatal(err)
	}
	// Its record loaded, through a read of the first byte.
	if _, err := readFile(r, "big"); err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	clear(r.cache)
	r.cacheBytes = 0
	r.blocks = g
	r.mu.Unlock()
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	n, err := r.Walk(rctx, "big")
	if err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(want))
	if m, err := r.ReadAt(rctx, n, got, 0); err != nil || m != len(want) || !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes, %v; want %d, the same bytes (blocks fetched one at a time never reach 4 in flight)", m, err, len(want))
	}
}
