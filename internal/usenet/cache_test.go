package usenet

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"triad/internal/id"
	"triad/internal/testutil"
)

// countingSpool counts the gets of the spool it stands for.
type countingSpool struct {
	Spool
	gets atomic.Int64
}

func (c *countingSpool) Get(ctx context.Context, key id.ID) ([]byte, error) {
	c.gets.Add(1)
	return c.Spool.Get(ctx, key)
}

// put stores one article in a spool and waits until it is durable.
func put(s Spool, article []byte, expires time.Time) (id.ID, error) {
	b := []Put{{Article: article, Expires: expires}}
	done := make(chan struct{})
	s.PutBatch(b, func([]Put) { close(done) })
	<-done
	return b[0].Key, b[0].Err
}

func TestCacheFetchesOnceAndEvicts(t *testing.T) {
	local, err := OpenLocalSpool(t.TempDir(), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	ring := &countingSpool{Spool: local}
	var keys []id.ID
	for i := range 4 {
		k, err := put(ring, []byte(fmt.Sprintf("%d%s", i, strings.Repeat("x", 599))), time.Now().Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	for _, policy := range []CachePolicy{LRU, FIFO} {
		ring.gets.Store(0)
		c := NewCachedSpool(ring, 1800, policy)
		var wg sync.WaitGroup
		for range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := c.Get(context.Background(), keys[0]); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if n := ring.gets.Load(); n != 1 {
			t.Fatalf("%v: 16 readers at once fetched %d times, want 1", policy, n)
		}
		c.Get(context.Background(), keys[1])
		c.Get(context.Background(), keys[2])
		c.Get(context.Background(), keys[0]) // a hit; LRU moves it to the back
		c.Get(context.Background(), keys[3]) // evicts one
		before := ring.gets.Load()
		c.Get(context.Background(), keys[0])
		refetched := ring.gets.Load() - before
		if want := map[CachePolicy]int64{LRU: 0, FIFO: 1}[policy]; refetched != want {
			t.Fatalf("policy %v: the article read again was fetched %d more times, want %d", policy, refetched, want)
		}
		if st := c.Stats(); st.Bytes > 1800 || st.Evictions == 0 {
			t.Fatalf("policy %v: %+v", policy, st)
		}
	}
}

// TestCacheKeepsOnlyTextArticlesPut puts a text article and a binary
// through the cache: the text is read back from memory, the binary, too
// large to cache as it is put, from the spool, and cached then. With
// KeepLargePuts (a site feeding whole articles to peers) the binary is
// cached as it is put too.
func TestCacheKeepsOnlyTextArticlesPut(t *testing.T) {
	for _, keepLarge := range []bool{false, true} {
		local, err := OpenLocalSpool(t.TempDir(), 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		defer local.Close()
		ring := &countingSpool{Spool: local}
		c := NewCachedSpool(ring, 16<<20, LRU)
		c.KeepLargePuts = keepLarge
		text, err := put(c, []byte(strings.Repeat("t", 2450)), time.Now().Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		binary, err := put(c, []byte(strings.Repeat("b", 240000)), time.Now().Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		binaryFetches := int64(1)
		if keepLarge {
			binaryFetches = 0
		}
		for _, read := range []struct {
			what    string
			key     id.ID
			fetches int64
		}{{"the text", text, 0}, {"the binary", binary, binaryFetches}, {"the binary again", binary, binaryFetches}} {
			if _, err := c.Get(context.Background(), read.key); err != nil {
				t.Fatal(err)
			}
			if n := ring.gets.Load(); n != read.fetches {
				t.Errorf("KeepLargePuts %v: after reading %s, the spool was read %d times, want %d", keepLarge, read.what, n, read.fetches)
			}
		}
	}
}

// gatedSpoolGets holds every Get until release is closed.
type gatedSpoolGets struct {
	countingSpool
	release chan struct{}
}

func (g *gatedSpoolGets) Get(ctx context.Context, key id.ID) ([]byte, error) {
	<-g.release
	return g.countingSpool.Get(ctx, key)
}

// Prefetch fetches in the background what is neither cached nor being
// fetched, at most maxPrefetching at once for the whole cache; a read
// meanwhile waits for the fetch under way rather than start another, and
// finds the article cached once it is done.
func TestCachePrefetch(t *testing.T) {
	local, err := OpenLocalSpool(t.TempDir(), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	g := &gatedSpoolGets{countingSpool: countingSpool{Spool: local}, release: make(chan struct{})}
	var keys []id.ID
	for i := range maxPrefetching + 8 {
		k, err := put(local, []byte(fmt.Sprintf("article %d", i)), time.Now().Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	c := NewCachedSpool(g, 1<<20, LRU)
	c.Prefetch(keys)
	c.Prefetch(keys) // again: nothing more starts
	if st := c.Stats(); st.Prefetches != maxPrefetching {
		t.Fatalf("%d prefetches started for %d keys, want the bound, %d", st.Prefetches, len(keys), maxPrefetching)
	}
	read := make(chan error, 1)
	go func() {
		_, err := c.Get(context.Background(), keys[0]) // waits for its prefetch
		read <- err
	}()
	close(g.release)
	if err := <-read; err != nil {
		t.Fatal(err)
	}
	if !testutil.Poll(10*time.Second, func() bool { return c.Stats().Articles == maxPrefetching }) {
		t.Fatalf("%d articles cached, want the %d prefetched", c.Stats().Articles, maxPrefetching)
	}
	for _, k := range keys[:maxPrefetching] {
		if _, err := c.Get(context.Background(), k); err != nil {
			t.Fatal(err)
		}
	}
	if n := g.gets.Load(); n != maxPrefetching {
		t.Errorf("the spool was read %d times, want once for each of the %d prefetched", n, maxPrefetching)
	}
}
