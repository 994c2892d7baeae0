package d2fs

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/posixtest"
	"golang.org/x/sys/unix"

	"triad/internal/d2/key"
)

// needFUSE skips a test that mounts unless the process is root with
// /dev/fuse; with TRIAD_REQUIRE_FUSE=1 (CI) it fails instead.
func needFUSE(t *testing.T) {
	t.Helper()
	var why string
	if os.Geteuid() != 0 {
		why = "not root"
	} else if _, err := os.Stat("/dev/fuse"); err != nil {
		why = err.Error()
	}
	if why == "" {
		return
	}
	if os.Getenv("TRIAD_REQUIRE_FUSE") == "1" {
		t.Fatalf("FUSE required (TRIAD_REQUIRE_FUSE=1): %s", why)
	}
	t.Skipf("no FUSE mount: %s", why)
}

// mountNew makes a volume on b and mounts it on a fresh directory.
func mountNew(t *testing.T, b Blocks) (dir string, vol key.Volume, unmount func() error) {
	t.Helper()
	needFUSE(t)
	vol, err := MkvolSized(context.Background(), b, testWriter(), time.Now(), BlockBytes)
	if err != nil {
		t.Fatal(err)
	}
	dir = t.TempDir()
	unmount, err = Mount(dir, vol, b, testWriter())
	if err != nil {
		t.Fatal(err)
	}
	return dir, vol, unmount
}

func TestFUSEPosix(t *testing.T) {
	for _, name := range []string{"FileBasic", "TruncateFile", "AppendWrite", "FileLarge", "MkdirRmdir",
		"ReadDirBasic", "ReadDirConsistency", "DirSeek", "RenameOverwriteDestExist",
		"RenameOverwriteDestNoExist", "SymlinkReadlink", "FstatDeleted", "ParallelFileOpen"} {
		test := posixtest.All[name]
		if test == nil {
			t.Fatalf("posixtest has no %s", name)
		}
		t.Run(name, func(t *testing.T) {
			dir, _, unmount := mountNew(t, NewMemBlocks())
			defer func() {
				if err := unmount(); err != nil {
					t.Error(err)
				}
			}()
			test(t, dir)
		})
	}
}

// Links, xattrs and fallocate answer ENOTSUP; a long name
// ENAMETOOLONG.
func TestFUSEUnsupported(t *testing.T) {
	dir, _, unmount := mountNew(t, NewMemBlocks())
	defer func() {
		if err := unmount(); err != nil {
			t.Error(err)
		}
	}()
	fn := filepath.Join(dir, "f")
	if err := os.WriteFile(fn, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	fd, err := syscall.Open(fn, syscall.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	for what, err := range map[string]error{
		"link":      syscall.Link(fn, fn+"2"),
		"setxattr":  syscall.Setxattr(fn, "user.a", []byte("b"), 0),
		"fallocate": syscall.Fallocate(fd, 0, 0, 100),
	} {
		if !errors.Is(err, syscall.ENOTSUP) {
			t.Errorf("%s: %v, want ENOTSUP", what, err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, strings.Repeat("n", 256)), nil, 0o644); !errors.Is(err, syscall.ENAMETOOLONG) {
		t.Errorf("256-byte name: %v, want ENAMETOOLONG", err)
	}
}

// smallTree writes a small real tree: nested directories, files of a
// few sizes (empty, one block, many), and a symlink.
func smallTree(t *testing.T, root string) {
	t.Helper()
	files := map[string][]byte{
		"README":            []byte("a small tree\n"),
		"empty":             nil,
		"src/main.go":       []byte("package main\n\nfunc main() {}\n"),
		"src/lib/lib.go":    bytes.Repeat([]byte("// line\n"), 3000),
		"src/lib/data.bin":  pattern(5*BlockBytes+17, 3),
		"docs/a/b/c/d/note": []byte("deep"),
	}
	for name, data := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o640); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("src/main.go", filepath.Join(root, "main")); err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		if err := os.WriteFile(filepath.Join(root, "src", fmt.Sprintf("gen%02d.go", i)), pattern(i*300, i), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func run(t *testing.T, name string, args ...string) {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// cp -r of a real tree in (Go's src/encoding, 3 MB, and a made one with
// a symlink, holes and deep paths), diff -r clean; unmount, remount
// (read-only and writable): the same tree.
func TestFUSECopyTree(t *testing.T) {
	b := NewMemBlocks()
	dir, vol, unmount := mountNew(t, b)
	src := t.TempDir()
	smallTree(t, src)
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Fatalf("go env GOROOT: %v", err)
	}
	run(t, "cp", "-r", filepath.Join(strings.TrimSpace(string(goroot)), "src", "encoding"), src)
	run(t, "cp", "-r", src+"/.", dir)
	run(t, "diff", "-r", "--no-dereference", src, dir)
	if err := unmount(); err != nil {
		t.Fatal(err)
	}
	for _, writer := range []ed25519.PrivateKey{nil, testWriter()} {
		again := t.TempDir()
		unmount, err := Mount(again, vol, b, writer)
		if err != nil {
			t.Fatal(err)
		}
		run(t, "diff", "-r", "--no-dereference", src, again)
		if err := unmount(); err != nil {
			t.Fatal(err)
		}
	}
}

// A read-only mount beside the writer's sees its commits (fsync), and
// never a partly written file.
func TestFUSEReaderFollowsWriter(t *testing.T) {
	b := NewMemBlocks()
	dir, vol, unmount := mountNew(t, b)
	defer func() {
		if err := unmount(); err != nil {
			t.Error(err)
		}
	}()
	cfg := DefaultConfig()
	cfg.Refresh = 0 // every Tick (1 s)
	r, err := Open(context.Background(), b, vol, true, cfg)
	if err != nil {
		t.Fatal(err)
	}
	rdir := t.TempDir()
	runmount, err := MountFS(rdir, r)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := runmount(); err != nil {
			t.Error(err)
		}
	}()
	want := pattern(3*BlockBytes, 1)
	f, err := os.Create(filepath.Join(dir, "f"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(want); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err := os.ReadFile(filepath.Join(rdir, "f"))
		if err == nil {
			if !bytes.Equal(got, want) {
				t.Fatalf("reader sees %d bytes, not the %d written", len(got), len(want))
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("reader does not see the commit after 10 s: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := os.WriteFile(filepath.Join(rdir, "x"), nil, 0o644); !errors.Is(err, syscall.EROFS) {
		t.Fatalf("write on the read-only mount: %v, want EROFS", err)
	}
}

// Close-to-open (issue 43): cp -r into the mount, and as soon as cp
// returns, before any fsync, sync or write-back, the store holds the whole
// copy: a mount that died then (the writer is never closed here) loses
// nothing. Linux does not forward sync(2) to a FUSE server, so the close
// of each file is what commits. A Lazy mount, in the same run, commits
// nothing before its write-back.
func TestFUSECloseToOpen(t *testing.T) {
	needFUSE(t)
	ctx := context.Background()
	src := t.TempDir()
	smallTree(t, src)
	for _, lazy := range []bool{false, true} {
		b := NewMemBlocks()
		vol, err := MkvolSized(ctx, b, testWriter(), time.Now(), BlockBytes)
		if err != nil {
			t.Fatal(err)
		}
		cfg := DefaultConfig()
		cfg.Writer, cfg.Lazy = testWriter(), lazy
		w, err := Open(ctx, b, vol, false, cfg)
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		unmount, err := MountFS(dir, w)
		if err != nil {
			t.Fatal(err)
		}
		run(t, "cp", "-r", src+"/.", dir)
		// What a remount after a crash now would show: the newest commit.
		r, err := Open(ctx, b, vol, true, DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		rdir := t.TempDir()
		runmount, err := MountFS(rdir, r)
		if err != nil {
			t.Fatal(err)
		}
		out, diffErr := exec.Command("diff", "-r", "--no-dereference", src, rdir).CombinedOutput()
		switch {
		case !lazy && diffErr != nil:
			t.Errorf("close-to-open: the committed tree differs from the copy: %v\n%s", diffErr, out)
		case lazy && diffErr == nil:
			t.Error("a lazy mount committed the copy before its write-back")
		}
		if s := w.Stats(); !lazy && s.CloseCommits == 0 || lazy && s.CloseCommits != 0 {
			t.Errorf("lazy %v: %d commits at close", lazy, s.CloseCommits)
		}
		if err := errors.Join(runmount(), unmount()); err != nil {
			t.Fatal(err)
		}
	}
}

// Locks work on a writable mount as on a local disk (issue 46: go build
// took an fcntl read lock on go.mod and failed with ENOTSUP): two open
// files of one file conflict on a write lock, fcntl's (open file
// description locks, so that one process can show the conflict) and
// flock's; a byte range elsewhere does not; an unlock or a close frees
// it.
func TestFUSELocks(t *testing.T) {
	dir, _, unmount := mountNew(t, NewMemBlocks())
	defer func() {
		if err := unmount(); err != nil {
			t.Error(err)
		}
	}()
	fn := filepath.Join(dir, "go.mod")
	if err := os.WriteFile(fn, []byte("module x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	files := map[int]*os.File{}
	defer func() { // before the unmount
		for _, f := range files {
			f.Close()
		}
	}()
	open := func() int {
		f, err := os.OpenFile(fn, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		files[int(f.Fd())] = f
		return int(f.Fd())
	}
	ofd := func(fd int, typ int16, start, n int64) error {
		lk := syscall.Flock_t{Type: typ, Whence: 0, Start: start, Len: n}
		return syscall.FcntlFlock(uintptr(fd), unix.F_OFD_SETLK, &lk)
	}
	a, b := open(), open()
	if err := ofd(a, syscall.F_RDLCK, 0, 0); err != nil {
		t.Fatalf("read lock: %v", err)
	}
	if err := ofd(b, syscall.F_RDLCK, 0, 10); err != nil {
		t.Fatalf("second read lock: %v", err)
	}
	if err := ofd(b, syscall.F_WRLCK, 0, 10); !errors.Is(err, syscall.EAGAIN) {
		t.Fatalf("write lock over another's read lock: %v, want EAGAIN", err)
	}
	if err := ofd(a, syscall.F_UNLCK, 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := ofd(b, syscall.F_WRLCK, 0, 10); err != nil {
		t.Fatalf("write lock once the other unlocked: %v", err)
	}
	if err := ofd(a, syscall.F_WRLCK, 10, 10); err != nil {
		t.Fatalf("write lock of another range: %v", err)
	}
	if err := ofd(a, syscall.F_RDLCK, 5, 1); !errors.Is(err, syscall.EAGAIN) {
		t.Fatalf("read lock inside another's write lock: %v, want EAGAIN", err)
	}

	c, d := open(), open()
	if err := syscall.Flock(c, syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatalf("flock: %v", err)
	}
	if err := syscall.Flock(d, syscall.LOCK_SH|syscall.LOCK_NB); !errors.Is(err, syscall.EWOULDBLOCK) {
		t.Fatalf("flock over another's: %v, want EWOULDBLOCK", err)
	}
	files[c].Close()
	if err := syscall.Flock(d, syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		t.Fatalf("flock once the other closed: %v", err)
	}
}
