package d2fs

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"time"

	"triad/internal/d2/key"
)

// Attr is what stat reports of an inode.
type Attr struct {
	Ino   uint64 // the inode number of its key: stable across renames and remounts
	Type  Type
	Mode  uint32 // permission bits
	Uid   uint32
	Gid   uint32
	Size  uint64
	Mtime time.Time
	Nlink uint32 // 1, 2 for a directory, 0 once unlinked
}

// SetAttr says which attributes Setattr changes (nil: unchanged).
type SetAttr struct {
	Mode  *uint32
	Uid   *uint32
	Gid   *uint32
	Size  *uint64
	Mtime *time.Time
}

// DirEntry is one name of a listing.
type DirEntry struct {
	Name string
	Ino  uint64
	Type Type
}

// Key is the base key of an inode's blocks.
func (n *Inode) Key() key.Key { return n.e.Base }

// Attr returns n's attributes.
func (f *FS) Attr(n *Inode) Attr {
	f.mu.Lock()
	defer f.mu.Unlock()
	return attrOf(n)
}

func attrOf(n *Inode) Attr {
	a := Attr{Ino: uint64(n.e.Base.Inode()), Type: n.e.Type, Mode: n.e.Mode, Uid: n.e.Uid, Gid: n.e.Gid,
		Size: n.e.Size, Mtime: time.Unix(0, n.e.Mtime), Nlink: 1}
	switch {
	case n.unlinked:
		a.Nlink = 0
	case n.e.Type == TypeDir:
		a.Nlink = 2
	}
	return a
}

// begin takes the lock for an operation; write says it changes the tree.
func (f *FS) begin(write bool) error {
	f.mu.Lock()
	switch {
	case f.closed:
		f.mu.Unlock()
		return fmt.Errorf("%w: volume unmounted", errIO)
	case write && f.ro:
		f.mu.Unlock()
		return errReadOnly
	case write && f.lease.lost:
		f.mu.Unlock()
		return ErrLeaseLost
	}
	return nil
}

// dirOf loads d's entries, checking it is a directory.
func (f *FS) dirOf(ctx context.Context, d *Inode) error {
	if d.e.Type != TypeDir {
		return syscall.ENOTDIR
	}
	if d.unlinked {
		return syscall.ENOENT
	}
	return f.loadDir(ctx, d)
}

// Lookup finds name in directory d.
func (f *FS) Lookup(ctx context.Context, d *Inode, name string) (*Inode, error) {
	if err := f.begin(false); err != nil {
		return nil, err
	}
	defer f.mu.Unlock()
	return f.lookup(ctx, d, name)
}

func (f *FS) lookup(ctx context.Context, d *Inode, name string) (*Inode, error) {
	if len(name) > MaxNameBytes {
		return nil, errNameTooLong
	}
	if err := f.dirOf(ctx, d); err != nil {
		return nil, err
	}
	c, ok := d.children[name]
	if !ok {
		return nil, syscall.ENOENT
	}
	return c, nil
}

// Walk follows a slash-separated path from the root, without following
// symlinks.
func (f *FS) Walk(ctx context.Context, path string) (*Inode, error) {
	n := f.root
	for _, name := range strings.Split(path, "/") {
		if name == "" {
			continue
		}
		var err error
		if n, err = f.Lookup(ctx, n, name); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	return n, nil
}

// ReadDir lists directory d by name.
func (f *FS) ReadDir(ctx context.Context, d *Inode) ([]DirEntry, error) {
	if err := f.begin(false); err != nil {
		return nil, err
	}
	defer f.mu.Unlock()
	if err := f.dirOf(ctx, d); err != nil {
		return nil, err
	}
	var out []DirEntry
	for _, c := range entriesOf(d) {
		out = append(out, DirEntry{Name: c.e.Name, Ino: uint64(c.e.Base.Inode()), Type: c.e.Type})
	}
	return out, nil
}

// Create makes an empty file in d.
func (f *FS) Create(ctx context.Context, d *Inode, name string, mode, uid, gid uint32) (*Inode, error) {
	return f.add(ctx, d, Entry{Name: name, Type: TypeFile, Mode: mode & 0o7777, Uid: uid, Gid: gid})
}

// Mkdir makes an empty directory in d.
func (f *FS) Mkdir(ctx context.Context, d *Inode, name string, mode, uid, gid uint32) (*Inode, error) {
	return f.add(ctx, d, Entry{Name: name, Type: TypeDir, Mode: mode & 0o7777, Uid: uid, Gid: gid})
}

// Symlink makes a symlink in d.
func (f *FS) Symlink(ctx context.Context, d *Inode, name, target string, uid, gid uint32) (*Inode, error) {
	switch {
	case len(target) > MaxTargetBytes:
		return nil, errNameTooLong
	case target == "" || strings.IndexByte(target, 0) >= 0:
		return nil, errInvalid
	}
	return f.add(ctx, d, Entry{Name: name, Type: TypeSymlink, Mode: 0o777, Uid: uid, Gid: gid, Size: uint64(len(target)), Target: target})
}

// add puts a new entry in d: a free slot of d and a key derived from
// d's (§4), so a directory's files sit next to each other on the ring.
func (f *FS) add(ctx context.Context, d *Inode, e Entry) (*Inode, error) {
	if err := checkName(e.Name); err != nil {
		return nil, err
	}
	if err := f.begin(true); err != nil {
		return nil, err
	}
	defer f.mu.Unlock()
	if err := f.dirOf(ctx, d); err != nil {
		return nil, err
	}
	if _, ok := d.children[e.Name]; ok {
		return nil, syscall.EEXIST
	}
	if f.nextIno == ^uint32(0) {
		return nil, syscall.ENOSPC
	}
	ino := f.nextIno
	f.nextIno++
	e.Slot = f.freeSlot(d)
	e.Base = key.Child(d.e.Base, e.Slot, e.Name, ino)
	if e.Base.Hashed() {
		f.stats.Hashed++
	}
	now := f.cfg.Now().UnixNano()
	e.Mtime = now
	n := &Inode{e: e, parent: d}
	if e.Type == TypeFile {
		n.loaded = true
	}
	if e.Type == TypeDir {
		n.children, n.slots = map[string]*Inode{}, map[key.Slot]bool{}
	}
	f.link(d, n)
	d.e.Mtime = now
	f.touched(d)
	return n, nil
}

// freeSlot picks a slot unused in d (key.Overflow when all are taken).
func (f *FS) freeSlot(d *Inode) key.Slot {
	s := key.FreeSlot(func(s key.Slot) bool { return s > f.maxSlot || d.slots[s] }, d.hint)
	if s != key.Overflow {
		d.hint = s + 1
	}
	return s
}

// link puts n in d under n.e.Name; unlink takes it out.
func (f *FS) link(d, n *Inode) {
	d.children[n.e.Name] = n
	if n.e.Slot != key.Overflow {
		d.slots[n.e.Slot] = true
	}
	n.parent = d
	inDelta(n)
	f.pending(n)
	f.changed(d)
}

func (f *FS) unlink(d, n *Inode) {
	inDelta(n)
	delete(d.children, n.e.Name)
	if n.e.Slot != key.Overflow {
		delete(d.slots, n.e.Slot)
	}
	n.parent = nil
	f.changed(d)
}

// remove unlinks n for good: its blocks are deleted after the next commit.
func (f *FS) remove(d, n *Inode) {
	f.unlink(d, n)
	f.dropSize(n)
	n.unlinked = true
	f.unlinked = append(f.unlinked, n)
	f.dirtyBytes -= int64(len(n.dirty)) * int64(f.dataBytes)
}

// Unlink removes a file or symlink from d.
func (f *FS) Unlink(ctx context.Context, d *Inode, name string) error {
	return f.removeName(ctx, d, name, false)
}

// Rmdir removes an empty directory from d.
func (f *FS) Rmdir(ctx context.Context, d *Inode, name string) error {
	return f.removeName(ctx, d, name, true)
}

func (f *FS) removeName(ctx context.Context, d *Inode, name string, dir bool) error {
	if err := f.begin(true); err != nil {
		return err
	}
	defer f.mu.Unlock()
	n, err := f.lookup(ctx, d, name)
	if err != nil {
		return err
	}
	switch {
	case dir && n.e.Type != TypeDir:
		return syscall.ENOTDIR
	case !dir && n.e.Type == TypeDir:
		return syscall.EISDIR
	}
	if dir {
		if err := f.loadDir(ctx, n); err != nil {
			return err
		}
		if len(n.children) > 0 {
			return syscall.ENOTEMPTY
		}
	}
	f.remove(d, n)
	d.e.Mtime = f.cfg.Now().UnixNano()
	f.touched(d)
	return nil
}

// Rename moves od/oname to nd/nname, replacing what nname named unless
// noReplace. The moved inode keeps its key (§4): the new entry points at
// the blocks where they are. It takes a new slot in nd if it changes
// directory.
func (f *FS) Rename(ctx context.Context, od *Inode, oname string, nd *Inode, nname string, noReplace bool) error {
	if err := checkName(nname); err != nil {
		return err
	}
	if err := f.begin(true); err != nil {
		return err
	}
	defer f.mu.Unlock()
	n, err := f.lookup(ctx, od, oname)
	if err != nil {
		return err
	}
	if err := f.dirOf(ctx, nd); err != nil {
		return err
	}
	for a := nd; a != nil; a = a.parent {
		if a == n {
			return errInvalid // into itself
		}
	}
	if old, ok := nd.children[nname]; ok {
		if old == n {
			return nil
		}
		if err := f.replaceable(ctx, old, n, noReplace); err != nil {
			return err
		}
		f.remove(nd, old)
	}
	f.unlink(od, n)
	n.e.Name = nname
	if nd != od {
		n.e.Slot = f.freeSlot(nd)
	}
	f.link(nd, n)
	now := f.cfg.Now().UnixNano()
	od.e.Mtime, nd.e.Mtime = now, now
	f.touched(od)
	f.touched(nd)
	return nil
}

// replaceable says whether a rename may replace old with n.
func (f *FS) replaceable(ctx context.Context, old, n *Inode, noReplace bool) error {
	switch {
	case noReplace:
		return syscall.EEXIST
	case old.e.Type == TypeDir && n.e.Type != TypeDir:
		return syscall.EISDIR
	case old.e.Type != TypeDir && n.e.Type == TypeDir:
		return syscall.ENOTDIR
	case old.e.Type == TypeDir:
		if err := f.loadDir(ctx, old); err != nil {
			return err
		}
		if len(old.children) > 0 {
			return syscall.ENOTEMPTY
		}
	}
	return nil
}

// Readlink returns a symlink's target.
func (f *FS) Readlink(n *Inode) (string, error) {
	if err := f.begin(false); err != nil {
		return "", err
	}
	defer f.mu.Unlock()
	if n.e.Type != TypeSymlink {
		return "", errInvalid
	}
	return n.e.Target, nil
}

// Setattr changes n's mode, owner, size (truncate) or mtime.
func (f *FS) Setattr(ctx context.Context, n *Inode, s SetAttr) error {
	if err := f.begin(true); err != nil {
		return err
	}
	defer f.mu.Unlock()
	if s.Size != nil {
		if err := f.truncate(ctx, n, *s.Size); err != nil {
			return err
		}
	}
	if s.Mode != nil && n.e.Type != TypeSymlink {
		n.e.Mode = *s.Mode & 0o7777
	}
	if s.Uid != nil {
		n.e.Uid = *s.Uid
	}
	if s.Gid != nil {
		n.e.Gid = *s.Gid
	}
	if s.Mtime != nil {
		n.e.Mtime = s.Mtime.UnixNano()
	}
	f.touched(n)
	return nil
}
