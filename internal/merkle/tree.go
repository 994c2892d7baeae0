package merkle

import (
	"crypto/sha256"
	"sort"

	"triad/internal/id"
)

// Hash is a SHA-256 digest. The zero Hash stands for an empty subtree.
type Hash [32]byte

// Node is one node of the tree: its prefix, how many keys lie under it and
// its hash. A node with at most LeafMax keys is a leaf and hashes its keys;
// a bigger one hashes its 64 children.
type Node struct {
	Prefix Prefix
	Count  uint64
	Hash   Hash
}

// Leaf reports whether n is a leaf.
func (n Node) Leaf() bool { return n.Count <= LeafMax }

// Reader is read access to a stored tree: its nodes addressed by prefix and
// its keys in order.
type Reader interface {
	// Node returns the stored node at p, if any. Only non-empty nodes that
	// are the root, or children of an internal node, are stored.
	Node(p Prefix) (Node, bool)
	// Children calls fn for each stored child of p, in digit order.
	Children(p Prefix, fn func(Node))
	// Keys calls fn for each key under p in ascending order until fn
	// returns false.
	Keys(p Prefix, fn func(key []byte) bool)
}

// Backend is a Reader that can also be changed. Update drives it.
type Backend interface {
	Reader
	PutNode(n Node)
	DeleteNode(p Prefix)
	// AddKey adds key and reports whether it was absent.
	AddKey(key []byte) bool
	// RemoveKey removes key and reports whether it was present.
	RemoveKey(key []byte) bool
}

// Update adds and removes keys and brings every node hash up to date. Work
// is proportional to the nodes on the changed keys' paths, and each shared
// ancestor is written, and its hash computed, once per call (batch.go), so
// callers should batch.
func Update(b Backend, add, remove [][]byte) {
	dirty := make(map[Prefix]struct{})
	nb := newBatch(b)
	for _, k := range add {
		if nb.AddKey(k) {
			insertPath(nb, k, dirty)
		}
	}
	for _, k := range remove {
		if nb.RemoveKey(k) {
			removePath(nb, k, dirty)
		}
	}
	nb.flush()
	rehash(b, dirty)
}

func insertPath(b Backend, key []byte, dirty map[Prefix]struct{}) {
	for depth := 0; ; depth++ {
		p := PrefixOf(key, depth)
		n, _ := b.Node(p)
		n.Prefix = p
		n.Count++
		b.PutNode(n)
		dirty[p] = struct{}{}
		switch {
		case n.Count <= LeafMax:
			return
		case n.Count == LeafMax+1 && p.CanSplit(len(key)):
			split(b, p, len(key), dirty)
			return
		case !p.CanSplit(len(key)):
			return
		}
	}
}

// split turns the leaf at p, which has just grown past LeafMax, into an
// internal node by storing its children (and theirs, if all keys share a
// digit).
func split(b Backend, p Prefix, width int, dirty map[Prefix]struct{}) {
	var counts [Fanout]uint64
	b.Keys(p, func(k []byte) bool {
		counts[Digit(k, p.depth)]++
		return true
	})
	for d, c := range counts {
		if c == 0 {
			continue
		}
		child := p.Child(d)
		b.PutNode(Node{Prefix: child, Count: c})
		dirty[child] = struct{}{}
		if c > LeafMax && child.CanSplit(width) {
			split(b, child, width, dirty)
		}
	}
}

func removePath(b Backend, key []byte, dirty map[Prefix]struct{}) {
	for depth := 0; ; depth++ {
		p := PrefixOf(key, depth)
		n, ok := b.Node(p)
		if !ok {
			return // a broken tree; rehash of the ancestors repairs the hashes
		}
		n.Count--
		switch {
		case n.Count == 0:
			b.DeleteNode(p)
			delete(dirty, p)
			return
		case n.Count == LeafMax:
			dropDescendants(b, p, dirty)
		}
		b.PutNode(n)
		dirty[p] = struct{}{}
		if n.Leaf() || !p.CanSplit(len(key)) {
			return
		}
	}
}

// dropDescendants deletes the stored nodes below p, which has just shrunk
// to a leaf.
func dropDescendants(b Backend, p Prefix, dirty map[Prefix]struct{}) {
	var kids []Prefix
	b.Children(p, func(n Node) { kids = append(kids, n.Prefix) })
	for _, c := range kids {
		dropDescendants(b, c, dirty)
		b.DeleteNode(c)
		delete(dirty, c)
	}
}

// rehash recomputes the dirty nodes deepest first, so each sees its
// children's final hashes.
func rehash(b Backend, dirty map[Prefix]struct{}) {
	order := make([]Prefix, 0, len(dirty))
	for p := range dirty {
		order = append(order, p)
	}
	sort.Slice(order, func(i, j int) bool { return order[i].depth > order[j].depth })
	for _, p := range order {
		n, ok := b.Node(p)
		if !ok {
			continue
		}
		n.Hash = hashNode(b, n)
		b.PutNode(n)
	}
}

func hashNode(r Reader, n Node) Hash {
	h := sha256.New()
	if n.Leaf() {
		h.Write([]byte{0})
		r.Keys(n.Prefix, func(k []byte) bool {
			h.Write(k)
			return true
		})
	} else {
		var kids [Fanout]Hash
		r.Children(n.Prefix, func(c Node) {
			kids[lastDigit(c.Prefix)] = c.Hash
		})
		h.Write([]byte{1})
		for i := range kids {
			h.Write(kids[i][:])
		}
	}
	var out Hash
	h.Sum(out[:0])
	return out
}

func lastDigit(p Prefix) int { return Digit([]byte(p.bits), p.depth-1) }

// Lookup returns the node at p in the canonical tree over r's keys. When p
// lies below a stored leaf, the node is computed from the leaf's keys, so a
// peer may ask about any prefix and get the answer its own tree would give.
func Lookup(r Reader, p Prefix) Node {
	if n, ok := r.Node(p); ok {
		return n
	}
	n := Node{Prefix: p}
	r.Keys(p, func([]byte) bool {
		n.Count++
		return n.Count <= LeafMax
	})
	if n.Count > 0 {
		n.Hash = hashNode(r, n)
	}
	return n
}

// Children returns the non-empty children of p, in digit order. It is empty
// when p is a leaf.
func Children(r Reader, p Prefix) []Node {
	if n := Lookup(r, p); n.Leaf() {
		return nil
	}
	var out []Node
	r.Children(p, func(n Node) { out = append(out, n) })
	return out
}

// KeysInRange returns up to max keys under p that lie in the ring arc
// (lo, hi], which may wrap past zero; lo == hi means the whole ring.
func KeysInRange(r Reader, p Prefix, lo, hi id.ID, max int) []id.ID {
	var out []id.ID
	keysInRange(r, p, lo, hi, max, &out)
	return out
}

// keysInRange descends only into the children of internal nodes that meet
// the arc, so that finding a few keys of a narrow arc in a big tree reads
// a path, not every key.
func keysInRange(r Reader, p Prefix, lo, hi id.ID, max int, out *[]id.ID) {
	if len(*out) >= max || !p.OverlapsArc(lo, hi) {
		return
	}
	if n, ok := r.Node(p); ok && !n.Leaf() {
		r.Children(p, func(c Node) { keysInRange(r, c.Prefix, lo, hi, max, out) })
		return
	}
	// In an arc that does not wrap, keys come in order: start at lo when
	// the backend can, and stop past hi.
	ordered := lo.Cmp(hi) < 0
	visit := func(k []byte) bool {
		x, err := id.FromBytes(k)
		if err != nil || x.Width() != lo.Width() {
			return true
		}
		if ordered && x.Cmp(hi) > 0 {
			return false
		}
		if x.In(lo, hi) {
			*out = append(*out, x)
		}
		return len(*out) < max
	}
	if kf, ok := r.(keysFromReader); ok && ordered {
		kf.KeysFrom(p, lo.Bytes(), visit)
		return
	}
	r.Keys(p, visit)
}

// keysFromReader is a Reader that can start listing a prefix's keys at a
// given key (Mem can).
type keysFromReader interface {
	// KeysFrom is Keys from the first key under p at or after from.
	KeysFrom(p Prefix, from []byte, fn func(key []byte) bool)
}

// Recompute builds a fresh tree over keys in memory and returns its root,
// for checking a stored tree against the key set it should cover.
func Recompute(keys [][]byte) Node {
	m := NewMem()
	Update(m, keys, nil)
	return Lookup(m, Root())
}

// Verify checks that every stored node under p has the count and hash its
// children or keys imply, returning the first bad prefix.
func Verify(r Reader, p Prefix) (bad Prefix, ok bool) {
	n, stored := r.Node(p)
	if !stored {
		return Prefix{}, true
	}
	var count uint64
	r.Keys(p, func([]byte) bool { count++; return true })
	if count != n.Count || hashNode(r, n) != n.Hash {
		return p, false
	}
	if !n.Leaf() {
		var kids []Prefix
		r.Children(p, func(c Node) { kids = append(kids, c.Prefix) })
		for _, c := range kids {
			if bad, ok := Verify(r, c); !ok {
				return bad, false
			}
		}
	}
	return Prefix{}, true
}
