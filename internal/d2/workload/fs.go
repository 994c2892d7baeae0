package workload

import (
	"path"

	"triad/internal/d2/key"
)

// BlockBytes is D2-Store's block size (§3).
const BlockBytes = 8192

// dirEntryBytes is what a directory block spends on an entry beside its
// name: the 64-byte key, a 32-byte content hash, size and mode.
const dirEntryBytes = 100

// Node is a file or directory of a volume.
type Node struct {
	Path    string
	Dir     bool
	Size    int64    // bytes of a file; a directory's is its entries'
	Key     key.Key  // base key: block 0, version 0
	Version uint32   // the version its blocks are written at now
	Parent  int      // index of the parent directory; -1 for the root
	Deleted bool     // removed; the index is never reused
	slot    key.Slot // its slot in the parent
	// A directory's entries (indexes, live ones only), the slots they use
	// and the slot after the last one given.
	children []int
	used     map[key.Slot]bool
	hint     key.Slot
}

// FS gives a volume's files and directories their keys the way D2-FS does
// (§4): a name takes a free slot of its directory, starting after the last
// one given, so slots follow creation order; each file or directory takes
// the volume's next inode. It keeps no data, only names, sizes and keys.
type FS struct {
	Volume key.Volume
	Nodes  []Node // index 0 is the root; an index never changes
	byPath map[string]int
	inode  uint32
}

// NewFS creates the volume's root and then every entry of m, in order.
func NewFS(vol key.Volume, m *Manifest) *FS {
	fs := &FS{Volume: vol, byPath: map[string]int{"": 0}}
	fs.Nodes = append(fs.Nodes, Node{Dir: true, Key: key.Root(vol), Parent: -1, used: map[key.Slot]bool{}})
	for _, e := range m.Entries {
		parent := fs.Lookup(dirOf(e.Path))
		if parent < 0 {
			panic("workload: manifest entry before its directory: " + e.Path) // Parse checks this
		}
		fs.Create(parent, path.Base(e.Path), e.Dir, e.Size)
	}
	return fs
}

func dirOf(p string) string {
	d := path.Dir(p)
	if d == "." {
		return ""
	}
	return d
}

// Lookup is the index of the live node at path p ("" is the root), or -1.
func (fs *FS) Lookup(p string) int {
	i, ok := fs.byPath[p]
	if !ok {
		return -1
	}
	return i
}

// Create adds a file or directory named name to directory parent and
// returns its index. The caller makes sure the name is new.
func (fs *FS) Create(parent int, name string, dir bool, size int64) int {
	pd := &fs.Nodes[parent]
	s := key.FreeSlot(func(s key.Slot) bool { return pd.used[s] }, pd.hint)
	if s != key.Overflow {
		pd.used[s] = true
		pd.hint = s + 1
	}
	fs.inode++
	p := name
	if pd.Path != "" {
		p = pd.Path + "/" + name
	}
	n := Node{Path: p, Dir: dir, Size: size, Key: key.Child(pd.Key, s, name, fs.inode), Parent: parent, slot: s}
	if dir {
		n.used = map[key.Slot]bool{}
	}
	i := len(fs.Nodes)
	fs.Nodes = append(fs.Nodes, n)
	fs.byPath[p] = i
	pd = &fs.Nodes[parent] // append may have moved it
	pd.children = append(pd.children, i)
	pd.Size += int64(len(name) + dirEntryBytes)
	return i
}

// Delete removes file i from its directory: its slot is free again and
// its index stays dead.
func (fs *FS) Delete(i int) {
	n := &fs.Nodes[i]
	if n.Deleted || i == 0 {
		return
	}
	n.Deleted = true
	delete(fs.byPath, n.Path)
	pd := &fs.Nodes[n.Parent]
	if n.slot != key.Overflow {
		delete(pd.used, n.slot)
	}
	for j, c := range pd.children {
		if c == i {
			pd.children = append(pd.children[:j:j], pd.children[j+1:]...)
			break
		}
	}
	pd.Size -= int64(len(path.Base(n.Path)) + dirEntryBytes)
}

// Children is directory i's live entries, in creation order. The slice
// is the FS's: do not change it.
func (fs *FS) Children(i int) []int { return fs.Nodes[i].children }

// Blocks is the number of blocks node i has now: a file's size in 8 KB
// blocks, at least one (an empty file still has a block for its inode).
func (fs *FS) Blocks(i int) uint32 { return blocksOf(fs.Nodes[i].Size) }

func blocksOf(size int64) uint32 {
	if size <= BlockBytes {
		return 1
	}
	return uint32((size + BlockBytes - 1) / BlockBytes)
}

// BlockBytesOf is the bytes block b of node i holds.
func (fs *FS) BlockBytesOf(i int, b uint32) int32 {
	size := fs.Nodes[i].Size
	rest := size - int64(b)*BlockBytes
	switch {
	case rest >= BlockBytes:
		return BlockBytes
	case rest <= 0:
		return 0
	}
	return int32(rest)
}

// BlockKey is the key of block b of node i at its current version.
func (fs *FS) BlockKey(i int, b uint32) key.Key {
	n := &fs.Nodes[i]
	return n.Key.WithBlock(b, n.Version)
}

// Hashed counts the live nodes whose keys were placed by hash (paths past
// 12 levels or directories out of slots).
func (fs *FS) Hashed() int {
	c := 0
	for _, n := range fs.Nodes {
		if !n.Deleted && n.Key.Hashed() {
			c++
		}
	}
	return c
}
