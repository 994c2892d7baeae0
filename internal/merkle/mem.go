package merkle

import (
	"math/bits"

	"github.com/google/btree"
)

// Mem is a Backend held in memory: nodes in a map, keys in a B-tree. The
// simulator's storage engine uses it, and Recompute builds one to check a
// stored tree.
type Mem struct {
	nodes map[Prefix]Node
	// kids has bit d set for each stored child p.Child(d) of p, so that
	// Children looks up only the children there are.
	kids map[Prefix]uint64
	keys *btree.BTreeG[string]
}

// NewMem returns an empty in-memory tree.
func NewMem() *Mem {
	return &Mem{
		nodes: make(map[Prefix]Node),
		kids:  make(map[Prefix]uint64),
		keys:  btree.NewG(32, func(a, b string) bool { return a < b }),
	}
}

// Len returns the number of keys.
func (m *Mem) Len() int { return m.keys.Len() }

// Has reports whether key is in the tree.
func (m *Mem) Has(key []byte) bool { return m.keys.Has(string(key)) }

func (m *Mem) Node(p Prefix) (Node, bool) { n, ok := m.nodes[p]; return n, ok }
func (m *Mem) PutNode(n Node) {
	m.nodes[n.Prefix] = n
	if n.Prefix.depth > 0 {
		parent := PrefixOf([]byte(n.Prefix.bits), n.Prefix.depth-1)
		m.kids[parent] |= 1 << lastDigit(n.Prefix)
	}
}

func (m *Mem) DeleteNode(p Prefix) {
	if _, ok := m.nodes[p]; !ok {
		return
	}
	delete(m.nodes, p)
	if p.depth > 0 {
		parent := PrefixOf([]byte(p.bits), p.depth-1)
		if k := m.kids[parent] &^ (1 << lastDigit(p)); k != 0 {
			m.kids[parent] = k
		} else {
			delete(m.kids, parent)
		}
	}
}

func (m *Mem) Children(p Prefix, fn func(Node)) {
	for k := m.kids[p]; k != 0; k &= k - 1 {
		if n, ok := m.nodes[p.Child(bits.TrailingZeros64(k))]; ok {
			fn(n)
		}
	}
}

func (m *Mem) Keys(p Prefix, fn func([]byte) bool) {
	m.keys.AscendGreaterOrEqual(p.bits, func(k string) bool {
		if !p.Contains([]byte(k)) {
			return false
		}
		return fn([]byte(k))
	})
}

// KeysFrom is Keys starting at the first key at or after from.
func (m *Mem) KeysFrom(p Prefix, from []byte, fn func([]byte) bool) {
	start := p.bits
	if string(from) > start {
		start = string(from)
	}
	m.keys.AscendGreaterOrEqual(start, func(k string) bool {
		if !p.Contains([]byte(k)) {
			return false
		}
		return fn([]byte(k))
	})
}

func (m *Mem) AddKey(key []byte) bool {
	_, had := m.keys.ReplaceOrInsert(string(key))
	return !had
}

func (m *Mem) RemoveKey(key []byte) bool {
	_, had := m.keys.Delete(string(key))
	return had
}
