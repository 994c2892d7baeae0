package usenet

import (
	"context"
	"errors"
	"fmt"
	"time"

	"triad/internal/fault"
	"triad/internal/id"
	"triad/internal/store"
	"triad/internal/store/disk"
)

// A Spool keeps whole articles as content-hash objects: the key is the
// first 160 bits of the article's SHA-256 (or, for one the DHT stores as
// fragments, their descriptor's), recorded in the overview and the
// history. The server needs nothing else from where articles live.
type Spool interface {
	// PutBatch stores a batch of articles, each until at least its
	// Expires, and returns without waiting for them to be durable. The
	// spool ends the batch in parts, runs of consecutive Puts that
	// together are the whole batch: it calls done once for each part,
	// later and from any goroutine, when each Put of the part is durable
	// with its Key set, or has its Err set (fault.ErrBusy: try later).
	// The spool uses a part's articles, and the caller leaves the part
	// alone, until done is called for it. The site's commit loop is the
	// one caller on the ingest path: it hands the spool each batch it
	// gathers.
	PutBatch(batch []Put, done func(part []Put))
	// Get returns the article stored under key, checked.
	Get(ctx context.Context, key id.ID) ([]byte, error)
	// View calls fn with the article stored under key, checked. The bytes
	// may be the spool's own: valid only while fn runs, not to be
	// modified. fn's error is returned as is.
	View(ctx context.Context, key id.ID, fn func(article []byte) error) error
	Close() error
}

// A Put is one article of a Spool's batch: Article and Expires in, Key or
// Err out.
type Put struct {
	Article []byte    // the article's block, in use until the batch is done
	Expires time.Time // kept at least until then
	Hash    id.ID     // the block's id.Key, if the site has hashed it already (else zero)
	Owned   bool      // Article is the spool's to keep once done (no one reuses it)
	Key     id.ID     // the key it is stored under, once durable
	Err     error     // why it was not stored

	p *pending // the site's article it is
}

// A localSpool is a spool on this machine, the site's alone (LocalSpool).
// Its articles are stored as they are, not sealed: no other site checks an
// announcement against their keys. Its PutBatch writes the batch and sets
// every Key before it returns, and sets no Key after: only the sync, and
// any error, come later, so the site journals the batch by its keys while
// the spool syncs it (journal.go).
type localSpool interface {
	Spool
	// local marks the kind; it does nothing.
	local()
}

// deferred marks err, a failure of the site's own machinery (its spool,
// the ring, its disk, news.db, the journal), as temporary (fault.ErrBusy,
// the one temporary marker: the server answers 436 or 431 and the sender
// tries again later); an article too large for the spool, and a
// duplicate, stay what they are: refusals for good. Every failure of
// Accept that is not marked so is a refusal for good (437, 439), so that a
// refusal added later cannot turn into "try later" by being forgotten
// (feedResult).
func deferred(err error) error {
	switch {
	case err == nil, errors.Is(err, fault.ErrBusy), errors.Is(err, ErrDuplicate),
		errors.Is(err, fault.ErrTooLarge):
		return err
	}
	return fmt.Errorf("%w: %w", fault.ErrBusy, err)
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

func (s *LocalSpool) local() {}

// PutBatch writes each article to the engine and sets its key before it
// returns, and calls done once, for the whole batch, when the engine's
// group commit has made it durable (a failed write's error is set then
// too). The site puts only articles its history has not seen, so the
// engine need not look the keys up first.
func (s *LocalSpool) PutBatch(batch []Put, done func([]Put)) {
	durable := make([]func() error, len(batch))
	errs := make([]error, len(batch))
	for i := range batch {
		p := &batch[i]
		p.Key = id.Key(p.Article)
		durable[i], errs[i] = s.Engine.PutAsync(p.Key, p.Article, p.Expires, store.PutOptions{KeyChecked: true, Fresh: true})
	}
	go func() {
		for i, d := range durable {
			if errs[i] == nil {
				errs[i] = d()
			}
			batch[i].Err = errs[i]
		}
		done(batch)
	}()
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

// A resolver says whether a key names a stored article, and its size and
// expiry, without fetching it: a site checks an announced article's key
// so, against the size and expiry announced.
type resolver interface {
	Resolve(ctx context.Context, key id.ID) (stored Stored, found bool, err error)
}

// A batchResolver resolves many keys at once, as a site checks a batch of
// announcements: a DHT spool asks each holder once for all its keys.
type batchResolver interface {
	ResolveBatch(ctx context.Context, keys []id.ID) []Resolution
}

// A Resolution is what a batchResolver found of one key: Resolve's results.
type Resolution struct {
	Stored Stored
	Found  bool
	Err    error
}

// Stored is what a resolver knows of a stored article.
type Stored struct {
	Size    int
	Expires time.Time
}

// Resolve asks the engine.
func (s *LocalSpool) Resolve(_ context.Context, key id.ID) (Stored, bool, error) {
	m, err := s.Engine.Stat(key)
	if errors.Is(err, fault.ErrNotFound) {
		return Stored{}, false, nil
	}
	return Stored{Size: m.Size, Expires: m.Expiry}, err == nil, err
}
