package usenet

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"triad/internal/client"
	"triad/internal/fault"
	"triad/internal/id"
	"triad/internal/store"
	"triad/internal/store/disk"
	"triad/internal/wire"
)

// A Spool keeps whole articles as content-hash objects: the key is the
// first 160 bits of the article's SHA-256, recorded in the overview and the
// history. The server needs nothing else from where articles live.
type Spool interface {
	// Put stores an article until at least expires and returns its key
	// once the article is durable. ErrDeferred means "try later". The
	// caller reuses the article's buffer once Put returns.
	Put(ctx context.Context, article []byte, expires time.Time) (id.ID, error)
	// Get returns the article stored under key, checked.
	Get(ctx context.Context, key id.ID) ([]byte, error)
	// View calls fn with the article stored under key, checked. The bytes
	// may be the spool's own: valid only while fn runs, not to be
	// modified. fn's error is returned as is.
	View(ctx context.Context, key id.ID, fn func(article []byte) error) error
	Close() error
}

// An asyncSpool writes an article at once and makes it durable later, so
// the site commits the article's overview while the spool syncs. It is
// optional: the site waits for Put on other spools.
type asyncSpool interface {
	// PutAsync is Put returning once the article is written, with a
	// function that waits until it is durable.
	PutAsync(ctx context.Context, article []byte, expires time.Time) (id.ID, func() error, error)
}

// ErrDeferred marks a failure that is not the article's: the spool is
// busy or down, a disk or the database failed. The server answers 436 or
// 431 and the sender tries again later. It is the one temporary marker:
// every other failure of Accept is a refusal for good (437, 439), so a
// refusal added later cannot turn into "try later" by being forgotten
// (feedResult).
var ErrDeferred = errors.New("spool busy, try later")

// deferred marks err, a failure of the site's own machinery (its spool,
// the ring, its disk, news.db, the journal), as temporary; an article
// too large for the spool, and a duplicate, stay what they are.
func deferred(err error) error {
	switch {
	case err == nil, errors.Is(err, ErrDeferred), errors.Is(err, ErrDuplicate),
		errors.Is(err, store.ErrTooLarge), errors.Is(err, fault.ErrTooLarge):
		return err
	}
	return fmt.Errorf("%w: %w", ErrDeferred, err)
}

// LocalSpool keeps articles in the local storage engine: one site, like
// INN's spool.
type LocalSpool struct{ Engine *disk.Disk }

// OpenLocalSpool opens (or creates) a storage engine in dir for articles
// up to maxArticle bytes.
func OpenLocalSpool(dir string, maxArticle int) (*LocalSpool, error) {
	d, err := disk.Open(store.Options{Dir: dir, MaxObject: maxArticle, NoTree: true})
	if err != nil {
		return nil, err
	}
	return &LocalSpool{Engine: d}, nil
}

func (s *LocalSpool) Put(ctx context.Context, article []byte, expires time.Time) (id.ID, error) {
	key, durable, err := s.PutAsync(ctx, article, expires)
	if err != nil {
		return key, err
	}
	return key, durable()
}

// PutAsync implements asyncSpool. The site puts only articles its history
// has not seen, so the engine need not look the key up first.
func (s *LocalSpool) PutAsync(_ context.Context, article []byte, expires time.Time) (id.ID, func() error, error) {
	key := id.Key(article)
	durable, err := s.Engine.PutAsync(key, article, expires, store.PutOptions{KeyChecked: true, Fresh: true})
	if errors.Is(err, store.ErrFull) {
		err = fmt.Errorf("%w: %w", ErrDeferred, err)
	}
	return key, durable, err
}

func (s *LocalSpool) Get(_ context.Context, key id.ID) ([]byte, error) {
	data, _, err := s.Engine.Get(key)
	return data, err
}

// View lends the article in place, from the engine's map of its segment:
// a large article is sent without being copied first.
func (s *LocalSpool) View(_ context.Context, key id.ID, fn func([]byte) error) error {
	return s.Engine.View(key, func(data []byte, _ store.Meta) error { return fn(data) })
}

func (s *LocalSpool) Close() error { return s.Engine.Close() }

// DHTSpool keeps articles in the DHT through a node: each article is one
// block, stored with the deployment's redundancy. Articles put at once
// (a feed's window, many posters) go to the DHT together: one
// ClientPutBatch per holder node, whose copies then share each replica
// host's syncs.
type DHTSpool struct {
	Cluster *client.Cluster

	once    sync.Once
	closeMu sync.RWMutex // held to queue a put; Close takes it to stop
	closed  bool
	reqs    chan *putReq
	sem     chan struct{} // batches in flight
	stop    chan struct{}
}

// dhtTimeout bounds one article's store or fetch through the DHT: the
// server's own work waits on nothing else, so this spool alone sets one.
const dhtTimeout = time.Minute

// Batching of puts: at most maxPutBatch articles per batch and
// maxBatches batches in flight (what waits meanwhile makes the next batch
// bigger); an article a node's write window deferred is offered again
// after deferRetry, at most deferTries times, before the caller is told
// to try later.
const (
	maxPutBatch = 64
	maxBatchLen = 2 << 20 // bytes of articles per batch, well inside a frame
	maxBatches  = 4
	deferRetry  = 2 * time.Millisecond
	deferTries  = 100
)

type putReq struct {
	data    []byte
	expires time.Time
	key     id.ID
	err     error
	done    chan struct{}
}

func (s *DHTSpool) start() {
	s.once.Do(func() {
		s.reqs = make(chan *putReq, 4*maxPutBatch)
		s.sem = make(chan struct{}, maxBatches)
		s.stop = make(chan struct{})
		go s.batchLoop()
	})
}

// Put stores an article; it returns once the article is durable on its
// replicas. The article's bytes are used until Put returns.
func (s *DHTSpool) Put(ctx context.Context, article []byte, expires time.Time) (id.ID, error) {
	s.start()
	r := &putReq{data: article, expires: expires, done: make(chan struct{})}
	// Queued only while the spool is open, so the batch loop, which
	// answers whatever is queued when it stops, sees every put.
	s.closeMu.RLock()
	if s.closed {
		s.closeMu.RUnlock()
		return id.ID{}, ErrSiteClosed
	}
	select {
	case s.reqs <- r:
	case <-ctx.Done():
		s.closeMu.RUnlock()
		return id.ID{}, ctx.Err()
	}
	s.closeMu.RUnlock()
	<-r.done // the batch has its own time bound; the bytes are in use until then
	return r.key, r.err
}

// batchLoop gathers waiting puts into batches.
func (s *DHTSpool) batchLoop() {
	for {
		var batch []*putReq
		size := 0
		select {
		case r := <-s.reqs:
			batch, size = append(batch, r), len(r.data)
		case <-s.stop:
			// A Put may have queued as the spool closed: answer it.
			for {
				select {
				case r := <-s.reqs:
					r.err = ErrSiteClosed
					close(r.done)
				default:
					return
				}
			}
		}
	more:
		for len(batch) < maxPutBatch && size < maxBatchLen {
			select {
			case r := <-s.reqs:
				batch, size = append(batch, r), size+len(r.data)
			default:
				break more
			}
		}
		s.sem <- struct{}{}
		go func() {
			defer func() { <-s.sem }()
			s.putBatch(batch)
		}()
	}
}

// putBatch stores a batch, offering again what a full write window
// deferred, and answers each put.
func (s *DHTSpool) putBatch(batch []*putReq) {
	ctx, cancel := context.WithTimeout(context.Background(), dhtTimeout)
	defer cancel()
	for try := 0; len(batch) > 0; try++ {
		items := make([]wire.PutItem, len(batch))
		now := time.Now()
		for i, r := range batch {
			items[i] = wire.PutItem{Data: r.data, Expiry: r.expires.UnixNano()}
			if !r.expires.After(now) {
				items[i].Expiry = 0
			}
		}
		keys, errs := s.Cluster.PutBatch(ctx, items, wire.RedundancyDefault)
		var again []*putReq
		for i, r := range batch {
			r.key, r.err = keys[i], errs[i]
			if errors.Is(r.err, fault.ErrBusy) {
				if try < deferTries && ctx.Err() == nil {
					again = append(again, r)
					continue
				}
				r.err = fmt.Errorf("%w: %w", ErrDeferred, r.err)
			}
			close(r.done)
		}
		batch = again
		if len(batch) > 0 {
			time.Sleep(deferRetry)
		}
	}
}

func (s *DHTSpool) Get(ctx context.Context, key id.ID) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, dhtTimeout)
	defer cancel()
	data, _, err := s.Cluster.Get(ctx, key)
	return data, err
}

func (s *DHTSpool) View(ctx context.Context, key id.ID, fn func([]byte) error) error {
	data, err := s.Get(ctx, key)
	if err != nil {
		return err
	}
	return fn(data)
}

func (s *DHTSpool) Close() error {
	s.start()
	s.closeMu.Lock()
	if !s.closed {
		s.closed = true
		close(s.stop)
	}
	s.closeMu.Unlock()
	return s.Cluster.Close()
}

// A resolver says whether a key names a stored article, and its size and
// expiry, without fetching it: a site checks an announced article's key
// so, against the size and expiry announced.
type resolver interface {
	Resolve(ctx context.Context, key id.ID) (stored Stored, found bool, err error)
}

// Stored is what a resolver knows of a stored article.
type Stored struct {
	Size    int
	Expires time.Time
}

// Resolve asks the key's holders: its first holders directly, the ring
// when they do not have it.
func (s *DHTSpool) Resolve(ctx context.Context, key id.ID) (Stored, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, dhtTimeout)
	defer cancel()
	size, exp, found, err := s.Cluster.Holding(ctx, key)
	return Stored{Size: int(size), Expires: time.Unix(0, exp)}, found, err
}

// Resolve asks the engine.
func (s *LocalSpool) Resolve(_ context.Context, key id.ID) (Stored, bool, error) {
	m, err := s.Engine.Stat(key)
	if errors.Is(err, store.ErrNotFound) {
		return Stored{}, false, nil
	}
	return Stored{Size: m.Size, Expires: m.Expiry}, err == nil, err
}
