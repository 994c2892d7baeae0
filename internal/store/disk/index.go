package disk

import (
	"encoding/binary"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"triad/internal/merkle"
	"triad/internal/store"
)

// The index is a bbolt database beside the segments. Buckets:
//
//	index   key → entry (where the record is, its size and expiry)
//	expiry  expiry (8 bytes, sortable) ‖ key → nothing: keys in expiry order,
//	        for dropping them from the tree and reclaiming windows
//	tkeys   key → nothing: the keys in the Merkle tree
//	tnodes  encoded prefix → count ‖ hash: the tree's stored nodes
//	segs    segment id → window ‖ watermark ‖ dead bytes: how much of each
//	        segment the index covers (recovery rescans only past the
//	        watermark), and how much of that holds no live record
//	        (compaction rewrites a segment less than half live)
//	dead    key → segment id ‖ offset ‖ cutoff of its latest tombstone,
//	        kept until the tombstone's window is reclaimed: recovery
//	        drops every record of the key expiring by the cutoff, and a
//	        put after the delete is stored past it
//	dexp    cutoff (8 bytes, sortable) ‖ key → nothing: the dead keys by
//	        window, for dropping them with it
//	quar    key → why it was quarantined
//	meta    "expired" → the time up to which keys have left the tree;
//	        "window" → the window size, fixed for the store's life
var (
	bIndex  = []byte("index")
	bExpiry = []byte("expiry")
	bTKeys  = []byte("tkeys")
	bTNodes = []byte("tnodes")
	bSegs   = []byte("segs")
	bQuar   = []byte("quar")
	bMeta   = []byte("meta")
	bDead   = []byte("dead")
	bDExp   = []byte("dexp")

	metaExpired = []byte("expired")
	metaWindow  = []byte("window") // the window size the segments were named with
)

var allBuckets = [][]byte{bIndex, bExpiry, bTKeys, bTNodes, bSegs, bQuar, bMeta, bDead, bDExp}

// entry is an index value: where a key's record is, and what it holds.
// A pending entry (Disk.active, or recovery's replay) may also carry the
// latest tombstone of its key that the index has not seen, and with
// entryDead it is only that: the key was deleted.
type entry struct {
	seg    uint64
	off    int64
	size   int // data bytes
	expiry int64
	flags  byte // entryInTree, entryOpaque, entryDead
	tomb   tomb // pending entries only; never encoded in the index
}

const (
	entryInTree = 1 << 0
	entryOpaque = 1 << 1
	entryDead   = 1 << 2 // no object: only tomb
	entryBytes  = 8 + 8 + 4 + 8 + 1
)

// tomb is where a tombstone lies and its cutoff; seg 0 (no segment has
// that id) means none.
type tomb struct {
	seg    uint64
	off    int64
	cutoff int64
}

const tombBytes = 8 + 8 + 8

func (t tomb) encode() []byte {
	b := binary.BigEndian.AppendUint64(make([]byte, 0, tombBytes), t.seg)
	b = binary.BigEndian.AppendUint64(b, uint64(t.off))
	return binary.BigEndian.AppendUint64(b, uint64(t.cutoff))
}

func decodeTomb(b []byte) (tomb, error) {
	if len(b) != tombBytes {
		return tomb{}, fmt.Errorf("store: tombstone entry of %d bytes", len(b))
	}
	return tomb{
		seg:    binary.BigEndian.Uint64(b),
		off:    int64(binary.BigEndian.Uint64(b[8:])),
		cutoff: int64(binary.BigEndian.Uint64(b[16:])),
	}, nil
}

// deadEntry is the pending entry of a key whose last word is tombstone t.
func deadEntry(t tomb) entry { return entry{flags: entryDead, expiry: t.cutoff, tomb: t} }

// live reports whether e holds an object.
func (e entry) live() bool { return e.flags&entryDead == 0 }

// later returns whichever of t and u cuts off later (t on a tie).
func (t tomb) later(u tomb) tomb {
	if t.seg == 0 || u.seg != 0 && u.cutoff > t.cutoff {
		return u
	}
	return t
}

func (e entry) encode() []byte {
	b := make([]byte, 0, entryBytes)
	b = binary.BigEndian.AppendUint64(b, e.seg)
	b = binary.BigEndian.AppendUint64(b, uint64(e.off))
	b = binary.BigEndian.AppendUint32(b, uint32(e.size))
	b = binary.BigEndian.AppendUint64(b, uint64(e.expiry))
	return append(b, e.flags)
}

func decodeEntry(b []byte) (entry, error) {
	if len(b) != entryBytes {
		return entry{}, fmt.Errorf("store: index entry of %d bytes", len(b))
	}
	return entry{
		seg:    binary.BigEndian.Uint64(b),
		off:    int64(binary.BigEndian.Uint64(b[8:])),
		size:   int(binary.BigEndian.Uint32(b[16:])),
		expiry: int64(binary.BigEndian.Uint64(b[20:])),
		flags:  b[28],
	}, nil
}

func (e entry) meta() store.Meta {
	return store.Meta{Size: e.size, Expiry: time.Unix(0, e.expiry), InTree: e.flags&entryInTree != 0, Opaque: e.flags&entryOpaque != 0}
}

func (e entry) recordLen(keyLen int) int { return recordLen(keyLen, e.size) }

// sortableTime maps signed nanoseconds to bytes that sort in time order.
func sortableTime(ns int64) []byte {
	return binary.BigEndian.AppendUint64(nil, uint64(ns)^(1<<63))
}

func expiryKey(ns int64, key []byte) []byte { return append(sortableTime(ns), key...) }

func segKey(id uint64) []byte { return binary.BigEndian.AppendUint64(nil, id) }

// segMark is a segment's value in the segs bucket.
type segMark struct {
	window, watermark, dead int64
}

func (m segMark) encode() []byte {
	b := binary.BigEndian.AppendUint64(nil, uint64(m.window))
	b = binary.BigEndian.AppendUint64(b, uint64(m.watermark))
	return binary.BigEndian.AppendUint64(b, uint64(m.dead))
}

// decodeSegMark reads a segs value; one of 16 bytes, from before dead
// bytes were counted, counts none.
func decodeSegMark(v []byte) (segMark, bool) {
	if len(v) != 16 && len(v) != 24 {
		return segMark{}, false
	}
	m := segMark{window: int64(binary.BigEndian.Uint64(v)), watermark: int64(binary.BigEndian.Uint64(v[8:]))}
	if len(v) == 24 {
		m.dead = int64(binary.BigEndian.Uint64(v[16:]))
	}
	return m, true
}

// boltTree is the Merkle tree's Backend over one bbolt transaction. bbolt
// fails only on misuse, so errors are kept and returned by the caller.
type boltTree struct {
	nodes, keys *bolt.Bucket
	err         error
}

func newBoltTree(tx *bolt.Tx) *boltTree {
	return &boltTree{nodes: tx.Bucket(bTNodes), keys: tx.Bucket(bTKeys)}
}

func (t *boltTree) keep(err error) {
	if err != nil && t.err == nil {
		t.err = err
	}
}

func decodeNode(p merkle.Prefix, v []byte) (merkle.Node, bool) {
	if len(v) != 8+32 {
		return merkle.Node{}, false
	}
	n := merkle.Node{Prefix: p, Count: binary.BigEndian.Uint64(v)}
	copy(n.Hash[:], v[8:])
	return n, true
}

func (t *boltTree) Node(p merkle.Prefix) (merkle.Node, bool) {
	return decodeNode(p, t.nodes.Get(p.Encode()))
}

func (t *boltTree) Children(p merkle.Prefix, fn func(merkle.Node)) {
	c := t.nodes.Cursor()
	last := string(p.Child(merkle.Fanout - 1).Encode())
	for k, v := c.Seek(p.Child(0).Encode()); k != nil && string(k) <= last; k, v = c.Next() {
		q, err := merkle.DecodePrefix(k)
		if err != nil {
			t.keep(err)
			return
		}
		if n, ok := decodeNode(q, v); ok {
			fn(n)
		}
	}
}

func (t *boltTree) Keys(p merkle.Prefix, fn func([]byte) bool) {
	c := t.keys.Cursor()
	start := p.Encode()[1:]
	for k, _ := c.Seek(start); k != nil && p.Contains(k); k, _ = c.Next() {
		if !fn(k) {
			return
		}
	}
}

func (t *boltTree) PutNode(n merkle.Node) {
	v := binary.BigEndian.AppendUint64(make([]byte, 0, 40), n.Count)
	t.keep(t.nodes.Put(n.Prefix.Encode(), append(v, n.Hash[:]...)))
}

func (t *boltTree) DeleteNode(p merkle.Prefix) { t.keep(t.nodes.Delete(p.Encode())) }

func (t *boltTree) AddKey(k []byte) bool {
	if t.keys.Get(k) != nil {
		return false
	}
	t.keep(t.keys.Put(k, present))
	return true
}

func (t *boltTree) RemoveKey(k []byte) bool {
	if t.keys.Get(k) == nil {
		return false
	}
	t.keep(t.keys.Delete(k))
	return true
}

// present is the value of set-like buckets; bbolt may not tell an empty
// value from a missing one.
var present = []byte{1}
