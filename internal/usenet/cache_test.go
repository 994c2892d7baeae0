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
