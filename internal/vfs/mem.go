package vfs

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// MemFS is a file system in memory that remembers, beside what a running
// process sees, what a power cut would leave: each file's data as of its
// last Sync, and each directory's entries as of its last SyncDir.
// CrashClone returns that durable state as a new MemFS, and OnSync hands
// it to a test just before every sync, so a test can crash a workload at
// each of its sync points. Paths are taken relative to one root, with or
// without a leading slash. Safe for concurrent use.
type MemFS struct {
	mu     sync.Mutex
	root   *memNode
	onSync func(crashed *MemFS)
}

// memNode is a file or a directory. A node renamed or removed keeps its
// data: open files still use it, and a directory synced before the move
// still names it.
type memNode struct {
	dir  bool
	perm fs.FileMode

	data, synced []byte // a file's bytes now, and as of its last Sync

	kids, syncedKids map[string]*memNode // a directory's entries now, and as of its last SyncDir
}

// NewMem returns an empty MemFS: a root directory, durable, with nothing in it.
func NewMem() *MemFS {
	return &MemFS{root: newDir(0o755)}
}

func newDir(perm fs.FileMode) *memNode {
	return &memNode{dir: true, perm: perm, kids: map[string]*memNode{}, syncedKids: map[string]*memNode{}}
}

// OnSync makes fn run at every sync of a file or a directory, before the
// sync takes effect, with the file system a power cut at that moment
// leaves. fn runs with m locked, and one sync at a time: it must not use m.
// nil stops it.
func (m *MemFS) OnSync(fn func(crashed *MemFS)) {
	m.mu.Lock()
	m.onSync = fn
	m.mu.Unlock()
}

// CrashClone returns what a power cut now would leave: a new MemFS holding
// the directory entries and file data synced so far, and nothing else.
func (m *MemFS) CrashClone() *MemFS {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.crashClone()
}

// crashClone is CrashClone with m.mu held. A node named by two synced
// entries (renamed after its old directory was synced, before the new
// one was) stays one node.
func (m *MemFS) crashClone() *MemFS {
	seen := map[*memNode]*memNode{}
	var clone func(n *memNode) *memNode
	clone = func(n *memNode) *memNode {
		if c := seen[n]; c != nil {
			return c
		}
		if !n.dir {
			c := &memNode{perm: n.perm, data: bytes.Clone(n.synced), synced: bytes.Clone(n.synced)}
			seen[n] = c
			return c
		}
		c := newDir(n.perm)
		seen[n] = c
		for name, k := range n.syncedKids {
			ck := clone(k)
			c.kids[name] = ck
			c.syncedKids[name] = ck
		}
		return c
	}
	return &MemFS{root: clone(m.root)}
}

// String lists every file and directory, durable or not, with each file's
// size and synced size, for test failures.
func (m *MemFS) String() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var b strings.Builder
	var walk func(n *memNode, path string)
	walk = func(n *memNode, path string) {
		for _, name := range slices.Sorted(maps.Keys(n.kids)) {
			k, p := n.kids[name], path+"/"+name
			_, durable := n.syncedKids[name]
			mark := ""
			if !durable {
				mark = " (entry not synced)"
			}
			if k.dir {
				fmt.Fprintf(&b, "%s/%s\n", p, mark)
				walk(k, p)
			} else {
				fmt.Fprintf(&b, "%s %d bytes, %d synced%s\n", p, len(k.data), len(k.synced), mark)
			}
		}
	}
	walk(m.root, "")
	return b.String()
}

// split cleans name into its components under the root.
func split(name string) []string {
	name = filepath.ToSlash(filepath.Clean("/" + name))
	if name == "/" {
		return nil
	}
	return strings.Split(name[1:], "/")
}

// lookup returns the directory holding name and name's last component;
// the directory is nil if a parent is missing. m.mu is held.
func (m *MemFS) lookup(op, name string) (dir *memNode, base string, err error) {
	parts := split(name)
	if len(parts) == 0 {
		return nil, "", &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	dir = m.root
	for _, p := range parts[:len(parts)-1] {
		k := dir.kids[p]
		if k == nil {
			return nil, "", &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
		}
		if !k.dir {
			return nil, "", &fs.PathError{Op: op, Path: name, Err: syscall.ENOTDIR}
		}
		dir = k
	}
	return dir, parts[len(parts)-1], nil
}

// node returns the node at name. m.mu is held.
func (m *MemFS) node(op, name string) (*memNode, error) {
	if len(split(name)) == 0 {
		return m.root, nil
	}
	dir, base, err := m.lookup(op, name)
	if err != nil {
		return nil, err
	}
	n := dir.kids[base]
	if n == nil {
		return nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
	}
	return n, nil
}

const accessModes = os.O_RDONLY | os.O_WRONLY | os.O_RDWR

// OpenFile implements FS.
func (m *MemFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	if flag&^(accessModes|os.O_CREATE|os.O_EXCL|os.O_TRUNC) != 0 {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fmt.Errorf("vfs: flags %#x not supported", flag)}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	dir, base, err := m.lookup("open", name)
	if err != nil {
		return nil, err
	}
	n := dir.kids[base]
	switch {
	case n != nil && flag&os.O_CREATE != 0 && flag&os.O_EXCL != 0:
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrExist}
	case n == nil && flag&os.O_CREATE == 0:
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	case n == nil:
		n = &memNode{perm: perm}
		dir.kids[base] = n
	case n.dir:
		return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.EISDIR}
	}
	f := &memFile{fs: m, n: n, name: name}
	switch flag & accessModes {
	case os.O_RDONLY:
		f.read = true
	case os.O_WRONLY:
		f.write = true
	default:
		f.read, f.write = true, true
	}
	if flag&os.O_TRUNC != 0 && f.write {
		n.data = n.data[:0:0]
	}
	return f, nil
}

// Remove implements FS.
func (m *MemFS) Remove(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	dir, base, err := m.lookup("remove", name)
	if err != nil {
		return err
	}
	n := dir.kids[base]
	switch {
	case n == nil:
		return &fs.PathError{Op: "remove", Path: name, Err: fs.ErrNotExist}
	case n.dir && len(n.kids) > 0:
		return &fs.PathError{Op: "remove", Path: name, Err: syscall.ENOTEMPTY}
	}
	delete(dir.kids, base)
	return nil
}

// Rename implements FS.
func (m *MemFS) Rename(oldname, newname string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	from, fromBase, err := m.lookup("rename", oldname)
	if err != nil {
		return err
	}
	n := from.kids[fromBase]
	if n == nil {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: fs.ErrNotExist}
	}
	to, toBase, err := m.lookup("rename", newname)
	if err != nil {
		return err
	}
	if old := to.kids[toBase]; old != nil && old != n && (old.dir || n.dir) {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: fs.ErrExist}
	}
	delete(from.kids, fromBase)
	to.kids[toBase] = n
	return nil
}

// MkdirAll implements FS.
func (m *MemFS) MkdirAll(dir string, perm fs.FileMode) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.root
	for _, p := range split(dir) {
		k := n.kids[p]
		if k == nil {
			k = newDir(perm)
			n.kids[p] = k
		} else if !k.dir {
			return &fs.PathError{Op: "mkdir", Path: dir, Err: syscall.ENOTDIR}
		}
		n = k
	}
	return nil
}

// ReadDir implements FS.
func (m *MemFS) ReadDir(dir string) ([]fs.DirEntry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.node("readdir", dir)
	if err != nil {
		return nil, err
	}
	if !n.dir {
		return nil, &fs.PathError{Op: "readdir", Path: dir, Err: syscall.ENOTDIR}
	}
	var out []fs.DirEntry
	for _, name := range slices.Sorted(maps.Keys(n.kids)) {
		out = append(out, fs.FileInfoToDirEntry(n.kids[name].info(name)))
	}
	return out, nil
}

// Stat implements FS.
func (m *MemFS) Stat(name string) (fs.FileInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.node("stat", name)
	if err != nil {
		return nil, err
	}
	return n.info(filepath.Base(name)), nil
}

// SyncDir implements FS.
func (m *MemFS) SyncDir(dir string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.node("sync", dir)
	if err != nil {
		return err
	}
	if !n.dir {
		return &fs.PathError{Op: "sync", Path: dir, Err: syscall.ENOTDIR}
	}
	m.syncPoint()
	n.syncedKids = make(map[string]*memNode, len(n.kids))
	for name, k := range n.kids {
		n.syncedKids[name] = k
	}
	return nil
}

// syncPoint runs the OnSync hook. m.mu is held.
func (m *MemFS) syncPoint() {
	if m.onSync != nil {
		m.onSync(m.crashClone())
	}
}

func (n *memNode) info(name string) fs.FileInfo {
	return memInfo{name: name, size: int64(len(n.data)), dir: n.dir, perm: n.perm}
}

type memInfo struct {
	name string
	size int64
	dir  bool
	perm fs.FileMode
}

func (i memInfo) Name() string { return i.name }
func (i memInfo) Size() int64  { return i.size }
func (i memInfo) Mode() fs.FileMode {
	if i.dir {
		return fs.ModeDir | i.perm
	}
	return i.perm
}
func (i memInfo) ModTime() time.Time { return time.Time{} }
func (i memInfo) IsDir() bool        { return i.dir }
func (i memInfo) Sys() any           { return nil }

// memFile is an open file of a MemFS.
type memFile struct {
	fs          *MemFS
	n           *memNode
	name        string
	read, write bool
	closed      bool
}

// check returns why op may not run on f, or nil. f.fs.mu is held.
func (f *memFile) check(op string, write bool) error {
	switch {
	case f.closed:
		return &fs.PathError{Op: op, Path: f.name, Err: fs.ErrClosed}
	case write && !f.write, !write && !f.read:
		return &fs.PathError{Op: op, Path: f.name, Err: syscall.EBADF}
	}
	return nil
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("read", false); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, &fs.PathError{Op: "read", Path: f.name, Err: fs.ErrInvalid}
	}
	if off >= int64(len(f.n.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.n.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *memFile) WriteAt(p []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("write", true); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, &fs.PathError{Op: "write", Path: f.name, Err: fs.ErrInvalid}
	}
	if end := off + int64(len(p)); end > int64(len(f.n.data)) {
		f.n.data = append(f.n.data, make([]byte, end-int64(len(f.n.data)))...)
	}
	return copy(f.n.data[off:], p), nil
}

func (f *memFile) Truncate(size int64) error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("truncate", true); err != nil {
		return err
	}
	if size < 0 {
		return &fs.PathError{Op: "truncate", Path: f.name, Err: fs.ErrInvalid}
	}
	if size <= int64(len(f.n.data)) {
		f.n.data = f.n.data[:size]
	} else {
		f.n.data = append(f.n.data, make([]byte, size-int64(len(f.n.data)))...)
	}
	return nil
}

func (f *memFile) Sync() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.closed {
		return &fs.PathError{Op: "sync", Path: f.name, Err: fs.ErrClosed}
	}
	f.fs.syncPoint()
	f.n.synced = bytes.Clone(f.n.data)
	return nil
}

func (f *memFile) Stat() (fs.FileInfo, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.closed {
		return nil, &fs.PathError{Op: "stat", Path: f.name, Err: fs.ErrClosed}
	}
	return f.n.info(filepath.Base(f.name)), nil
}

func (f *memFile) Close() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.closed {
		return &fs.PathError{Op: "close", Path: f.name, Err: fs.ErrClosed}
	}
	f.closed = true
	return nil
}

func (f *memFile) Fd() uintptr { return InvalidFd }
