package wire

import (
	"bytes"

	"google.golang.org/protobuf/encoding/protowire"

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
type TreeQuery struct {
	Prefix []byte // merkle.Prefix.Encode
	Lo, Hi id.ID
}

// TreeInfo describes one node of a Merkle tree: its key count and hash,
// and either the keys under it that lie in the asked arc (a leaf: at most
// MaxTreeKeys) with their expiry times, or its non-empty children whose
// keys can lie in the arc.
type TreeInfo struct {
	Count    uint64
	Hash     []byte // TreeHashBytes, or empty for an empty tree
	Keys     []id.ID
	Expiries []int64  // Unix nanoseconds, one per key; may be absent (0: unknown)
	Sizes    []uint64 // bytes, one per key; may be absent (0: unknown)
	Children []TreeChild
}

// TreeChild is one child node: its prefix, key count and hash.
type TreeChild struct {
	Prefix []byte
	Count  uint64
	Hash   []byte
}

func (*TreeQuery) Type() Type { return TypeTreeQuery }
func (m *TreeQuery) encode(b []byte) []byte {
	b = putBytes(b, 1, m.Prefix)
	b = putID(b, 2, m.Lo)
	return putID(b, 3, m.Hi)
}
func (m *TreeQuery) decodeField(d *decoder, f field) {
	switch f.num {
	case 1:
		m.Prefix = d.boundedBytes(f, MaxPrefixBytes)
	case 2:
		m.Lo = d.id(f)
	case 3:
		m.Hi = d.id(f)
	}
}
func (m *TreeQuery) clone() Msg {
	return &TreeQuery{Prefix: bytes.Clone(m.Prefix), Lo: m.Lo, Hi: m.Hi}
}

func (*TreeInfo) Type() Type { return TypeTreeInfo }
func (m *TreeInfo) encode(b []byte) []byte {
	b = putUint(b, 1, m.Count)
	b = putBytes(b, 2, m.Hash)
	for _, k := range m.Keys {
		b = putID(b, 3, k)
	}
	for _, e := range m.Expiries {
		// Every one, zero too: they pair with Keys by position.
		b = protowire.AppendTag(b, 5, protowire.VarintType)
		b = protowire.AppendVarint(b, protowire.EncodeZigZag(e))
	}
	for _, s := range m.Sizes {
		// Every one, zero too, as Expiries.
		b = protowire.AppendTag(b, 6, protowire.VarintType)
		b = protowire.AppendVarint(b, s)
	}
	for _, c := range m.Children {
		b = appendTagBytes(b, 4)
		b = appendNested(b, func(b []byte) []byte {
			b = putBytes(b, 1, c.Prefix)
			b = putUint(b, 2, c.Count)
			return putBytes(b, 3, c.Hash)
		})
	}
	return b
}
func (m *TreeInfo) decodeField(d *decoder, f field) {
	switch f.num {
	case 1:
		m.Count = d.uint(f)
	case 2:
		m.Hash = d.boundedBytes(f, TreeHashBytes)
	case 3:
		if len(m.Keys) >= MaxTreeKeys {
			d.fail("more than %d keys", MaxTreeKeys)
			return
		}
		m.Keys = append(m.Keys, d.id(f))
	case 4:
		if len(m.Children) >= MaxTreeKids {
			d.fail("more than %d children", MaxTreeKids)
			return
		}
		var c TreeChild
		d.nested(f, func(g field) {
			switch g.num {
			case 1:
				c.Prefix = d.boundedBytes(g, MaxPrefixBytes)
			case 2:
				c.Count = d.uint(g)
			case 3:
				c.Hash = d.boundedBytes(g, TreeHashBytes)
			}
		})
		m.Children = append(m.Children, c)
	case 5:
		if len(m.Expiries) >= MaxTreeKeys {
			d.fail("more than %d expiry times", MaxTreeKeys)
			return
		}
		m.Expiries = append(m.Expiries, d.int(f))
	case 6:
		if len(m.Sizes) >= MaxTreeKeys {
			d.fail("more than %d sizes", MaxTreeKeys)
			return
		}
		m.Sizes = append(m.Sizes, d.uint(f))
	}
}
func (m *TreeInfo) clone() Msg {
	c := &TreeInfo{Count: m.Count, Hash: bytes.Clone(m.Hash), Keys: append([]id.ID(nil), m.Keys...),
		Expiries: append([]int64(nil), m.Expiries...), Sizes: append([]uint64(nil), m.Sizes...)}
	for _, k := range m.Children {
		c.Children = append(c.Children, TreeChild{Prefix: bytes.Clone(k.Prefix), Count: k.Count, Hash: bytes.Clone(k.Hash)})
	}
	return c
}

// boundedBytes copies a bytes field of at most max bytes out of the frame.
func (d *decoder) boundedBytes(f field, max int) []byte {
	b := d.bytes(f)
	if len(b) > max {
		d.fail("field %d: %d bytes > %d", f.num, len(b), max)
		return nil
	}
	return append([]byte(nil), b...)
}

// GetMaintStatus asks a node for its maintenance status; the reply is a
// MaintStatus.
type GetMaintStatus struct{}

// MaintStatus is a node's maintenance status: whether it is paused, its
// counters by name, and each vnode's state.
type MaintStatus struct {
	Paused   bool
	Counters []Counter
	Vnodes   []MaintVnode
}

// Counter is one named counter.
type Counter struct {
	Name  string
	Value uint64
}

// MaintVnode is one vnode's maintenance state.
type MaintVnode struct {
	Self       NodeRef
	Succ, Pred NodeRef // the neighbours of its last round
	LastRound  int64   // when its last round ended, Unix nanoseconds; 0: none yet
	Running    bool    // a round is in progress
	Queued     uint64  // keys the round in progress has yet to fetch
	QueuedSize uint64  // their bytes, as far as the neighbours said
}

// MaintControl pauses (Pause) or resumes maintenance on a node; the reply
// is an Ack.
type MaintControl struct{ Pause bool }

// Bounds of the status messages.
const (
	MaxCounters    = 64
	MaxCounterName = 64
)

func (*GetMaintStatus) Type() Type                  { return TypeGetMaintStatus }
func (*GetMaintStatus) encode(b []byte) []byte      { return b }
func (*GetMaintStatus) decodeField(*decoder, field) {}
func (m *GetMaintStatus) clone() Msg                { return new(*m) }

func (*MaintControl) Type() Type               { return TypeMaintControl }
func (m *MaintControl) encode(b []byte) []byte { return putBool(b, 1, m.Pause) }
func (m *MaintControl) decodeField(d *decoder, f field) {
	if f.num == 1 {
		m.Pause = d.bool(f)
	}
}
func (m *MaintControl) clone() Msg { return new(*m) }

// putCounters appends counters as repeated Counter {1: name, 2: value}.
func putCounters(b []byte, num protowire.Number, counters []Counter) []byte {
	for _, c := range counters {
		b = appendTagBytes(b, num)
		b = appendNested(b, func(b []byte) []byte {
			b = putString(b, 1, c.Name)
			return putUint(b, 2, c.Value)
		})
	}
	return b
}

// counter appends one repeated Counter element, bounding the list.
func (d *decoder) counter(list []Counter, f field) []Counter {
	if len(list) >= MaxCounters {
		d.fail("more than %d counters", MaxCounters)
		return list
	}
	var c Counter
	d.nested(f, func(g field) {
		switch g.num {
		case 1:
			c.Name = d.str(g, MaxCounterName)
		case 2:
			c.Value = d.uint(g)
		}
	})
	return append(list, c)
}

func (*MaintStatus) Type() Type { return TypeMaintStatus }
func (m *MaintStatus) encode(b []byte) []byte {
	b = putBool(b, 1, m.Paused)
	b = putCounters(b, 2, m.Counters)
	for _, v := range m.Vnodes {
		b = appendTagBytes(b, 3)
		b = appendNested(b, func(b []byte) []byte {
			b = putNode(b, 1, v.Self)
			b = putNode(b, 2, v.Succ)
			b = putNode(b, 3, v.Pred)
			b = putInt(b, 4, v.LastRound)
			b = putBool(b, 5, v.Running)
			b = putUint(b, 6, v.Queued)
			return putUint(b, 7, v.QueuedSize)
		})
	}
	return b
}
func (m *MaintStatus) decodeField(d *decoder, f field) {
	switch f.num {
	case 1:
		m.Paused = d.bool(f)
	case 2:
		m.Counters = d.counter(m.Counters, f)
	case 3:
		if len(m.Vnodes) >= MaxVnodes {
			d.fail("more than %d vnodes", MaxVnodes)
			return
		}
		var v MaintVnode
		d.nested(f, func(g field) {
			switch g.num {
			case 1:
				v.Self = d.node(g)
			case 2:
				v.Succ = d.nodeRef(g)
			case 3:
				v.Pred = d.nodeRef(g)
			case 4:
				v.LastRound = d.int(g)
			case 5:
				v.Running = d.bool(g)
			case 6:
				v.Queued = d.uint(g)
			case 7:
				v.QueuedSize = d.uint(g)
			}
		})
		m.Vnodes = append(m.Vnodes, v)
	}
}
func (m *MaintStatus) clone() Msg {
	return &MaintStatus{Paused: m.Paused, Counters: append([]Counter(nil), m.Counters...),
		Vnodes: append([]MaintVnode(nil), m.Vnodes...)}
}

// Audit asks a replica-set member to prove that it holds the bytes of Key:
// the reply is an AuditProof whose Hash is SHA-256(Nonce ‖ the object's
// stored bytes), which the asker, holding the same whole copy, computes
// too. A fresh random Nonce makes the proof impossible to give without
// the bytes (UsenetDHT trusts neighbours' Merkle trees; this checks them).
type Audit struct {
	Key   id.ID
	Nonce []byte // AuditNonceBytes
}

// AuditProof answers an Audit: Held false says the key is not stored;
// otherwise Hash is SHA-256(Nonce ‖ bytes), AuditHashBytes long.
type AuditProof struct {
	Held bool
	Hash []byte
}

// Bounds of the audit messages.
const (
	AuditNonceBytes = 16
	AuditHashBytes  = 32
)

func (*Audit) Type() Type { return TypeAudit }
func (m *Audit) encode(b []byte) []byte {
	b = putID(b, 1, m.Key)
	return putBytes(b, 2, m.Nonce)
}
func (m *Audit) decodeField(d *decoder, f field) {
	switch f.num {
	case 1:
		m.Key = d.id(f)
	case 2:
		m.Nonce = d.boundedBytes(f, AuditNonceBytes)
	}
}
func (m *Audit) clone() Msg { return &Audit{Key: m.Key, Nonce: bytes.Clone(m.Nonce)} }

func (*AuditProof) Type() Type { return TypeAuditProof }
func (m *AuditProof) encode(b []byte) []byte {
	b = putBool(b, 1, m.Held)
	return putBytes(b, 2, m.Hash)
}
func (m *AuditProof) decodeField(d *decoder, f field) {
	switch f.num {
	case 1:
		m.Held = d.bool(f)
	case 2:
		m.Hash = d.boundedBytes(f, AuditHashBytes)
	}
}
func (m *AuditProof) clone() Msg { return &AuditProof{Held: m.Held, Hash: bytes.Clone(m.Hash)} }
