package d2fs

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"triad/internal/d2/key"
)

// clock is a fake clock tests advance by hand.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// testWriter is the private key of the tests' volumes' writer: each test
// volume is alone on its MemBlocks (which checks no signature; the
// superblocks carry one, which the file system checks).
func testWriter() ed25519.PrivateKey {
	return ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
}

func newClock() *clock { return &clock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }

func testConfig(c *clock) Config {
	cfg := DefaultConfig()
	cfg.Now = c.Now
	cfg.Writer = testWriter()
	return cfg
}

// newVolume makes a volume of the paper's 8 KB data blocks on a fresh
// MemBlocks and opens it writable.
func newVolume(t *testing.T) (*FS, *MemBlocks, key.Volume, *clock) {
	t.Helper()
	return newVolumeSized(t, BlockBytes)
}

// newVolumeSized is newVolume with data blocks of dataBytes.
func newVolumeSized(t *testing.T, dataBytes int) (*FS, *MemBlocks, key.Volume, *clock) {
	t.Helper()
	ctx := context.Background()
	b := NewMemBlocks()
	c := newClock()
	vol, err := MkvolSized(ctx, b, testWriter(), c.Now(), dataBytes)
	if err != nil {
		t.Fatal(err)
	}
	f, err := Open(ctx, b, vol, false, testConfig(c))
	if err != nil {
		t.Fatal(err)
	}
	return f, b, vol, c
}

func mustOpen(t *testing.T, b Blocks, vol key.Volume, ro bool, c *clock) *FS {
	t.Helper()
	f, err := Open(context.Background(), b, vol, ro, testConfig(c))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// writeFile creates (or truncates) path's file and writes data to it;
// the directories on the way are made as needed.
func writeFile(t *testing.T, f *FS, path string, data []byte) *Inode {
	t.Helper()
	ctx := context.Background()
	dir := f.Root()
	parts := strings.Split(strings.Trim(path, "/"), "/")
	for _, name := range parts[:len(parts)-1] {
		d, err := f.Lookup(ctx, dir, name)
		if errors.Is(err, syscall.ENOENT) {
			d, err = f.Mkdir(ctx, dir, name, 0o755, 0, 0)
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		dir = d
	}
	name := parts[len(parts)-1]
	n, err := f.Lookup(ctx, dir, name)
	if errors.Is(err, syscall.ENOENT) {
		n, err = f.Create(ctx, dir, name, 0o644, 0, 0)
	} else if err == nil {
		zero := uint64(0)
		err = f.Setattr(ctx, n, SetAttr{Size: &zero})
	}
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if _, err := f.WriteAt(ctx, n, data, 0); err != nil {
		t.Fatalf("write %s: %v", path, err)
	}
	return n
}

func readFile(f *FS, path string) ([]byte, error) {
	ctx := context.Background()
	n, err := f.Walk(ctx, path)
	if err != nil {
		return nil, err
	}
	a := f.Attr(n)
	buf := make([]byte, a.Size+10)
	got, err := f.ReadAt(ctx, n, buf, 0)
	if err != nil {
		return nil, err
	}
	return buf[:got], nil
}

func mustRead(t *testing.T, f *FS, path string, want []byte) {
	t.Helper()
	got, err := readFile(f, path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("read %s: %d bytes %.40q, want %d bytes %.40q", path, len(got), got, len(want), want)
	}
}

func pattern(n, seed int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7/3 + seed)
	}
	return b
}

// tree lists every path under the root with its content (files), target
// (symlinks) or "dir": what a reader sees.
func tree(t *testing.T, f *FS) string {
	t.Helper()
	var sb strings.Builder
	var walk func(n *Inode, path string)
	walk = func(n *Inode, path string) {
		ents, err := f.ReadDir(context.Background(), n)
		if err != nil {
			t.Fatalf("readdir %s: %v", path, err)
		}
		for _, e := range ents {
			p := path + "/" + e.Name
			c, err := f.Lookup(context.Background(), n, e.Name)
			if err != nil {
				t.Fatalf("lookup %s: %v", p, err)
			}
			switch e.Type {
			case TypeDir:
				fmt.Fprintf(&sb, "%s dir\n", p)
				walk(c, p)
			case TypeSymlink:
				target, _ := f.Readlink(c)
				fmt.Fprintf(&sb, "%s -> %s\n", p, target)
			default:
				data, err := readFile(f, p)
				if err != nil {
					t.Fatalf("read %s: %v", p, err)
				}
				fmt.Fprintf(&sb, "%s %x\n", p, data)
			}
		}
	}
	walk(f.Root(), "")
	return sb.String()
}

func TestCreateWriteReadRemount(t *testing.T) {
	ctx := context.Background()
	f, b, vol, c := newVolume(t)
	small := []byte("hello, world")
	big := pattern(3*BlockBytes+123, 1)
	writeFile(t, f, "a/b/small", small)
	writeFile(t, f, "a/big", big)
	if _, err := f.Symlink(ctx, f.Root(), "link", "a/b/small", 0, 0); err != nil {
		t.Fatal(err)
	}
	mustRead(t, f, "a/b/small", small) // from the write-back cache
	mustRead(t, f, "a/big", big)
	if b.Len() != 2 {
		t.Fatalf("store has %d blocks before any commit, want the first superblock and the lease", b.Len())
	}
	before := tree(t, f)
	if err := f.Close(ctx); err != nil {
		t.Fatal(err)
	}
	g := mustOpen(t, b, vol, false, c)
	if got := tree(t, g); got != before {
		t.Fatalf("remount sees\n%s\nwant\n%s", got, before)
	}
	// Overwrite the middle of big and grow it: the rest stays.
	n, err := g.Walk(ctx, "a/big")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.WriteAt(ctx, n, []byte("XYZ"), BlockBytes-1); err != nil {
		t.Fatal(err)
	}
	copy(big[BlockBytes-1:], "XYZ")
	if _, err := g.WriteAt(ctx, n, []byte("tail"), int64(len(big))+BlockBytes); err != nil {
		t.Fatal(err)
	}
	big = append(big, make([]byte, BlockBytes)...)
	big = append(big, "tail"...)
	mustRead(t, g, "a/big", big)
	if err := g.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	mustRead(t, g, "a/big", big)
	if err := g.Close(ctx); err != nil {
		t.Fatal(err)
	}
	h := mustOpen(t, b, vol, true, c)
	mustRead(t, h, "a/big", big)
	mustRead(t, h, "a/b/small", small)
}

func TestTruncate(t *testing.T) {
	ctx := context.Background()
	f, b, vol, c := newVolume(t)
	data := pattern(2*BlockBytes+100, 3)
	n := writeFile(t, f, "f", data)
	if err := f.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	for _, size := range []uint64{BlockBytes + 5, 0, 3 * BlockBytes} {
		if err := f.Setattr(ctx, n, SetAttr{Size: &size}); err != nil {
			t.Fatal(err)
		}
		if size < uint64(len(data)) {
			data = data[:size]
		} else {
			data = append(data, make([]byte, size-uint64(len(data)))...)
		}
		mustRead(t, f, "f", data)
	}
	if err := f.Close(ctx); err != nil {
		t.Fatal(err)
	}
	g := mustOpen(t, b, vol, true, c)
	mustRead(t, g, "f", data) // all zeros: the old blocks do not come back
}

func TestRenameKeepsKeys(t *testing.T) {
	ctx := context.Background()
	f, b, vol, c := newVolume(t)
	// Past InlineBytes, so that both files have blocks.
	moving, replacedData := pattern(InlineBytes+1, 1), pattern(InlineBytes+1, 2)
	writeFile(t, f, "src/file", moving)
	writeFile(t, f, "dst/file", replacedData)
	if err := f.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	n, err := f.Walk(ctx, "src/file")
	if err != nil {
		t.Fatal(err)
	}
	k := n.Key()
	old, err := f.Walk(ctx, "dst/file")
	if err != nil {
		t.Fatal(err)
	}
	replaced := old.Key()
	src, _ := f.Walk(ctx, "src")
	dst, _ := f.Walk(ctx, "dst")
	if err := f.Rename(ctx, src, "file", dst, "file", true); !errors.Is(err, syscall.EEXIST) {
		t.Fatalf("rename with noReplace over an existing name: %v, want EEXIST", err)
	}
	if err := f.Rename(ctx, src, "file", dst, "file", false); err != nil {
		t.Fatal(err)
	}
	if err := f.Rename(ctx, f.Root(), "src", src, "x", false); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("rename of a directory into itself: %v, want EINVAL", err)
	}
	if err := f.Close(ctx); err != nil {
		t.Fatal(err)
	}
	g := mustOpen(t, b, vol, true, c)
	mustRead(t, g, "dst/file", moving)
	if _, err := g.Walk(ctx, "src/file"); !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("old name: %v, want ENOENT", err)
	}
	m, err := g.Walk(ctx, "dst/file")
	if err != nil {
		t.Fatal(err)
	}
	if m.Key() != k {
		t.Fatalf("renamed file has key %v, want its old key %v (§4)", m.Key(), k)
	}
	// The replaced file's blocks are gone, the moved one's are not.
	var moved int
	for _, sk := range b.Keys() {
		if key.SameFile(sk, replaced) {
			t.Fatalf("block %v of the replaced file is still stored", sk)
		}
		if key.SameFile(sk, k) {
			moved++
		}
	}
	if moved == 0 {
		t.Fatal("the moved file has no blocks left")
	}
}

func TestDeleteFreesBlocks(t *testing.T) {
	ctx := context.Background()
	f, b, _, c := newVolume(t)
	writeFile(t, f, "d/f", pattern(5*BlockBytes, 0))
	if err := f.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	full := b.Len()
	d, _ := f.Walk(ctx, "d")
	if err := f.Rmdir(ctx, f.Root(), "d"); !errors.Is(err, syscall.ENOTEMPTY) {
		t.Fatalf("rmdir of a full directory: %v, want ENOTEMPTY", err)
	}
	if err := f.Unlink(ctx, d, "f"); err != nil {
		t.Fatal(err)
	}
	if err := f.Rmdir(ctx, f.Root(), "d"); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if b.Len() < full {
		t.Fatalf("blocks deleted at the commit (%d -> %d): readers of the old one lose them", full, b.Len())
	}
	c.Advance(31 * time.Second)
	if err := f.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	// Left: the lease and the superblocks (of the small commits since the
	// last full one, delta.go), nothing of the file or its directory.
	vol := f.vol
	for _, k := range b.Keys() {
		if k != leaseKey(vol) && k != superKey(vol, k.Version()) {
			t.Errorf("after KeepOld the store still has %v", k)
		}
	}
}

func TestNameTooLong(t *testing.T) {
	ctx := context.Background()
	f, _, _, _ := newVolume(t)
	long := strings.Repeat("x", 256)
	if _, err := f.Create(ctx, f.Root(), long, 0o644, 0, 0); !errors.Is(err, syscall.ENAMETOOLONG) {
		t.Fatalf("create of a 256-byte name: %v", err)
	}
	if _, err := f.Lookup(ctx, f.Root(), long); !errors.Is(err, syscall.ENAMETOOLONG) {
		t.Fatalf("lookup of a 256-byte name: %v", err)
	}
	if _, err := f.Create(ctx, f.Root(), long[:255], 0o644, 0, 0); err != nil {
		t.Fatalf("create of a 255-byte name: %v", err)
	}
}

func TestFileTooBig(t *testing.T) {
	ctx := context.Background()
	f, _, _, _ := newVolume(t)
	n := writeFile(t, f, "f", nil)
	if _, err := f.WriteAt(ctx, n, []byte("x"), MaxFileBytes); !errors.Is(err, syscall.EFBIG) {
		t.Fatalf("write past the last block: %v, want EFBIG", err)
	}
	size := uint64(MaxFileBytes + 1)
	if err := f.Setattr(ctx, n, SetAttr{Size: &size}); !errors.Is(err, syscall.EFBIG) {
		t.Fatalf("truncate past the last block: %v, want EFBIG", err)
	}
}

// An unlinked file stays readable while open, past KeepOld; its blocks
// go once it is released.
func TestUnlinkedWhileOpen(t *testing.T) {
	ctx := context.Background()
	f, b, _, c := newVolume(t)
	data := pattern(3*BlockBytes, 7)
	n := writeFile(t, f, "f", data)
	if err := f.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	f.Opened(n)
	if err := f.Unlink(ctx, f.Root(), "f"); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	c.Advance(time.Minute)
	if err := f.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	clear(f.cache) // read from the store
	buf := make([]byte, len(data))
	if got, err := f.ReadAt(ctx, n, buf, 0); err != nil || !bytes.Equal(buf[:got], data) {
		t.Fatalf("read of an open unlinked file: %d bytes, %v", got, err)
	}
	if a := f.Attr(n); a.Nlink != 0 || a.Size != uint64(len(data)) {
		t.Fatalf("attr of an open unlinked file: %+v", a)
	}
	f.Released(n)
	c.Advance(time.Minute)
	if err := f.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	for _, k := range b.Keys() {
		if key.SameFile(k, n.Key()) {
			t.Fatalf("block %v of the released file is still stored", k)
		}
	}
}

// stuckDeletes is a store whose deletes hang until the caller's context
// ends, as one to a node that died moments ago waits on the ring; entered
// is told of each.
type stuckDeletes struct {
	*MemBlocks
	entered chan struct{}
}

func (b *stuckDeletes) Delete(ctx context.Context, k key.Key) error {
	b.entered <- struct{}{}
	<-ctx.Done()
	return ctx.Err()
}

// A Tick that deletes garbage on a store whose deletes hang holds no lock
// while it waits, so a commit goes through meanwhile, and it gives up
// after its budget: the garbage waits for the next Tick, and no error is
// reported. Before, Tick held the file system's lock for every delete, and
// a write through a mount whose node had just been killed was not
// committed in 30 s (TestFS, issue 45).
func TestGarbageDeletesDoNotHoldCommits(t *testing.T) {
	ctx := context.Background()
	f, b, _, c := newVolume(t)
	writeFile(t, f, "f", pattern(3*BlockBytes, 0))
	if err := f.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	writeFile(t, f, "f", pattern(3*BlockBytes, 1)) // the first version's blocks become garbage
	if err := f.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	stuck := &stuckDeletes{MemBlocks: b, entered: make(chan struct{}, 1)}
	f.blocks = stuck
	c.Advance(f.cfg.KeepOld)
	tick := make(chan error, 1)
	go func() { tick <- f.Tick(ctx) }()
	<-stuck.entered // Tick waits on a delete now
	writeFile(t, f, "g", []byte("written while a delete hangs"))
	if err := f.Sync(ctx); err != nil {
		t.Fatalf("a commit while Tick waits on a delete: %v", err)
	}
	if err := <-tick; err != nil {
		t.Fatalf("Tick out of time for deletes returned %v, want nil (the rest is for the next Tick)", err)
	}
	f.mu.Lock()
	left := len(f.garbage)
	f.mu.Unlock()
	if left == 0 || f.Stats().Deleted != 0 {
		t.Fatalf("after a Tick whose deletes hung: %d garbage entries left, %d deleted; want the garbage kept", left, f.Stats().Deleted)
	}
	f.blocks = b
	if err := f.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	if f.Stats().Deleted == 0 {
		t.Fatal("the next Tick deleted nothing")
	}
}
