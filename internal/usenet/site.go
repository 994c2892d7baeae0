package usenet

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"triad/internal/fault"
	"triad/internal/id"
	"triad/internal/vfs"
)

// A Site is one news site: a spool the articles live in, a List of its
// groups, numbers, overview and history, and a journal of the listings of
// the articles in the spool that news.db does not have yet. It takes
// articles from readers and feeders, stores them and lists them, and
// answers for an article only once it is listed (its listing durable in
// the journal).
// Servers share it; every method is safe for concurrent use.
type Site struct {
	cfg   SiteConfig
	list  *List
	spool Spool

	mu       sync.Mutex
	inflight map[string]bool // message-ids being stored now

	commits     chan *pending  // to the commit loop: articles, announced entries, Flushes
	resolving   chan struct{}  // announced keys being checked (announce.go)
	local       bool           // the spool is a localSpool
	journal     *journal       // the listings news.db does not have yet
	seq         uint64         // the last batch journaled
	inSpool     sync.WaitGroup // batches the spool has not finished
	stored      chan *stored   // batches the spool and the journal are done with, as they end
	lists       chan *listing  // durable batches, to be listed
	checkpoints chan *listing  // staged batches, for news.db
	// checkpointed wakes a lister waiting for room (roomToStage).
	checkpointed chan struct{}
	stop         chan struct{}
	wg           sync.WaitGroup

	closeOnce sync.Once
	closeErr  error
	// handing is held (read) by whoever hands the commit loop something,
	// and taken by Close once stop is closed: then closing is set, nothing
	// more enters s.commits, and handedAll tells the commit loop that its
	// next drain is the last (it answers everything handed over).
	handing   sync.RWMutex
	closing   bool
	handedAll chan struct{}

	// Tests' hooks: durable runs as a batch of n articles, durable (and
	// journaled), goes to the lister; beforeList before each listing
	// commit.
	durable    func(n int)
	beforeList func()

	forgeries atomic.Uint64 // announcements refused as not their key's (announce.go)
	roomWaits atomic.Uint64 // times the lister waited for a checkpoint (roomToStage)

	subsMu sync.Mutex
	subs   []chan struct{} // told after each listing (the feeders)
}

// Subscribe returns a channel that gets a token after listings: a
// feeder waits on it for new articles to pass on.
func (s *Site) Subscribe() chan struct{} {
	ch := make(chan struct{}, 1)
	s.subsMu.Lock()
	s.subs = append(s.subs, ch)
	s.subsMu.Unlock()
	return ch
}

// notify tells the subscribers that something was listed.
func (s *Site) notify() {
	s.subsMu.Lock()
	for _, ch := range s.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	s.subsMu.Unlock()
}

// listing is a journaled batch, durable in the spool, on its way to
// news.db.
type listing struct {
	seq     uint64
	batch   []*pending
	flushes []chan struct{} // closed once the batch is listed
}

// Flush returns once every article handed to the committers before it is
// listed or refused.
func (s *Site) Flush() {
	done := make(chan struct{})
	if s.handOver(&pending{flushed: done}) {
		<-done
	}
}

// ExpiryRule keeps articles of groups matching Pattern (a wildmat) for
// Keep. The first matching rule applies.
type ExpiryRule struct {
	Pattern string
	Keep    time.Duration
}

// DefaultExpiry keeps binaries 15 days and everything else 90.
var DefaultExpiry = []ExpiryRule{
	{Pattern: "*.binaries.*,*.binaries,*.bin.*", Keep: 15 * 24 * time.Hour},
	{Pattern: "*", Keep: 90 * 24 * time.Hour},
}

// SiteConfig configures a site.
type SiteConfig struct {
	Dir        string // database directory: news.db (the List) and the journal
	Spool      Spool
	PathHost   string           // this site's name in Path headers and Xref; the host name if empty
	MaxArticle int              // largest article accepted, bytes; 1 MB if zero
	Expiry     []ExpiryRule     // DefaultExpiry if nil
	Remember   time.Duration    // how long the history outlives an article; 10 days if zero
	SeenCache  int              // message-ids kept in memory per generation; 1<<20 if zero
	Now        func() time.Time // time.Now if nil
	// Relay queues every article posted or fed here for the site's
	// peers (see Feeds): its head is kept in news.db until each peer
	// took it. With RelayAnnounced, articles peers announced are queued
	// too, for peers that are not in a full mesh with their source.
	Relay, RelayAnnounced bool
	// FS holds the journal; news.db, a bbolt file, is always on the OS in
	// Dir. The OS's if nil; tests crash a vfs.MemFS.
	FS vfs.FS
	// SyncPeriod, above zero, is periodic durability: a batch's listing is
	// acknowledged once written to the journal, which is synced at most
	// this long after (INN's promise: a power cut loses the last
	// period's articles). Zero: synced before the articles are
	// acknowledged.
	SyncPeriod time.Duration
}

func (c SiteConfig) withDefaults() SiteConfig {
	if c.PathHost == "" {
		c.PathHost, _ = os.Hostname()
		if c.PathHost == "" {
			c.PathHost = "triad"
		}
	}
	if c.MaxArticle <= 0 {
		c.MaxArticle = 1_000_000
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.FS == nil {
		c.FS = vfs.OS()
	}
	return c
}

// Errors of Accept, each with its own NNTP answer: all refusals for good
// but ErrSiteClosed, a refinement of fault.ErrBusy (try later).
var (
	ErrDuplicate  = errors.New("duplicate message-id")
	ErrNoGroups   = errors.New("no newsgroup of the article is carried here")
	ErrNoPosting  = errors.New("posting to this newsgroup is not allowed")
	ErrUnapproved = errors.New("moderated newsgroup: the article has no Approved header")
	// ErrNoSuchGroup is RemoveGroup's for a group not carried here.
	ErrNoSuchGroup = errors.New("no such newsgroup here")
	ErrSiteClosed  = fault.New(fault.ErrBusy, "site closed") // try later
)

// OpenSite opens the list in cfg.Dir, lists what the journal holds, the
// spool has and the list does not (articles a crash caught between the
// spool's sync and their listing), and starts the committers: the commit
// loop, which hands the spool batches, the loop that waits for the spool,
// and the lister.
func OpenSite(cfg SiteConfig) (*Site, error) {
	cfg = cfg.withDefaults()
	if cfg.Spool == nil {
		return nil, errors.New("usenet: no spool")
	}
	if err := vfs.MkdirAllSynced(cfg.FS, cfg.Dir); err != nil {
		return nil, err
	}
	list, err := OpenList(ListConfig{Path: filepath.Join(cfg.Dir, "news.db"), PathHost: cfg.PathHost,
		Expiry: cfg.Expiry, Remember: cfg.Remember, SeenCache: cfg.SeenCache, Now: cfg.Now, Relay: cfg.Relay})
	if err != nil {
		return nil, err
	}
	s := &Site{cfg: cfg, list: list, spool: cfg.Spool, inflight: map[string]bool{},
		commits: make(chan *pending, 1024), resolving: make(chan struct{}, maxResolving), stop: make(chan struct{}), handedAll: make(chan struct{}),
		stored: make(chan *stored, 64), lists: make(chan *listing, 16), checkpoints: make(chan *listing, 8),
		checkpointed: make(chan struct{}, 1)}
	_, s.local = cfg.Spool.(localSpool)
	j, batches, err := openJournal(cfg.FS, filepath.Join(cfg.Dir, "journal"))
	if err == nil {
		s.journal = j
		err = s.replay(batches)
	}
	if err == nil && cfg.SyncPeriod > 0 {
		j.syncPeriodically(cfg.SyncPeriod)
	}
	if err != nil {
		if s.journal != nil {
			s.journal.close()
		}
		list.Close()
		return nil, err
	}
	s.wg.Add(3)
	go s.durableLoop()
	go s.listLoop()
	go s.checkpointLoop()
	s.wg.Add(1)
	go s.commitLoop()
	return s, nil
}

// Close stops the committers, once every article handed to them is listed
// or refused, and closes the list and the journal (not the spool).
func (s *Site) Close() error {
	s.closeOnce.Do(func() {
		close(s.stop)
		s.handing.Lock()
		s.closing = true
		s.handing.Unlock()
		close(s.handedAll)
		s.wg.Wait()
		s.closeErr = errors.Join(s.list.Close(), s.journal.close())
	})
	return s.closeErr
}

// Forgeries counts the announcements refused because their headers are
// not those their key holds, or name another message-id than announced:
// a peer that lies, or a broken one.
func (s *Site) Forgeries() uint64 { return s.forgeries.Load() }

// List is the site's list: groups, numbers, overview and history.
func (s *Site) List() *List { return s.list }

// Relay reports whether the site queues what it lists for its peers
// (SiteConfig.Relay): feeds need it.
func (s *Site) Relay() bool { return s.cfg.Relay }

// PathHost is the site's name.
func (s *Site) PathHost() string { return s.cfg.PathHost }

// MaxArticle is the largest article accepted.
func (s *Site) MaxArticle() int { return s.cfg.MaxArticle }

// Seen reports whether a message-id is listed or being stored now, for
// CHECK and IHAVE. Recent ids are answered from memory.
func (s *Site) Seen(msgid string) (bool, error) {
	s.mu.Lock()
	storing := s.inflight[msgid]
	s.mu.Unlock()
	if storing {
		return true, nil
	}
	return s.list.Has(msgid)
}

// Article reads an article from the spool, in wire form.
func (s *Site) Article(ctx context.Context, e HistEntry) ([]byte, error) {
	block, err := s.spool.Get(ctx, e.Key)
	if err != nil {
		return nil, err
	}
	return unsealed(block), nil
}

// ViewArticle calls fn with an article in two pieces as the spool lends
// them, uncopied: its header block, through the empty line that ends it
// (all of it, for an article with no empty line), and its body. The
// article in wire form is head then body. The bytes are valid only while
// fn runs. A sealed block is not put back in order first: for a 240 KB
// binary that was a new buffer and a copy per read.
func (s *Site) ViewArticle(ctx context.Context, e HistEntry, fn func(head, body []byte) error) error {
	return s.spool.View(ctx, e.Key, func(block []byte) error {
		if head, body, ok := unseal(block); ok {
			return fn(head, body)
		}
		if i := bytes.Index(block, []byte("\r\n\r\n")); i >= 0 {
			return fn(block[:i+4], block[i+4:])
		}
		return fn(block, nil)
	})
}

// Prefetch starts fetching the articles of keys into the spool's cache,
// if it has one (CachedSpool.Prefetch): read-ahead for a reader reading
// a group in order.
func (s *Site) Prefetch(keys []id.ID) {
	if p, ok := s.spool.(interface{ Prefetch([]id.ID) }); ok {
		p.Prefetch(keys)
	}
}

// Accept stores one article and lists it. posted marks a reader's POST:
// missing Message-ID, Date and Path are supplied and posting rights
// checked. For a feed, offered is the message-id IHAVE or TAKETHIS named.
// It returns the article's message-id, and it returns without error only
// once the article is durable and listed: an error from the spool or from
// news.db (the listing's commit) leaves it unlisted, not in the history
// and free to be offered again. Accept keeps nothing of raw once it
// returns: the server reuses the buffer for the next article.
func (s *Site) Accept(ctx context.Context, raw []byte, offered string, posted bool) (string, error) {
	now := s.cfg.Now()
	a, err := ParseArticle(raw)
	if err != nil {
		return "", err
	}
	if posted {
		if raw, err = s.complete(a, now); err != nil {
			return "", err
		}
		if a, err = ParseArticle(raw); err != nil {
			return "", err
		}
	} else {
		s.addPath(a)
		raw = a.Raw
	}
	if err := a.Validate(offered); err != nil {
		return "", err
	}
	msgid, _ := a.Header("Message-ID")
	names, _ := a.Groups()

	_, approved := a.Header("Approved")
	groups, keep, err := s.list.route(names, posted, approved > 0)
	if err != nil {
		return msgid, err
	}

	release, err := s.claim(msgid)
	if err != nil {
		return msgid, err
	}

	// The entry is made now, from the parsed article: the committers
	// never read the article's buffer but to store it.
	p := &pending{entry: entryOf(a, msgid, id.ID{}, groups, now, now.Add(keep)), done: make(chan error, 1)}
	if s.local {
		if s.cfg.Relay {
			p.entry.Head, p.entry.Posted = headOf(a), posted
		}
		p.article = raw
	} else {
		// A spool shared with other sites (the ring): the article is
		// stored sealed, so that its announcement can be checked
		// (seal.go).
		// Its key is hashed here, once: the journal names it while the
		// spool stores the block.
		head, body := sealedHead(a), a.Raw[a.body:]
		p.entry.Bytes = uint32(len(head) + len(body))
		var state string
		p.entry.Key, state = sealKey(head, body, s.cfg.Relay)
		if s.cfg.Relay {
			// The head may be raw's, which the server reuses once Accept
			// returns; the out log takes it at the next checkpoint.
			p.entry.Head, p.entry.State, p.entry.Posted = bytes.Clone(head[:len(head)-2]), state, posted
		}
		p.article = seal(head, body)
	}
	if !s.handOver(p) {
		release()
		return msgid, ErrSiteClosed
	}
	// The committers answer once the spool is done with raw, and forget
	// msgid.
	return msgid, <-p.done
}

// handOver gives an article to the committers, which answer on p.done
// and forget its message-id; false if the site is closing.
func (s *Site) handOver(p *pending) bool {
	s.handing.RLock()
	defer s.handing.RUnlock()
	if s.closing {
		return false
	}
	select {
	case s.commits <- p: // the commit loop drains s.commits until handedAll
		return true
	case <-s.stop:
		return false
	}
}

// forget ends msgid's time in flight: it is listed, or not to be.
func (s *Site) forget(msgid string) {
	s.mu.Lock()
	delete(s.inflight, msgid)
	s.mu.Unlock()
}

// complete supplies what a poster may leave out (RFC 5537 section 3.4):
// Message-ID, Date and Path.
func (s *Site) complete(a *Article, now time.Time) ([]byte, error) {
	var add []string
	if _, n := a.Header("Message-ID"); n == 0 {
		var r [12]byte
		rand.Read(r[:])
		add = append(add, "Message-ID: <"+hex.EncodeToString(r[:])+"@"+s.cfg.PathHost+">")
	}
	if _, n := a.Header("Date"); n == 0 {
		add = append(add, "Date: "+now.UTC().Format(time.RFC1123Z))
	}
	if _, n := a.Header("Path"); n == 0 {
		add = append(add, "Path: "+s.cfg.PathHost+"!not-for-mail")
	}
	if len(add) == 0 {
		return a.Raw, nil
	}
	out := make([]byte, 0, len(a.Raw)+200)
	for _, h := range add {
		out = append(out, h...)
		out = append(out, '\r', '\n')
	}
	return append(out, a.Raw...), nil
}

// addPath puts this site first in a fed article's Path, in its Raw and
// its parsed header. The article's buffer is reused when it has room: a
// large article is moved, not copied into a new one.
func (s *Site) addPath(a *Article) {
	raw := a.Raw
	for i := 0; i < len(raw); {
		end := i + bytes.IndexByte(raw[i:], '\n')
		if end < i {
			break
		}
		line := raw[i:end]
		if len(line) <= 1 { // the empty line: no Path header
			break
		}
		if len(line) > 5 && strings.EqualFold(string(line[:5]), "path:") {
			at := i + 5
			for at < end && (raw[at] == ' ' || raw[at] == '\t') {
				at++
			}
			a.Raw = slices.Insert(raw, at, append([]byte(s.cfg.PathHost), '!')...)
			a.body += len(s.cfg.PathHost) + 1
			a.prependPath(s.cfg.PathHost)
			return
		}
		i = end + 1
	}
}

// pending is an article on its way to the spool and the list, or an
// announced one (no article) on its way to the list, or a Flush.
type pending struct {
	entry   Entry
	article []byte        // the block to store; nil for an announced entry
	done    chan error    // the outcome, once: nil when listed
	flushed chan struct{} // a Flush, not an article
	// unjournaled marks an article the spool stored under another key
	// than the journal names: answered once news.db lists it.
	unjournaled bool
}

// entries are the list entries of a batch.
func entries(batch []*pending) []Entry {
	out := make([]Entry, len(batch))
	for i, p := range batch {
		out[i] = p.entry
	}
	return out
}

// A stored batch is one the commit loop handed the spool and the
// journal: its articles and announced entries go on to be listed once the
// spool has ended every article and the journal's append is done.
type stored struct {
	ord       uint64     // its place in the commit loop's order, from 1
	puts      []Put      // its articles, in order
	announced []*pending // its announced entries (no article)
	// left counts what the batch waits for: its articles the spool has
	// not ended, and the commit loop's hand-over (after the journal's
	// append).
	left    atomic.Int64
	jerr    error  // the journal's failure, if any
	seq     uint64 // the journal batch (0 for a batch of Flushes only)
	flushes []chan struct{}
}

// commitLoop is the one batcher on the ingest path: it takes every article
// waiting (up to 1024) and hands them to the spool as one batch, and
// journals the batch while the spool stores it (a local spool's writes
// are done when PutBatch returns, its sync is not; the DHT's are under
// way). The batch goes on to durableLoop once the spool has ended all of
// it and the journal's append is done: its articles' durability and their
// listing's, both in hand, in one group commit.
func (s *Site) commitLoop() {
	defer s.wg.Done()
	defer close(s.stored)
	defer s.inSpool.Wait()
	var ord uint64
	for {
		batch, flushes, ok := s.gather()
		if !ok {
			return
		}
		ord++
		st := &stored{ord: ord, flushes: flushes}
		for _, p := range batch {
			if p.article != nil {
				// A local spool sets the key; another is given the hash
				// Accept made.
				// A sealed block (another spool's) is the site's own
				// copy, which nothing reuses: a cache may keep it.
				st.puts = append(st.puts, Put{Article: p.article, Expires: p.entry.Expires, Hash: p.entry.Key, Owned: !s.local, p: p})
			} else {
				st.announced = append(st.announced, p)
			}
		}
		st.left.Store(int64(len(st.puts)) + 1)
		s.inSpool.Add(1)
		if len(st.puts) > 0 {
			s.spool.PutBatch(st.puts, func(part []Put) { s.spooled(st, part) })
		}
		if len(batch) > 0 {
			s.journalBatch(st)
		}
		s.spooled(st, nil)
	}
}

// spooled counts a part of a batch the spool has ended (nil: the commit
// loop's hand-over), and passes the batch on after the last.
func (s *Site) spooled(st *stored, part []Put) {
	n := int64(len(part))
	if part == nil {
		n = 1
	}
	if st.left.Add(-n) == 0 {
		s.stored <- st
		s.inSpool.Done()
	}
}

// gather waits for the next articles and takes those waiting with them,
// and the Flushes among them; ok is false once the site has stopped and
// nothing is left.
func (s *Site) gather() (batch []*pending, flushes []chan struct{}, ok bool) {
	var first *pending
	select {
	case first = <-s.commits:
	case <-s.handedAll:
		// Writers that got in before the stop still get an answer.
		select {
		case first = <-s.commits:
		default:
			return nil, nil, false
		}
	}
	take := func(p *pending) {
		if p.flushed != nil {
			flushes = append(flushes, p.flushed)
		} else {
			batch = append(batch, p)
		}
	}
	take(first)
	for n := 1; n < 1024; n++ {
		select {
		case p := <-s.commits:
			take(p)
		default:
			return batch, flushes, true
		}
	}
	return batch, flushes, true
}

// journalBatch numbers a batch the spool is storing (List.reserve) and
// journals it, by the keys of its articles (a local spool's, set as it
// wrote them; Accept's for another), and its announced entries; its errors come with done: an article it
// failed is one the next open does not find in it, and leaves out. A
// batch takes its sequence number even if the journal fails, and the next
// listing covers it.
func (s *Site) journalBatch(st *stored) {
	// The entries take their numbers now, in the commit loop's order, so
	// that the journal holds the numbers readers will see.
	reserving := make([]*Entry, 0, len(st.puts)+len(st.announced))
	for i := range st.puts {
		reserving = append(reserving, &st.puts[i].p.entry)
	}
	for _, p := range st.announced {
		reserving = append(reserving, &p.entry)
	}
	s.list.reserve(reserving)
	written := make([]Entry, 0, len(reserving))
	stored := make([]bool, 0, cap(written))
	for i := range st.puts {
		e := st.puts[i].p.entry
		if s.local {
			e.Key = st.puts[i].Key
		}
		written, stored = append(written, e), append(stored, true)
	}
	for _, p := range st.announced {
		written, stored = append(written, p.entry), append(stored, false)
	}
	s.seq++
	st.seq = s.seq
	st.jerr = s.journal.append(s.seq, written, stored)
}

// durableLoop answers the articles the spool or the journal failed and
// hands the rest to the lister, batch by batch in the commit loop's order
// (the spool may end a later batch first): the journal's record of what
// is listed (seq), and Flushes, must not pass a batch before theirs.
func (s *Site) durableLoop() {
	defer s.wg.Done()
	defer close(s.lists)
	next := uint64(1)            // the first batch, in order, not ended
	held := map[uint64]*stored{} // batches ended before an earlier one
	for st := range s.stored {
		held[st.ord] = st
		for h := held[next]; h != nil; h = held[next] {
			delete(held, next)
			next++
			l := &listing{batch: s.durableOf(h), seq: h.seq, flushes: h.flushes}
			if s.durable != nil {
				s.durable(len(l.batch))
			}
			s.lists <- l
		}
	}
}

// durableOf answers the articles of an ended batch that the spool or the
// journal failed, and returns the rest, durable, with its announced
// entries. An article stored under another key than the one journaled (a
// spool that stores it as fragments, keyed by their descriptor) is
// answered only once news.db lists it.
func (s *Site) durableOf(st *stored) []*pending {
	ok := make([]*pending, 0, len(st.puts)+len(st.announced))
	answer := func(p *pending, err error) {
		if err != nil {
			s.forget(p.entry.MessageID)
			p.done <- deferred(err)
		} else {
			ok = append(ok, p)
		}
	}
	for i := range st.puts {
		put := &st.puts[i]
		p := put.p
		p.unjournaled = !s.local && put.Err == nil && put.Key != p.entry.Key
		p.entry.Key = put.Key
		p.article = nil // the spool is done with it
		err := st.jerr
		if err == nil {
			err = put.Err
		}
		answer(p, err)
	}
	for _, p := range st.announced {
		answer(p, st.jerr)
	}
	return ok
}

// listLoop lists durable batches in memory (List.stage), as many as wait
// at once, and answers their articles: their listing is durable in the
// journal. The checkpoint loop writes them to news.db behind it.
func (s *Site) listLoop() {
	defer s.wg.Done()
	defer close(s.checkpoints)
	for l := range s.lists {
		batch, seq, flushes := l.batch, l.seq, l.flushes
	more:
		for len(batch) < 4096 {
			select {
			case next, ok := <-s.lists:
				if !ok {
					break more
				}
				batch, seq = append(batch, next.batch...), max(seq, next.seq)
				flushes = append(flushes, next.flushes...)
			default:
				break more
			}
		}
		if s.beforeList != nil {
			s.beforeList()
		}
		s.roomToStage()
		s.list.stage(entries(batch), seq)
		var later []*pending
		for _, p := range batch {
			if p.unjournaled {
				later = append(later, p)
				continue
			}
			s.forget(p.entry.MessageID)
			p.done <- nil
		}
		s.checkpoints <- &listing{batch: later, seq: seq, flushes: flushes}
	}
}

// checkpointLoop writes what the lister staged to news.db: after the first
// staged batch it waits up to checkpointDelay, or until checkpointAt
// entries are staged, and writes everything staged in one transaction.
// Then it tells the journal what news.db covers, answers the articles that
// waited for it, closes the Flushes and wakes the feeders. A failed
// checkpoint is tried again after checkpointRetry; while it fails, the
// lister waits (what is staged stays bounded), and the site stops with
// the batches in its journal.
func (s *Site) checkpointLoop() {
	defer s.wg.Done()
	for first := range s.checkpoints {
		waiting := []*listing{first}
		timer := time.NewTimer(checkpointDelay)
	gather:
		for n, size := s.list.stagedEntries(); n < checkpointAt && size < checkpointBytes; n, size = s.list.stagedEntries() {
			select {
			case l, ok := <-s.checkpoints:
				if !ok {
					break gather
				}
				waiting = append(waiting, l)
			case <-timer.C:
				break gather
			}
		}
		timer.Stop()
		err := s.checkpointNow()
		for _, l := range waiting {
			for _, p := range l.batch {
				s.forget(p.entry.MessageID)
				p.done <- deferred(err)
			}
			for _, f := range l.flushes {
				close(f)
			}
		}
	}
}

// How the checkpoint loop batches news.db's commits: after a delay, or
// at once past an entry count or a size.
const (
	checkpointDelay = 50 * time.Millisecond
	checkpointAt    = 8192
	checkpointBytes = 16 << 20
	checkpointRetry = time.Second
)

// maxStagedBytes bounds the memory of what is staged: past it the lister
// waits for a checkpoint (while news.db fails, its writers wait too). A
// variable for the tests.
var maxStagedBytes = 256 << 20

// roomToStage waits until what is staged is under maxStagedBytes, or the
// site stops.
func (s *Site) roomToStage() {
	for _, size := s.list.stagedEntries(); size >= maxStagedBytes; _, size = s.list.stagedEntries() {
		s.roomWaits.Add(1)
		select {
		case <-s.checkpointed:
		case <-s.stop:
			return
		}
	}
}

// checkpointNow writes what is staged to news.db, trying again while it
// fails until the site stops.
func (s *Site) checkpointNow() error {
	for {
		seq, n, err := s.list.checkpoint()
		if err == nil {
			select {
			case s.checkpointed <- struct{}{}:
			default:
			}
			if seq > 0 {
				s.journal.listed(seq)
			}
			if n > 0 {
				s.notify()
			}
			return nil
		}
		select {
		case <-s.stop:
			return err
		case <-time.After(checkpointRetry):
		}
	}
}

// replay lists the journaled batches news.db has not: after a crash, the
// articles and announced entries acknowledged from the journal before a
// checkpoint wrote them, and those durable in the spool but never
// acknowledged (a feeder that offers one again is told it is a
// duplicate). An entry of the current format is listed as journaled,
// relayed head included, once the spool is seen to hold its article (the
// DHT is asked for the key, not the article); one of the first format is
// rebuilt from the article read back. One the spool does not have (its
// store failed: a crash took the DHT's nodes before their sync) stays
// out, and so does a second offer of an article whose first listing
// failed.
func (s *Site) replay(batches []journalBatch) error {
	applied, err := s.list.applied()
	if err != nil {
		return err
	}
	// Only a message-id's last journaled offer can have been acknowledged
	// (once one is, later offers are refused as duplicates): an earlier
	// one failed, and lists nothing, but keeps its numbers.
	final := map[string][2]int{}
	for i, b := range batches {
		for j, e := range b.entries {
			if b.seq > applied {
				final[e.msgid] = [2]int{i, j}
			}
		}
	}
	last := applied
	var redo []Entry
	var gone []*Entry // entries not listed, whose numbers stay taken
	for i, b := range batches {
		if b.seq <= applied {
			continue
		}
		last = max(last, b.seq)
		for j, e := range b.entries {
			if final[e.msgid] != [2]int{i, j} {
				gone = append(gone, e.entry)
				continue
			}
			if _, found, err := s.list.Lookup(e.msgid); err != nil {
				return err
			} else if found {
				continue
			}
			entry, ok, err := s.replayed(e)
			if err != nil {
				return err
			}
			if ok {
				redo = append(redo, entry)
			} else {
				gone = append(gone, e.entry)
			}
		}
	}
	if err := s.list.keepNumbers(gone); err != nil {
		return err
	}
	if last > applied {
		if _, err := s.list.commit(redo, last, false); err != nil {
			return err
		}
	}
	s.seq = last
	return s.journal.reset()
}

// replayed is a journaled entry to list again, or ok false if its article
// is not stored.
func (s *Site) replayed(e journalEntry) (Entry, bool, error) {
	if e.entry != nil {
		if !e.stored {
			return *e.entry, true, nil // an announcement: resolved before it was journaled
		}
		// The article is checked, not read: a shared spool (the DHT) is
		// asked whether it holds the key, the site's own looks.
		var err error
		if r, ok := s.spool.(resolver); ok && !s.local {
			var found bool
			if _, found, err = r.Resolve(context.Background(), e.key); err == nil && !found {
				err = fault.ErrNotFound
			}
		} else {
			err = s.spool.View(context.Background(), e.key, func([]byte) error { return nil })
		}
		switch {
		case errors.Is(err, fault.ErrNotFound) || errors.Is(err, fault.ErrCorrupt):
			return Entry{}, false, nil
		case err != nil:
			return Entry{}, false, fmt.Errorf("usenet: listing the journal's articles: %w", err)
		}
		return *e.entry, true, nil
	}
	raw, err := s.spool.Get(context.Background(), e.key)
	switch {
	case errors.Is(err, fault.ErrNotFound) || errors.Is(err, fault.ErrCorrupt):
		return Entry{}, false, nil
	case err != nil:
		return Entry{}, false, fmt.Errorf("usenet: listing the journal's articles: %w", err)
	}
	a, err := ParseArticle(unsealed(raw))
	if err != nil {
		return Entry{}, false, nil
	}
	names, _ := a.Groups() // the list leaves out those not carried
	return entryOf(a, e.msgid, e.key, names, time.Unix(0, e.arrived), time.Unix(0, e.expires)), true, nil
}
