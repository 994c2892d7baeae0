package d2fs

import (
	"context"
	"crypto/ed25519"
	"errors"
	"log/slog"
	"os"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"triad/internal/d2/key"
)

// node is a mounted inode: go-fuse's Inode bound to ours. The kernel's
// node IDs map to inode numbers (StableAttr.Ino), which a renamed file
// keeps, so open files follow renames.
type node struct {
	fs.Inode
	d *FS
	n *Inode
}

// What node answers; the rest of go-fuse's Node interfaces it does not
// implement answer ENOSYS, or go-fuse's default.
var (
	_ fs.NodeLookuper      = (*node)(nil)
	_ fs.NodeGetattrer     = (*node)(nil)
	_ fs.NodeSetattrer     = (*node)(nil)
	_ fs.NodeReaddirer     = (*node)(nil)
	_ fs.NodeMkdirer       = (*node)(nil)
	_ fs.NodeRmdirer       = (*node)(nil)
	_ fs.NodeCreater       = (*node)(nil)
	_ fs.NodeOpener        = (*node)(nil)
	_ fs.NodeReader        = (*node)(nil)
	_ fs.NodeWriter        = (*node)(nil)
	_ fs.NodeFlusher       = (*node)(nil)
	_ fs.NodeFsyncer       = (*node)(nil)
	_ fs.NodeReleaser      = (*node)(nil)
	_ fs.NodeUnlinker      = (*node)(nil)
	_ fs.NodeRenamer       = (*node)(nil)
	_ fs.NodeSymlinker     = (*node)(nil)
	_ fs.NodeReadlinker    = (*node)(nil)
	_ fs.NodeStatfser      = (*node)(nil)
	_ fs.NodeLinker        = (*node)(nil)
	_ fs.NodeMknoder       = (*node)(nil)
	_ fs.NodeGetxattrer    = (*node)(nil)
	_ fs.NodeSetxattrer    = (*node)(nil)
	_ fs.NodeListxattrer   = (*node)(nil)
	_ fs.NodeRemovexattrer = (*node)(nil)
	_ fs.NodeAllocater     = (*node)(nil)
)

// errno is the errno FUSE answers for err: the one it wraps, else EIO.
func errno(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	var e syscall.Errno
	if errors.As(err, &e) {
		return e
	}
	return syscall.EIO
}

func typeMode(t Type) uint32 {
	switch t {
	case TypeDir:
		return syscall.S_IFDIR
	case TypeSymlink:
		return syscall.S_IFLNK
	}
	return syscall.S_IFREG
}

func fillAttr(out *fuse.Attr, a Attr) {
	out.Ino = a.Ino
	out.Size = a.Size
	out.Blocks = (a.Size + 511) / 512
	out.Blksize = BlockBytes
	out.Mode = typeMode(a.Type) | a.Mode
	out.Nlink = a.Nlink
	out.Owner = fuse.Owner{Uid: a.Uid, Gid: a.Gid}
	out.SetTimes(&a.Mtime, &a.Mtime, &a.Mtime)
}

// child binds an inode of ours to a go-fuse Inode (the existing one if
// the kernel knows its number) and fills out.
func (x *node) child(ctx context.Context, c *Inode, out *fuse.EntryOut) *fs.Inode {
	a := x.d.Attr(c)
	fillAttr(&out.Attr, a)
	return x.NewInode(ctx, &node{d: x.d, n: c}, fs.StableAttr{Mode: typeMode(a.Type), Ino: a.Ino})
}

func owner(ctx context.Context) (uid, gid uint32) {
	if c, ok := fuse.FromContext(ctx); ok {
		return c.Uid, c.Gid
	}
	return 0, 0
}

// Lookup implements fs.NodeLookuper.
func (x *node) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	c, err := x.d.Lookup(ctx, x.n, name)
	if err != nil {
		return nil, errno(err)
	}
	return x.child(ctx, c, out), 0
}

// Getattr implements fs.NodeGetattrer; it answers for unlinked files
// still open too.
func (x *node) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	fillAttr(&out.Attr, x.d.Attr(x.n))
	return 0
}

// Setattr implements fs.NodeSetattrer: truncate, chmod, chown, utimens
// (atime is not kept).
func (x *node) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	var s SetAttr
	if v, ok := in.GetSize(); ok {
		s.Size = &v
	}
	if v, ok := in.GetMode(); ok {
		s.Mode = &v
	}
	if v, ok := in.GetUID(); ok {
		s.Uid = &v
	}
	if v, ok := in.GetGID(); ok {
		s.Gid = &v
	}
	if v, ok := in.GetMTime(); ok {
		s.Mtime = &v
	}
	if err := x.d.Setattr(ctx, x.n, s); err != nil {
		return errno(err)
	}
	fillAttr(&out.Attr, x.d.Attr(x.n))
	return 0
}

// Readdir implements fs.NodeReaddirer: the entries sorted by name.
func (x *node) Readdir(ctx context.Context) (fs.DirStream, syscall.Errno) {
	ents, err := x.d.ReadDir(ctx, x.n)
	if err != nil {
		return nil, errno(err)
	}
	out := make([]fuse.DirEntry, len(ents))
	for i, e := range ents {
		out[i] = fuse.DirEntry{Name: e.Name, Ino: e.Ino, Mode: typeMode(e.Type)}
	}
	return fs.NewListDirStream(out), 0
}

// Mkdir implements fs.NodeMkdirer.
func (x *node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	uid, gid := owner(ctx)
	c, err := x.d.Mkdir(ctx, x.n, name, mode, uid, gid)
	if err != nil {
		return nil, errno(err)
	}
	return x.child(ctx, c, out), 0
}

// Rmdir implements fs.NodeRmdirer.
func (x *node) Rmdir(ctx context.Context, name string) syscall.Errno {
	return errno(x.d.Rmdir(ctx, x.n, name))
}

// Create implements fs.NodeCreater.
func (x *node) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	uid, gid := owner(ctx)
	c, err := x.d.Create(ctx, x.n, name, mode, uid, gid)
	if err != nil {
		return nil, nil, 0, errno(err)
	}
	x.d.Opened(c)
	return x.child(ctx, c, out), nil, keepCache(x.d.ro), 0
}

// Open implements fs.NodeOpener. There are no file handles: reads and
// writes go to the inode.
func (x *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if flags&syscall.O_TRUNC != 0 && flags&syscall.O_ACCMODE != syscall.O_RDONLY {
		zero := uint64(0)
		if err := x.d.Setattr(ctx, x.n, SetAttr{Size: &zero}); err != nil {
			return nil, 0, errno(err)
		}
	}
	x.d.Opened(x.n)
	return nil, keepCache(x.d.ro), 0
}

// keepCache is the open flags that let the kernel keep a file's pages
// from one open to the next: on a writable mount, where every change of
// a file goes through this mount's page cache, not on a read-only one,
// whose files change at a refresh.
func keepCache(readOnly bool) uint32 {
	if readOnly {
		return 0
	}
	return fuse.FOPEN_KEEP_CACHE
}

// Read implements fs.NodeReader.
func (x *node) Read(ctx context.Context, f fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	n, err := x.d.ReadAt(ctx, x.n, dest, off)
	if err != nil {
		return nil, errno(err)
	}
	return fuse.ReadResultData(dest[:n]), 0
}

// Write implements fs.NodeWriter.
func (x *node) Write(ctx context.Context, f fs.FileHandle, data []byte, off int64) (uint32, syscall.Errno) {
	n, err := x.d.WriteAt(ctx, x.n, data, off)
	if err != nil {
		return 0, errno(err)
	}
	return uint32(n), 0
}

// Flush implements fs.NodeFlusher: the close of a changed file commits
// (close-to-open; FS.Flushed), unless the mount is Lazy.
func (x *node) Flush(ctx context.Context, f fs.FileHandle) syscall.Errno {
	return errno(x.d.Flushed(ctx, x.n))
}

// Fsync implements fs.NodeFsyncer: it commits every change of the volume.
func (x *node) Fsync(ctx context.Context, f fs.FileHandle, flags uint32) syscall.Errno {
	return errno(x.d.Sync(ctx))
}

// Release implements fs.NodeReleaser: the last release of an unlinked
// file lets its blocks go.
func (x *node) Release(ctx context.Context, f fs.FileHandle) syscall.Errno {
	x.d.Released(x.n)
	return 0
}

// Unlink implements fs.NodeUnlinker.
func (x *node) Unlink(ctx context.Context, name string) syscall.Errno {
	return errno(x.d.Unlink(ctx, x.n, name))
}

// Rename implements fs.NodeRenamer: RENAME_NOREPLACE is kept,
// RENAME_EXCHANGE answers ENOTSUP.
func (x *node) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	const noReplace, exchange = 1, 2 // RENAME_NOREPLACE, RENAME_EXCHANGE
	if flags&^noReplace != 0 || flags&exchange != 0 {
		return syscall.ENOTSUP
	}
	np, ok := newParent.(*node)
	if !ok {
		return syscall.EXDEV
	}
	if err := x.d.Rename(ctx, x.n, name, np.n, newName, flags&noReplace != 0); err != nil {
		return errno(err)
	}
	return errno(x.d.Durable(ctx)) // no close follows a rename (an editor's save)
}

// Symlink implements fs.NodeSymlinker.
func (x *node) Symlink(ctx context.Context, target, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	uid, gid := owner(ctx)
	c, err := x.d.Symlink(ctx, x.n, name, target, uid, gid)
	if err != nil {
		return nil, errno(err)
	}
	if err := x.d.Durable(ctx); err != nil { // no close follows a symlink
		return nil, errno(err)
	}
	return x.child(ctx, c, out), 0
}

// Readlink implements fs.NodeReadlinker.
func (x *node) Readlink(ctx context.Context) ([]byte, syscall.Errno) {
	t, err := x.d.Readlink(x.n)
	if err != nil {
		return nil, errno(err)
	}
	return []byte(t), 0
}

// Statfs implements fs.NodeStatfser with FS.Space, in 8 KB blocks: used
// is the volume's bytes (its files' sizes), available the gateway's free
// bytes over r, and the size their sum (see Space for what they mean and
// do not; a gateway without a capacity bound reports NoBoundBytes
// available, a stand-in). The gateway is asked at most every 5 s, within
// 2 s. Files: 2^32 inode numbers, of which those not yet handed out are free.
func (x *node) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	s := x.d.Space(ctx)
	x.d.mu.Lock()
	left := uint64(^uint32(0) - x.d.nextIno)
	x.d.mu.Unlock()
	used := (s.Used + BlockBytes - 1) / BlockBytes
	avail := s.Avail / BlockBytes
	*out = fuse.StatfsOut{Blocks: used + avail, Bfree: avail, Bavail: avail, Files: 1 << 32, Ffree: left,
		Bsize: BlockBytes, Frsize: BlockBytes, NameLen: MaxNameBytes}
	return 0
}

// Link implements fs.NodeLinker: there are no hard links (an entry holds
// its file's attributes).
func (x *node) Link(ctx context.Context, target fs.InodeEmbedder, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.ENOTSUP
}

// Mknod implements fs.NodeMknoder: no devices, fifos or sockets.
func (x *node) Mknod(ctx context.Context, name string, mode uint32, dev uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.ENOTSUP
}

// Getxattr implements fs.NodeGetxattrer: no extended attributes.
func (x *node) Getxattr(ctx context.Context, attr string, dest []byte) (uint32, syscall.Errno) {
	return 0, syscall.ENOTSUP
}

// Setxattr implements fs.NodeSetxattrer.
func (x *node) Setxattr(ctx context.Context, attr string, data []byte, flags uint32) syscall.Errno {
	return syscall.ENOTSUP
}

// Listxattr implements fs.NodeListxattrer.
func (x *node) Listxattr(ctx context.Context, dest []byte) (uint32, syscall.Errno) {
	return 0, syscall.ENOTSUP
}

// Removexattr implements fs.NodeRemovexattrer.
func (x *node) Removexattr(ctx context.Context, attr string) syscall.Errno {
	return syscall.ENOTSUP
}

// Allocate implements fs.NodeAllocater: no fallocate.
func (x *node) Allocate(ctx context.Context, f fs.FileHandle, off uint64, size uint64, mode uint32) syscall.Errno {
	return syscall.ENOTSUP
}

// Mount opens volume vol of b with DefaultConfig, writable with writer
// (the volume's private key, Config.Writer) or read-only when it is nil,
// and mounts it on dir; see MountFS.
func Mount(dir string, vol key.Volume, b Blocks, writer ed25519.PrivateKey) (unmount func() error, err error) {
	cfg := DefaultConfig()
	cfg.Writer = writer
	f, err := Open(context.Background(), b, vol, writer == nil, cfg)
	if err != nil {
		return nil, err
	}
	unmount, err = MountFS(dir, f)
	if err != nil {
		return nil, errors.Join(err, f.Close(context.Background()))
	}
	return unmount, nil
}

// MountFS mounts an open volume on dir: as root with mount(2) itself
// (DirectMountStrict, no fusermount needed), else through fusermount3.
// A goroutine calls f.Tick every second (lease, write-back, deletes)
// until unmount, which unmounts, commits, and closes f. If the kernel
// refuses to unmount (busy), unmount returns the error and the volume
// stays mounted and running.
// kernelCache is how long the kernel may keep names, attributes and
// missing names without asking (issue 46). A writable mount is the only
// way its volume changes (one writer, the lease), and the kernel drops
// what each change through it makes stale, so it keeps them a minute; a
// read-only mount's tree changes under it at each refresh, so a second.
func kernelCache(readOnly bool) time.Duration {
	if readOnly {
		return time.Second
	}
	return time.Minute
}

// closeTimeout bounds the last commit and lease release of an unmount:
// with every node gone, an unmount must still end.
const closeTimeout = time.Minute

func MountFS(dir string, f *FS) (unmount func() error, err error) {
	cache := kernelCache(f.ro)
	opts := &fs.Options{
		EntryTimeout:    &cache,
		AttrTimeout:     &cache,
		NegativeTimeout: &cache,
		RootStableAttr:  &fs.StableAttr{Ino: rootInode},
		MountOptions: fuse.MountOptions{
			// The largest requests the kernel sends (1 MiB, against
			// 128 KiB by default): a big file moves in an eighth of
			// the round trips through /dev/fuse.
			MaxWrite:          1 << 20,
			MaxReadAhead:      1 << 20,
			FsName:            "d2:" + f.vol.String()[:16],
			Name:              "d2fs",
			DirectMountStrict: os.Geteuid() == 0,
			// Locks (fcntl and flock) are the kernel's own, kept in
			// this mount (EnableLocks off): one writable mount per
			// volume (the lease) means every writer's lock goes through
			// it, so they are exact among the processes that can
			// write; on a read-only mount they are what a read-only
			// local file system gives.
		},
	}
	if f.ro {
		opts.MountOptions.Options = append(opts.MountOptions.Options, "ro")
	}
	server, err := fs.Mount(dir, &node{d: f, n: f.Root()}, opts)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if err := f.Tick(ctx); err != nil {
					slog.Warn("d2fs: periodic commit", "volume", f.vol.String(), "err", err)
				}
			}
		}
	}()
	return func() error {
		if err := server.Unmount(); err != nil {
			return err
		}
		server.Wait()
		cancel()
		<-done
		ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
		defer cancel()
		return f.Close(ctx)
	}, nil
}
