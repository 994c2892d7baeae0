package merkle

import "github.com/google/btree"

// Mem is a Backend held in memory: nodes in a map, keys in a B-tree. The
// simulator's storage engine uses it, and Recompute builds one to check a
// stored tree.
type Mem struct {
	nodes map[Prefix]Node
	keys  *btree.BTreeG[string]
}

// NewMem returns an empty in-memory tree.
func NewMem() *Mem {
	return &Mem{
		nodes: make(map[Prefix]Node),
		keys:  btree.NewG(32, func(a, b string) bool { return a < b }),
	}
}

// Len returns the number of keys.
func (m *Mem) Len() int { return m.keys.Len() }

// Has reports whether key is in the tree.
func (m *Mem) Has(key []byte) bool { return m.keys.Has(string(key)) }

func (m *Mem) Node(p Prefix) (Node, bool) { n, ok := m.nodes[p]; return n, ok }
func (m *Mem) PutNode(n Node)             { m.nodes[n.Prefix] = n }
func (m *Mem) DeleteNode(p Prefix)        { delete(m.nodes, p) }

func (m *Mem) Children(p Prefix, fn func(Node)) {
	for d := 0; d < Fanout; d++ {
		if n, ok := m.nodes[p.Child(d)]; ok {
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

func (m *Mem) AddKey(key []byte) bool {
	_, had := m.keys.ReplaceOrInsert(string(key))
	return !had
}

func (m *Mem) RemoveKey(key []byte) bool {
	_, had := m.keys.Delete(string(key))
	return had
}
