package usenet

import (
	"encoding/binary"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"triad/internal/id"
)

// The out log: what this site passes on to its peers (UsenetDHT §3: sites
// flood headers, not bodies). Each article the List lists with a head is
// appended to one bucket of news.db in the same transaction that lists it,
// so an article is queued for the peers exactly when it is listed: a crash
// can neither list an article that is never announced nor announce one
// that is not listed. Every peer has a cursor, the last record it has
// taken; records every cursor has passed are deleted. The log is bounded:
// past MaxBacklog records behind the newest, the oldest are dropped for a
// peer that has not taken them, and counted.

var (
	bucketOutLog = []byte("outlog")
	metaCursor   = "out-cursor/"  // + peer: the last record the peer took
	metaDropped  = "out-dropped/" // + peer: records dropped before it took them
	metaLogBytes = "out-bytes"    // the bytes of the records in the log
)

// A LogRecord is one article to pass on: where it is and its headers.
type LogRecord struct {
	Seq       uint64
	Key       id.ID
	Expires   time.Time
	Bytes     uint32
	Lines     uint32
	MessageID string
	Head      []byte // the header block in wire form, lines ending in CRLF, no empty line
	State     string // SHA-256's state after the sealed block's body (seal.go)
	Announced bool   // listed from a peer's announcement, not posted or fed here
	Posted    bool   // posted here by a reader: its Path names no peer it came through
}

func encodeLogRecord(e *Entry) []byte {
	b := make([]byte, 0, 1+id.Bytes+24+len(e.MessageID)+len(e.Head))
	var flags byte
	if e.Announced {
		flags |= 1
	}
	if e.Posted {
		flags |= 2
	}
	if e.State != "" {
		flags |= 4
	}
	b = append(b, flags)
	b = e.Key.AppendTo(b)
	b = binary.AppendVarint(b, e.Expires.UnixNano())
	b = binary.AppendUvarint(b, uint64(e.Bytes))
	b = binary.AppendUvarint(b, uint64(e.Lines))
	b = binary.AppendUvarint(b, uint64(len(e.MessageID)))
	b = append(b, e.MessageID...)
	if e.State != "" {
		b = binary.AppendUvarint(b, uint64(len(e.State)))
		b = append(b, e.State...)
	}
	return append(b, e.Head...)
}

func decodeLogRecord(seq uint64, b []byte) (LogRecord, error) {
	r := LogRecord{Seq: seq}
	if len(b) < 1+id.Bytes {
		return r, errBadRecord
	}
	flags := b[0]
	r.Announced, r.Posted = flags&1 != 0, flags&2 != 0
	b = b[1:]
	r.Key, _ = id.FromBytes(b[:id.Bytes])
	b = b[id.Bytes:]
	exp, b, ok1 := varint(b)
	bytes, b, ok2 := uvarint(b)
	lines, b, ok3 := uvarint(b)
	n, b, ok4 := uvarint(b)
	if !ok1 || !ok2 || !ok3 || !ok4 || n > uint64(len(b)) || bytes > 1<<32-1 || lines > 1<<32-1 {
		return r, errBadRecord
	}
	r.Expires, r.Bytes, r.Lines = time.Unix(0, exp), uint32(bytes), uint32(lines)
	r.MessageID, b = string(b[:n]), b[n:]
	if flags&4 != 0 {
		n, b, ok1 = uvarint(b)
		if !ok1 || n == 0 || n > uint64(len(b)) {
			return r, errBadRecord
		}
		r.State, b = string(b[:n]), b[n:]
	}
	r.Head = slices.Clone(b)
	return r, nil
}

// appendLog queues a listed entry for the peers, in the listing's
// transaction.
func appendLog(tx *bolt.Tx, e *Entry) error {
	b, err := tx.CreateBucketIfNotExists(bucketOutLog)
	if err != nil {
		return err
	}
	seq, err := b.NextSequence()
	if err != nil {
		return err
	}
	rec := encodeLogRecord(e)
	if err := putU64(tx, metaLogBytes, getU64(tx, metaLogBytes)+uint64(len(rec))); err != nil {
		return err
	}
	return b.Put(numKey(seq), rec)
}

func getU64(tx *bolt.Tx, key string) uint64 {
	if v := tx.Bucket(bucketMeta).Get([]byte(key)); len(v) == 8 {
		return binary.BigEndian.Uint64(v)
	}
	return 0
}

func putU64(tx *bolt.Tx, key string, v uint64) error {
	return tx.Bucket(bucketMeta).Put([]byte(key), numKey(v))
}

// logLast is the newest record's sequence number (0 for none).
func logLast(tx *bolt.Tx) uint64 {
	if b := tx.Bucket(bucketOutLog); b != nil {
		return b.Sequence()
	}
	return 0
}

// LogBytes is the bytes of the records in the out log.
func (l *List) LogBytes() (uint64, error) {
	var n uint64
	err := l.db.b.View(func(tx *bolt.Tx) error {
		n = getU64(tx, metaLogBytes)
		return nil
	})
	return n, err
}

// PeerBacklog is what is queued for one peer.
type PeerBacklog struct {
	Records uint64 // articles listed here and not yet taken by the peer
	Dropped uint64 // articles dropped, the log being full, before it took them
}

// Cursors live in memory and reach news.db with the next listing commit
// or Trim: a cursor lost in a crash only makes the feeder offer again
// what the peer took (it answers 438), and a feeder that took a batch
// costs no transaction of its own (each was a sync of news.db, which the
// listing commits had to wait for).

// StartCursor loads a peer's cursor, or gives a peer seen for the first
// time one at the log's end: a new peer is sent what is listed from now
// on, as a new INN feed is.
func (l *List) StartCursor(peer string) error {
	return l.db.b.Update(func(tx *bolt.Tx) error {
		cur := logLast(tx)
		if tx.Bucket(bucketMeta).Get([]byte(metaCursor+peer)) != nil {
			cur = getU64(tx, metaCursor+peer)
		} else if err := putU64(tx, metaCursor+peer, cur); err != nil {
			return err
		}
		l.cursorMu.Lock()
		if l.cursors == nil {
			l.cursors = map[string]uint64{}
		}
		l.cursors[peer] = cur
		l.cursorMu.Unlock()
		return nil
	})
}

// cursor is a peer's cursor as the feeder last moved it.
func (l *List) cursor(peer string) uint64 {
	l.cursorMu.Lock()
	defer l.cursorMu.Unlock()
	return l.cursors[peer]
}

// ReadLog returns up to max records after the peer's cursor, at most
// maxBytes of heads (but at least one record).
func (l *List) ReadLog(peer string, max, maxBytes int) ([]LogRecord, error) {
	var out []LogRecord
	cur := l.cursor(peer)
	err := l.db.b.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketOutLog)
		if b == nil {
			return nil
		}
		c := b.Cursor()
		size := 0
		for k, v := c.Seek(numKey(cur + 1)); k != nil && len(out) < max && (size < maxBytes || len(out) == 0); k, v = c.Next() {
			r, err := decodeLogRecord(binary.BigEndian.Uint64(k), v)
			if err != nil {
				r = LogRecord{Seq: r.Seq} // damaged: skipped by the feeder
			}
			out = append(out, r)
			size += len(v)
		}
		return nil
	})
	return out, err
}

// Advance moves a peer's cursor to seq (never back), in memory.
func (l *List) Advance(peer string, seq uint64) {
	l.cursorMu.Lock()
	if seq > l.cursors[peer] {
		l.cursors[peer] = seq
		l.cursorsDirty = true
	}
	l.cursorMu.Unlock()
}

// saveCursors writes the cursors moved since the last save, in tx.
func (l *List) saveCursors(tx *bolt.Tx) error {
	l.cursorMu.Lock()
	defer l.cursorMu.Unlock()
	if !l.cursorsDirty {
		return nil
	}
	for p, c := range l.cursors {
		if err := putU64(tx, metaCursor+p, c); err != nil {
			return err
		}
	}
	l.cursorsDirty = false
	return nil
}

// maxTrim bounds the records one transaction deletes (a variable for
// tests).
var maxTrim = 50_000

// trimLog saves the cursors, deletes records every peer has taken and
// drops, for each peer that has not taken them, the oldest records beyond
// maxBacklog behind the newest or beyond the newest maxBytes of records
// (each bound applies when it is not zero), counting them. Every peer has
// the same quota, and the log holds no record that no peer is owed, so
// the log itself stays within maxBytes (and a record, at most 64 KB of
// head, past it).
func (l *List) trimLog(tx *bolt.Tx, peers []string, maxBacklog, maxBytes uint64) (int, error) {
	b := tx.Bucket(bucketOutLog)
	if b == nil || len(peers) == 0 {
		return 0, nil
	}
	last := b.Sequence()
	floor := uint64(0)
	if maxBacklog > 0 && last > maxBacklog {
		floor = last - maxBacklog
	}
	if maxBytes > 0 && getU64(tx, metaLogBytes) > maxBytes {
		// The newest records that fit in maxBytes are kept, found from
		// the end: this walk happens only when the log is over its bound.
		size := uint64(0)
		c := b.Cursor()
		for k, v := c.Last(); k != nil; k, v = c.Prev() {
			if size += uint64(len(v)); size > maxBytes {
				floor = max(floor, binary.BigEndian.Uint64(k))
				break
			}
		}
	}
	if floor > 0 {
		for _, p := range peers {
			if cur := l.cursor(p); cur < floor {
				if err := putU64(tx, metaDropped+p, getU64(tx, metaDropped+p)+floor-cur); err != nil {
					return 0, err
				}
				l.Advance(p, floor)
			}
		}
	}
	if err := l.saveCursors(tx); err != nil {
		return 0, err
	}
	low := last
	for _, p := range peers {
		low = min(low, l.cursor(p))
	}
	// Collected in one pass, then deleted: a cursor started again from
	// First after each delete cost a descent of the tree per record.
	var taken [][]byte
	freed := uint64(0)
	c := b.Cursor()
	for k, v := c.First(); k != nil && binary.BigEndian.Uint64(k) <= low && len(taken) < maxTrim; k, v = c.Next() {
		taken = append(taken, slices.Clone(k))
		freed += uint64(len(v))
	}
	for _, k := range taken {
		if err := b.Delete(k); err != nil {
			return 0, err
		}
	}
	// A log written before its bytes were counted counts from zero.
	if err := putU64(tx, metaLogBytes, getU64(tx, metaLogBytes)-min(freed, getU64(tx, metaLogBytes))); err != nil {
		return 0, err
	}
	return len(taken), nil
}

// Trim saves the cursors and applies the backlog bound (see trimLog),
// a transaction at a time until it has caught up.
func (l *List) Trim(peers []string, maxBacklog, maxBytes uint64) error {
	for {
		deleted := 0
		err := l.db.b.Update(func(tx *bolt.Tx) (err error) {
			deleted, err = l.trimLog(tx, peers, maxBacklog, maxBytes)
			return err
		})
		if err != nil || deleted < maxTrim {
			return err
		}
	}
}

// Backlog is what is queued for peer.
func (l *List) Backlog(peer string) (PeerBacklog, error) {
	var p PeerBacklog
	err := l.db.b.View(func(tx *bolt.Tx) error {
		last, cur := logLast(tx), l.cursor(peer)
		if last > cur {
			p.Records = last - cur
		}
		p.Dropped = getU64(tx, metaDropped+peer)
		return nil
	})
	return p, err
}
