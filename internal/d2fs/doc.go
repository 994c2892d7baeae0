// Package d2fs is D2-FS, the file system of "Defragmenting DHT-based
// Distributed File Systems" (../shared/papers/d2-defragmented-dht-fs.txt,
// §3 and §4), over D2's block store, and its FUSE front-end.
//
// A volume is a tree of directories, files and symlinks whose blocks are
// stored under locality-preserving keys (internal/d2/key): a new entry
// takes a free 2-byte slot of its directory and a key derived from its
// directory's, so the blocks of a directory's files sit next to each
// other on the ring; a renamed file keeps its keys and only its new
// directory's entry points at them (§4). Data is cut into 8 KB blocks
// (§3). Every pointer carries its target's SHA-256 (§3: keys are not
// content hashes, so pointers must be), and a block that does not match
// is never returned: the read answers EIO. A volume made now cuts data
// into 64 KB blocks (DataBlockBytes), and a file of at most 4 KB is held
// in its directory entry (InlineBytes, superblock format 6), so a small
// file's close stores one block, the superblock, in one round.
//
// Layout of a volume (inode 0 is the volume's own, 1 its root directory):
//
//	key.Root(vol) block 0 version g   superblock of commit g: the root
//	                                   directory's entry, the next inode,
//	                                   the directory deltas since the last
//	                                   full commit, the writer's public
//	                                   key and signature; the newest is
//	                                   found with Latest
//	key.Root(vol) block 1 version 0   the writer lease
//	base block 0 version g            a record: a directory's entries or a
//	                                   file's block pointers (blob, format.go)
//	base block n+1 version g          a file's data block n
//	base block 2^31+... version g     parts of a record longer than a block
//
// Writes stay in a write-back cache that also serves reads (§3: 30 s;
// Config.WriteBack), and are committed copy-on-write (commit.go): data
// blocks, then records bottom up, each at the commit's version, then the
// superblock; a reader sees the old tree or the new one, never a mix, and
// a mount that dies mid-commit leaves the last commit. A small commit
// (delta.go) writes no directory record: the superblock carries the
// entries changed since the last full commit, which readers apply to the
// records as they load them; a full commit folds them in once they
// outgrow the superblock, and at unmount. Blocks a commit
// replaced are deleted Config.KeepOld (30 s) later, so slightly stale
// readers still find them. Past Config.MaxDirtyBytes (256 MiB) of changes,
// a writer waits for a commit. One writer per volume (§3): a lease with a
// conditional put (lease.go); read-only mounts need none, and follow the
// writer's commits every Config.Refresh (5 s; refresh.go).
//
// Only the volume's writer commits. The volume ID derives from the
// writer's ed25519 public key (key.VolumeOfKey); a writable mount needs
// its private key (Config.Writer) and signs each superblock with it, over
// the superblock's key and fields. A reader takes a superblock only if the
// signature verifies against the public key it carries and that key
// derives the volume ID; one that fails (ErrForged: stored by someone
// without the key, which D2's nodes refuse anyway) is not skipped for an
// older commit: the mount, or a reader's refresh, fails with an error
// naming it, as an older tree shown silently would hide the tampering and
// the writer's next commit would collide with it. The lease record is not
// signed: only the writer reads it, and the nodes refuse a lease put
// without the writer's signature.
//
// Check reads a whole commit back from the store and reports bad blocks
// (for triad fs fsck); BlockKeys lists an inode's block keys, and
// BlockRefs the same with their SHA-256 (triad fs stat asks the nodes
// which hold those bytes).
//
// The store is the Blocks interface (blocks.go), implemented over the
// network by internal/d2client and in memory by MemBlocks for tests.
//
// FUSE (fuse.go, github.com/hanwen/go-fuse/v2): lookup, getattr, setattr
// (truncate, chmod, chown, utimens), readdir, mkdir, rmdir, create, open,
// read, write, flush, fsync, release, unlink, rename (replacing a
// destination; RENAME_NOREPLACE; not RENAME_EXCHANGE), symlink, readlink,
// statfs. POSIX (fcntl) and BSD (flock) locks are the kernel's own, kept
// in the mount: exact, since one writable mount per volume is the only
// way to change it. Hard links, extended attributes and fallocate answer
// ENOTSUP, as do mknod and RENAME_EXCHANGE. Atime is not
// kept (it reads as mtime). A name over 255 bytes is ENAMETOOLONG; a file
// past 2^31-1 blocks (16 TiB) is EFBIG.
//
// Usage:
//
//	vol, err := d2fs.Mkvol(ctx, blocks, priv, time.Now()) // priv: the writer's ed25519 key
//	unmount, err := d2fs.Mount("/mnt/home", vol, blocks, priv) // nil: read-only
//	defer unmount()
//
// Layer: front-end, outside node logic: it blocks, keeps time and runs
// goroutines (Mount's ticker); node logic lives in internal/d2.
package d2fs
