package d2fs

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"triad/internal/d2/key"
)

// gatedGets holds each Get until four have started: a caller that asks
// for one block at a time waits until its context ends.
type gatedGets struct {
	*MemBlocks
	mu      sync.Mutex
	started int
	open    chan struct{}
}

func (g *gatedGets) Get(ctx context.Context, k key.Key, sum [32]byte) ([]byte, error) {
	g.mu.Lock()
	g.started++
	if g.started == 4 {
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

// gate puts r on mem behind a gatedGets, and returns it with a context
// that ends the test's wait for the gate.
func gate(t *testing.T, r *FS, mem *MemBlocks) (*gatedGets, context.Context) {
	g := &gatedGets{MemBlocks: mem, open: make(chan struct{})}
	r.mu.Lock()
	r.blocks = g
	r.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return g, ctx
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
	r.mu.Unlock()
	_, rctx := gate(t, r, mem)
	n, err := r.Walk(rctx, "big")
	if err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(want))
	if m, err := r.ReadAt(rctx, n, got, 0); err != nil || m != len(want) || !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes, %v; want %d, the same bytes (blocks fetched one at a time never reach 4 in flight)", m, err, len(want))
	}
}

// The first read of a file in a directory fetches its other files'
// records and first blocks at once (issue 46: a diff -r or tar of a
// tree read each small file in two round trips, one after the other),
// and the reads of those files then ask the store for nothing.
func TestFirstReadWarmsTheDirectory(t *testing.T) {
	w, mem, vol, c := newVolume(t)
	checkFirstReadWarms(t, w, mem, vol, c, 10, func(i int) []byte { return pattern(BlockBytes+i, i) })
}

// checkFirstReadWarms writes files d/f0... (content(i)) with w and
// commits; on a read-only mount, the first read of d/f0, through a store
// that holds each Get until four have started, must fetch the others'
// records and first blocks at once, and reading every file after it must
// ask the store for nothing more.
func checkFirstReadWarms(t *testing.T, w *FS, mem *MemBlocks, vol key.Volume, c *clock, files int, content func(i int) []byte) {
	t.Helper()
	ctx := context.Background()
	for i := range files {
		writeFile(t, w, fmt.Sprintf("d/f%d", i), content(i))
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	r := mustOpen(t, mem, vol, true, c)
	if _, err := r.Walk(ctx, "d/f0"); err != nil { // loads the directory
		t.Fatal(err)
	}
	g, rctx := gate(t, r, mem)
	n, err := r.Walk(rctx, "d/f0")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.ReadAt(rctx, n, make([]byte, BlockBytes), 0); err != nil {
		t.Fatalf("first read: %v (records fetched one at a time never reach 4 in flight)", err)
	}
	g.mu.Lock()
	asked := g.started
	g.mu.Unlock()
	for i := range files {
		mustRead(t, r, fmt.Sprintf("d/f%d", i), content(i))
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.started != asked {
		t.Fatalf("the other files' reads asked the store for %d blocks more, want 0", g.started-asked)
	}
}
