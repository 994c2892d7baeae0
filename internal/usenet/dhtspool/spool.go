package dhtspool

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"triad/internal/client"
	"triad/internal/fault"
	"triad/internal/id"
	"triad/internal/usenet"
	"triad/internal/wire"
)

// Spool keeps articles in the DHT through a node: a usenet.Spool whose
// keys a resolver can check (Resolve).
type Spool struct {
	Cluster *client.Cluster

	once   sync.Once
	sem    chan struct{} // requests in flight
	closed atomic.Bool
}

// Timeout bounds one request's store or one article's fetch through the
// DHT: the server's own work waits on nothing else, so this spool alone
// sets one.
const Timeout = time.Minute

// How a batch goes to the DHT: at most maxRequest articles and
// maxRequestBytes of them per ClientPutBatch, and maxInFlight requests in
// flight (PutBatch waits for room, so what the site gathers meanwhile
// makes its next batch bigger); an article a node's write window deferred
// is offered again after deferRetry, at most deferTries times, before the
// site is told to try later.
const (
	maxRequest      = 64
	maxRequestBytes = 2 << 20 // well inside a frame
	maxInFlight     = 4
	deferRetry      = 2 * time.Millisecond
	deferTries      = 100
)

// PutBatch stores a batch: it sends the batch's requests as room in
// flight allows, returning once the last is sent, and calls done for each
// request's articles once it has ended.
func (s *Spool) PutBatch(batch []usenet.Put, done func([]usenet.Put)) {
	s.once.Do(func() { s.sem = make(chan struct{}, maxInFlight) })
	if s.closed.Load() {
		for i := range batch {
			batch[i].Err = usenet.ErrSiteClosed
		}
		done(batch)
		return
	}
	for len(batch) > 0 {
		n, size := 0, 0
		for n < len(batch) && n < maxRequest && (n == 0 || size+len(batch[n].Article) <= maxRequestBytes) {
			size += len(batch[n].Article)
			n++
		}
		req := batch[:n]
		batch = batch[n:]
		s.sem <- struct{}{}
		go func() {
			s.put(req)
			<-s.sem
			done(req)
		}()
	}
}

// put stores one request's articles, offering again what a full write
// window deferred, and sets each one's key or error.
func (s *Spool) put(req []usenet.Put) {
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	todo := make([]*usenet.Put, len(req))
	for i := range req {
		todo[i] = &req[i]
	}
	for try := 0; len(todo) > 0; try++ {
		items := make([]wire.PutItem, len(todo))
		hashes := make([]id.ID, len(todo))
		now := time.Now()
		for i, p := range todo {
			items[i] = wire.PutItem{Data: p.Article, Expiry: p.Expires.UnixNano()}
			if !p.Expires.After(now) {
				items[i].Expiry = 0
			}
			hashes[i] = p.Hash
		}
		// The site puts only articles its history has never seen.
		keys, errs := s.Cluster.PutBatchWith(ctx, items, client.PutBatchOptions{Hashes: hashes, Redundancy: wire.RedundancyDefault, Fresh: true})
		again := todo[:0]
		for i, p := range todo {
			p.Key, p.Err = keys[i], errs[i]
			if errors.Is(p.Err, fault.ErrBusy) && try < deferTries && ctx.Err() == nil {
				again = append(again, p)
			}
		}
		todo = again
		if len(todo) > 0 {
			time.Sleep(deferRetry)
		}
	}
}

func (s *Spool) Get(ctx context.Context, key id.ID) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	data, _, err := s.Cluster.Get(ctx, key)
	return data, err
}

func (s *Spool) View(ctx context.Context, key id.ID, fn func([]byte) error) error {
	data, err := s.Get(ctx, key)
	if err != nil {
		return err
	}
	return fn(data)
}

// Close closes the client: requests in flight end with its error, and
// later batches are refused as the site's closing.
func (s *Spool) Close() error {
	s.closed.Store(true)
	return s.Cluster.Close()
}

// Resolve asks the key's holders: its first holders directly, the ring
// when they do not have it.
func (s *Spool) Resolve(ctx context.Context, key id.ID) (usenet.Stored, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	size, exp, found, err := s.Cluster.Holding(ctx, key)
	return usenet.Stored{Size: int(size), Expires: time.Unix(0, exp)}, found, err
}

// ResolveBatch is Resolve for many keys, with one request per holder for
// all of its keys rather than one per key.
func (s *Spool) ResolveBatch(ctx context.Context, keys []id.ID) []usenet.Resolution {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	out := make([]usenet.Resolution, len(keys))
	for i, h := range s.Cluster.HoldingBatch(ctx, keys) {
		out[i] = usenet.Resolution{Stored: usenet.Stored{Size: int(h.Size), Expires: time.Unix(0, h.Expiry)}, Found: h.Found, Err: h.Err}
	}
	return out
}
