package wire

import (
	"triad/internal/id"
)

// Passing Tone's Merkle synchronization (UsenetDHT §4.3). A node that
// maintains its replica range (Lo, Hi] pulls: it asks a neighbour for one
// node of the neighbour's Merkle tree at a time, restricted to that range,
// and walks down only where the hashes differ. Nothing is pushed onto the
// asker.

// Bounds of the synchronization messages.
const (
	MaxPrefixBytes = 32 // an encoded merkle.Prefix: its depth and digits
	MaxTreeKeys    = 64 // merkle.LeafMax: a leaf's keys
	MaxTreeKids    = 64 // merkle.Fanout: a node's children
	TreeHashBytes  = 32 // merkle.Hash
)

// TreeQuery asks for the node at Prefix of the receiver's Merkle tree, as
// seen from the ring arc (Lo, Hi] (Lo == Hi: the whole ring). The reply is a
// TreeInfo.
//
//wire:msg 128 node
type TreeQuery struct {
	Prefix []byte `wire:"1,max=MaxPrefixBytes"` // merkle.Prefix.Encode
	Lo     id.ID  `wire:"2"`
	Hi     id.ID  `wire:"3"`
}

// TreeInfo describes one node of a Merkle tree: its key count and hash,
// and either the keys under it that lie in the asked arc (a leaf: at most
// MaxTreeKeys) with their expiry times, or its non-empty children whose
// keys can lie in the arc.
//
//wire:msg 129 node
type TreeInfo struct {
	Count    uint64      `wire:"1"`
	Hash     []byte      `wire:"2,max=TreeHashBytes"` // TreeHashBytes, or empty for an empty tree
	Keys     []id.ID     `wire:"3,max=MaxTreeKeys"`
	Expiries []int64     `wire:"5,max=MaxTreeKeys"` // Unix nanoseconds, one per key; may be absent (0: unknown)
	Sizes    []uint64    `wire:"6,max=MaxTreeKeys"` // bytes, one per key; may be absent (0: unknown)
	Children []TreeChild `wire:"4,max=MaxTreeKids"`
}

// TreeChild is one child node: its prefix, key count and hash.
//
//wire:struct
type TreeChild struct {
	Prefix []byte `wire:"1,max=MaxPrefixBytes"`
	Count  uint64 `wire:"2"`
	Hash   []byte `wire:"3,max=TreeHashBytes"`
}

// GetMaintStatus asks a node for its maintenance status; the reply is a
// MaintStatus.
//
//wire:msg 130 client
type GetMaintStatus struct{}

// MaintStatus is a node's maintenance status: whether it is paused, its
// counters by name, and each vnode's state.
//
//wire:msg 131 node
type MaintStatus struct {
	Paused   bool         `wire:"1"`
	Counters []Counter    `wire:"2,max=MaxCounters"`
	Vnodes   []MaintVnode `wire:"3,max=MaxVnodes"`
}

// Counter is one named counter.
//
//wire:struct
type Counter struct {
	Name  string `wire:"1,max=MaxCounterName"`
	Value uint64 `wire:"2"`
}

// MaintVnode is one vnode's maintenance state.
//
//wire:struct
type MaintVnode struct {
	Self NodeRef `wire:"1"`
	// The neighbours of its last round.
	Succ       NodeRef `wire:"2,noid"`
	Pred       NodeRef `wire:"3,noid"`
	LastRound  int64   `wire:"4"` // when its last round ended, Unix nanoseconds; 0: none yet
	Running    bool    `wire:"5"` // a round is in progress
	Queued     uint64  `wire:"6"` // keys the round in progress has yet to fetch
	QueuedSize uint64  `wire:"7"` // their bytes, as far as the neighbours said
}

// MaintControl pauses (Pause) or resumes maintenance on a node; the reply
// is an Ack.
//
//wire:msg 132 operator
type MaintControl struct {
	Pause bool `wire:"1"`
}

// Bounds of the status messages.
const (
	MaxCounters    = 64
	MaxCounterName = 64
)

// Audit asks a replica-set member to prove that it holds the bytes of Key:
// the reply is an AuditProof whose Hash is SHA-256(Nonce ‖ the object's
// stored bytes), which the asker, holding the same whole copy, computes
// too. A fresh random Nonce makes the proof impossible to give without
// the bytes (UsenetDHT trusts neighbours' Merkle trees; this checks them).
//
//wire:msg 133 node
type Audit struct {
	Key   id.ID  `wire:"1"`
	Nonce []byte `wire:"2,max=AuditNonceBytes"` // AuditNonceBytes
}

// AuditProof answers an Audit: Held false says the key is not stored;
// otherwise Hash is SHA-256(Nonce ‖ bytes), AuditHashBytes long.
//
//wire:msg 134 node
type AuditProof struct {
	Held bool   `wire:"1"`
	Hash []byte `wire:"2,max=AuditHashBytes"`
}

// Bounds of the audit messages.
const (
	AuditNonceBytes = 16
	AuditHashBytes  = 32
)
