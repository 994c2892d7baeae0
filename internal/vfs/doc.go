// Package vfs is the file system under triad's own durable files: the
// storage engine's segments (internal/store/disk) and a news site's
// journal (internal/usenet). A crash that kills the process (SIGKILL)
// loses nothing the kernel has been handed; a power cut loses everything
// not yet synced, and only a file system that forgets can show which
// acknowledged writes depend on a missing fsync. So these packages reach
// the disk through FS: OS() is the real one, and MemFS is a file system in
// memory that, at a crash, keeps only what was synced: file data written
// since the file's last Sync is lost, and so is a created, renamed or
// removed directory entry unless the directory was synced since (SyncDir).
// Tests take MemFS.CrashClone, or the clone OnSync hands over before
// every sync, reopen from it, and check that every acknowledged write is
// there. Inject wraps an FS to fail chosen operations. The pattern is
// pebble's vfs (its MemFS in strict mode, CrashClone and errorfs).
//
//	fsys := vfs.NewMem()
//	d, err := disk.OpenFS(fsys, store.Options{Dir: dir})
//	... acknowledged puts ...
//	crashed := fsys.CrashClone() // a power cut now
//	d2, err := disk.OpenFS(crashed, store.Options{Dir: dir})
//
// bbolt does its own file I/O through os and a memory map (its
// Options.OpenFile must return an *os.File), so the bbolt files beside
// ours stay on the OS: docs/storage.md says how the crash tests treat
// them.
//
// Layer: a driver-side package over os and golang.org/x/sys/unix. It
// imports no other package of triad; node-logic packages must not import
// it (they do no I/O).
package vfs
