package usenet

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"triad/internal/id"
)

// Announcements (UsenetDHT §3). Sites that share one ring store every
// article once, in the DHT, and flood only its headers: after an article
// is durable and listed at one site, that site offers it to its peers with
// CHECK and sends what they want with
//
//	TAKEDHT <message-id>
//	<the article's header lines, in wire form>
//	X-ChordID: <key, 40 hex digits> bytes=<wire size> lines=<body lines> expires=<Unix seconds> state=<midstate>
//	.
//
// The header lines are those of the article's sealed block exactly, and
// state lets the peer compute the block's key from them (seal.go): an
// announcement whose headers are not its key's, or whose Message-ID is
// not the one announced, is refused and counted (Site.Forgeries), never
// listed or passed on. Since the head is the stored one, a relaying site
// does not add itself to its Path.
//
// answered as TAKETHIS is: 239 listed, 439 refused for good (a
// duplicate, a malformed head, a key that resolves to nothing), 400 and
// the connection closed when the site cannot take it now. A peer lists
// the article in its own groups and passes the announcement on to its own
// peers; Path, to which each site adds itself, keeps it from going back.

// ChordHeader names, in an announcement, where the article is stored.
const ChordHeader = "X-ChordID"

// maxHead bounds an announced article's header block (its header lines,
// without the empty line); MaxAnnouncement bounds a TAKEDHT's block, the
// head and its X-ChordID line.
const (
	maxHead         = 64 << 10
	MaxAnnouncement = maxHead + 1024
)

// Errors of Announce, each refused for good (439).
var (
	ErrNotPeer    = errors.New("only configured peer sites may announce")
	ErrNoChordID  = errors.New("announcement without a valid " + ChordHeader + " header")
	ErrUnresolved = errors.New("the announced key resolves to no stored article")
	ErrMismatch   = errors.New("the announcement does not describe what its key holds")
	ErrLocalSpool = errors.New("this site keeps its articles locally: it takes no announcements")
	ErrForged     = errors.New("the announced headers are not those its key holds")
)

// chordValue formats an X-ChordID header's value.
func chordValue(key id.ID, bytes, lines uint32, expires time.Time, state string) string {
	return fmt.Sprintf("%s bytes=%d lines=%d expires=%d state=%s", key.String(), bytes, lines, expires.Unix(), state)
}

// chordID is an X-ChordID header's value, parsed.
type chordID struct {
	key          id.ID
	bytes, lines uint32
	expires      time.Time
	state        string // seal.go's midstate
}

// parseChordValue reads an X-ChordID header's value.
func parseChordValue(v string) (c chordID, err error) {
	f := strings.Fields(v)
	if len(f) != 5 {
		return c, ErrNoChordID
	}
	state, ok := strings.CutPrefix(f[4], "state=")
	if !ok || state == "" || len(state) > maxMidstate {
		return c, ErrNoChordID
	}
	raw, herr := hex.DecodeString(f[0])
	if herr != nil || len(raw) != id.Bytes {
		return c, ErrNoChordID
	}
	key, _ := id.FromBytes(raw)
	num := func(field, name string, max uint64) (uint64, bool) {
		s, ok := strings.CutPrefix(field, name+"=")
		n, err := strconv.ParseUint(s, 10, 64)
		return n, ok && err == nil && n <= max
	}
	b, ok1 := num(f[1], "bytes", 1<<32-1)
	l, ok2 := num(f[2], "lines", 1<<32-1)
	e, ok3 := num(f[3], "expires", 1<<40)
	if !ok1 || !ok2 || !ok3 || b == 0 {
		return c, ErrNoChordID
	}
	return chordID{key, uint32(b), uint32(l), time.Unix(int64(e), 0), state}, nil
}

// AppendAnnouncement appends a TAKEDHT command and its block for r.
func AppendAnnouncement(out []byte, r *LogRecord) []byte {
	out = append(out, "TAKEDHT "...)
	out = append(out, r.MessageID...)
	out = append(out, "\r\n"...)
	out = append(out, r.Head...)
	out = append(out, ChordHeader+": "...)
	out = append(out, chordValue(r.Key, r.Bytes, r.Lines, r.Expires, r.State)...)
	return append(out, "\r\n.\r\n"...)
}

// headOf is an article's header block in wire form, without the empty
// line and without any X-ChordID a poster wrote (the announcement adds
// the one true value; two would have every peer refuse it), copied out of
// the article's buffer.
func headOf(a *Article) []byte {
	head := a.Raw[:a.body]
	if bytes.HasSuffix(head, []byte("\r\n\r\n")) {
		head = head[:len(head)-2]
	}
	if _, n := a.Header(ChordHeader); n > 0 {
		return withoutHeader(head, ChordHeader)
	}
	return bytes.Clone(head)
}

// withoutHeader returns raw without the lines of header name (a field
// and its continuation lines).
func withoutHeader(raw []byte, name string) []byte {
	out := make([]byte, 0, len(raw))
	skipping := false
	for len(raw) > 0 {
		i := bytes.Index(raw, []byte("\r\n"))
		if i < 0 {
			i = len(raw) - 2
		}
		line := raw[:i+2]
		raw = raw[i+2:]
		if line[0] == ' ' || line[0] == '\t' {
			if !skipping {
				out = append(out, line...)
			}
			continue
		}
		skipping = len(line) > len(name) && line[len(name)] == ':' && strings.EqualFold(string(line[:len(name)]), name)
		if !skipping {
			out = append(out, line...)
		}
	}
	return out
}

// Announce lists an article a peer announced: head is the TAKEDHT block
// (header lines and X-ChordID, in wire form), offered the message-id the
// command named. The article is checked as a fed one would be, its key
// must resolve to a stored object, and it is listed in the groups carried
// here, with the article's own expiry if that comes sooner than the
// group's. It is then queued for this site's other peers with this site
// added to its Path. Errors are those of Accept, ErrNoChordID and
// ErrUnresolved (refused for good), or the spool's (try later).
func (s *Site) Announce(ctx context.Context, head []byte, offered string) (string, error) {
	a := []Announcement{{Head: head, Offered: offered}}
	s.AnnounceBatch(ctx, a)
	return a[0].MessageID, a[0].Err
}

// An Announcement is one TAKEDHT of a batch: Head and Offered in,
// MessageID and Err (Announce's results) out.
type Announcement struct {
	Head      []byte
	Offered   string
	MessageID string
	Err       error

	p       *pending
	release func()
}

// maxResolving bounds the key checks in flight at once, across a site's
// connections: single keys, or batches (a batch's checks run at most
// client.holdingFallbacks keys on their own at once).
const maxResolving = 64

// AnnounceBatch is Announce for many announcements at once, as a peer's
// feeder sends them: their keys are checked concurrently and those that
// pass are listed together, in one commit (one sync of news.db for the
// batch, not one per article).
func (s *Site) AnnounceBatch(ctx context.Context, batch []Announcement) {
	if s.local {
		for i := range batch {
			batch[i].Err = ErrLocalSpool
		}
		return
	}
	now := s.cfg.Now()
	for i := range batch {
		s.prepareAnnounced(&batch[i], now)
	}
	switch r := s.spool.(type) {
	case batchResolver:
		var keys []id.ID
		var asked []*Announcement
		for i := range batch {
			if an := &batch[i]; an.p != nil {
				keys = append(keys, an.p.entry.Key)
				asked = append(asked, an)
			}
		}
		if len(keys) > 0 {
			s.resolving <- struct{}{} // a batch's checks take one of the site's slots
			got := r.ResolveBatch(ctx, keys)
			<-s.resolving
			for i, an := range asked {
				res := Resolution{Err: fmt.Errorf("usenet: %d keys resolved for %d asked", len(got), len(keys))}
				if len(got) == len(keys) {
					res = got[i]
				}
				an.checkResolved(res)
			}
		}
	case resolver:
		var wg sync.WaitGroup
		for i := range batch {
			an := &batch[i]
			if an.p == nil {
				continue
			}
			wg.Add(1)
			s.resolving <- struct{}{} // bounded across every connection of the site
			go func() {
				defer func() { <-s.resolving; wg.Done() }()
				var res Resolution
				res.Stored, res.Found, res.Err = r.Resolve(ctx, an.p.entry.Key)
				an.checkResolved(res)
			}()
		}
		wg.Wait()
	}
	for i := range batch {
		an := &batch[i]
		if an.p == nil {
			continue
		}
		if an.Err != nil {
			an.release()
			an.p = nil
			continue
		}
		if !s.handOver(an.p) {
			an.Err = ErrSiteClosed
			an.release()
			an.p = nil
		}
	}
	for i := range batch {
		if an := &batch[i]; an.p != nil {
			an.Err = <-an.p.done
		}
	}
}

// checkResolved checks what the spool knows of an announced article's key
// against the announcement, leaving the reason it fails in an.Err.
func (an *Announcement) checkResolved(res Resolution) {
	e := &an.p.entry
	switch got := res.Stored; {
	case res.Err != nil:
		an.Err = deferred(res.Err)
	case !res.Found:
		an.Err = ErrUnresolved
	case got.Size != int(e.Bytes)+sealTrailer:
		an.Err = fmt.Errorf("%w: announced %d bytes, the key holds %d", ErrMismatch, int(e.Bytes)+sealTrailer, got.Size)
	case got.Expires.Before(e.Expires):
		// Listed no longer than the article is kept.
		e.Expires = got.Expires
	}
}

// prepareAnnounced checks an announcement and claims its message-id,
// leaving the entry to list in an.p, or the reason in an.Err.
func (s *Site) prepareAnnounced(an *Announcement, now time.Time) {
	if err := CheckMessageID(an.Offered); err != nil {
		an.Err = err
		return
	}
	if len(an.Head) > MaxAnnouncement {
		an.Err = badf("announcement of %d bytes, limit %d", len(an.Head), MaxAnnouncement)
		return
	}
	// The head as a site takes it (ParseArticle's limits), with the
	// X-ChordID line on top: one more field and line, up to
	// MaxAnnouncement bytes.
	a, err := parseArticle(an.Head, headerLimits{maxHeaders + 1, maxHeaderLines + 1, MaxAnnouncement})
	if err != nil {
		an.Err = err
		return
	}
	if a.body != len(a.Raw) {
		an.Err = badf("an announcement carries headers only")
		return
	}
	v, n := a.Header(ChordHeader)
	if n != 1 {
		an.Err = ErrNoChordID
		return
	}
	cid, err := parseChordValue(v)
	if err != nil {
		an.Err = err
		return
	}
	// The head as stored, which the key must cover: the announcement's
	// lines but X-ChordID, and the empty line.
	head := append(withoutHeader(a.Raw, ChordHeader), "\r\n"...)
	key, bodyLen, err := sealedKey(cid.state, head)
	switch msgid, _ := a.Header("Message-ID"); {
	case err != nil:
		an.Err = err
		return
	case key != cid.key || bodyLen+len(head) != int(cid.bytes):
		an.Err = fmt.Errorf("%w: they hash to %s, %d bytes", ErrForged, key, bodyLen+len(head))
		s.forgeries.Add(1)
		return
	case msgid != an.Offered:
		an.Err = fmt.Errorf("%w: Message-ID %.80s announced as %.80s", ErrForged, msgid, an.Offered)
		s.forgeries.Add(1)
		return
	}
	expires := cid.expires
	if !expires.After(now) {
		an.Err = badf("announced article expired at %s", expires.UTC().Format(time.RFC3339))
		return
	}
	if an.Err = a.Validate(an.Offered); an.Err != nil {
		return
	}
	an.MessageID, _ = a.Header("Message-ID")
	names, _ := a.Groups()
	_, approved := a.Header("Approved")
	groups, keep, err := s.list.route(names, false, approved > 0)
	if err != nil {
		an.Err = err
		return
	}
	if an.release, an.Err = s.claim(an.MessageID); an.Err != nil {
		return
	}
	if now.Add(keep).Before(expires) {
		expires = now.Add(keep)
	}
	e := entryOf(a, an.MessageID, key, groups, now, expires)
	e.Bytes, e.Lines = cid.bytes, cid.lines
	if s.cfg.RelayAnnounced {
		e.Head, e.State, e.Announced = head[:len(head)-2], cid.state, true
	}
	an.p = &pending{entry: e, done: make(chan error, 1)}
}

// claim marks msgid as being stored, refusing it if it is in flight or
// listed already; release undoes the mark (the committers do once it is
// listed).
func (s *Site) claim(msgid string) (release func(), err error) {
	s.mu.Lock()
	if s.inflight[msgid] {
		s.mu.Unlock()
		return nil, ErrDuplicate
	}
	s.inflight[msgid] = true
	s.mu.Unlock()
	release = func() { s.forget(msgid) }
	if found, err := s.list.Has(msgid); err != nil {
		release()
		return nil, deferred(err)
	} else if found {
		release()
		return nil, ErrDuplicate
	}
	return release, nil
}
