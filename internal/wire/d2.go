package wire

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"

	"google.golang.org/protobuf/encoding/protowire"

	"triad/internal/id"
)

// Message types of D2 (the D2-Store and its load-balancing ring), 384-447.
const (
	TypeD2Join         Type = 384
	TypeD2GetNeighbors Type = 385
	TypeD2Neighbors    Type = 386
	TypeD2FindSucc     Type = 387
	TypeD2Next         Type = 388
	TypeD2Leave        Type = 389
	TypeD2Store        Type = 390
	TypeD2Stored       Type = 391
	TypeD2Fetch        Type = 392
	TypeD2Block        Type = 393
	TypeD2Pointers     Type = 394
	TypeD2Keys         Type = 395
	TypeD2KeyList      Type = 396
	TypeD2Put          Type = 397
	TypeD2Get          Type = 398
	TypeD2Delete       Type = 399
	TypeD2Latest       Type = 400
	TypeD2Drop         Type = 401
	TypeD2Invite       Type = 402
	TypeD2Stat         Type = 403
	TypeD2Holders      Type = 404
	TypeD2List         Type = 405
	TypeD2Listing      Type = 406
	TypeD2GetSpace     Type = 407
	TypeD2Space        Type = 408
)

// Bounds of D2's messages.
const (
	MaxD2Block      = 64 << 10 // a block's bytes (D2's blocks are 8 KB; the node's Config bounds them tighter)
	MaxD2Keys       = 1024     // keys in one D2KeyList
	MaxD2Pointers   = 1024     // pointers in one D2Pointers
	MaxD2Hash       = 64       // a content hash's bytes
	MaxD2Prefix     = 64       // a key prefix's bytes: a whole key at most
	MaxD2AuthKey    = 32       // a D2Auth's public key (ed25519)
	MaxD2AuthSig    = 64       // a D2Auth's signature (ed25519)
	MaxD2AuthSigned = 64       // a D2Auth's signed key (a D2 key)
)

// D2Ref names a D2 node: its host's ring reference (the envelope's sender
// identity) and its position on D2's ring of 64-byte keys, which changes
// when the node moves to balance load.
type D2Ref struct {
	Node NodeRef
	Pos  id.ID
}

// IsZero reports whether r names no node.
func (r D2Ref) IsZero() bool { return r.Node.IsZero() && r.Pos.IsZero() }

// D2Join tells the receiver that Self believes it is the receiver's
// predecessor: a join, and every stabilization after it (Chord's
// stabilize and notify in one round trip). The reply is a D2Neighbors.
type D2Join struct{ Self D2Ref }

// D2GetNeighbors asks for the receiver's neighbours, links, load and the
// median key of its range; the reply is a D2Neighbors.
type D2GetNeighbors struct{}

// D2Neighbors is a node's view of its place on the ring: its predecessors
// and successors (nearest first), its long links (by node-count distance,
// nearest first), its primary load (blocks) and the median key of its range
// (zero when it holds fewer than two).
type D2Neighbors struct {
	Self   D2Ref
	Preds  []D2Ref
	Succs  []D2Ref
	Links  []D2Ref
	Load   uint64
	Median id.ID
}

// D2FindSucc is one step of an iterative lookup of Key; the reply is a
// D2Next.
type D2FindSucc struct{ Key id.ID }

// D2Next answers D2FindSucc: Done with the key's owner (its successor),
// the owner's range (Lo, Owner.Pos] and the owner's successors; or the
// Next node to ask.
type D2Next struct {
	Done  bool
	Owner D2Ref
	Lo    id.ID
	Succs []D2Ref
	Next  D2Ref
}

// D2Leave tells a neighbour that the sender leaves its position (for good,
// or to rejoin elsewhere), with its lists so the neighbour can close the
// gap at once. One-way.
type D2Leave struct {
	Preds []D2Ref
	Succs []D2Ref
}

// D2Store stores a block at the receiver. Primary asks the receiver, the
// key's owner, to store it on its successors too (the reply counts the
// copies); otherwise it is one replica. The reply is a D2Stored.
type D2Store struct {
	Key     id.ID
	Data    []byte
	Primary bool
	// Replace stores Data in place of what the receiver holds under Key
	// (the owner decided a D2Put's mode; replicas follow it).
	Replace bool
	// Mode and Prev, with Primary, are the client's D2Put's: the owner
	// decides the put by them. Without Primary, they and Auth are the
	// copy's D2Proof: the writer's consent the receiver checks. A gateway relays a client's put this way,
	// a node-to-node message, once it has checked the put's D2Auth: a
	// client cannot reach the owner's decision without that check.
	Mode D2PutMode
	Prev []byte
	// Version orders the copies of a key that was replaced: the owner
	// stamps each block it decides to store with a version greater than
	// any it knows of the key (Unix nanoseconds, the stored copy's engine
	// expiry), and a replica keeps the greater of its own and this one.
	// Zero: the receiver stamps the block itself (a block never
	// replaced).
	Version uint64
	// Auth, with Primary, is the client's D2Put's consent: the owner
	// checks it again (a node certificate does not stand for the volume's
	// writer), and refuses the decision without it.
	Auth D2Auth
	// Vouched marks an owner's copy of a conditional put it decided with
	// a majority of the key's holders vouching (internal/d2's doubt.go):
	// a replica that doubted the owner's range learns it is among the
	// holders the owner answers with.
	Vouched bool
}

// D2Stored answers a store or a delete: the copies stored (or removed),
// or NotMine when the receiver does not own the key (its cached owner was
// stale).
type D2Stored struct {
	Copies  uint32
	NotMine bool
	// Conflict: the put's condition (D2Put.Mode) did not hold at the
	// owner, or the key holds other bytes and the put may not replace
	// them; nothing was stored.
	Conflict bool
	// Holders, in an owner's answer to a relayed put, are the nodes it
	// stored the block on (itself, then its successors): the gateway asks
	// each for the block and counts only the distinct machines that have
	// it (internal/d2's verify.go).
	Holders []NodeRef
}

// D2Fetch asks the receiver for the block Key. Local: only from its own
// engine, never through a pointer it holds. Hash, if set, is the content
// hash the bytes must have. The reply is a D2Block.
type D2Fetch struct {
	Key   id.ID
	Hash  []byte
	Local bool
	// NoData asks only whether the receiver has the block: the D2Block
	// says Found without the bytes (a D2Stat's check of a holder).
	NoData bool
}

// D2Block answers a fetch or a get: the block's bytes when Found, or
// NotMine when the receiver does not own the key.
type D2Block struct {
	Key     id.ID
	Data    []byte
	Found   bool
	NotMine bool
	// Version is the found copy's (D2Store.Version); zero when unknown.
	Version uint64
	// Unsure says the sender cannot vouch for its answer: the key came
	// into its replicas through failures, not from its holders, and its
	// earlier holders may hold a newer copy (internal/d2's doubt.go).
	Unsure bool
	// Proof is the volume writer's consent the sender holds the copy
	// with (a node-to-node fetch's answer): the node that takes the copy
	// checks it, so that a copy moves between nodes without a node being
	// able to forge one.
	Proof D2Proof
}

// D2Proof is the volume writer's consent to a block's bytes, as the
// owner took it with the client's put: the put's mode, the hash it
// expected (D2PutIfHash) and the signature. A block keeps it with its
// bytes, and every copy of the block carries it (a replica's, a sync's
// push, a pointer's fetch), so that each node checks the writer's
// signature over the bytes it is asked to keep.
type D2Proof struct {
	Mode D2PutMode
	Prev []byte
	Auth D2Auth
}

// IsZero reports whether p carries no signature.
func (p D2Proof) IsZero() bool { return p.Auth.IsZero() }

// AppendD2Proof appends p's encoding to b (a node's engine keeps it with
// the block's bytes).
func AppendD2Proof(b []byte, p D2Proof) []byte {
	b = putUint(b, 1, uint64(p.Mode))
	b = putBytes(b, 2, p.Prev)
	return putD2Auth(b, 3, p.Auth)
}

// ParseD2Proof decodes a proof AppendD2Proof encoded, bounded as a
// message's; the proof shares no bytes with b.
func ParseD2Proof(b []byte) (D2Proof, error) {
	var p D2Proof
	d := decoder{} // not owned: data fields are copies
	d.each(b, func(f field) { p.decodeField(&d, f) })
	if d.err != nil {
		return D2Proof{}, d.err
	}
	return p, nil
}

func (p *D2Proof) decodeField(d *decoder, f field) {
	switch f.num {
	case 1:
		p.Mode = D2PutMode(d.uint32(f))
	case 2:
		p.Prev = d.boundedData(f, MaxD2Hash, "a hash")
	case 3:
		p.Auth = d.d2Auth(f)
	}
}

func (p D2Proof) clone() D2Proof {
	return D2Proof{Mode: p.Mode, Prev: bytes.Clone(p.Prev), Auth: p.Auth.clone()}
}

// D2Pointer is a block pointer (§6): Key is held by Holder, Size bytes.
type D2Pointer struct {
	Key    id.ID
	Holder NodeRef
	Size   uint64
}

// D2Pointers hands block pointers to their new owner; the reply is an Ack.
type D2Pointers struct{ Pointers []D2Pointer }

// D2Keys asks for up to Max keys whose blocks the receiver holds in the arc
// (Lo, Hi], in ring order from Lo (with Pointers, the keys it holds
// pointers to as well); Last asks for the greatest key it holds there,
// block or pointer, only. The reply is a D2KeyList.
type D2Keys struct {
	Lo, Hi   id.ID
	Max      uint32
	Last     bool
	Pointers bool
}

// D2KeyList is a list of keys, in ring order; More is set when the arc held
// more than were sent.
type D2KeyList struct {
	Keys []id.ID
	More bool
	// Versions, when set, has one entry per key: the version of the
	// block the sender holds (D2Store.Version; zero for a pointer). Sync
	// compares them, so that a replace that missed a replica is repaired.
	Versions []uint64
	// Unsure says the sender cannot vouch for the arc asked (D2Block's
	// Unsure).
	Unsure bool
}

// D2Put asks a node to store Data under Key on the key's r successors; the
// reply is a D2Stored once they have. Mode says what may be replaced; the
// key's owner decides it, one put at a time per key, so a conditional put
// is atomic with respect to every other put of the key that reaches the
// same owner.
type D2Put struct {
	Key  id.ID
	Data []byte
	Mode D2PutMode
	// Prev is the SHA-256 the key's current block must have (D2PutIfHash).
	Prev []byte
	// Auth is the volume writer's consent, needed by every mode (only a
	// registry key's D2PutIfAbsent goes without; see internal/d2/auth.go).
	Auth D2Auth
}

// D2Auth is a volume writer's consent to one write (a put of any mode,
// or a delete): the volume's ed25519 public key
// (the key's first 20 bytes are derived from it), an expiry and the
// signature of internal/d2/key's Grant over the request. A node that
// takes such a request from a client refuses it, changing nothing,
// unless its D2Auth verifies (RELIABILITY E3).
type D2Auth struct {
	Pub     []byte
	Expires uint64 // Unix nanoseconds
	Sig     []byte
	// Signed is the key the writer signed when the request's key is its
	// block placement (internal/d2/key.PlaceBlock), empty otherwise.
	Signed []byte
}

// IsZero reports whether a carries nothing.
func (a D2Auth) IsZero() bool {
	return len(a.Pub) == 0 && a.Expires == 0 && len(a.Sig) == 0 && len(a.Signed) == 0
}

// D2PutMode is what a D2Put may replace.
type D2PutMode uint32

const (
	// D2PutKeep stores Data unless the key holds other bytes (Conflict):
	// a put never replaces, the same bytes again only succeed.
	D2PutKeep D2PutMode = iota
	// D2PutReplace stores Data whatever the key holds.
	D2PutReplace
	// D2PutIfAbsent stores Data only if the key holds nothing.
	D2PutIfAbsent
	// D2PutIfHash stores Data only if the key holds a block whose SHA-256
	// is Prev.
	D2PutIfHash
	// D2PutModes is the number of modes: a mode past the last is refused.
	D2PutModes
)

// D2Get asks a node for the block Key whose content hash is Hash; the reply
// is a D2Block.
type D2Get struct {
	Key  id.ID
	Hash []byte
}

// D2Delete asks a node to delete Key from its successors; the reply is a
// D2Stored counting the copies removed. Auth is the volume writer's
// consent.
type D2Delete struct {
	Key  id.ID
	Auth D2Auth
}

// D2Latest asks a node for the greatest stored key that starts with
// Prefix; the reply is a D2Block with that key and its bytes (Found false:
// none).
type D2Latest struct{ Prefix []byte }

// D2List asks a node for the stored keys that start with Prefix, after
// After (zero: from the first), at most Max (0: MaxD2Keys), in key order.
// The reply is a D2Listing: the keys, from one owner's range, and the
// After of the next request (zero: no more). A client lists a volume's
// keys with it (triad fs fsck finds orphaned blocks).
type D2List struct {
	Prefix []byte
	After  id.ID
	Max    uint32
}

// D2Listing answers a D2List.
type D2Listing struct {
	Keys []id.ID
	Next id.ID // the next request's After; zero when the listing is done
}

// D2Drop asks the receiver, a replica of Key, to delete its copy; the
// reply is a D2Stored.
type D2Drop struct {
	Key id.ID
	// Auth is the volume writer's signed delete of Key (the client's
	// D2Delete's): a holder drops a copy only with it.
	Auth D2Auth
}

// D2Invite tells a node that the sender, which sampled it, carries more
// than t times its load: the receiver checks for itself and may move to
// take half (either side of a probe may start a move, §6). One-way.
type D2Invite struct{}

// D2Stat asks a node which nodes hold Key: the key's r holders by
// placement (its owner, then the owner's successors) and whether each
// holds a copy whose SHA-256 is Hash. The reply is a D2Holders. It is the
// client API's view of a block's replicas (triad fs stat): D2's lookups
// and fetches are node-to-node messages, which a node refuses from a
// client.
type D2Stat struct {
	Key  id.ID
	Hash []byte
}

// D2HolderState is what one of a key's holders answered a D2Stat's
// check.
type D2HolderState uint32

const (
	// D2HolderNoAnswer: the holder did not answer (down, or too slow),
	// which says nothing of what it holds.
	D2HolderNoAnswer D2HolderState = iota
	// D2HolderMissing: the holder answered without a copy whose SHA-256
	// is the hash (none, other bytes, or only a pointer to another's).
	D2HolderMissing
	// D2HolderOK: the holder keeps a copy whose SHA-256 is the hash.
	D2HolderOK
	// D2HolderStates is the number of states: a state past the last is
	// refused.
	D2HolderStates
)

// String names the state, for triad fs stat and logs.
func (s D2HolderState) String() string {
	switch s {
	case D2HolderNoAnswer:
		return "no answer"
	case D2HolderMissing:
		return "missing"
	case D2HolderOK:
		return "ok"
	}
	return fmt.Sprintf("D2HolderState(%d)", uint32(s))
}

// D2Holder is one of a key's holders and what it answered.
type D2Holder struct {
	Node  D2Ref
	State D2HolderState
}

// D2Holders answers a D2Stat: Key's holders in placement order, the owner
// first.
type D2Holders struct {
	Key     id.ID
	Holders []D2Holder
}

// D2GetSpace asks a node about its D2 store: its engine's room and whether
// it is on the ring. The reply is a D2Space. It is the client API's view of
// the free space under a volume (df on a D2-FS mount) and of a node's join
// (triad fs status); the node answers it from its own engine, joined or not.
type D2GetSpace struct{}

// D2Space answers a D2GetSpace: the node's D2 engine's Capacity (bytes its
// segment files may take; 0: no bound set, as a node started without
// --capacity-mb, which only its disk limits) and Usage (bytes they take),
// the ring's Replicas (r, the copies of each block), and Joined: D2 there
// is on the ring (false: still joining, d2.ErrNotJoined). Distrusted are
// the replica partners the node found lacking blocks they had
// acknowledged (internal/d2's audit.go), at most MaxD2Distrusted.
type D2Space struct {
	Joined     bool
	Capacity   uint64
	Usage      uint64
	Replicas   uint32
	Distrusted []string
}

// MaxD2Distrusted bounds D2Space.Distrusted.
const MaxD2Distrusted = 16

func putD2Ref(b []byte, num protowire.Number, r D2Ref) []byte {
	if r.IsZero() {
		return b
	}
	b = appendTagBytes(b, num)
	return appendNested(b, func(b []byte) []byte {
		b = putNode(b, 1, r.Node)
		return putID(b, 2, r.Pos)
	})
}

func putD2Refs(b []byte, num protowire.Number, l []D2Ref) []byte {
	for _, r := range l {
		b = putD2Ref(b, num, r)
	}
	return b
}

func (d *decoder) d2Ref(f field) D2Ref {
	var r D2Ref
	d.nested(f, func(g field) {
		switch g.num {
		case 1:
			r.Node = d.node(g)
		case 2:
			r.Pos = d.id(g)
		}
	})
	return r
}

func (d *decoder) d2Refs(list []D2Ref, f field) []D2Ref {
	if len(list) >= MaxListLen {
		d.fail("field %d: more than %d nodes", f.num, MaxListLen)
		return list
	}
	return append(list, d.d2Ref(f))
}

func (d *decoder) boundedData(f field, max int, what string) []byte {
	b := d.data(f)
	if len(b) > max {
		d.fail("%s of %d bytes > %d", what, len(b), max)
	}
	return b
}

func (*D2Join) Type() Type               { return TypeD2Join }
func (m *D2Join) encode(b []byte) []byte { return putD2Ref(b, 1, m.Self) }
func (m *D2Join) decodeField(d *decoder, f field) {
	if f.num == 1 {
		m.Self = d.d2Ref(f)
	}
}
func (m *D2Join) clone() Msg { return new(*m) }

func (*D2GetNeighbors) Type() Type                  { return TypeD2GetNeighbors }
func (*D2GetNeighbors) encode(b []byte) []byte      { return b }
func (*D2GetNeighbors) decodeField(*decoder, field) {}
func (m *D2GetNeighbors) clone() Msg                { return new(*m) }

func (*D2Neighbors) Type() Type { return TypeD2Neighbors }
func (m *D2Neighbors) encode(b []byte) []byte {
	b = putD2Ref(b, 1, m.Self)
	b = putD2Refs(b, 2, m.Preds)
	b = putD2Refs(b, 3, m.Succs)
	b = putD2Refs(b, 4, m.Links)
	b = putUint(b, 5, m.Load)
	return putID(b, 6, m.Median)
}
func (m *D2Neighbors) decodeField(d *decoder, f field) {
	switch f.num {
	case 1:
		m.Self = d.d2Ref(f)
	case 2:
		m.Preds = d.d2Refs(m.Preds, f)
	case 3:
		m.Succs = d.d2Refs(m.Succs, f)
	case 4:
		m.Links = d.d2Refs(m.Links, f)
	case 5:
		m.Load = d.uint(f)
	case 6:
		m.Median = d.id(f)
	}
}
func (m *D2Neighbors) clone() Msg {
	c := *m
	c.Preds, c.Succs, c.Links = slices.Clone(m.Preds), slices.Clone(m.Succs), slices.Clone(m.Links)
	return &c
}

func (*D2FindSucc) Type() Type               { return TypeD2FindSucc }
func (m *D2FindSucc) encode(b []byte) []byte { return putID(b, 1, m.Key) }
func (m *D2FindSucc) decodeField(d *decoder, f field) {
	if f.num == 1 {
		m.Key = d.id(f)
	}
}
func (m *D2FindSucc) clone() Msg { return new(*m) }

func (*D2Next) Type() Type { return TypeD2Next }
func (m *D2Next) encode(b []byte) []byte {
	b = putBool(b, 1, m.Done)
	b = putD2Ref(b, 2, m.Owner)
	b = putID(b, 3, m.Lo)
	b = putD2Refs(b, 4, m.Succs)
	return putD2Ref(b, 5, m.Next)
}
func (m *D2Next) decodeField(d *decoder, f field) {
	switch f.num {
	case 1:
		m.Done = d.bool(f)
	case 2:
		m.Owner = d.d2Ref(f)
	case 3:
		m.Lo = d.id(f)
	case 4:
		m.Succs = d.d2Refs(m.Succs, f)
	case 5:
		m.Next = d.d2Ref(f)
	}
}
func (m *D2Next) clone() Msg {
	c := *m
	c.Succs = slices.Clone(m.Succs)
	return &c
}

func (*D2Leave) Type() Type { return TypeD2Leave }
func (m *D2Leave) encode(b []byte) []byte {
	b = putD2Refs(b, 1, m.Preds)
	return putD2Refs(b, 2, m.Succs)
}
func (m *D2Leave) decodeField(d *decoder, f field) {
	switch f.num {
	case 1:
		m.Preds = d.d2Refs(m.Preds, f)
	case 2:
		m.Succs = d.d2Refs(m.Succs, f)
	}
}
func (m *D2Leave) clone() Msg {
	return &D2Leave{Preds: slices.Clone(m.Preds), Succs: slices.Clone(m.Succs)}
}

func (*D2Store) Type() Type { return TypeD2Store }
func (m *D2Store) encode(b []byte) []byte {
	b = putID(b, 1, m.Key)
	b = putBytes(b, 2, m.Data)
	b = putBool(b, 3, m.Primary)
	b = putBool(b, 4, m.Replace)
	b = putUint(b, 5, uint64(m.Mode))
	b = putBytes(b, 6, m.Prev)
	b = putUint(b, 7, m.Version)
	b = putD2Auth(b, 8, m.Auth)
	return putBool(b, 9, m.Vouched)
}
func (m *D2Store) decodeField(d *decoder, f field) {
	switch f.num {
	case 1:
		m.Key = d.id(f)
	case 2:
		m.Data = d.boundedData(f, MaxD2Block, "a block")
	case 3:
		m.Primary = d.bool(f)
	case 4:
		m.Replace = d.bool(f)
	case 5:
		m.Mode = D2PutMode(d.uint32(f)) // d2's Validate refuses an unknown mode
	case 6:
		m.Prev = d.boundedData(f, MaxD2Hash, "a hash")
	case 7:
		m.Version = d.uint(f)
	case 8:
		m.Auth = d.d2Auth(f)
	case 9:
		m.Vouched = d.bool(f)
	}
}
func (m *D2Store) clone() Msg {
	c := *m
	c.Data, c.Prev, c.Auth = bytes.Clone(m.Data), bytes.Clone(m.Prev), m.Auth.clone()
	return &c
}

func putD2Auth(b []byte, num protowire.Number, a D2Auth) []byte {
	if a.IsZero() {
		return b
	}
	b = appendTagBytes(b, num)
	return appendNested(b, func(b []byte) []byte {
		b = putBytes(b, 1, a.Pub)
		b = putUint(b, 2, a.Expires)
		b = putBytes(b, 3, a.Sig)
		return putBytes(b, 4, a.Signed)
	})
}

func (d *decoder) d2Auth(f field) D2Auth {
	var a D2Auth
	d.nested(f, func(g field) {
		switch g.num {
		case 1:
			a.Pub = d.boundedData(g, MaxD2AuthKey, "a public key")
		case 2:
			a.Expires = d.uint(g)
		case 3:
			a.Sig = d.boundedData(g, MaxD2AuthSig, "a signature")
		case 4:
			a.Signed = d.boundedData(g, MaxD2AuthSigned, "a signed key")
		}
	})
	return a
}

// putKeys writes keys as repeated field num.
func putKeys(b []byte, num protowire.Number, keys []id.ID) []byte {
	for _, k := range keys {
		b = putID(b, num, k)
	}
	return b
}

// keyOf appends the key in f to keys, at most max of them.
func (d *decoder) keyOf(f field, keys []id.ID, max int) []id.ID {
	if len(keys) >= max {
		d.fail("more than %d keys", max)
		return keys
	}
	return append(keys, d.id(f))
}

func (a D2Auth) clone() D2Auth {
	return D2Auth{Pub: bytes.Clone(a.Pub), Expires: a.Expires, Sig: bytes.Clone(a.Sig), Signed: bytes.Clone(a.Signed)}
}

func (*D2Stored) Type() Type { return TypeD2Stored }
func (m *D2Stored) encode(b []byte) []byte {
	b = putUint(b, 1, uint64(m.Copies))
	b = putBool(b, 2, m.NotMine)
	b = putBool(b, 3, m.Conflict)
	return putNodes(b, 4, m.Holders)
}
func (m *D2Stored) decodeField(d *decoder, f field) {
	switch f.num {
	case 1:
		m.Copies = d.uint32(f)
	case 2:
		m.NotMine = d.bool(f)
	case 3:
		m.Conflict = d.bool(f)
	case 4:
		m.Holders = d.nodes(m.Holders, f)
	}
}
func (m *D2Stored) clone() Msg {
	c := *m
	c.Holders = slices.Clone(m.Holders)
	return &c
}

func (*D2Fetch) Type() Type { return TypeD2Fetch }
func (m *D2Fetch) encode(b []byte) []byte {
	b = putID(b, 1, m.Key)
	b = putBytes(b, 2, m.Hash)
	b = putBool(b, 3, m.Local)
	return putBool(b, 4, m.NoData)
}
func (m *D2Fetch) decodeField(d *decoder, f field) {
	switch f.num {
	case 1:
		m.Key = d.id(f)
	case 2:
		m.Hash = d.boundedData(f, MaxD2Hash, "a hash")
	case 3:
		m.Local = d.bool(f)
	case 4:
		m.NoData = d.bool(f)
	}
}
func (m *D2Fetch) clone() Msg {
	c := *m
	c.Hash = bytes.Clone(m.Hash)
	return &c
}

func (*D2Block) Type() Type { return TypeD2Block }
func (m *D2Block) encode(b []byte) []byte {
	b = putID(b, 1, m.Key)
	b = putBytes(b, 2, m.Data)
	b = putBool(b, 3, m.Found)
	b = putBool(b, 4, m.NotMine)
	b = putUint(b, 5, m.Version)
	b = putBool(b, 6, m.Unsure)
	if !m.Proof.IsZero() {
		b = appendTagBytes(b, 7)
		b = appendNested(b, func(b []byte) []byte { return AppendD2Proof(b, m.Proof) })
	}
	return b
}
func (m *D2Block) decodeField(d *decoder, f field) {
	switch f.num {
	case 1:
		m.Key = d.id(f)
	case 2:
		m.Data = d.boundedData(f, MaxD2Block, "a block")
	case 3:
		m.Found = d.bool(f)
	case 4:
		m.NotMine = d.bool(f)
	case 5:
		m.Version = d.uint(f)
	case 6:
		m.Unsure = d.bool(f)
	case 7:
		d.nested(f, func(g field) { m.Proof.decodeField(d, g) })
	}
}
func (m *D2Block) clone() Msg {
	c := *m
	c.Data, c.Proof = bytes.Clone(m.Data), m.Proof.clone()
	return &c
}

func (*D2Pointers) Type() Type { return TypeD2Pointers }
func (m *D2Pointers) encode(b []byte) []byte {
	for _, p := range m.Pointers {
		b = appendTagBytes(b, 1)
		b = appendNested(b, func(b []byte) []byte {
			b = putID(b, 1, p.Key)
			b = putNode(b, 2, p.Holder)
			return putUint(b, 3, p.Size)
		})
	}
	return b
}
func (m *D2Pointers) decodeField(d *decoder, f field) {
	if f.num != 1 {
		return
	}
	if len(m.Pointers) >= MaxD2Pointers {
		d.fail("more than %d pointers", MaxD2Pointers)
		return
	}
	var p D2Pointer
	d.nested(f, func(g field) {
		switch g.num {
		case 1:
			p.Key = d.id(g)
		case 2:
			p.Holder = d.node(g)
		case 3:
			p.Size = d.uint(g)
		}
	})
	m.Pointers = append(m.Pointers, p)
}
func (m *D2Pointers) clone() Msg { return &D2Pointers{Pointers: slices.Clone(m.Pointers)} }

func (*D2Keys) Type() Type { return TypeD2Keys }
func (m *D2Keys) encode(b []byte) []byte {
	b = putID(b, 1, m.Lo)
	b = putID(b, 2, m.Hi)
	b = putUint(b, 3, uint64(m.Max))
	b = putBool(b, 4, m.Last)
	return putBool(b, 5, m.Pointers)
}
func (m *D2Keys) decodeField(d *decoder, f field) {
	switch f.num {
	case 1:
		m.Lo = d.id(f)
	case 2:
		m.Hi = d.id(f)
	case 3:
		m.Max = d.uint32(f)
	case 4:
		m.Last = d.bool(f)
	case 5:
		m.Pointers = d.bool(f)
	}
}
func (m *D2Keys) clone() Msg { return new(*m) }

func (*D2KeyList) Type() Type { return TypeD2KeyList }
func (m *D2KeyList) encode(b []byte) []byte {
	b = putBool(putKeys(b, 1, m.Keys), 2, m.More)
	b = putBool(b, 4, m.Unsure)
	if len(m.Versions) == 0 {
		return b
	}
	v := make([]byte, 0, 8*len(m.Versions))
	for _, x := range m.Versions {
		v = binary.BigEndian.AppendUint64(v, x)
	}
	return putBytes(b, 3, v)
}
func (m *D2KeyList) decodeField(d *decoder, f field) {
	switch f.num {
	case 1:
		m.Keys = d.keyOf(f, m.Keys, MaxD2Keys)
	case 2:
		m.More = d.bool(f)
	case 3:
		v := d.boundedData(f, 8*MaxD2Keys, "versions")
		if len(v)%8 != 0 {
			d.fail("versions of %d bytes", len(v))
			return
		}
		m.Versions = make([]uint64, 0, len(v)/8)
		for ; len(v) > 0; v = v[8:] {
			m.Versions = append(m.Versions, binary.BigEndian.Uint64(v))
		}
	case 4:
		m.Unsure = d.bool(f)
	}
}
func (m *D2KeyList) clone() Msg {
	return &D2KeyList{Keys: slices.Clone(m.Keys), More: m.More, Versions: slices.Clone(m.Versions), Unsure: m.Unsure}
}

func (*D2Put) Type() Type { return TypeD2Put }
func (m *D2Put) encode(b []byte) []byte {
	b = putID(b, 1, m.Key)
	b = putBytes(b, 2, m.Data)
	b = putUint(b, 3, uint64(m.Mode))
	b = putBytes(b, 4, m.Prev)
	return putD2Auth(b, 5, m.Auth)
}
func (m *D2Put) decodeField(d *decoder, f field) {
	switch f.num {
	case 1:
		m.Key = d.id(f)
	case 2:
		m.Data = d.boundedData(f, MaxD2Block, "a block")
	case 3:
		m.Mode = D2PutMode(d.uint32(f)) // d2's Validate refuses an unknown mode
	case 4:
		m.Prev = d.boundedData(f, MaxD2Hash, "a hash")
	case 5:
		m.Auth = d.d2Auth(f)
	}
}
func (m *D2Put) clone() Msg {
	c := *m
	c.Data, c.Prev, c.Auth = bytes.Clone(m.Data), bytes.Clone(m.Prev), m.Auth.clone()
	return &c
}

func (*D2Get) Type() Type { return TypeD2Get }
func (m *D2Get) encode(b []byte) []byte {
	b = putID(b, 1, m.Key)
	return putBytes(b, 2, m.Hash)
}
func (m *D2Get) decodeField(d *decoder, f field) {
	switch f.num {
	case 1:
		m.Key = d.id(f)
	case 2:
		m.Hash = d.boundedData(f, MaxD2Hash, "a hash")
	}
}
func (m *D2Get) clone() Msg { return &D2Get{Key: m.Key, Hash: bytes.Clone(m.Hash)} }

func (*D2Delete) Type() Type { return TypeD2Delete }
func (m *D2Delete) encode(b []byte) []byte {
	b = putID(b, 1, m.Key)
	return putD2Auth(b, 2, m.Auth)
}
func (m *D2Delete) decodeField(d *decoder, f field) {
	switch f.num {
	case 1:
		m.Key = d.id(f)
	case 2:
		m.Auth = d.d2Auth(f)
	}
}
func (m *D2Delete) clone() Msg { return &D2Delete{Key: m.Key, Auth: m.Auth.clone()} }

func (*D2Latest) Type() Type               { return TypeD2Latest }
func (m *D2Latest) encode(b []byte) []byte { return putBytes(b, 1, m.Prefix) }
func (m *D2Latest) decodeField(d *decoder, f field) {
	if f.num == 1 {
		m.Prefix = d.boundedData(f, MaxD2Prefix, "a prefix")
	}
}
func (m *D2Latest) clone() Msg { return &D2Latest{Prefix: bytes.Clone(m.Prefix)} }

func (*D2List) Type() Type { return TypeD2List }
func (m *D2List) encode(b []byte) []byte {
	b = putBytes(b, 1, m.Prefix)
	b = putID(b, 2, m.After)
	return putUint(b, 3, uint64(m.Max))
}
func (m *D2List) decodeField(d *decoder, f field) {
	switch f.num {
	case 1:
		m.Prefix = d.boundedData(f, MaxD2Prefix, "a prefix")
	case 2:
		m.After = d.id(f)
	case 3:
		m.Max = d.uint32(f) // d2's Validate bounds it
	}
}
func (m *D2List) clone() Msg {
	return &D2List{Prefix: bytes.Clone(m.Prefix), After: m.After, Max: m.Max}
}

func (*D2Listing) Type() Type { return TypeD2Listing }
func (m *D2Listing) encode(b []byte) []byte {
	return putID(putKeys(b, 1, m.Keys), 2, m.Next)
}
func (m *D2Listing) decodeField(d *decoder, f field) {
	switch f.num {
	case 1:
		m.Keys = d.keyOf(f, m.Keys, MaxD2Keys)
	case 2:
		m.Next = d.id(f)
	}
}
func (m *D2Listing) clone() Msg { return &D2Listing{Keys: slices.Clone(m.Keys), Next: m.Next} }

func (*D2Drop) Type() Type               { return TypeD2Drop }
func (m *D2Drop) encode(b []byte) []byte { return putD2Auth(putID(b, 1, m.Key), 2, m.Auth) }
func (m *D2Drop) decodeField(d *decoder, f field) {
	switch f.num {
	case 1:
		m.Key = d.id(f)
	case 2:
		m.Auth = d.d2Auth(f)
	}
}
func (m *D2Drop) clone() Msg {
	c := *m
	c.Auth = m.Auth.clone()
	return &c
}

func (*D2Invite) Type() Type                  { return TypeD2Invite }
func (*D2Invite) encode(b []byte) []byte      { return b }
func (*D2Invite) decodeField(*decoder, field) {}
func (m *D2Invite) clone() Msg                { return new(*m) }

func (*D2Stat) Type() Type { return TypeD2Stat }
func (m *D2Stat) encode(b []byte) []byte {
	b = putID(b, 1, m.Key)
	return putBytes(b, 2, m.Hash)
}
func (m *D2Stat) decodeField(d *decoder, f field) {
	switch f.num {
	case 1:
		m.Key = d.id(f)
	case 2:
		m.Hash = d.boundedData(f, MaxD2Hash, "a hash")
	}
}
func (m *D2Stat) clone() Msg { return &D2Stat{Key: m.Key, Hash: bytes.Clone(m.Hash)} }

func (*D2Holders) Type() Type { return TypeD2Holders }
func (m *D2Holders) encode(b []byte) []byte {
	b = putID(b, 1, m.Key)
	for _, h := range m.Holders {
		b = appendTagBytes(b, 2)
		b = appendNested(b, func(b []byte) []byte {
			b = putD2Ref(b, 1, h.Node)
			return putUint(b, 2, uint64(h.State))
		})
	}
	return b
}
func (m *D2Holders) decodeField(d *decoder, f field) {
	switch f.num {
	case 1:
		m.Key = d.id(f)
	case 2:
		if len(m.Holders) >= MaxListLen {
			d.fail("more than %d holders", MaxListLen)
			return
		}
		var h D2Holder
		d.nested(f, func(g field) {
			switch g.num {
			case 1:
				h.Node = d.d2Ref(g)
			case 2:
				h.State = D2HolderState(d.uint32(g)) // d2client refuses an unknown state
			}
		})
		m.Holders = append(m.Holders, h)
	}
}
func (m *D2Holders) clone() Msg { return &D2Holders{Key: m.Key, Holders: slices.Clone(m.Holders)} }

func (*D2GetSpace) Type() Type                  { return TypeD2GetSpace }
func (*D2GetSpace) encode(b []byte) []byte      { return b }
func (*D2GetSpace) decodeField(*decoder, field) {}
func (m *D2GetSpace) clone() Msg                { return new(*m) }

func (*D2Space) Type() Type { return TypeD2Space }
func (m *D2Space) encode(b []byte) []byte {
	b = putBool(b, 1, m.Joined)
	b = putUint(b, 2, m.Capacity)
	b = putUint(b, 3, m.Usage)
	b = putUint(b, 4, uint64(m.Replicas))
	for _, a := range m.Distrusted {
		b = putString(b, 5, a)
	}
	return b
}
func (m *D2Space) decodeField(d *decoder, f field) {
	switch f.num {
	case 1:
		m.Joined = d.bool(f)
	case 2:
		m.Capacity = d.uint(f)
	case 3:
		m.Usage = d.uint(f)
	case 4:
		m.Replicas = d.uint32(f)
	case 5:
		if len(m.Distrusted) >= MaxD2Distrusted {
			d.fail("more than %d distrusted partners", MaxD2Distrusted)
			return
		}
		m.Distrusted = append(m.Distrusted, d.str(f, MaxAddrBytes))
	}
}
func (m *D2Space) clone() Msg {
	c := *m
	c.Distrusted = slices.Clone(m.Distrusted)
	return &c
}
