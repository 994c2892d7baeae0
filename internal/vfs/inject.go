package vfs

import (
	"fmt"
	"io/fs"
)

// Op is a kind of file-system operation, as Inject reports it.
type Op int

// The operations of FS and File.
const (
	OpOpen Op = iota
	OpRemove
	OpRename
	OpMkdir
	OpReadDir
	OpStat
	OpSyncDir
	OpRead
	OpWrite
	OpTruncate
	OpSync
)

var opNames = [...]string{"open", "remove", "rename", "mkdir", "readdir", "stat", "syncdir", "read", "write", "truncate", "sync"}

func (o Op) String() string {
	if o >= 0 && int(o) < len(opNames) {
		return opNames[o]
	}
	return fmt.Sprintf("Op(%d)", int(o))
}

// Inject returns fsys with fail asked before every operation: when fail
// returns an error, the operation is not done and returns that error.
// Tests use it to make an fsync or a write fail (pebble's errorfs). fail
// may be called from many goroutines at once.
func Inject(fsys FS, fail func(op Op, path string) error) FS {
	return &injectFS{fs: fsys, fail: fail}
}

type injectFS struct {
	fs   FS
	fail func(Op, string) error
}

func (i *injectFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	if err := i.fail(OpOpen, name); err != nil {
		return nil, err
	}
	f, err := i.fs.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &injectFile{File: f, name: name, fail: i.fail}, nil
}

func (i *injectFS) Remove(name string) error {
	if err := i.fail(OpRemove, name); err != nil {
		return err
	}
	return i.fs.Remove(name)
}

func (i *injectFS) Rename(oldname, newname string) error {
	if err := i.fail(OpRename, oldname); err != nil {
		return err
	}
	return i.fs.Rename(oldname, newname)
}

func (i *injectFS) MkdirAll(dir string, perm fs.FileMode) error {
	if err := i.fail(OpMkdir, dir); err != nil {
		return err
	}
	return i.fs.MkdirAll(dir, perm)
}

func (i *injectFS) ReadDir(dir string) ([]fs.DirEntry, error) {
	if err := i.fail(OpReadDir, dir); err != nil {
		return nil, err
	}
	return i.fs.ReadDir(dir)
}

func (i *injectFS) Stat(name string) (fs.FileInfo, error) {
	if err := i.fail(OpStat, name); err != nil {
		return nil, err
	}
	return i.fs.Stat(name)
}

func (i *injectFS) SyncDir(dir string) error {
	if err := i.fail(OpSyncDir, dir); err != nil {
		return err
	}
	return i.fs.SyncDir(dir)
}

type injectFile struct {
	File
	name string
	fail func(Op, string) error
}

func (f *injectFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.fail(OpRead, f.name); err != nil {
		return 0, err
	}
	return f.File.ReadAt(p, off)
}

func (f *injectFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.fail(OpWrite, f.name); err != nil {
		return 0, err
	}
	return f.File.WriteAt(p, off)
}

func (f *injectFile) Truncate(size int64) error {
	if err := f.fail(OpTruncate, f.name); err != nil {
		return err
	}
	return f.File.Truncate(size)
}

func (f *injectFile) Sync() error {
	if err := f.fail(OpSync, f.name); err != nil {
		return err
	}
	return f.File.Sync()
}

// Fd hides the descriptor: vectored writes would bypass WriteAt, and so
// the injected faults.
func (f *injectFile) Fd() uintptr { return InvalidFd }
