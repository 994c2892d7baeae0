package merkle

// batch is the Backend an Update works through: it holds every node the
// update reads or writes in memory and writes each changed one to the
// backend once, at flush. Without it a batch of n keys read and rewrote
// the root, and each shared ancestor, n times: on a node's store that was
// most of a checkpoint's work (issue 46's profile: 15% of the CPU of a
// deployment creating files).
type batch struct {
	Backend
	nodes map[Prefix]cached
}

// cached is a node as the update left it: absent (never stored, or
// deleted), and whether it differs from the backend's.
type cached struct {
	n       Node
	ok      bool
	changed bool
}

func newBatch(b Backend) *batch { return &batch{Backend: b, nodes: map[Prefix]cached{}} }

func (b *batch) Node(p Prefix) (Node, bool) {
	c, seen := b.nodes[p]
	if !seen {
		c.n, c.ok = b.Backend.Node(p)
		b.nodes[p] = c
	}
	return c.n, c.ok
}

func (b *batch) PutNode(n Node) { b.nodes[n.Prefix] = cached{n: n, ok: true, changed: true} }

func (b *batch) DeleteNode(p Prefix) { b.nodes[p] = cached{changed: true} }

// Children lists the backend's children, so the changes are written
// first; only a node shrinking to a leaf asks (dropDescendants).
func (b *batch) Children(p Prefix, fn func(Node)) {
	b.flush()
	b.Backend.Children(p, fn)
}

// flush writes the changed nodes to the backend.
func (b *batch) flush() {
	for p, c := range b.nodes {
		if !c.changed {
			continue
		}
		if c.ok {
			b.Backend.PutNode(c.n)
		} else {
			b.Backend.DeleteNode(p)
		}
		c.changed = false
		b.nodes[p] = c
	}
}
