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
	"strconv"
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
	synced  [][]byte // unsynced notes whose articles are durable: dropped next commit
	stop    chan struct{}
	wg      sync.WaitGroup
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
	if err := s.recoverUnsynced(); err != nil {
		d.close()
		return nil, err
	}
	s.wg.Add(1)
	go s.commitLoop()
	return s, nil
}

// Close stops the committer and closes the database (not the spool).
func (s *Site) Close() error {
	close(s.stop)
	s.wg.Wait()
	return s.db.close()
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
	defer func() {
		s.mu.Lock()
		delete(s.inflight, msgid)
		s.mu.Unlock()
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
	if as, ok := s.spool.(asyncSpool); ok {
		p.key, p.durable, err = as.PutAsync(ctx, raw, p.expires)
	} else {
		p.key, err = s.spool.Put(ctx, raw, p.expires)
	}
	if err != nil {
		return msgid, err
	}
	select {
	case s.commits <- p:
	case <-s.stop:
		return msgid, ErrSiteClosed
	}
	if err := <-p.done; err != nil {
		return msgid, err
	}
	s.mu.Lock()
	s.seen.add(msgid)
	s.mu.Unlock()
	return msgid, nil
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
}

// commitLoop writes the overview and history of waiting articles, as many
// as are waiting in one transaction (group commit), and numbers them.
func (s *Site) commitLoop() {
	defer s.wg.Done()
	for {
		var batch []*pending
		select {
		case p := <-s.commits:
			batch = append(batch, p)
		case <-s.stop:
			return
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
		note, err := s.commit(batch)
		errs := make([]error, len(batch))
		var lost []*pending
		for i, p := range batch {
			errs[i] = err
			if err == nil && p.durable != nil {
				if errs[i] = p.durable(); errs[i] != nil {
					lost = append(lost, p)
				}
			}
		}
		switch {
		case len(lost) > 0:
			// The spool failed to make them durable: unlist them now, or
			// failing that when the site is opened again.
			if s.unlist(lost, note) != nil {
				note = nil
			}
		case note != nil:
			s.synced = append(s.synced, note)
		}
		for i, p := range batch {
			p.done <- errs[i]
		}
	}
}

// commit lists a batch of articles: numbers, overview and history, in one
// transaction. It returns the key of the batch's unsynced note, nil if
// every article was durable already.
func (s *Site) commit(batch []*pending) ([]byte, error) {
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
	var note []byte
	err := s.db.b.Update(func(tx *bolt.Tx) error {
		var err error
		if note, err = s.noteUnsynced(tx, batch); err != nil {
			return err
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
		return nil, fmt.Errorf("usenet: commit overview: %w", err)
	}
	s.synced = nil
	s.mu.Lock()
	for n, g := range changed {
		s.groups[n] = g
	}
	s.mu.Unlock()
	return note, nil
}

// noteUnsynced records the message-ids of the batch's articles that are
// not yet durable, and drops the notes of earlier batches that now are.
func (s *Site) noteUnsynced(tx *bolt.Tx, batch []*pending) ([]byte, error) {
	b := tx.Bucket(bucketUnsynced)
	for _, k := range s.synced {
		if err := b.Delete(k); err != nil {
			return nil, err
		}
	}
	var ids []byte
	for _, p := range batch {
		if p.durable != nil {
			ids = append(append(ids, p.msgid...), ' ')
		}
	}
	if ids == nil {
		return nil, nil
	}
	seq, err := b.NextSequence()
	if err != nil {
		return nil, err
	}
	return numKey(seq), b.Put(numKey(seq), ids)
}

// unlist removes articles the spool lost from the overview and the history,
// and drops their batch's unsynced note (if not nil).
func (s *Site) unlist(lost []*pending, note []byte) error {
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	changed := map[string]*Group{}
	err := s.db.b.Update(func(tx *bolt.Tx) error {
		for _, p := range lost {
			if err := s.unlistOne(tx, changed, p.msgid); err != nil {
				return err
			}
		}
		if note == nil {
			return nil
		}
		return tx.Bucket(bucketUnsynced).Delete(note)
	})
	if err != nil {
		return err
	}
	s.mu.Lock()
	for n, g := range changed {
		s.groups[n] = g
	}
	s.mu.Unlock()
	return nil
}

// unlistOne removes one article's history entry and the overview entries
// its Xref names, counting them off copies of their groups in changed.
func (s *Site) unlistOne(tx *bolt.Tx, changed map[string]*Group, msgid string) error {
	hist := tx.Bucket(bucketHistory)
	v := hist.Get([]byte(msgid))
	if v == nil {
		return nil
	}
	h, err := decodeHist(v)
	if err != nil {
		return hist.Delete([]byte(msgid))
	}
	fields := strings.Fields(h.Xref)
	for _, f := range fields[min(1, len(fields)):] {
		name, number, ok := strings.Cut(f, ":")
		num, err := strconv.ParseUint(number, 10, 64)
		ov := tx.Bucket(overviewBucket(name))
		if !ok || err != nil || ov == nil || ov.Get(numKey(num)) == nil {
			continue
		}
		if err := ov.Delete(numKey(num)); err != nil {
			return err
		}
		g := changed[name]
		if g == nil {
			s.mu.Lock()
			if s.groups[name] != nil {
				c := *s.groups[name]
				g = &c
			}
			s.mu.Unlock()
			if g == nil {
				continue
			}
			changed[name] = g
		}
		g.Count -= min(g.Count, 1)
		if num == g.Low {
			g.Low = g.High + 1
			if k, _ := ov.Cursor().Seek(numKey(num)); k != nil {
				g.Low = binary.BigEndian.Uint64(k)
			}
		}
		if err := putGroup(tx, g); err != nil {
			return err
		}
	}
	return hist.Delete([]byte(msgid))
}

// recoverUnsynced checks the articles of the unsynced notes a crash left
// and unlists those the spool does not have: acknowledged articles were
// durable, so only unacknowledged ones can go.
func (s *Site) recoverUnsynced() error {
	var notes [][]byte
	var ids []string
	err := s.db.b.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketUnsynced).ForEach(func(k, v []byte) error {
			notes = append(notes, slices.Clone(k))
			ids = append(ids, strings.Fields(string(v))...)
			return nil
		})
	})
	if err != nil || len(notes) == 0 {
		return err
	}
	var lost []*pending
	for _, msgid := range ids {
		h, found, err := s.db.history(msgid)
		if err != nil || !found {
			continue
		}
		_, err = s.spool.Get(context.Background(), h.Key)
		switch {
		case errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrCorrupt):
			lost = append(lost, &pending{msgid: msgid})
		case err != nil:
			return fmt.Errorf("usenet: checking the articles of an interrupted commit: %w", err)
		}
	}
	if err := s.unlist(lost, nil); err != nil {
		return err
	}
	return s.db.b.Update(func(tx *bolt.Tx) error {
		for _, k := range notes {
			if err := tx.Bucket(bucketUnsynced).Delete(k); err != nil {
				return err
			}
		}
		return nil
	})
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
