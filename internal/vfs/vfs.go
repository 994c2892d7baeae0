package vfs

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// FS is the file system the storage engine and the news journal use. Paths
// are as os takes them. Errors wrap the io/fs errors (fs.ErrNotExist,
// fs.ErrExist, fs.ErrClosed), so errors.Is works as with os.
type FS interface {
	// OpenFile opens name as os.OpenFile does, for the flags O_RDONLY,
	// O_WRONLY, O_RDWR, O_CREATE, O_EXCL and O_TRUNC.
	OpenFile(name string, flag int, perm fs.FileMode) (File, error)
	// Remove removes a file or an empty directory. The entry is gone for
	// good only once its directory is synced.
	Remove(name string) error
	// Rename moves oldname to newname, replacing a file there. Both
	// directories must be synced for the move to survive a power cut.
	Rename(oldname, newname string) error
	// MkdirAll creates dir and any missing parents. Their entries are
	// durable only once each parent is synced (see MkdirAllSynced).
	MkdirAll(dir string, perm fs.FileMode) error
	// ReadDir returns the entries of dir sorted by name.
	ReadDir(dir string) ([]fs.DirEntry, error)
	// Stat describes name.
	Stat(name string) (fs.FileInfo, error)
	// SyncDir makes dir's entries durable: the files created, renamed
	// into or removed from it so far.
	SyncDir(dir string) error
}

// File is an open file of an FS.
type File interface {
	io.ReaderAt
	io.WriterAt
	// Truncate sets the file's size. Like a write, it is durable only
	// after Sync.
	Truncate(size int64) error
	// Sync makes the file's data and size durable (fdatasync: metadata a
	// read does not need, such as times, may stay behind). It does not
	// make the file's directory entry durable: that is SyncDir's.
	Sync() error
	Stat() (fs.FileInfo, error)
	Close() error
	// Fd is the operating system's descriptor, for memory maps and
	// vectored writes, or InvalidFd for a file that has none.
	Fd() uintptr
}

// InvalidFd is the Fd of a file with no descriptor (a MemFS file).
const InvalidFd = ^uintptr(0)

// OS returns the operating system's file system.
func OS() FS { return osFS{} }

type osFS struct{}

func (osFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func (osFS) Remove(name string) error                    { return os.Remove(name) }
func (osFS) Rename(oldname, newname string) error        { return os.Rename(oldname, newname) }
func (osFS) MkdirAll(dir string, perm fs.FileMode) error { return os.MkdirAll(dir, perm) }
func (osFS) ReadDir(dir string) ([]fs.DirEntry, error)   { return os.ReadDir(dir) }
func (osFS) Stat(name string) (fs.FileInfo, error)       { return os.Stat(name) }

func (osFS) SyncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return &fs.PathError{Op: "sync", Path: dir, Err: err}
	}
	return f.Close()
}

// osFile is an *os.File whose Sync is fdatasync: the engine's records and
// the journal's need their bytes and the file's size, not its times. Its
// error is the bare errno; callers name the file.
type osFile struct{ *os.File }

func (f osFile) Sync() error { return unix.Fdatasync(int(f.File.Fd())) }

// MkdirAllSynced creates dir and its missing parents durably: after it
// returns, a power cut leaves dir in place. Each parent that gets a new
// entry is synced, so a store created on first start does not vanish with
// everything acknowledged in it.
func MkdirAllSynced(fsys FS, dir string) error {
	dir = filepath.Clean(dir)
	var created []string
	for d := dir; ; d = filepath.Dir(d) {
		_, err := fsys.Stat(d)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		created = append(created, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	if len(created) == 0 {
		return nil
	}
	if err := fsys.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, d := range created {
		if parent := filepath.Dir(d); parent != d {
			if err := fsys.SyncDir(parent); err != nil {
				return err
			}
		}
	}
	return nil
}

// WriteFullAt writes parts, one after another, at off: with vectored
// writes (pwritev, which copies nothing) when f has a descriptor, else
// part by part.
func WriteFullAt(f File, parts [][]byte, off int64) error {
	fd := f.Fd()
	for len(parts) > 0 {
		var n int
		var err error
		if fd != InvalidFd {
			n, err = unix.Pwritev(int(fd), parts, off)
		} else {
			n, err = f.WriteAt(parts[0], off)
		}
		if err != nil {
			return err
		}
		off += int64(n)
		for n > 0 {
			if n < len(parts[0]) {
				parts[0] = parts[0][n:]
				break
			}
			n -= len(parts[0])
			parts = parts[1:]
		}
		for len(parts) > 0 && len(parts[0]) == 0 {
			parts = parts[1:]
		}
	}
	return nil
}
