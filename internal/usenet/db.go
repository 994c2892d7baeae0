package usenet

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterr "go.etcd.io/bbolt/errors"

	"triad/internal/id"
)

// The List's database, one bbolt file: the newsgroups with their article
// numbers, an overview bucket per group (number -> overview record) and
// the history (message-id -> where the article is). Overview and history
// of a batch of articles are committed in one transaction. A Site's
// batches reach it in checkpoints (staged.go), behind the journal
// (journal.go) that made their listing durable when they were answered;
// meta holds the last journal batch news.db has.

var (
	bucketGroups  = []byte("groups")
	bucketHistory = []byte("history")
	bucketMeta    = []byte("meta")

	metaApplied = []byte("journal-applied") // the last journal batch listed
)

func overviewBucket(group string) []byte { return []byte("ov/" + group) }

// overviewFill is how full bbolt packs an overview page before it splits
// one: entries are appended in number order, so a page is never filled in
// later and the default (half) would waste the rest.
const overviewFill = 0.95

// Group is one newsgroup's state.
type Group struct {
	Name    string `json:"-"`
	Low     uint64 `json:"low"`  // lowest number still listed; High+1 when empty
	High    uint64 `json:"high"` // highest number ever given
	Count   uint64 `json:"count"`
	Created int64  `json:"created"` // Unix seconds
	Status  string `json:"status"`  // "y" posting allowed, "n" not, "m" moderated; "x" removed (List.RemoveGroup)
	Desc    string `json:"desc,omitempty"`
}

// Overview is one article's entry in a group (RFC 3977 section 8.3).
type Overview struct {
	Num        uint64
	Key        id.ID // spool key of the article
	Arrived    int64 // Unix nanoseconds
	Expires    int64 // Unix nanoseconds: when this group drops the entry
	Bytes      uint32
	Lines      uint32
	Subject    string
	From       string
	Date       string
	MessageID  string
	References string
	Xref       string
}

// HistEntry is where an article went.
type HistEntry struct {
	Key     id.ID
	Arrived int64
	Expires int64  // the article's expiry: the history forgets it later
	Xref    string // this site's Xref: where the article is numbered
}

func encodeOverview(o *Overview) []byte {
	b := make([]byte, 0, 128+len(o.Subject)+len(o.From)+len(o.References))
	b = append(b, byte(o.Key.Width()))
	b = o.Key.AppendTo(b)
	b = binary.AppendVarint(b, o.Arrived)
	b = binary.AppendVarint(b, o.Expires)
	b = binary.AppendUvarint(b, uint64(o.Bytes))
	b = binary.AppendUvarint(b, uint64(o.Lines))
	for _, s := range []string{o.Subject, o.From, o.Date, o.MessageID, o.References, o.Xref} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	return b
}

var errBadRecord = errors.New("usenet: damaged database record")

func decodeOverview(num uint64, b []byte) (*Overview, error) {
	o := &Overview{Num: num}
	if len(b) < 1 || int(b[0]) > len(b)-1 || int(b[0]) > id.MaxBytes {
		return nil, errBadRecord
	}
	var err error
	if o.Key, err = id.FromBytes(b[1 : 1+b[0]]); err != nil {
		return nil, errBadRecord
	}
	b = b[1+b[0]:]
	var ok bool
	var v uint64
	if o.Arrived, b, ok = varint(b); !ok {
		return nil, errBadRecord
	}
	if o.Expires, b, ok = varint(b); !ok {
		return nil, errBadRecord
	}
	if v, b, ok = uvarint(b); !ok || v > 1<<32-1 {
		return nil, errBadRecord
	}
	o.Bytes = uint32(v)
	if v, b, ok = uvarint(b); !ok || v > 1<<32-1 {
		return nil, errBadRecord
	}
	o.Lines = uint32(v)
	for _, dst := range []*string{&o.Subject, &o.From, &o.Date, &o.MessageID, &o.References, &o.Xref} {
		if v, b, ok = uvarint(b); !ok || v > uint64(len(b)) {
			return nil, errBadRecord
		}
		*dst = string(b[:v])
		b = b[v:]
	}
	return o, nil
}

func varint(b []byte) (int64, []byte, bool) {
	v, n := binary.Varint(b)
	if n <= 0 {
		return 0, nil, false
	}
	return v, b[n:], true
}

func uvarint(b []byte) (uint64, []byte, bool) {
	v, n := binary.Uvarint(b)
	if n <= 0 {
		return 0, nil, false
	}
	return v, b[n:], true
}

func encodeHist(h HistEntry) []byte {
	b := h.Key.AppendTo([]byte{byte(h.Key.Width())})
	b = binary.AppendVarint(b, h.Arrived)
	b = binary.AppendVarint(b, h.Expires)
	return append(b, h.Xref...)
}

func decodeHist(b []byte) (HistEntry, error) {
	var h HistEntry
	if len(b) < 1 || int(b[0]) > len(b)-1 || int(b[0]) > id.MaxBytes {
		return h, errBadRecord
	}
	var err error
	if h.Key, err = id.FromBytes(b[1 : 1+b[0]]); err != nil {
		return h, errBadRecord
	}
	b = b[1+b[0]:]
	var ok bool
	if h.Arrived, b, ok = varint(b); !ok {
		return h, errBadRecord
	}
	if h.Expires, b, ok = varint(b); !ok {
		return h, errBadRecord
	}
	h.Xref = string(b)
	return h, nil
}

func numKey(n uint64) []byte {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], n)
	return k[:]
}

// db wraps the bbolt file.
type db struct{ b *bolt.DB }

func openDB(path string) (*db, error) {
	// The freelist is rebuilt at open rather than written at every
	// commit: each group commit then writes fewer pages.
	b, err := bolt.Open(path, 0o644, &bolt.Options{Timeout: time.Second, NoFreelistSync: true, FreelistType: bolt.FreelistMapType})
	if err != nil {
		if errors.Is(err, bolterr.ErrTimeout) {
			return nil, fmt.Errorf("usenet: %s is in use by another process", path)
		}
		return nil, fmt.Errorf("usenet: open %s: %w", path, err)
	}
	err = b.Update(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{bucketGroups, bucketHistory, bucketMeta} {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Close()
		return nil, err
	}
	return &db{b: b}, nil
}

func (d *db) close() error { return d.b.Close() }

// groups loads every group.
func (d *db) groups() (map[string]*Group, error) {
	out := map[string]*Group{}
	err := d.b.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketGroups).ForEach(func(k, v []byte) error {
			g := &Group{Name: string(k)}
			if err := json.Unmarshal(v, g); err != nil {
				return fmt.Errorf("group %s: %w", k, errBadRecord)
			}
			out[g.Name] = g
			return nil
		})
	})
	return out, err
}

// getGroup reads a group's stored state; nil if it has none.
func getGroup(tx *bolt.Tx, name string) (*Group, error) {
	v := tx.Bucket(bucketGroups).Get([]byte(name))
	if v == nil {
		return nil, nil
	}
	g := &Group{Name: name}
	if err := json.Unmarshal(v, g); err != nil {
		return nil, fmt.Errorf("group %s: %w", name, errBadRecord)
	}
	return g, nil
}

func putGroup(tx *bolt.Tx, g *Group) error {
	v, _ := json.Marshal(g)
	if err := tx.Bucket(bucketGroups).Put([]byte(g.Name), v); err != nil {
		return err
	}
	_, err := tx.CreateBucketIfNotExists(overviewBucket(g.Name))
	return err
}

// applied is the last journal batch listed, 0 for none.
func (d *db) applied() (uint64, error) {
	var seq uint64
	err := d.b.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bucketMeta).Get(metaApplied); len(v) == 8 {
			seq = binary.BigEndian.Uint64(v)
		}
		return nil
	})
	return seq, err
}

// history looks a message-id up.
func (d *db) history(msgid string) (HistEntry, bool, error) {
	var h HistEntry
	found := false
	err := d.b.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketHistory).Get([]byte(msgid))
		if v == nil {
			return nil
		}
		found = true
		var err error
		h, err = decodeHist(v)
		return err
	})
	return h, found, err
}

// overview returns the entries of group numbered lo..hi (at most max).
func (d *db) overview(group string, lo, hi uint64, max int) ([]*Overview, error) {
	var out []*Overview
	err := d.b.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(overviewBucket(group))
		if b == nil {
			return nil
		}
		c := b.Cursor()
		for k, v := c.Seek(numKey(lo)); k != nil && len(out) < max; k, v = c.Next() {
			n := binary.BigEndian.Uint64(k)
			if n > hi {
				break
			}
			o, err := decodeOverview(n, v)
			if err != nil {
				return err
			}
			out = append(out, o)
		}
		return nil
	})
	return out, err
}

// entry returns one overview entry, or nil.
func (d *db) entry(group string, num uint64) (*Overview, error) {
	l, err := d.overview(group, num, num, 1)
	if err != nil || len(l) == 0 {
		return nil, err
	}
	return l[0], nil
}

// neighbour returns the first existing number after (next) or before
// (!next) num in group, or 0.
func (d *db) neighbour(group string, num uint64, next bool) (uint64, error) {
	var out uint64
	err := d.b.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(overviewBucket(group))
		if b == nil {
			return nil
		}
		c := b.Cursor()
		k, _ := c.Seek(numKey(num))
		if next {
			if k != nil && binary.BigEndian.Uint64(k) == num {
				k, _ = c.Next()
			}
		} else {
			if k == nil {
				k, _ = c.Last()
			} else {
				k, _ = c.Prev()
			}
		}
		if k != nil {
			out = binary.BigEndian.Uint64(k)
		}
		return nil
	})
	return out, err
}
