package wire

import "triad/internal/id"

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
// MaxTreeKeys) or its non-empty children whose keys can lie in the arc.
type TreeInfo struct {
	Count    uint64
	Hash     []byte // TreeHashBytes, or empty for an empty tree
	Keys     []id.ID
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

func (*TreeInfo) Type() Type { return TypeTreeInfo }
func (m *TreeInfo) encode(b []byte) []byte {
	b = putUint(b, 1, m.Count)
	b = putBytes(b, 2, m.Hash)
	for _, k := range m.Keys {
		b = putID(b, 3, k)
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
	}
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
