package usenet

import (
	"context"
	"errors"
	"time"

	"triad/internal/client"
	"triad/internal/dhash"
	"triad/internal/id"
	"triad/internal/store"
	"triad/internal/store/disk"
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

// ErrDeferred is a spool's "busy, try later": the server answers 436 or
// 431, and the feeder retries.
var ErrDeferred = errors.New("spool busy, try later")

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
		err = errors.Join(ErrDeferred, err)
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
// block, stored with the deployment's redundancy.
type DHTSpool struct{ Cluster *client.Cluster }

// dhtTimeout bounds one article's store or fetch through the DHT: the
// server's own work waits on nothing else, so this spool alone sets one.
const dhtTimeout = time.Minute

func (s *DHTSpool) Put(ctx context.Context, article []byte, expires time.Time) (id.ID, error) {
	ctx, cancel := context.WithTimeout(ctx, dhtTimeout)
	defer cancel()
	key, _, err := s.Cluster.Put(ctx, article, client.PutOptions{Expire: time.Until(expires)})
	if errors.Is(err, dhash.ErrDeferred) {
		err = errors.Join(ErrDeferred, err)
	}
	return key, err
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

func (s *DHTSpool) Close() error { return s.Cluster.Close() }

// A resolver says whether a key names a stored article without fetching
// it: a site checks an announced article's key so.
type resolver interface {
	Has(ctx context.Context, key id.ID) (bool, error)
}

// Has reports whether the key's holders keep a copy: asked of its first
// holders directly, of the ring when they do not have it.
func (s *DHTSpool) Has(ctx context.Context, key id.ID) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, dhtTimeout)
	defer cancel()
	return s.Cluster.Holds(ctx, key)
}

// Has reports whether the engine holds key.
func (s *LocalSpool) Has(_ context.Context, key id.ID) (bool, error) {
	_, err := s.Engine.Stat(key)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}
