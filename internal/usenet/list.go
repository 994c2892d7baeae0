package usenet

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"triad/internal/id"
)

// A List is a site's list of articles: its newsgroups and their numbering,
// the overview of each group and the history (message-id -> where the
// article is), in one bbolt file (news.db), with a memory of recently
// listed message-ids in front of the history. It knows an article by its
// key and never reads it, so it may list an article this site never
// stored: one a peer announced (header flooding), whose body lives in the
// DHT. A Site feeds it the articles it accepts; Add takes entries from
// anywhere else. Every method is safe for concurrent use.
type List struct {
	cfg ListConfig
	db  *db

	// commitMu serialises the writers of group numbers: commits and
	// expiry.
	commitMu sync.Mutex

	mu     sync.Mutex
	groups map[string]*Group
	seen   *seenCache
	keeps  map[string]time.Duration // each group's expiry, once matched

	// The out log's cursors, one per peer (outlog.go).
	cursorMu     sync.Mutex
	cursors      map[string]uint64
	cursorsDirty bool

	// What is listed in memory and not yet in news.db (staged.go), under
	// mu.
	staged staging
	// reserved is, by group, the highest number handed out (reserve),
	// listed or not, under mu: numbers are never handed out twice.
	reserved map[string]uint64

	// failCommit (tests) runs in each commit's transaction after its
	// writes; an error fails the commit as a failed write or sync would.
	failCommit func() error
}

// ListConfig configures a List.
type ListConfig struct {
	Path      string           // the database file, created if missing
	PathHost  string           // this site's name in Xref; required
	Expiry    []ExpiryRule     // how long each group lists its articles; DefaultExpiry if nil
	Remember  time.Duration    // how long the history outlives an article; 10 days if zero
	SeenCache int              // message-ids kept in memory per generation; 1<<20 if zero
	Now       func() time.Time // time.Now if nil
	// Relay queues every listed entry that has a Head in the out log, for
	// the site's peers (outlog.go).
	Relay bool
}

func (c ListConfig) withDefaults() ListConfig {
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

// Entry is what a list keeps of one article: enough to number it, answer
// OVER and find it by message-id, the article itself being elsewhere under
// Key. A site makes one for each article it accepts; a peer's announcement
// of an article stored in the DHT ("headers and content key") is one too.
type Entry struct {
	MessageID string
	Key       id.ID     // the article's spool or DHT key
	Groups    []string  // its newsgroups; those not carried here are left out
	Arrived   time.Time // when it arrived here: NEWNEWS and overview order
	Expires   time.Time // when the article itself expires; the history remembers it Remember longer
	Bytes     uint32    // its size in wire form
	Lines     uint32    // its body's lines

	// The overview's header fields (RFC 3977 section 8.4).
	Subject, From, Date, References string

	// Head, when set on a relaying list, is the article's header block
	// in wire form (CRLF lines, no empty line), queued for the peers.
	Head []byte
	// State is SHA-256's state after the body of the article's sealed
	// block (seal.go), sent with Head so that a peer can check Head
	// against Key.
	State string
	// Announced marks an entry a peer announced, which a mesh peer is
	// not sent (it had it from the same source). Posted marks one a
	// reader posted here: whatever Path the poster wrote, it came through
	// no peer.
	Announced, Posted bool
	// Nums are the numbers reserved for the entry in Groups[i] (0: none)
	// before its listing was journaled (List.reserve); listing it takes
	// them, so that a replay after a crash lists an article under the
	// numbers readers saw.
	Nums []uint64
}

// entryOf is the entry of a parsed article. Its fields are copies: the
// article's buffer may be reused once it is stored.
func entryOf(a *Article, msgid string, key id.ID, groups []string, arrived, expires time.Time) Entry {
	e := Entry{MessageID: msgid, Key: key, Groups: groups, Arrived: arrived, Expires: expires,
		Bytes: uint32(len(a.Raw)), Lines: uint32(a.Lines())}
	e.Subject, _ = a.Header("Subject")
	e.From, _ = a.Header("From")
	e.Date, _ = a.Header("Date")
	e.References, _ = a.Header("References")
	return e
}

// OpenList opens (or creates) the list's database.
func OpenList(cfg ListConfig) (*List, error) {
	cfg = cfg.withDefaults()
	if cfg.PathHost == "" {
		return nil, errors.New("usenet: a list needs its site's name (PathHost) for Xref")
	}
	d, err := openDB(cfg.Path)
	if err != nil {
		return nil, err
	}
	groups, err := d.groups()
	if err != nil {
		d.close()
		return nil, err
	}
	return &List{cfg: cfg, db: d, groups: groups, seen: newSeenCache(cfg.SeenCache), keeps: map[string]time.Duration{},
		reserved: map[string]uint64{}}, nil
}

// Close closes the database. Nothing may use the list after.
func (l *List) Close() error { return l.db.close() }

// AddGroup creates a group (status "y", "n" or "m"); an existing group,
// or one removed, keeps its numbers and gets the new status and
// description.
func (l *List) AddGroup(name, status, desc string) error {
	if status == "" {
		status = "y"
	}
	if status != "y" && status != "n" && status != "m" {
		return fmt.Errorf("usenet: group status %q: want y, n or m", status)
	}
	return l.setGroup(name, status, desc)
}

// RemoveGroup stops carrying a group (as ctlinnd rmgroup): no article is
// listed in it any more and readers no longer see it. Its record stays,
// marked removed ("x"), so that its numbers are never handed out again
// if it is added back, and so that a restart's --groups does not bring
// it back (Removed). The articles listed stay until they expire.
func (l *List) RemoveGroup(name string) error {
	if _, ok := l.Group(name); !ok {
		return fmt.Errorf("%w: %s", ErrNoSuchGroup, name)
	}
	return l.setGroup(name, removedStatus, "")
}

// Removed reports whether the group was removed (RemoveGroup) and not
// added back since.
func (l *List) Removed(name string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	g := l.groups[name]
	return g != nil && g.Status == removedStatus
}

// removedStatus marks a removed group.
const removedStatus = "x"

// setGroup sets a group's status and description, making it if needed.
func (l *List) setGroup(name, status, desc string) error {
	if err := CheckGroupName(name); err != nil {
		return err
	}
	// commitMu, as every writer of group state holds it; l.mu only for
	// the map, never across news.db's write lock (expiry takes l.mu
	// inside a transaction).
	l.commitMu.Lock()
	defer l.commitMu.Unlock()
	l.mu.Lock()
	g := l.groups[name]
	l.mu.Unlock()
	now := l.cfg.Now().Unix()
	if g == nil {
		g = &Group{Name: name, Low: 1, Created: now}
	} else {
		c := *g
		g = &c
	}
	// A group added back is new to readers (NEWGROUPS).
	back := g.Status == removedStatus && status != removedStatus
	if back {
		g.Created = now
	}
	g.Status, g.Desc = status, desc
	// news.db keeps its own numbers for a group it has: those in memory
	// count staged entries, which a replay after a crash lists again.
	err := l.db.b.Update(func(tx *bolt.Tx) error {
		stored, err := getGroup(tx, name)
		if err != nil {
			return err
		}
		if stored == nil {
			stored = g
		}
		stored.Status, stored.Desc = status, desc
		if back {
			stored.Created = now
		}
		return putGroup(tx, stored)
	})
	if err != nil {
		return err
	}
	l.mu.Lock()
	l.groups[name] = g
	l.mu.Unlock()
	return nil
}

// Group returns a copy of a group's state.
func (l *List) Group(name string) (Group, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	g := l.groups[name]
	if g == nil || g.Status == removedStatus {
		return Group{}, false
	}
	return *g, true
}

// Groups returns copies of every group matching the wildmat, by name.
func (l *List) Groups(pattern string) []Group {
	l.mu.Lock()
	out := make([]Group, 0, len(l.groups))
	for _, g := range l.groups {
		if g.Status != removedStatus && Wildmat(pattern, g.Name) {
			out = append(out, *g)
		}
	}
	l.mu.Unlock()
	slices.SortFunc(out, func(a, b Group) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Has reports whether a message-id is listed (or was, within Remember of
// its article's expiry). Recent ids are answered from memory.
func (l *List) Has(msgid string) (bool, error) {
	l.mu.Lock()
	_, staged := l.staged.hist[msgid]
	seen := staged || l.seen.has(msgid)
	l.mu.Unlock()
	if seen {
		return true, nil
	}
	_, found, err := l.db.history(msgid)
	if found {
		l.mu.Lock()
		l.seen.add(msgid)
		l.mu.Unlock()
	}
	return found, err
}

// Lookup finds an article by message-id.
func (l *List) Lookup(msgid string) (HistEntry, bool, error) {
	if h, ok := l.stagedHistory(msgid); ok {
		return h, true, nil
	}
	return l.db.history(msgid)
}

// Overview returns the entries numbered lo..hi of a group, at most max.
func (l *List) Overview(group string, lo, hi uint64, max int) ([]*Overview, error) {
	staged := l.stagedOverview(group, lo, hi)
	stored, err := l.db.overview(group, lo, hi, max)
	if err != nil {
		return nil, err
	}
	return mergeOverview(staged, stored, max), nil
}

// Numbered returns the overview entry of article num of a group, or nil.
func (l *List) Numbered(group string, num uint64) (*Overview, error) {
	if o := l.stagedEntry(group, num); o != nil {
		return o, nil
	}
	return l.db.entry(group, num)
}

// Neighbour is the next (or previous) article number in a group, or 0.
func (l *List) Neighbour(group string, num uint64, next bool) (uint64, error) {
	staged := l.stagedNeighbour(group, num, next)
	stored, err := l.db.neighbour(group, num, next)
	switch {
	case err != nil:
		return 0, err
	case staged == 0 || stored == 0:
		return max(staged, stored), nil
	case next:
		return min(staged, stored), nil
	}
	return max(staged, stored), nil
}

// Add lists entries that are not listed yet, in one transaction: each is
// numbered in the groups of its own carried here, gets an overview entry
// in each and a history entry. An entry whose message-id is listed
// already, or comes twice, or that names no group carried here, is left
// out. It returns how many were listed.
func (l *List) Add(entries ...Entry) (int, error) {
	fresh := make([]Entry, 0, len(entries))
	ids := make(map[string]bool, len(entries))
	for _, e := range entries {
		if err := CheckMessageID(e.MessageID); err != nil {
			return 0, err
		}
		if ids[e.MessageID] {
			continue
		}
		ids[e.MessageID] = true
		if found, err := l.Has(e.MessageID); err != nil {
			return 0, err
		} else if !found {
			fresh = append(fresh, e)
		}
	}
	// The history was read outside the commit: a Site's committer may
	// have listed one of these meanwhile. Only this list's writers would,
	// so it is checked again under commitMu.
	return l.commit(fresh, 0, true)
}

// route picks the groups carried here among an article's newsgroups, for
// a site accepting the article: a poster must be allowed to post to each
// (status "y"), and a moderated one ("m") needs an Approved header, posted
// or fed, since there is no moderator to mail a submission to (as INN does
// for a group with no moderator set). keep is the longest expiry among
// them: the article's own.
func (l *List) route(names []string, posted, approved bool) ([]string, time.Duration, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var groups []string
	var keep time.Duration
	for _, n := range names {
		g := l.groups[n]
		if g == nil || g.Status == removedStatus {
			continue
		}
		if posted && g.Status == "n" {
			return nil, 0, fmt.Errorf("%w: %s", ErrNoPosting, n)
		}
		if g.Status == "m" && !approved {
			return nil, 0, fmt.Errorf("%w: %s", ErrUnapproved, n)
		}
		groups = append(groups, n)
		keep = max(keep, l.keepFor(n))
	}
	if len(groups) == 0 {
		return nil, 0, fmt.Errorf("%w: %s", ErrNoGroups, strings.Join(names, ","))
	}
	return groups, keep, nil
}

// keepFor is how long a group keeps its articles: the first expiry rule
// that matches, remembered per group. l.mu is held.
func (l *List) keepFor(group string) time.Duration {
	if keep, ok := l.keeps[group]; ok {
		return keep
	}
	keep := DefaultExpiry[len(DefaultExpiry)-1].Keep
	for _, r := range l.cfg.Expiry {
		if Wildmat(r.Pattern, group) {
			keep = r.Keep
			break
		}
	}
	l.keeps[group] = keep
	return keep
}

// FailCommits makes each commit of the list run fail in its transaction,
// after its writes, and fail when fail returns an error, as a failed write
// or sync would; nil stops it. It is for tests of what a failed listing
// answers (package nntpd's among them).
func (l *List) FailCommits(fail func() error) {
	l.commitMu.Lock()
	l.failCommit = fail
	l.commitMu.Unlock()
}

// applied is the last journal batch listed, 0 for none.
func (l *List) applied() (uint64, error) { return l.db.applied() }

// commit lists a batch of entries: numbers, overview and history, in one
// transaction, with the last journal batch it covers (seq, 0 for none).
// Groups not carried here are left out, and so is an entry with none;
// with recheck, so is one already in the history. Once committed, the
// message-ids join the recent ones. It returns how many were listed.
func (l *List) commit(batch []Entry, seq uint64, recheck bool) (int, error) {
	l.commitMu.Lock()
	defer l.commitMu.Unlock()
	todo, changed := l.carried(batch)
	listed := 0
	err := l.db.b.Update(func(tx *bolt.Tx) error {
		listed = 0
		hist := tx.Bucket(bucketHistory)
		for _, n := range todo {
			if recheck && hist.Get([]byte(n.e.MessageID)) != nil {
				continue
			}
			if _, staged := l.stagedHistory(n.e.MessageID); recheck && staged {
				continue
			}
			if err := l.write(tx, l.number(n, changed)); err != nil {
				return err
			}
			listed++
		}
		return l.endTx(tx, seq, changed)
	})
	if err != nil {
		return 0, fmt.Errorf("usenet: commit overview: %w", err)
	}
	l.committed(todo, changed)
	return listed, nil
}

// numbered is an entry of a commit with the groups carried here it is
// listed in, and each one's expiry.
type numbered struct {
	e      *Entry
	groups []string
	keep   []time.Duration
	nums   []uint64 // the number it takes in each group
}

// carried picks, for each entry of a batch, the groups carried here (each
// once) and its number in each (the one reserved for it, or the next one
// free), and copies those groups' state to number on (changed), so that
// a failed transaction changes nothing (its numbers stay taken: a gap).
// Entries with none are left out.
func (l *List) carried(batch []Entry) (todo []numbered, changed map[string]*Group) {
	todo = make([]numbered, 0, len(batch))
	changed = map[string]*Group{}
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range batch {
		e := &batch[i]
		n := numbered{e: e}
		for j, name := range e.Groups {
			g := l.groups[name]
			if g == nil || g.Status == removedStatus || slices.Contains(n.groups, name) {
				continue
			}
			if changed[name] == nil {
				c := *g
				changed[name] = &c
			}
			num := uint64(0)
			if j < len(e.Nums) {
				num = e.Nums[j]
			}
			if num == 0 {
				num = l.nextNumber(name)
			} else {
				l.reserved[name] = max(l.reserved[name], num)
			}
			n.groups = append(n.groups, name)
			n.keep = append(n.keep, l.keepFor(name))
			n.nums = append(n.nums, num)
		}
		if len(n.groups) > 0 {
			todo = append(todo, n)
		}
	}
	return todo, changed
}

// nextNumber hands out the group's next number. l.mu is held.
func (l *List) nextNumber(name string) uint64 {
	num := max(l.reserved[name], l.groups[name].High) + 1
	l.reserved[name] = num
	return num
}

// reserve numbers each entry of a batch about to be journaled in the
// groups carried here (Entry.Nums), in order: staging it then lists it
// under those numbers, and so does a replay of the journal.
func (l *List) reserve(batch []*Entry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range batch {
		e.Nums = make([]uint64, len(e.Groups))
		for j, name := range e.Groups {
			if g := l.groups[name]; g != nil && g.Status != removedStatus && !slices.Contains(e.Groups[:j], name) {
				e.Nums[j] = l.nextNumber(name)
			}
		}
	}
}

// keepNumbers makes sure the numbers a journal handed out to entries
// replay does not list (their articles gone, or offers that failed) are
// not handed out again: readers may have seen them. The groups' high
// marks move past them, in news.db too (gaps), in one transaction. Nil
// entries (a first-format journal's, which kept no numbers) are skipped.
func (l *List) keepNumbers(entries []*Entry) error {
	l.commitMu.Lock()
	defer l.commitMu.Unlock()
	raised := map[string]*Group{}
	l.mu.Lock()
	for _, e := range entries {
		if e == nil {
			continue
		}
		for j, num := range e.Nums {
			if j >= len(e.Groups) {
				break
			}
			name := e.Groups[j]
			g := raised[name]
			if g == nil {
				g = l.groups[name]
			}
			if g == nil || num <= g.High {
				continue
			}
			c := *g
			if c.Count == 0 {
				c.Low = num + 1
			}
			c.High = num
			raised[name] = &c
		}
	}
	l.mu.Unlock()
	if len(raised) == 0 {
		return nil
	}
	err := l.db.b.Update(func(tx *bolt.Tx) error {
		for _, g := range raised {
			if err := putGroup(tx, g); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("usenet: keeping the numbers of journaled entries not listed: %w", err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for name, g := range raised {
		l.groups[name] = g
	}
	return nil
}

// endTx ends a listing transaction: the last journal batch it covers
// (seq, 0 for none), the groups' state and the peers' cursors, and the
// tests' injected failure.
func (l *List) endTx(tx *bolt.Tx, seq uint64, groups map[string]*Group) error {
	if seq > 0 {
		if err := tx.Bucket(bucketMeta).Put(metaApplied, numKey(seq)); err != nil {
			return err
		}
	}
	for _, g := range groups {
		if err := putGroup(tx, g); err != nil {
			return err
		}
	}
	if err := l.saveCursors(tx); err != nil {
		return err
	}
	if l.failCommit != nil {
		return l.failCommit()
	}
	return nil
}

// A listedEntry is an entry numbered in its groups: its overview entries
// (one per group, by number) and its history entry, ready to be written.
type listedEntry struct {
	e      *Entry
	groups []string
	ovs    []*Overview // one per group, Num set
	hist   HistEntry
}

// number numbers one entry in its groups (their copies in changed) and
// makes its overview and history entries.
func (l *List) number(n numbered, changed map[string]*Group) listedEntry {
	e := n.e
	xref := l.cfg.PathHost
	for i, name := range n.groups {
		g := changed[name]
		g.High = max(g.High, n.nums[i])
		g.Count++
		if g.Count == 1 {
			g.Low = n.nums[i]
		}
		xref += fmt.Sprintf(" %s:%d", name, n.nums[i])
	}
	nums := n.nums
	le := listedEntry{e: e, groups: n.groups, ovs: make([]*Overview, len(n.groups))}
	for i := range n.groups {
		o := &Overview{Num: nums[i], Key: e.Key, Arrived: e.Arrived.UnixNano(), Bytes: e.Bytes, Lines: e.Lines, Xref: xref,
			Subject: e.Subject, From: e.From, Date: e.Date, MessageID: e.MessageID, References: e.References}
		// A group keeps its entry no longer than the article itself
		// lives (an announced one's expiry was set where it was stored).
		o.Expires = e.Arrived.Add(n.keep[i]).UnixNano()
		if !e.Expires.IsZero() {
			o.Expires = min(o.Expires, e.Expires.UnixNano())
		}
		le.ovs[i] = o
	}
	le.hist = HistEntry{Key: e.Key, Arrived: e.Arrived.UnixNano(), Expires: e.Expires.UnixNano(), Xref: xref}
	return le
}

// write puts a numbered entry's overview entries, its history entry and,
// on a relaying list, its out-log record, in tx.
func (l *List) write(tx *bolt.Tx, le listedEntry) error {
	for i, name := range le.groups {
		ov := tx.Bucket(overviewBucket(name))
		// Article numbers only grow, so every insert is at the bucket's
		// end: full pages instead of bbolt's half-full splits keep the
		// overview database (and the memory it maps while an OVER reads
		// it) about half the size.
		ov.FillPercent = overviewFill
		if err := ov.Put(numKey(le.ovs[i].Num), encodeOverview(le.ovs[i])); err != nil {
			return err
		}
	}
	if err := tx.Bucket(bucketHistory).Put([]byte(le.e.MessageID), encodeHist(le.hist)); err != nil {
		return err
	}
	if l.cfg.Relay && le.e.Head != nil {
		return appendLog(tx, le.e)
	}
	return nil
}

// committed makes a committed transaction's numbering the list's, and its
// message-ids recent ones.
func (l *List) committed(todo []numbered, changed map[string]*Group) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for name, g := range changed {
		l.groups[name] = g
	}
	for _, n := range todo {
		l.seen.add(n.e.MessageID)
	}
}

// Expire drops overview entries past their group's expiry and history
// entries Remember past their article's, and returns how many of each.
// Whoever stores the articles reclaims them by their own expiry.
func (l *List) Expire() (overview, history int, err error) {
	// What is staged is written first, so that it expires as the rest
	// does.
	if _, _, err := l.checkpoint(); err != nil {
		return 0, 0, err
	}
	now := l.cfg.Now()
	// Every group, removed ones too: their entries expire as they would
	// have (RemoveGroup).
	l.mu.Lock()
	names := slices.Sorted(maps.Keys(l.groups))
	l.mu.Unlock()
	for _, name := range names {
		n, err := l.expireGroup(name, now)
		overview += n
		if err != nil {
			return overview, history, err
		}
	}
	forget := now.Add(-l.cfg.Remember).UnixNano()
	err = l.db.b.Update(func(tx *bolt.Tx) error {
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

func (l *List) expireGroup(name string, now time.Time) (int, error) {
	l.commitMu.Lock()
	defer l.commitMu.Unlock()
	removed := 0
	var g Group
	err := l.db.b.Update(func(tx *bolt.Tx) error {
		l.mu.Lock()
		g = *l.groups[name]
		l.mu.Unlock()
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
			// Nothing left in news.db: the group starts at its lowest
			// staged entry (numbered past everything stored), or is empty.
			low = g.High + 1
			if staged := l.stagedNeighbour(name, 0, true); staged != 0 {
				low = staged
			}
		}
		g.Low = low
		return putGroup(tx, &g)
	})
	if err == nil && removed > 0 {
		l.mu.Lock()
		l.groups[name] = &g
		l.mu.Unlock()
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
