package usenet

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"triad/internal/id"
)

// CachePolicy chooses which article a full cache evicts.
type CachePolicy uint8

const (
	// LRU evicts the article read least recently: readers of a site
	// read the same new articles again and again.
	LRU CachePolicy = iota
	// FIFO evicts the article cached first, whatever was read since:
	// cheaper on a hit (no reordering), worse for popular old articles.
	FIFO
)

// ParseCachePolicy reads "lru" or "fifo".
func ParseCachePolicy(s string) (CachePolicy, error) {
	switch s {
	case "lru":
		return LRU, nil
	case "fifo":
		return FIFO, nil
	}
	return 0, fmt.Errorf("cache policy %q: want lru or fifo", s)
}

// CachedSpool is a spool (the DHT) behind a bounded memory cache of
// articles, shared by every front-end of a site, so that the site pulls
// an article from the DHT at most once while it is cached: readers that
// ask for the same article at once wait for one fetch. Articles put
// through the site are cached too, since readers ask for new articles
// first, but only up to cacheOnPutMax bytes: binaries are fetched when
// read. Every article the spool returns was checked against its key.
type CachedSpool struct {
	Spool
	// KeepLargePuts caches every article put, whatever its size: for a
	// site that feeds whole articles to peers (peering.Feed), which reads
	// each back from the spool as soon as it is listed. Set it before use.
	KeepLargePuts bool

	max    int64
	policy CachePolicy

	mu       sync.Mutex
	size     int64
	order    *list.List // front: next to evict
	entries  map[id.ID]*list.Element
	fetching map[id.ID]*fetch
	stats    CacheStats
	// prefetching counts Prefetch's fetches in flight, at most
	// maxPrefetching.
	prefetching int
}

type cached struct {
	key  id.ID
	data []byte
}

type fetch struct {
	done chan struct{}
	data []byte
	err  error
}

// CacheStats count a cache's work.
type CacheStats struct {
	Hits, Misses, Fetches, Evictions uint64
	// Prefetches are fetches Prefetch started (also counted in Fetches);
	// a read that finds one done or under way is a hit or a miss as it
	// finds it.
	Prefetches uint64
	Bytes      int64
	Articles   int
}

// NewCachedSpool caches up to maxBytes of articles of s.
func NewCachedSpool(s Spool, maxBytes int64, policy CachePolicy) *CachedSpool {
	return &CachedSpool{Spool: s, max: maxBytes, policy: policy, order: list.New(),
		entries: map[id.ID]*list.Element{}, fetching: map[id.ID]*fetch{}}
}

// Stats returns the cache's counters.
func (c *CachedSpool) Stats() CacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.stats
	st.Bytes, st.Articles = c.size, len(c.entries)
	return st
}

// cacheOnPutMax is the largest article a put caches. A feed of binaries
// (hundreds of KB each, at tens of MB/s) would turn the whole cache over
// every few seconds, before readers come, and keeping each one alive that
// long has the Go heap grow into new pages for every article: at 240 KB,
// a site took half as many articles a second as it did without caching
// them (docs/usenet.md).
const cacheOnPutMax = 64 << 10

// PutBatch stores the articles and caches a copy of each stored of up to
// cacheOnPutMax bytes (any, with KeepLargePuts), before done for its
// part: the caller reuses their buffers after.
func (c *CachedSpool) PutBatch(batch []Put, done func([]Put)) {
	c.Spool.PutBatch(batch, func(part []Put) {
		for i := range part {
			if part[i].Err == nil && (len(part[i].Article) <= cacheOnPutMax || c.KeepLargePuts) {
				c.add(part[i].Key, part[i].Article, !part[i].Owned)
			}
		}
		done(part)
	})
}

// Get returns the article from the cache, or fetches it once.
func (c *CachedSpool) Get(ctx context.Context, key id.ID) ([]byte, error) {
	c.mu.Lock()
	if e, ok := c.entries[key]; ok {
		c.stats.Hits++
		if c.policy == LRU {
			c.order.MoveToBack(e)
		}
		data := e.Value.(*cached).data
		c.mu.Unlock()
		return data, nil
	}
	c.stats.Misses++
	f, ok := c.fetching[key]
	if !ok {
		f = &fetch{done: make(chan struct{})}
		c.fetching[key] = f
		c.stats.Fetches++
		c.mu.Unlock()
		c.fetch(ctx, key, f, false)
		return f.data, f.err
	}
	c.mu.Unlock()
	select {
	case <-f.done:
		return f.data, f.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// maxPrefetching bounds Prefetch's fetches in flight, for the whole site.
const maxPrefetching = 32

// prefetchTimeout bounds one of Prefetch's fetches.
const prefetchTimeout = 30 * time.Second

// Prefetch starts fetching the articles of keys that are neither cached
// nor being fetched, in the background, as long as fewer than
// maxPrefetching are under way: a reader reading a group in order then
// finds the next articles fetched, or on their way (read-ahead). A Get
// meanwhile waits for the fetch under way rather than start another.
func (c *CachedSpool) Prefetch(keys []id.ID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, key := range keys {
		if c.prefetching >= maxPrefetching {
			return
		}
		if _, ok := c.entries[key]; ok {
			continue
		}
		if _, ok := c.fetching[key]; ok {
			continue
		}
		f := &fetch{done: make(chan struct{})}
		c.fetching[key] = f
		c.stats.Fetches++
		c.stats.Prefetches++
		c.prefetching++
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), prefetchTimeout)
			defer cancel()
			c.fetch(ctx, key, f, true)
		}()
	}
}

// fetch reads key from the spool for f, registered in c.fetching, then
// caches it and ends f. Cached and no longer fetching in one step: a
// reader arriving in between would have fetched the article a second
// time.
func (c *CachedSpool) fetch(ctx context.Context, key id.ID, f *fetch, prefetched bool) {
	f.data, f.err = c.Spool.Get(ctx, key)
	c.mu.Lock()
	if f.err == nil {
		c.addLocked(key, f.data)
	}
	delete(c.fetching, key)
	if prefetched {
		c.prefetching--
	}
	c.mu.Unlock()
	close(f.done)
}

// View calls fn with the article. Cached articles are never modified (a
// new copy is made on Put), so fn may read them while others do.
func (c *CachedSpool) View(ctx context.Context, key id.ID, fn func([]byte) error) error {
	data, err := c.Get(ctx, key)
	if err != nil {
		return err
	}
	return fn(data)
}

// Resolve asks the spool (the cache does not know expiries).
func (c *CachedSpool) Resolve(ctx context.Context, key id.ID) (Stored, bool, error) {
	r, ok := c.Spool.(resolver)
	if !ok {
		return Stored{}, false, errors.New("usenet: the spool cannot resolve keys")
	}
	return r.Resolve(ctx, key)
}

// ResolveBatch asks the spool, for all the keys at once when it can.
func (c *CachedSpool) ResolveBatch(ctx context.Context, keys []id.ID) []Resolution {
	if b, ok := c.Spool.(batchResolver); ok {
		return b.ResolveBatch(ctx, keys)
	}
	out := make([]Resolution, len(keys))
	for i, k := range keys {
		out[i].Stored, out[i].Found, out[i].Err = c.Resolve(ctx, k)
	}
	return out
}

// add caches data under key (a copy when the caller keeps its buffer).
func (c *CachedSpool) add(key id.ID, data []byte, borrowed bool) {
	if !c.fits(data) {
		return
	}
	if borrowed {
		data = append([]byte(nil), data...)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.addLocked(key, data)
}

// fits reports whether data may be cached: an article larger than half
// the cache is not kept.
func (c *CachedSpool) fits(data []byte) bool { return c.max > 0 && int64(len(data)) <= c.max/2 }

// addLocked caches data and evicts by the policy until the cache fits.
// c.mu is held.
func (c *CachedSpool) addLocked(key id.ID, data []byte) {
	if !c.fits(data) {
		return
	}
	if _, ok := c.entries[key]; ok {
		return
	}
	c.entries[key] = c.order.PushBack(&cached{key: key, data: data})
	c.size += int64(len(data))
	for c.size > c.max {
		e := c.order.Front()
		old := e.Value.(*cached)
		c.order.Remove(e)
		delete(c.entries, old.key)
		c.size -= int64(len(old.data))
		c.stats.Evictions++
	}
}
