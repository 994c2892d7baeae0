package usenet

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"triad/internal/id"
	"triad/internal/store"
)

// A Site is one news site's state: its groups and their numbering, the
// overview, the history and the spool the articles live in. Servers share
// it; every method is safe for concurrent use.
type Site struct {
	cfg   SiteConfig
	db    *db
	spool Spool

	// commitMu serialises the writers of group numbers: the committer
	// and expiry.
	commitMu sync.Mutex

	mu       sync.Mutex
	groups   map[string]*Group
	inflight map[string]bool // message-ids being stored now
	seen     *seenCache
	keeps    map[string]time.Duration // each group's expiry, once matched

	commits chan *pending
	async   asyncSpool    // the spool, if it syncs on its own
	journal *journal      // with an async spool
	seq     uint64        // the last batch journaled
	lists   chan *listing // acknowledged batches, to be listed
	stop    chan struct{}
	wg      sync.WaitGroup

	closeOnce sync.Once
	closeErr  error

	beforeList func() // tests: runs before each listing commit
}

// listing is a journaled, acknowledged batch on its way to news.db.
type listing struct {
	seq     uint64
	batch   []*pending
	flushes []chan struct{} // closed once the batch is listed
}

// Flush returns once every article acknowledged before it is listed: fed
// articles are acknowledged when durable, and listed a moment later.
func (s *Site) Flush() {
	done := make(chan struct{})
	select {
	case s.commits <- &pending{flushed: done}:
		<-done
	case <-s.stop:
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
	Dir        string // database directory
	Spool      Spool
	PathHost   string        // this site's name in Path headers and Xref
	MaxArticle int           // largest article accepted, bytes (1 MB)
	Expiry     []ExpiryRule  // DefaultExpiry if nil
	Remember   time.Duration // how long the history outlives an article (10 days)
	SeenCache  int           // message-ids kept in memory per generation (1<<20)
	Now        func() time.Time
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
	if c.Expiry == nil {
		c.Expiry = DefaultExpiry
	}
	if c.Remember <= 0 {
		c.Remember = 10 * 24 * time.Hour
	}
	if c.SeenCache <= 0 {
		c.SeenCache = 1 << 20
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Errors of Accept, each with its own NNTP answer.
var (
	ErrDuplicate  = errors.New("duplicate message-id")
	ErrNoGroups   = errors.New("no newsgroup of the article is carried here")
	ErrNoPosting  = errors.New("posting to this newsgroup is not allowed")
	ErrUnapproved = errors.New("moderated newsgroup: the article has no Approved header")
	ErrSiteClosed = errors.New("site closed")
)

// OpenSite opens the database in cfg.Dir and starts the committer.
func OpenSite(cfg SiteConfig) (*Site, error) {
	cfg = cfg.withDefaults()
	if cfg.Spool == nil {
		return nil, errors.New("usenet: no spool")
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, err
	}
	d, err := openDB(filepath.Join(cfg.Dir, "news.db"))
	if err != nil {
		return nil, err
	}
	groups, err := d.groups()
	if err != nil {
		d.close()
		return nil, err
	}
	s := &Site{cfg: cfg, db: d, spool: cfg.Spool, groups: groups, inflight: map[string]bool{}, keeps: map[string]time.Duration{},
		seen: newSeenCache(cfg.SeenCache), commits: make(chan *pending, 1024), stop: make(chan struct{})}
	if async, ok := cfg.Spool.(asyncSpool); ok {
		s.async = async
		j, batches, err := openJournal(filepath.Join(cfg.Dir, "journal"))
		if err == nil {
			s.journal = j
			err = s.replay(batches)
		}
		if err != nil {
			if s.journal != nil {
				s.journal.close()
			}
			d.close()
			return nil, err
		}
		s.lists = make(chan *listing, 16)
		s.wg.Add(1)
		go s.listLoop()
	}
	s.wg.Add(1)
	go s.commitLoop()
	return s, nil
}

// Close stops the committers, once everything acknowledged is listed, and
// closes the database (not the spool).
func (s *Site) Close() error {
	s.closeOnce.Do(func() {
		close(s.stop)
		s.wg.Wait()
		s.closeErr = s.db.close()
		if s.journal != nil {
			s.closeErr = errors.Join(s.closeErr, s.journal.close())
		}
	})
	return s.closeErr
}

// PathHost is the site's name.
func (s *Site) PathHost() string { return s.cfg.PathHost }

// MaxArticle is the largest article accepted.
func (s *Site) MaxArticle() int { return s.cfg.MaxArticle }

// AddGroup creates a group (status "y", "n" or "m"); an existing group
// keeps its numbers and gets the new status and description.
func (s *Site) AddGroup(name, status, desc string) error {
	if err := CheckGroupName(name); err != nil {
		return err
	}
	if status == "" {
		status = "y"
	}
	if status != "y" && status != "n" && status != "m" {
		return fmt.Errorf("usenet: group status %q: want y, n or m", status)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.groups[name]
	if g == nil {
		g = &Group{Name: name, Low: 1, Created: s.cfg.Now().Unix()}
	} else {
		c := *g
		g = &c
	}
	g.Status, g.Desc = status, desc
	if err := s.db.b.Update(func(tx *bolt.Tx) error { return putGroup(tx, g) }); err != nil {
		return err
	}
	s.groups[name] = g
	return nil
}

// Group returns a copy of a group's state.
func (s *Site) Group(name string) (Group, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.groups[name]
	if g == nil {
		return Group{}, false
	}
	return *g, true
}

// Groups returns copies of every group matching the wildmat, by name.
func (s *Site) Groups(pattern string) []Group {
	s.mu.Lock()
	out := make([]Group, 0, len(s.groups))
	for _, g := range s.groups {
		if Wildmat(pattern, g.Name) {
			out = append(out, *g)
		}
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b Group) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Seen reports whether a message-id is known or being stored now, for
// CHECK and IHAVE. Recent ids are answered from memory.
func (s *Site) Seen(msgid string) (bool, error) {
	s.mu.Lock()
	if s.inflight[msgid] || s.seen.has(msgid) {
		s.mu.Unlock()
		return true, nil
	}
	s.mu.Unlock()
	_, found, err := s.db.history(msgid)
	return found, err
}

// Lookup finds an article by message-id.
func (s *Site) Lookup(msgid string) (HistEntry, bool, error) { return s.db.history(msgid) }

// Overview returns the entries numbered lo..hi of a group, at most max.
func (s *Site) Overview(group string, lo, hi uint64, max int) ([]*Overview, error) {
	return s.db.overview(group, lo, hi, max)
}

// Entry returns one overview entry, or nil.
func (s *Site) Entry(group string, num uint64) (*Overview, error) { return s.db.entry(group, num) }

// Neighbour is the next (or previous) article number in a group, or 0.
func (s *Site) Neighbour(group string, num uint64, next bool) (uint64, error) {
	return s.db.neighbour(group, num, next)
}

// Article reads an article from the spool.
func (s *Site) Article(ctx context.Context, e HistEntry) ([]byte, error) {
	return s.spool.Get(ctx, e.Key)
}

// ViewArticle calls fn with an article as the spool lends it: the bytes
// are valid only while fn runs.
func (s *Site) ViewArticle(ctx context.Context, e HistEntry, fn func(raw []byte) error) error {
	return s.spool.View(ctx, e.Key, fn)
}

// Accept stores one article. posted marks a reader's POST: missing
// Message-ID, Date and Path are supplied and posting rights checked. For a
// feed, offered is the message-id IHAVE or TAKETHIS named. It returns the
// article's message-id, and once it returns without error the article is
// durable and listed.
func (s *Site) Accept(ctx context.Context, raw []byte, offered string, posted bool) (string, error) {
	return s.accept(ctx, raw, offered, posted, false)
}

// AcceptStreamed is Accept for a streaming feed (TAKETHIS): it returns once
// the article is durable, and the article is listed a moment later (Flush
// waits for that). A feeder with many articles in flight need not wait for
// each listing; readers may.
func (s *Site) AcceptStreamed(ctx context.Context, raw []byte, offered string) (string, error) {
	return s.accept(ctx, raw, offered, false, true)
}

func (s *Site) accept(ctx context.Context, raw []byte, offered string, posted, streamed bool) (string, error) {
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

	s.mu.Lock()
	var groups []string
	var keep []time.Duration
	for _, n := range names {
		g := s.groups[n]
		if g == nil {
			continue
		}
		if posted && g.Status == "n" {
			s.mu.Unlock()
			return msgid, fmt.Errorf("%w: %s", ErrNoPosting, n)
		}
		// There is no moderator to mail a submission to, so a moderated
		// group takes only approved articles, posted or fed, as INN does
		// for a group with no moderator set.
		if _, approved := a.Header("Approved"); g.Status == "m" && approved == 0 {
			s.mu.Unlock()
			return msgid, fmt.Errorf("%w: %s", ErrUnapproved, n)
		}
		groups = append(groups, n)
		keep = append(keep, s.keepFor(n))
	}
	if len(groups) == 0 {
		s.mu.Unlock()
		return msgid, fmt.Errorf("%w: %s", ErrNoGroups, strings.Join(names, ","))
	}
	if s.inflight[msgid] || s.seen.has(msgid) {
		s.mu.Unlock()
		return msgid, ErrDuplicate
	}
	s.inflight[msgid] = true
	s.mu.Unlock()
	handedOver := false // then the committers forget msgid once it is listed
	defer func() {
		if !handedOver {
			s.forget(msgid, false)
		}
	}()
	if _, found, err := s.db.history(msgid); err != nil {
		return msgid, err
	} else if found {
		s.mu.Lock()
		s.seen.add(msgid)
		s.mu.Unlock()
		return msgid, ErrDuplicate
	}

	p := &pending{article: a, msgid: msgid, groups: groups, keep: keep, arrived: now, expires: now.Add(slices.Max(keep)), done: make(chan error, 1)}
	if !streamed && s.journal != nil {
		// A poster or a lockstep feed reads what it sent next: answer
		// once it is listed.
		p.listed = make(chan struct{})
	}
	if s.async != nil {
		p.key, p.durable, err = s.async.PutAsync(ctx, raw, p.expires)
	} else {
		p.key, err = s.spool.Put(ctx, raw, p.expires)
	}
	if err != nil {
		return msgid, err
	}
	select {
	case s.commits <- p:
		handedOver = true
	case <-s.stop:
		return msgid, ErrSiteClosed
	}
	if err := <-p.done; err != nil || p.listed == nil {
		return msgid, err
	}
	<-p.listed
	return msgid, nil
}

// forget ends msgid's time in flight; seen, it joins the recent ids.
func (s *Site) forget(msgid string, seen bool) {
	s.mu.Lock()
	delete(s.inflight, msgid)
	if seen {
		s.seen.add(msgid)
	}
	s.mu.Unlock()
}

// keepFor is how long a group keeps its articles: the first expiry rule
// that matches, remembered per group. s.mu is held.
func (s *Site) keepFor(group string) time.Duration {
	if keep, ok := s.keeps[group]; ok {
		return keep
	}
	keep := DefaultExpiry[len(DefaultExpiry)-1].Keep
	for _, r := range s.cfg.Expiry {
		if Wildmat(r.Pattern, group) {
			keep = r.Keep
			break
		}
	}
	s.keeps[group] = keep
	return keep
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

// pending is an article written to the spool, waiting for its overview
// and history entries and, when durable is set, for the spool's sync.
type pending struct {
	article *Article
	msgid   string
	groups  []string
	keep    []time.Duration
	arrived time.Time
	expires time.Time
	key     id.ID
	durable func() error
	done    chan error
	listed  chan struct{} // if not nil, closed once listed (or not to be)
	flushed chan struct{} // a Flush, not an article
}

// commitLoop writes the overview and history of waiting articles, as many
// as are waiting in one transaction (group commit), and numbers them.
func (s *Site) commitLoop() {
	defer s.wg.Done()
	if s.lists != nil {
		defer close(s.lists)
	}
	for {
		var batch []*pending
		select {
		case p := <-s.commits:
			batch = append(batch, p)
		case <-s.stop:
			// Writers that got in before the stop still get an answer.
			select {
			case p := <-s.commits:
				batch = append(batch, p)
			default:
				return
			}
		}
	more:
		for len(batch) < 1024 {
			select {
			case p := <-s.commits:
				batch = append(batch, p)
			default:
				break more
			}
		}
		var flushes []chan struct{}
		articles := batch[:0]
		for _, p := range batch {
			if p.flushed != nil {
				flushes = append(flushes, p.flushed)
			} else {
				articles = append(articles, p)
			}
		}
		if s.journal != nil {
			s.journalBatch(articles, flushes)
			continue
		}
		err := s.commit(articles, 0)
		for _, p := range articles {
			s.forget(p.msgid, err == nil)
			p.done <- err
		}
		for _, f := range flushes {
			close(f)
		}
	}
}

// journalBatch journals a batch of articles written to the spool, waits
// until they are durable there too, acknowledges them and hands them to
// the lister.
func (s *Site) journalBatch(batch []*pending, flushes []chan struct{}) {
	if len(batch) == 0 {
		s.lists <- &listing{seq: s.seq, flushes: flushes}
		return
	}
	s.seq++
	err := s.journal.append(s.seq, batch)
	ok := batch[:0:0]
	for _, p := range batch {
		e := err
		if e == nil {
			e = p.durable()
		}
		if e != nil {
			s.forget(p.msgid, false)
			if p.listed != nil {
				close(p.listed)
			}
		} else {
			ok = append(ok, p)
		}
		p.done <- e
	}
	// Listed in batch order: a batch the spool failed still takes its
	// sequence number, and the next listing covers it.
	s.lists <- &listing{seq: s.seq, batch: ok, flushes: flushes}
}

// listLoop commits acknowledged batches to news.db, as many as wait in one
// transaction, and only then lets readers and duplicate checks see them
// there.
func (s *Site) listLoop() {
	defer s.wg.Done()
	for l := range s.lists {
		batch, seq, flushes := l.batch, l.seq, l.flushes
	more:
		for len(batch) < 4096 {
			select {
			case next, ok := <-s.lists:
				if !ok {
					break more
				}
				batch, seq = append(batch, next.batch...), next.seq
				flushes = append(flushes, next.flushes...)
			default:
				break more
			}
		}
		if s.beforeList != nil {
			s.beforeList()
		}
		// On failure the batch stays in the journal and is listed when
		// the site is next opened.
		err := s.commit(batch, seq)
		for _, p := range batch {
			s.forget(p.msgid, err == nil)
			if p.listed != nil {
				close(p.listed)
			}
		}
		for _, f := range flushes {
			close(f)
		}
		if err == nil {
			s.journal.listed(seq)
		}
	}
}

// replay lists the journaled batches news.db has not: after a crash, the
// articles acknowledged but not yet listed. One the spool does not have was
// never acknowledged, and stays out.
func (s *Site) replay(batches []journalBatch) error {
	applied, err := s.db.applied()
	if err != nil {
		return err
	}
	last := applied
	var redo []*pending
	for _, b := range batches {
		if b.seq <= applied {
			continue
		}
		last = max(last, b.seq)
		for _, e := range b.entries {
			if _, found, err := s.db.history(e.msgid); err != nil {
				return err
			} else if found {
				continue
			}
			raw, err := s.spool.Get(context.Background(), e.key)
			switch {
			case errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrCorrupt):
				continue
			case err != nil:
				return fmt.Errorf("usenet: listing the journal's articles: %w", err)
			}
			a, err := ParseArticle(raw)
			if err != nil {
				continue
			}
			p := &pending{article: a, msgid: e.msgid, key: e.key, arrived: time.Unix(0, e.arrived), expires: time.Unix(0, e.expires)}
			names, _ := a.Groups()
			s.mu.Lock()
			for _, n := range names {
				if s.groups[n] != nil {
					p.groups = append(p.groups, n)
					p.keep = append(p.keep, s.keepFor(n))
				}
			}
			s.mu.Unlock()
			if len(p.groups) > 0 {
				redo = append(redo, p)
			}
		}
	}
	if last > applied {
		if err := s.commit(redo, last); err != nil {
			return err
		}
	}
	s.seq = last
	return s.journal.reset()
}

// commit lists a batch of articles: numbers, overview and history, in one
// transaction, with the last journal batch it covers (seq, 0 for none).
func (s *Site) commit(batch []*pending, seq uint64) error {
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	// Number on copies, so that a failed transaction changes nothing.
	s.mu.Lock()
	changed := map[string]*Group{}
	for _, p := range batch {
		for _, n := range p.groups {
			if changed[n] == nil {
				c := *s.groups[n]
				changed[n] = &c
			}
		}
	}
	s.mu.Unlock()
	err := s.db.b.Update(func(tx *bolt.Tx) error {
		if seq > 0 {
			if err := tx.Bucket(bucketMeta).Put(metaApplied, numKey(seq)); err != nil {
				return err
			}
		}
		hist := tx.Bucket(bucketHistory)
		for _, p := range batch {
			xref := s.cfg.PathHost
			nums := make([]uint64, len(p.groups))
			for i, n := range p.groups {
				g := changed[n]
				g.High++
				g.Count++
				if g.Count == 1 {
					g.Low = g.High
				}
				nums[i] = g.High
				xref += fmt.Sprintf(" %s:%d", n, g.High)
			}
			a := p.article
			o := Overview{Key: p.key, Arrived: p.arrived.UnixNano(), Bytes: uint32(len(a.Raw)), Lines: uint32(a.Lines()), Xref: xref}
			o.Subject, _ = a.Header("Subject")
			o.From, _ = a.Header("From")
			o.Date, _ = a.Header("Date")
			o.MessageID = p.msgid
			o.References, _ = a.Header("References")
			for i, n := range p.groups {
				o.Expires = p.arrived.Add(p.keep[i]).UnixNano()
				if err := tx.Bucket(overviewBucket(n)).Put(numKey(nums[i]), encodeOverview(&o)); err != nil {
					return err
				}
			}
			err := hist.Put([]byte(p.msgid), encodeHist(HistEntry{Key: p.key, Arrived: o.Arrived, Expires: p.expires.UnixNano(), Xref: xref}))
			if err != nil {
				return err
			}
		}
		for _, g := range changed {
			if err := putGroup(tx, g); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("usenet: commit overview: %w", err)
	}
	s.mu.Lock()
	for n, g := range changed {
		s.groups[n] = g
	}
	s.mu.Unlock()
	return nil
}

// Expire drops overview entries past their group's expiry and history
// entries Remember past their article's, and returns how many of each.
// The spool reclaims the articles themselves by their expiry.
func (s *Site) Expire() (overview, history int, err error) {
	now := s.cfg.Now()
	for _, g := range s.Groups("") {
		n, err := s.expireGroup(g.Name, now)
		overview += n
		if err != nil {
			return overview, history, err
		}
	}
	forget := now.Add(-s.cfg.Remember).UnixNano()
	err = s.db.b.Update(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketHistory).Cursor()
		for k, v := c.First(); k != nil; {
			h, err := decodeHist(v)
			if err != nil || h.Expires < forget { // a damaged entry goes too
				k = slices.Clone(k)
				if err := c.Delete(); err != nil {
					return err
				}
				history++
				k, v = c.Seek(k)
				continue
			}
			k, v = c.Next()
		}
		return nil
	})
	return overview, history, err
}

func (s *Site) expireGroup(name string, now time.Time) (int, error) {
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	removed := 0
	var g Group
	err := s.db.b.Update(func(tx *bolt.Tx) error {
		s.mu.Lock()
		g = *s.groups[name]
		s.mu.Unlock()
		b := tx.Bucket(overviewBucket(name))
		if b == nil {
			return nil
		}
		c := b.Cursor()
		var low uint64
		for k, v := c.First(); k != nil; {
			num := binary.BigEndian.Uint64(k)
			o, err := decodeOverview(num, v)
			if err == nil && o.Expires >= now.UnixNano() {
				low = num
				break
			}
			k = slices.Clone(k)
			if err := c.Delete(); err != nil {
				return err
			}
			removed++
			k, v = c.Seek(k)
		}
		if removed == 0 {
			return nil
		}
		g.Count -= min(g.Count, uint64(removed))
		if low == 0 {
			low = g.High + 1
		}
		g.Low = low
		return putGroup(tx, &g)
	})
	if err == nil && removed > 0 {
		s.mu.Lock()
		s.groups[name] = &g
		s.mu.Unlock()
	}
	return removed, err
}

// seenCache remembers recent message-ids in two generations, so that a
// duplicate offered soon after is refused without a database read.
type seenCache struct {
	cur, old map[string]struct{}
	max      int
}

func newSeenCache(max int) *seenCache {
	return &seenCache{cur: map[string]struct{}{}, old: map[string]struct{}{}, max: max}
}

func (c *seenCache) has(id string) bool {
	if _, ok := c.cur[id]; ok {
		return true
	}
	_, ok := c.old[id]
	return ok
}

func (c *seenCache) add(id string) {
	if len(c.cur) >= c.max {
		c.old, c.cur = c.cur, make(map[string]struct{}, c.max/4)
	}
	c.cur[id] = struct{}{}
}
