package d2fs

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"triad/internal/d2/key"
)

// Errors the file system's operations return, as the errno FUSE answers.
var (
	errNameTooLong = syscall.ENAMETOOLONG
	errInvalid     = syscall.EINVAL
	errFileTooBig  = syscall.EFBIG
	errIO          = syscall.EIO
	errReadOnly    = syscall.EROFS
	// ErrLeased: another mount holds the volume's writer lease.
	ErrLeased = fmt.Errorf("d2fs: volume has a writer: %w", syscall.EBUSY)
	// ErrLeaseLost: this mount's lease was taken over (it lapsed while
	// the mount was stalled); it commits nothing more.
	ErrLeaseLost = fmt.Errorf("d2fs: writer lease lost: %w", syscall.EROFS)
	// ErrNoVolume: the store holds no superblock of the volume.
	ErrNoVolume = fmt.Errorf("d2fs: no such volume: %w", syscall.ENOENT)
)

// Config tunes a mounted volume.
type Config struct {
	// WriteBack is how long a change may stay only in memory before a
	// commit writes it (§3: 30 s). Zero commits at every Tick.
	WriteBack time.Duration
	// Lazy turns off close-to-open commits: a close (Flushed) of a
	// changed file commits nothing, and changes wait for WriteBack, an
	// fsync or the unmount, as in §3. The default (false) is NFS's
	// close-to-open rule: Flushed returns once the file's data and its
	// directory entry are durable.
	Lazy bool
	// MaxDirtyBytes is how many bytes of changed blocks may wait for a
	// commit; a write past it commits first (the writer waits). Default 256 MiB.
	MaxDirtyBytes int64
	// CacheBytes bounds the cache of clean blocks read or written; past
	// it the cache is emptied. Default 64 MiB; zero means the default.
	CacheBytes int64
	// LeaseTerm is how long a writer's lease lasts unless renewed (a
	// third of it before expiry); a dead mount's lease lapses after it.
	// Default 60 s.
	LeaseTerm time.Duration
	// KeepOld is how long the blocks a commit replaced stay in the store
	// for readers of the previous commit before they are deleted.
	// Default 30 s (the staleness §3 allows); zero deletes at the next Tick.
	KeepOld time.Duration
	// MaxPuts is how many block Puts a commit has in flight at once.
	// Default 16; zero means the default.
	MaxPuts int
	// Refresh is how often a read-only mount looks for a newer commit
	// (Tick). Default 5 s; zero looks at every Tick.
	Refresh time.Duration
	// Now is the clock; nil means time.Now. Tests pass a fake one.
	Now func() time.Time
	// Writer is the private key of the volume's writer, whose public key
	// the volume ID derives from (key.VolumeOfKey): a writable mount
	// signs each commit's superblock with it, and Open refuses a writable
	// mount without it. A read-only mount needs none.
	Writer ed25519.PrivateKey
}

// DefaultConfig is the configuration of §3.
func DefaultConfig() Config {
	return Config{
		WriteBack:     30 * time.Second,
		MaxDirtyBytes: 256 << 20,
		CacheBytes:    64 << 20,
		LeaseTerm:     60 * time.Second,
		KeepOld:       30 * time.Second,
		Refresh:       5 * time.Second,
		MaxPuts:       16,
	}
}

// Validate checks the configuration.
func (c *Config) Validate() error {
	switch {
	case c.WriteBack < 0 || c.KeepOld < 0 || c.Refresh < 0:
		return errors.New("d2fs: negative WriteBack, KeepOld or Refresh")
	case c.MaxDirtyBytes < BlockBytes:
		return fmt.Errorf("d2fs: MaxDirtyBytes %d under one block", c.MaxDirtyBytes)
	case c.LeaseTerm < 3*time.Second:
		return fmt.Errorf("d2fs: LeaseTerm %v under 3 s", c.LeaseTerm)
	case c.CacheBytes < 0 || c.MaxPuts < 0:
		return errors.New("d2fs: negative CacheBytes or MaxPuts")
	}
	return nil
}

// Stats counts what a mount did.
type Stats struct {
	Gen       uint32 // the last commit
	Commits   int    // commits by this mount
	Hashed    int    // entries created whose key is placed by hash (deep path or full directory)
	BadBlocks int    // reads that failed or did not match their pointer (answered EIO)
	Deleted   int    // replaced blocks deleted
	// CloseCommits counts closes that committed (Flushed): the commits
	// close-to-open asked for, included in Commits.
	CloseCommits int
	// SmallCommits counts commits that wrote no directory record, only
	// deltas in the superblock (delta.go), included in Commits.
	SmallCommits int
	// Inlined counts files committed in their entries (InlineBytes).
	Inlined int
	// LeaseRetakes counts renewals that found the lease block changed
	// and read it again: a stale copy, or the mount's own write of a try
	// that seemed to fail, is taken over; another mount's lease is lost.
	LeaseRetakes int
	// LeaseLost, once the lease is lost, says who holds it and until
	// when; the mount is then read-only.
	LeaseLost string
}

// FS is one mounted volume: an in-memory tree of the inodes it has read,
// the changes not yet committed (the write-back cache) and a cache of
// clean blocks. One mutex guards it all, and a commit holds it, so an
// operation sees the tree before or after a commit, never during it.
type FS struct {
	cfg    Config
	blocks Blocks
	vol    key.Volume
	ro     bool

	mu  sync.Mutex
	gen uint32
	// burnt is the highest commit number whose superblock put failed
	// without saying whether it was stored: no later commit takes it or a
	// lower one, so no block of a commit a reader may see is written again.
	burnt   uint32
	nextIno uint32
	full    uint32 // the last full commit (delta.go)
	// dataBytes is the volume's data block size (super.DataBytes).
	dataBytes uint64
	// deltas are the merged directory deltas of the small commits since
	// the last full one, applied to a directory's record when it is
	// loaded (delta.go); a writer drops each as it loads its directory,
	// whose next full commit then folds it in.
	deltas     map[key.Key][]deltaOp
	chain      []uint32 // the writer's small commits since the last full one
	prev       Ptr      // the newest small commit's superblock, for the next to name
	root       *Inode
	unlinked   []*Inode // unlinked since the last commit: their blocks go at the next
	pinned     []*Inode // unlinked and committed, but still open: their blocks wait
	dirtyBytes int64
	dirtySince time.Time // first change since the last commit; zero when clean
	cache      map[key.Key][]byte
	cacheBytes int64
	garbage    []garbage
	lease      leaseState
	stats      Stats
	closed     bool
	refreshed  time.Time // when a read-only mount last looked for a newer commit
	maxSlot    key.Slot  // slots above it count as taken (tests fill directories with it)
	used       uint64    // bytes of the volume's files (status.go)
	room       roomCache // the store's room, for statfs (status.go)
}

// garbage is blocks a commit replaced, deleted from the store after at.
type garbage struct {
	at   time.Time
	keys []key.Key
}

// Inode is a file, directory or symlink of a mounted volume. Its fields
// are guarded by its FS's mutex.
type Inode struct {
	e       Entry  // attributes; e.Meta is the last committed record
	parent  *Inode // nil for the root and for unlinked inodes
	changed bool   // its record, or one below it, differs from the last commit
	// unsynced is the commit that makes n's own data and entry durable:
	// past the FS's gen, a close of n commits (Flushed).
	unsynced uint32
	unlinked bool
	opens    int       // open file descriptors (FUSE opens not yet released)
	pinned   []key.Key // an unlinked file's blocks, kept while it is open

	// Directories, once loaded:
	children map[string]*Inode
	slots    map[key.Slot]bool
	hint     key.Slot
	// delta is the names whose entries may have changed since the last
	// commit (delta.go): the next small commit's ops.
	delta map[string]bool
	// warmed says the first blocks of its files were fetched (prefetch.go).
	warmed bool

	// Files, once loaded:
	loaded  bool
	ptrs    []Ptr             // committed block pointers, less those truncated away
	cut     []key.Key         // committed blocks truncated away, deleted after the next commit
	dirty   map[uint32][]byte // blocks changed since the commit
	metaLen uint64            // bytes of the committed record, to delete its blob
}

// Mkvol creates the volume whose writer holds priv: its ID derived from
// priv's public key (key.VolumeOfKey; only that key's signatures may
// write its blocks, when the store checks them, as D2's nodes do) and a
// first commit holding an empty root directory, its superblock signed
// with priv.
func Mkvol(ctx context.Context, b Blocks, priv ed25519.PrivateKey, now time.Time) (key.Volume, error) {
	return MkvolSized(ctx, b, priv, now, DataBlockBytes)
}

// MkvolSized is Mkvol of a volume whose files are cut in data blocks of
// dataBytes (a power of two from BlockBytes, the paper's 8 KB, to
// MaxDataBlockBytes).
func MkvolSized(ctx context.Context, b Blocks, priv ed25519.PrivateKey, now time.Time, dataBytes int) (key.Volume, error) {
	if len(priv) != ed25519.PrivateKeySize {
		return key.Volume{}, fmt.Errorf("d2fs: mkvol: a private key of %d bytes", len(priv))
	}
	if dataBytes < 0 || dataBytes > MaxDataBlockBytes || !validDataBytes(uint32(dataBytes)) {
		return key.Volume{}, fmt.Errorf("d2fs: mkvol: data blocks of %d bytes; want a power of two from %d to %d", dataBytes, BlockBytes, MaxDataBlockBytes)
	}
	vol := key.VolumeOfKey(priv.Public().(ed25519.PublicKey))
	s := &super{Gen: 1, Full: 1, NextIno: firstInode, Time: now.UnixNano(), DataBytes: uint32(dataBytes), Root: Entry{
		Name: "/", Type: TypeDir, Mode: 0o755, Mtime: now.UnixNano(), Base: rootDir(vol),
	}}
	signSuper(s, vol, priv)
	sb := encodeSuper(s)
	if err := b.PutIf(ctx, superKey(vol, 1), [32]byte{}, sb); err != nil {
		return key.Volume{}, fmt.Errorf("d2fs: mkvol %v: %w", vol, err)
	}
	return vol, nil
}

// Open mounts volume vol of b: reads its newest commit and, unless ro,
// takes the writer lease (ErrLeased if another mount holds it). Open
// starts no goroutine: the caller calls Tick now and then (Mount does).
func Open(ctx context.Context, b Blocks, vol key.Volume, ro bool, cfg Config) (*FS, error) {
	if cfg.CacheBytes == 0 {
		cfg.CacheBytes = DefaultConfig().CacheBytes
	}
	if cfg.MaxPuts == 0 {
		cfg.MaxPuts = DefaultConfig().MaxPuts
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if !ro && (len(cfg.Writer) != ed25519.PrivateKeySize || key.VolumeOfKey(cfg.Writer.Public().(ed25519.PublicKey)) != vol) {
		return nil, fmt.Errorf("%w: a writable mount of volume %v needs its writer's private key (Config.Writer)", errInvalid, vol)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	f := &FS{cfg: cfg, blocks: b, vol: vol, ro: ro, cache: map[key.Key][]byte{}, maxSlot: key.MaxSlot}
	if err := f.loadNewest(ctx); err != nil {
		return nil, err
	}
	f.refreshed = cfg.Now()
	if !ro {
		if _, err := rand.Read(f.lease.holder[:]); err != nil {
			return nil, err
		}
		if err := f.acquireLease(ctx, f.cfg.Now()); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// loadNewest reads the newest superblock that decodes, stepping back
// over at most a few that do not, and makes its tree the mount's.
func (f *FS) loadNewest(ctx context.Context) error {
	s, err := f.newestSuper(ctx)
	if err != nil {
		return err
	}
	c, err := f.readChain(ctx, s)
	if err != nil {
		return err
	}
	f.gen, f.nextIno, f.used, f.full, f.dataBytes = s.Gen, s.NextIno, s.Used, s.Full, uint64(s.DataBytes)
	f.deltas, f.chain, f.prev = c.deltas, c.gens, c.prev
	f.root = &Inode{e: s.Root}
	return nil
}

// newestSuper reads the newest superblock that decodes. One that is not
// the writer's (ErrForged) ends the search with an error naming it: an
// older commit in its place would hide that the volume was tampered with,
// and the writer's next commit would collide with it anyway.
func (f *FS) newestSuper(ctx context.Context) (*super, error) {
	lo, hi := superKey(f.vol, 1), superKey(f.vol, ^uint32(0))
	var firstErr error
	for range 4 {
		k, data, err := f.blocks.Latest(ctx, lo, hi)
		if errors.Is(err, ErrNotFound) {
			if firstErr != nil {
				return nil, fmt.Errorf("%w: %w", errIO, firstErr)
			}
			return nil, fmt.Errorf("%w: %v", ErrNoVolume, f.vol)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: superblock: %w", errIO, err)
		}
		s, err := decodeSuper(data, f.vol, k.Version())
		if err == nil {
			return s, nil
		}
		f.stats.BadBlocks++
		if errors.Is(err, ErrForged) {
			return nil, fmt.Errorf("%w: volume %v: %w; refusing to show an older commit", errIO, f.vol, err)
		}
		firstErr = cmpOr(firstErr, err)
		if k.Version() <= 1 {
			break
		}
		hi = superKey(f.vol, k.Version()-1)
	}
	return nil, fmt.Errorf("%w: %w", errIO, firstErr)
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// Root is the volume's root directory.
func (f *FS) Root() *Inode { return f.root }

// ReadOnly says the mount was opened read-only.
func (f *FS) ReadOnly() bool { return f.ro }

// Stats is a snapshot of the counters.
func (f *FS) Stats() Stats {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.stats
	s.Gen = f.gen
	s.LeaseLost = f.lease.lostWhy
	return s
}

// Tick does the periodic work: renew the lease, commit changes older
// than WriteBack, delete replaced blocks older than KeepOld. Mount calls
// it every second; tests call it with a fake clock. The deletes run
// without the file system's lock and for at most collectBudget a Tick:
// a delete whose owner died moments ago waits on the ring, and a commit
// (the next Tick's, or a close's) must not wait behind it (a write
// through a mount whose node was killed was once not committed in 30 s,
// its Tick deleting the garbage of the commit before).
func (f *FS) Tick(ctx context.Context) error {
	due, err := f.tickLocked(ctx)
	if err != nil {
		return err
	}
	return f.deleteGarbage(ctx, due)
}

// tickLocked is Tick's part under the lock; it takes the garbage that is
// due out of the list and returns its keys.
func (f *FS) tickLocked(ctx context.Context) ([]key.Key, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil, nil
	}
	now := f.cfg.Now()
	if f.ro && now.Sub(f.refreshed) >= f.cfg.Refresh {
		f.refreshed = now
		return nil, f.refresh(ctx)
	}
	if !f.ro && !f.lease.lost && !now.Before(f.leaseRenewAt()) {
		if err := f.renewLease(ctx, now); err != nil {
			return nil, err
		}
	}
	if !f.dirtySince.IsZero() && now.Sub(f.dirtySince) >= f.cfg.WriteBack {
		if err := f.commitLocked(ctx); err != nil {
			return nil, err
		}
	}
	var due []key.Key
	for len(f.garbage) > 0 && !now.Before(f.garbage[0].at) {
		due = append(due, f.garbage[0].keys...)
		f.garbage = f.garbage[1:]
	}
	return due, nil
}

// collectBudget bounds the time a Tick spends deleting garbage; what is
// left is deleted by the next ones.
const collectBudget = 2 * time.Second

// deleteGarbage deletes keys, for at most collectBudget, without the
// lock; the keys it did not delete go back to the front of the garbage,
// due at once.
func (f *FS) deleteGarbage(ctx context.Context, keys []key.Key) error {
	if len(keys) == 0 {
		return nil
	}
	dctx, cancel := context.WithTimeout(ctx, collectBudget)
	defer cancel()
	done := 0
	var err error
	for _, k := range keys {
		if err = f.blocks.Delete(dctx, k); err != nil {
			err = fmt.Errorf("d2fs: delete %v: %w", k, err)
			break
		}
		done++
	}
	f.mu.Lock()
	f.stats.Deleted += done
	if left := keys[done:]; len(left) > 0 {
		f.garbage = append([]garbage{{keys: left}}, f.garbage...)
	}
	f.mu.Unlock()
	if err != nil && dctx.Err() != nil && ctx.Err() == nil {
		return nil // out of this Tick's time: the next one goes on
	}
	return err
}

// Flushed is a close of n (FUSE's FLUSH). Unless the mount is Lazy, a
// close of a file with changes not yet committed commits them, with
// every other change of the volume, and returns once they are durable:
// close-to-open. Linux does not forward sync(2) or syncfs(2) to a FUSE
// server, so a close is where a user's "cp && sync" can be kept.
// Closes that wait for the same commit share it: a commit holds the
// volume's lock, and a close whose file it wrote finds nothing left to do.
func (f *FS) Flushed(ctx context.Context, n *Inode) error {
	if f.cfg.Lazy || f.ro {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if n.unsynced <= f.gen {
		return nil // committed already, by another close, fsync or the write-back
	}
	f.stats.CloseCommits++
	return f.commitLocked(ctx)
}

// Durable commits every change now unless the mount is Lazy: for the
// operations that a user expects durable on return and that no close
// follows (a symlink made, a file renamed), under close-to-open.
func (f *FS) Durable(ctx context.Context) error {
	if f.cfg.Lazy || f.ro {
		return nil
	}
	return f.Sync(ctx)
}

// Sync commits every change now (fsync, unmount).
func (f *FS) Sync(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.commitLocked(ctx)
}

// Close commits, deletes the blocks replaced so far (readers of older
// commits must refresh) and releases the lease. The FS answers EIO after.
func (f *FS) Close(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil
	}
	err := f.commitAs(ctx, true) // a clean unmount leaves the deltas folded in
	if err == nil {
		for _, n := range f.pinned {
			f.garbage = append(f.garbage, garbage{keys: n.pinned})
		}
		f.pinned = nil
		err = f.collect(ctx, f.cfg.Now(), true)
	}
	if !f.ro && !f.lease.lost {
		err = errors.Join(err, f.releaseLease(ctx))
	}
	f.closed = true
	return err
}

// Opened notes that n was opened: if it is unlinked, its blocks stay
// until it is released.
func (f *FS) Opened(n *Inode) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n.opens++
}

// Released notes that an open of n was closed; the last close of an
// unlinked file lets its blocks go (KeepOld later).
func (f *FS) Released(n *Inode) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if n.opens--; n.opens > 0 || n.pinned == nil {
		return
	}
	f.garbage = append(f.garbage, garbage{at: f.cfg.Now().Add(f.cfg.KeepOld), keys: n.pinned})
	n.pinned = nil
	f.pinned = slices.DeleteFunc(f.pinned, func(m *Inode) bool { return m == n })
}

// collect deletes the garbage whose time has come (all of it if all).
func (f *FS) collect(ctx context.Context, now time.Time, all bool) error {
	for len(f.garbage) > 0 && (all || !now.Before(f.garbage[0].at)) {
		g := &f.garbage[0]
		for len(g.keys) > 0 {
			if err := f.blocks.Delete(ctx, g.keys[0]); err != nil {
				return fmt.Errorf("d2fs: delete %v: %w", g.keys[0], err)
			}
			g.keys = g.keys[1:]
			f.stats.Deleted++
		}
		f.garbage = f.garbage[1:]
	}
	return nil
}

// get reads a block and checks it against its pointer: a block whose
// bytes do not hash to sum is never returned.
func (f *FS) get(ctx context.Context, k key.Key, sum [32]byte) ([]byte, error) {
	return f.fetch(ctx, k, sum, true)
}

// fetch is get, through the cache or (for Check) not.
func (f *FS) fetch(ctx context.Context, k key.Key, sum [32]byte, cached bool) ([]byte, error) {
	if b, ok := f.cache[k]; ok && cached {
		return b, nil
	}
	b, err := f.blocks.Get(ctx, k, sum)
	if err == nil && sha256.Sum256(b) != sum {
		err = ErrCorrupt
	}
	if err != nil {
		f.stats.BadBlocks++
		return nil, fmt.Errorf("%w: block %v: %w", errIO, k, err)
	}
	if cached {
		f.remember(k, b)
	}
	return b, nil
}

// remember caches a clean block, emptying the cache when it is full.
func (f *FS) remember(k key.Key, b []byte) {
	if f.cacheBytes+int64(len(b)) > f.cfg.CacheBytes {
		clear(f.cache)
		f.cacheBytes = 0
	}
	f.cache[k] = b
	f.cacheBytes += int64(len(b))
}

// loadBlob reads the record stored as a blob at block 0 of base.
func (f *FS) loadBlob(ctx context.Context, base key.Key, p Ptr) ([]byte, error) {
	return f.readBlob(ctx, base, p, true)
}

// readBlob is loadBlob, through the cache or not.
func (f *FS) readBlob(ctx context.Context, base key.Key, p Ptr, cached bool) ([]byte, error) {
	b0, err := f.fetch(ctx, base.WithBlock(0, p.Version), p.Sum, cached)
	if err != nil {
		return nil, err
	}
	lens, payload, err := blobParts(b0)
	if err != nil {
		return nil, fmt.Errorf("%w: %v: %w", errIO, base, err)
	}
	for l := len(lens) - 1; l >= 1; l-- {
		next := make([]byte, 0, lens[l-1])
		for i := 0; i < len(payload)/32; i++ {
			part, err := f.fetch(ctx, base.WithBlock(partBlock(l, i), p.Version), [32]byte(payload[32*i:]), cached)
			if err != nil {
				return nil, err
			}
			next = append(next, part...)
		}
		if uint64(len(next)) != lens[l-1] {
			return nil, fmt.Errorf("%w: %v: %w: level %d has %d bytes", errIO, base, ErrFormat, l-1, len(next))
		}
		payload = next
	}
	return payload, nil
}

// loadDir reads a directory's entries into the tree, once.
func (f *FS) loadDir(ctx context.Context, d *Inode) error {
	if d.children != nil {
		return nil
	}
	var entries []Entry
	if !d.e.Meta.IsZero() {
		rec, err := f.loadBlob(ctx, d.e.Base, d.e.Meta)
		if err != nil {
			return err
		}
		if entries, err = DecodeDir(rec, d.e.Base); err != nil {
			f.stats.BadBlocks++
			return fmt.Errorf("%w: directory %v: %w", errIO, d.e.Base, err)
		}
		d.metaLen = uint64(len(rec))
	}
	if ops := f.deltas[d.e.Base]; len(ops) > 0 {
		entries = applyDelta(entries, ops)
		if err := checkApplied(entries, d.e.Base); err != nil {
			f.stats.BadBlocks++
			return fmt.Errorf("%w: %w", errIO, err)
		}
		if !f.ro {
			// The chain keeps these changes until the next full commit,
			// which must rewrite the record: changed, nothing to send.
			delete(f.deltas, d.e.Base)
			for n := d; n != nil && !n.changed; n = n.parent {
				n.changed = true
			}
		}
	}
	d.children = make(map[string]*Inode, len(entries))
	d.slots = make(map[key.Slot]bool, len(entries))
	for _, e := range entries {
		d.children[e.Name] = &Inode{e: e, parent: d}
		d.slots[e.Slot] = true
	}
	return nil
}

// loadFile reads a file's block pointers, once.
func (f *FS) loadFile(ctx context.Context, n *Inode) error {
	if n.loaded {
		return nil
	}
	var ptrs []Ptr
	if !n.e.Meta.IsZero() {
		rec, err := f.loadBlob(ctx, n.e.Base, n.e.Meta)
		if err != nil {
			return err
		}
		if ptrs, err = decodeFile(rec); err != nil || uint64(len(ptrs)) != f.blocksOf(n.e.Size) {
			f.stats.BadBlocks++
			return fmt.Errorf("%w: file %v: %d pointers for %d bytes: %v", errIO, n.e.Base, len(ptrs), n.e.Size, err)
		}
		n.metaLen = uint64(len(rec))
	}
	n.ptrs, n.loaded = ptrs, true
	return nil
}

// blocksOf is the number of blocks of a file of size bytes.
func (f *FS) blocksOf(size uint64) uint64 { return (size + f.dataBytes - 1) / f.dataBytes }

// changed notes that n's record must be rewritten, and so its
// ancestors' (each holds the pointer to the one below).
func (f *FS) changed(n *Inode) {
	f.pending(n)
	inDelta(n)
	for ; n != nil && !n.changed; n = n.parent {
		n.changed = true
	}
	if f.dirtySince.IsZero() {
		f.dirtySince = f.cfg.Now()
	}
}

// pending notes that n's data or entry waits for the next commit.
func (f *FS) pending(n *Inode) {
	if n != nil {
		n.unsynced = f.gen + 1
	}
}

// touched notes that n's attributes changed: they live in its parent's
// record (the root's in the superblock, written at every commit).
func (f *FS) touched(n *Inode) {
	f.pending(n)
	inDelta(n)
	switch {
	case n == f.root:
		f.changed(n)
	case n.parent != nil:
		f.changed(n.parent)
	}
}

// inDelta notes that n's entry in its directory may have changed since
// the directory's record was written.
func inDelta(n *Inode) {
	if n == nil || n.parent == nil {
		return
	}
	d := n.parent
	if d.delta == nil {
		d.delta = map[string]bool{}
	}
	d.delta[n.e.Name] = true
}

// entriesOf is a loaded directory's entries sorted by name.
func entriesOf(d *Inode) []*Inode {
	out := make([]*Inode, 0, len(d.children))
	for _, c := range d.children {
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b *Inode) int { return strings.Compare(a.e.Name, b.e.Name) })
	return out
}
