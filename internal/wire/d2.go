package wire

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"

	"triad/internal/id"
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
//
//wire:struct
type D2Ref struct {
	Node NodeRef `wire:"1"`
	Pos  id.ID   `wire:"2"`
}

// IsZero reports whether r names no node.
func (r D2Ref) IsZero() bool { return r.Node.IsZero() && r.Pos.IsZero() }

// D2Join tells the receiver that Self believes it is the receiver's
// predecessor: a join, and every stabilization after it (Chord's
// stabilize and notify in one round trip). The reply is a D2Neighbors.
//
//wire:msg 384 node
type D2Join struct {
	Self D2Ref `wire:"1"`
}

// D2GetNeighbors asks for the receiver's neighbours, links, load and the
// median key of its range; the reply is a D2Neighbors.
//
//wire:msg 385 node
type D2GetNeighbors struct{}

// D2Neighbors is a node's view of its place on the ring: its predecessors
// and successors (nearest first), its long links (by node-count distance,
// nearest first), its primary load (blocks) and the median key of its range
// (zero when it holds fewer than two).
//
//wire:msg 386 node
type D2Neighbors struct {
	Self   D2Ref   `wire:"1"`
	Preds  []D2Ref `wire:"2"`
	Succs  []D2Ref `wire:"3"`
	Links  []D2Ref `wire:"4"`
	Load   uint64  `wire:"5"`
	Median id.ID   `wire:"6"`
}

// D2FindSucc is one step of an iterative lookup of Key; the reply is a
// D2Next.
//
//wire:msg 387 node
type D2FindSucc struct {
	Key id.ID `wire:"1"`
}

// D2Next answers D2FindSucc: Done with the key's owner (its successor),
// the owner's range (Lo, Owner.Pos] and the owner's successors; or the
// Next node to ask.
//
//wire:msg 388 node
type D2Next struct {
	Done  bool    `wire:"1"`
	Owner D2Ref   `wire:"2"`
	Lo    id.ID   `wire:"3"`
	Succs []D2Ref `wire:"4"`
	Next  D2Ref   `wire:"5"`
}

// D2Leave tells a neighbour that the sender leaves its position (for good,
// or to rejoin elsewhere), with its lists so the neighbour can close the
// gap at once. One-way.
//
//wire:msg 389 node
type D2Leave struct {
	Preds []D2Ref `wire:"1"`
	Succs []D2Ref `wire:"2"`
}

// D2Store stores a block at the receiver. Primary asks the receiver, the
// key's owner, to store it on its successors too (the reply counts the
// copies); otherwise it is one replica. The reply is a D2StoreDone.
//
//wire:msg 390 node
type D2Store struct {
	Key     id.ID  `wire:"1"`
	Data    []byte `wire:"2,max=MaxD2Block"`
	Primary bool   `wire:"3"`
	// Replace stores Data in place of what the receiver holds under Key
	// (the owner decided a D2Put's mode; replicas follow it).
	Replace bool `wire:"4"`
	// Mode and Prev, with Primary, are the client's D2Put's: the owner
	// decides the put by them. Without Primary, they and Auth are the
	// copy's D2Proof: the writer's consent the receiver checks. A gateway relays a client's put this way,
	// a node-to-node message, once it has checked the put's D2Auth: a
	// client cannot reach the owner's decision without that check.
	Mode D2PutMode `wire:"5"`
	Prev []byte    `wire:"6,max=MaxD2Hash"`
	// Version orders the copies of a key that was replaced: the owner
	// stamps each block it decides to store with a version greater than
	// any it knows of the key (Unix nanoseconds, the stored copy's engine
	// expiry), and a replica keeps the greater of its own and this one.
	// Zero: the receiver stamps the block itself (a block never
	// replaced).
	Version uint64 `wire:"7"`
	// Auth, with Primary, is the client's D2Put's consent: the owner
	// checks it again (a node certificate does not stand for the volume's
	// writer), and refuses the decision without it.
	Auth D2Auth `wire:"8"`
	// Field 9 was Vouched (an owner's word that a replica could stop
	// doubting the owner's whole range): retired, not to be reused. A
	// majority vouching for one key says nothing of the range's other keys
	// (internal/d2's settle.go).

	// ConfirmTo and Tag, on an owner's copy to a replica, name the
	// gateway that relayed the put and its tag for it: the replica, once
	// the copy is stored, tells that gateway itself (D2Kept), so the
	// gateway need not ask it afterwards (internal/d2's verify.go). A
	// gateway's relayed put carries its own address and tag here for the
	// owner to pass on.
	ConfirmTo string `wire:"10,max=MaxAddrBytes"`
	Tag       uint64 `wire:"11"`
}

// D2Kept is a replica's word to the gateway a D2Store named
// (ConfirmTo): it stored the block Key whose SHA-256 is Hash, for the
// gateway's put Tag. The gateway counts it for the sender its connection
// names, never for a node the message names. One-way.
//
//wire:msg 409 node
type D2Kept struct {
	Key  id.ID  `wire:"1"`
	Hash []byte `wire:"2,max=MaxD2Hash"`
	Tag  uint64 `wire:"3"`
}

// D2StoreDone answers a store or a delete: the copies stored (or removed),
// or NotMine when the receiver does not own the key (its cached owner was
// stale).
//
//wire:msg 391 node
type D2StoreDone struct {
	Copies  uint32 `wire:"1"`
	NotMine bool   `wire:"2"`
	// Conflict: the put's condition (D2Put.Mode) did not hold at the
	// owner, or the key holds other bytes and the put may not replace
	// them; nothing was stored.
	Conflict bool `wire:"3"`
	// Holders, in an owner's answer to a relayed put, are the nodes it
	// stored the block on (itself, then its successors): the gateway asks
	// each for the block and counts only the distinct machines that have
	// it (internal/d2's verify.go).
	Holders []NodeRef `wire:"4"`
}

// D2Fetch asks the receiver for the block Key. Local: only from its own
// engine, never through a pointer it holds. Hash, if set, is the content
// hash the bytes must have. The reply is a D2Block.
//
//wire:msg 392 node big
type D2Fetch struct {
	Key   id.ID  `wire:"1"`
	Hash  []byte `wire:"2,max=MaxD2Hash"`
	Local bool   `wire:"3"`
	// NoData asks only whether the receiver has the block: the D2Block
	// says Found without the bytes (a D2Stat's check of a holder).
	NoData bool `wire:"4"`
}

// D2Block answers a fetch or a get: the block's bytes when Found, or
// NotMine when the receiver does not own the key.
//
//wire:msg 393 node
type D2Block struct {
	Key     id.ID  `wire:"1"`
	Data    []byte `wire:"2,max=MaxD2Block"`
	Found   bool   `wire:"3"`
	NotMine bool   `wire:"4"`
	// Version is the found copy's (D2Store.Version); zero when unknown.
	Version uint64 `wire:"5"`
	// Unsure says the sender cannot vouch for its answer: the key came
	// into its replicas through failures, not from its holders, and its
	// earlier holders may hold a newer copy (internal/d2's doubt.go).
	Unsure bool `wire:"6"`
	// Proof is the volume writer's consent the sender holds the copy
	// with (a node-to-node fetch's answer): the node that takes the copy
	// checks it, so that a copy moves between nodes without a node being
	// able to forge one.
	Proof D2Proof `wire:"7"`
}

// D2Proof is the volume writer's consent to a block's bytes, as the
// owner took it with the client's put: the put's mode, the hash it
// expected (D2PutIfHash) and the signature. A block keeps it with its
// bytes, and every copy of the block carries it (a replica's, a sync's
// push, a pointer's fetch), so that each node checks the writer's
// signature over the bytes it is asked to keep.
//
//wire:struct
type D2Proof struct {
	Mode D2PutMode `wire:"1"`
	Prev []byte    `wire:"2,max=MaxD2Hash"`
	Auth D2Auth    `wire:"3"`
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

// D2Pointer is a block pointer (§6): Key is held by Holder, Size bytes.
//
//wire:struct
type D2Pointer struct {
	Key    id.ID   `wire:"1"`
	Holder NodeRef `wire:"2"`
	Size   uint64  `wire:"3"`
}

// D2Pointers hands block pointers to their new owner; the reply is an Ack.
//
//wire:msg 394 node
type D2Pointers struct {
	Pointers []D2Pointer `wire:"1,max=MaxD2Pointers"`
}

// D2Keys asks for up to Max keys whose blocks the receiver holds in the arc
// (Lo, Hi], in ring order from Lo (with Pointers, the keys it holds
// pointers to as well); Last asks for the greatest key it holds there,
// block or pointer, only. The reply is a D2KeyList.
//
//wire:msg 395 node
type D2Keys struct {
	Lo       id.ID  `wire:"1"`
	Hi       id.ID  `wire:"2"`
	Max      uint32 `wire:"3"`
	Last     bool   `wire:"4"`
	Pointers bool   `wire:"5"`
}

// D2KeyList is a list of keys, in ring order; More is set when the arc held
// more than were sent.
//
//wire:msg 396 node
type D2KeyList struct {
	Keys []id.ID `wire:"1,max=MaxD2Keys"`
	More bool    `wire:"2"`
	// Versions, when set, has one entry per key: the version of the
	// block the sender holds (D2Store.Version; zero for a pointer). Sync
	// compares them, so that a replace that missed a replica is repaired.
	Versions []uint64 `wire:"3,max=MaxD2Keys"`
	// Unsure says the sender cannot vouch for the arc asked (D2Block's
	// Unsure).
	Unsure bool `wire:"4"`
}

// D2Put asks a node to store Data under Key on the key's r successors; the
// reply is a D2StoreDone once they have. Mode says what may be replaced; the
// key's owner decides it, one put at a time per key, so a conditional put
// is atomic with respect to every other put of the key that reaches the
// same owner.
//
//wire:msg 397 client
type D2Put struct {
	Key  id.ID     `wire:"1"`
	Data []byte    `wire:"2,max=MaxD2Block"`
	Mode D2PutMode `wire:"3"`
	// Prev is the SHA-256 the key's current block must have (D2PutIfHash).
	Prev []byte `wire:"4,max=MaxD2Hash"`
	// Auth is the volume writer's consent, needed by every mode (only a
	// registry key's D2PutIfAbsent goes without; see internal/d2/auth.go).
	Auth D2Auth `wire:"5"`
}

// D2Auth is a volume writer's consent to one write (a put of any mode,
// or a delete): the volume's ed25519 public key
// (the key's first 20 bytes are derived from it), an expiry and the
// signature of internal/d2/key's Grant over the request. A node that
// takes such a request from a client refuses it, changing nothing,
// unless its D2Auth verifies (RELIABILITY E3).
//
//wire:struct
type D2Auth struct {
	Pub     []byte `wire:"1,max=MaxD2AuthKey"`
	Expires uint64 `wire:"2"` // Unix nanoseconds
	Sig     []byte `wire:"3,max=MaxD2AuthSig"`
	// Signed is the key the writer signed when the request's key is its
	// block placement (internal/d2/key.PlaceBlock), empty otherwise.
	Signed []byte `wire:"4,max=MaxD2AuthSigned"`
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
//
//wire:msg 398 client big
type D2Get struct {
	Key  id.ID  `wire:"1"`
	Hash []byte `wire:"2,max=MaxD2Hash"`
}

// D2Delete asks a node to delete Key from its successors; the reply is a
// D2StoreDone counting the copies removed. Auth is the volume writer's
// consent.
//
//wire:msg 399 client
type D2Delete struct {
	Key  id.ID  `wire:"1"`
	Auth D2Auth `wire:"2"`
}

// D2Latest asks a node for the greatest stored key that starts with
// Prefix; the reply is a D2Block with that key and its bytes (Found false:
// none).
//
//wire:msg 400 client
type D2Latest struct {
	Prefix []byte `wire:"1,max=MaxD2Prefix"`
}

// D2List asks a node for the stored keys that start with Prefix, after
// After (zero: from the first), at most Max (0: MaxD2Keys), in key order.
// The reply is a D2Listing: the keys, from one owner's range, and the
// After of the next request (zero: no more). A client lists a volume's
// keys with it (triad fs fsck finds orphaned blocks).
//
//wire:msg 405 client
type D2List struct {
	Prefix []byte `wire:"1,max=MaxD2Prefix"`
	After  id.ID  `wire:"2"`
	Max    uint32 `wire:"3"`
}

// D2Listing answers a D2List.
//
//wire:msg 406 node
type D2Listing struct {
	Keys []id.ID `wire:"1,max=MaxD2Keys"`
	Next id.ID   `wire:"2"` // the next request's After; zero when the listing is done
}

// D2Drop asks the receiver, a replica of Key, to delete its copy; the
// reply is a D2StoreDone.
//
//wire:msg 401 node
type D2Drop struct {
	Key id.ID `wire:"1"`
	// Auth is the volume writer's signed delete of Key (the client's
	// D2Delete's): a holder drops a copy only with it.
	Auth D2Auth `wire:"2"`
}

// D2Invite tells a node that the sender, which sampled it, carries more
// than t times its load: the receiver checks for itself and may move to
// take half (either side of a probe may start a move, §6). One-way.
//
//wire:msg 402 node
type D2Invite struct{}

// D2Stat asks a node which nodes hold Key: the key's r holders by
// placement (its owner, then the owner's successors) and whether each
// holds a copy whose SHA-256 is Hash. The reply is a D2Holders. It is the
// client API's view of a block's replicas (triad fs stat): D2's lookups
// and fetches are node-to-node messages, which a node refuses from a
// client.
//
//wire:msg 403 client
type D2Stat struct {
	Key  id.ID  `wire:"1"`
	Hash []byte `wire:"2,max=MaxD2Hash"`
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
//
//wire:struct
type D2Holder struct {
	Node  D2Ref         `wire:"1"`
	State D2HolderState `wire:"2"`
}

// D2Holders answers a D2Stat: Key's holders in placement order, the owner
// first.
//
//wire:msg 404 node
type D2Holders struct {
	Key     id.ID      `wire:"1"`
	Holders []D2Holder `wire:"2,max=MaxListLen"`
}

// D2GetSpace asks a node about its D2 store: its engine's room and whether
// it is on the ring. The reply is a D2Space. It is the client API's view of
// the free space under a volume (df on a D2-FS mount) and of a node's join
// (triad fs status); the node answers it from its own engine, joined or not.
//
//wire:msg 407 client
type D2GetSpace struct{}

// D2Space answers a D2GetSpace: the node's D2 engine's Capacity (bytes its
// segment files may take; 0: no bound set, as a node started without
// --capacity-mb, which only its disk limits) and Usage (bytes they take),
// the ring's Replicas (r, the copies of each block), and Joined: D2 there
// is on the ring (false: still joining, d2.ErrNotJoined). Distrusted are
// the replica partners the node found lacking blocks they had
// acknowledged (internal/d2's audit.go), at most MaxD2Distrusted. Primary
// is the node's primary load (the keys, blocks and pointers, in its own
// range; D2 §6 balances it) and Held all the keys it holds, primary and
// replica.
//
//wire:msg 408 node
type D2Space struct {
	Joined     bool     `wire:"1"`
	Capacity   uint64   `wire:"2"`
	Usage      uint64   `wire:"3"`
	Replicas   uint32   `wire:"4"`
	Distrusted []string `wire:"5,max=MaxD2Distrusted,each=MaxAddrBytes"`
	Primary    uint64   `wire:"6"`
	Held       uint64   `wire:"7"`
}

// MaxD2Distrusted bounds D2Space.Distrusted.
const MaxD2Distrusted = 16

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
