package disk

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterr "go.etcd.io/bbolt/errors"

	"triad/internal/id"
	"triad/internal/store"
	"triad/internal/vfs"
)

// Disk is the storage engine on a real disk. Objects are appended to
// segment files, one or more per expiry window; a group commit makes them
// durable with one fdatasync per interval. The segments are the log: the
// bbolt index and Merkle tree catch up at checkpoints, and recovery replays
// the segments past the last checkpoint, so a put costs one sequential write
// and a share of one fdatasync.
type Disk struct {
	opt store.Options
	fs  vfs.FS // the segments'; bbolt's index is on the OS
	db  *bolt.DB

	maintMu sync.Mutex           // serialises checkpoints, reclamation, quarantine
	keyMu   [keyLocks]sync.Mutex // serialise the checked puts of a key (keyLock)
	deleted atomic.Bool          // a key was ever deleted: every put looks (Delete)
	// caughtUp is opt.Elapsed when the last checkpoint that succeeded
	// began (TreeLag).
	caughtUp atomic.Int64

	mu       sync.Mutex
	segs     map[uint64]*segment
	open     map[int64]*segment // the segment each window appends to
	dirty    map[*segment]struct{}
	appended uint64 // records appended so far (gather)
	dirDirty bool
	nextSeg  uint64
	active   map[id.ID]entry // written since the last checkpoint
	flushing map[id.ID]entry // being written to the index now
	group    *syncGroup
	retired  int64 // windows up to this one take no more appends
	usage    int64
	failed   error
	closing  bool
	closed   bool
	stats    store.Stats
	guard    store.ClockGuard // the time things expire at (expiryNow)

	syncKick  chan struct{}
	syncNow   chan struct{} // Sync's kick: a commit now, not after the interval
	maintKick chan struct{}
	stopMaint chan struct{}
	stopSync  chan struct{}
	wg        sync.WaitGroup
}

type segment struct {
	id     uint64
	window int64
	path   string
	f      vfs.File
	size   int64
	zeroed int64    // the file's length: records end at size, zeros follow (preallocate)
	dead   int64    // bytes of records that hold no live object (compaction)
	mapped *mapping // for View, once a view needs it
}

const indexFile = "index.db"

// Open opens or creates the engine in opt.Dir and recovers it: torn tails
// are cut and records the index missed are indexed. A nil opt.Now is the
// wall clock.
func Open(opt store.Options) (*Disk, error) { return OpenFS(vfs.OS(), opt) }

// OpenFS is Open with the segments on fsys. The bbolt index is always a
// file of the OS in opt.Dir (bbolt does its own I/O), so that directory
// must exist there too. Tests pass a vfs.MemFS to crash the engine.
func OpenFS(fsys vfs.FS, opt store.Options) (*Disk, error) {
	opt = opt.WithDefaults()
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Elapsed == nil {
		opt.Elapsed = store.ElapsedOf(opt.Now)
	}
	if opt.Dir == "" {
		return nil, errors.New("store: no directory given")
	}
	if err := vfs.MkdirAllSynced(fsys, opt.Dir); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	db, err := bolt.Open(filepath.Join(opt.Dir, indexFile), 0o600, &bolt.Options{
		Timeout:         time.Second,
		FreelistType:    bolt.FreelistMapType,
		InitialMmapSize: 256 << 20,
	})
	if errors.Is(err, bolterr.ErrTimeout) {
		return nil, fmt.Errorf("store: %s is in use by another process", opt.Dir)
	}
	if err != nil {
		return nil, fmt.Errorf("store: opening index: %w", err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range allBuckets {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("store: opening index: %w", err)
	}
	d := &Disk{
		opt:       opt,
		fs:        fsys,
		db:        db,
		segs:      make(map[uint64]*segment),
		open:      make(map[int64]*segment),
		dirty:     make(map[*segment]struct{}),
		active:    make(map[id.ID]entry),
		group:     newGroup(),
		retired:   math.MinInt64,
		nextSeg:   1,
		syncKick:  make(chan struct{}, 1),
		syncNow:   make(chan struct{}, 1),
		maintKick: make(chan struct{}, 1),
		stopMaint: make(chan struct{}),
		stopSync:  make(chan struct{}),
	}
	d.stats.Capacity = opt.Capacity
	d.caughtUp.Store(math.MinInt64 / 2) // no checkpoint yet: the first tree read catches up
	if err := d.recover(); err != nil {
		d.closeFiles()
		return nil, err
	}
	d.wg.Add(2)
	go d.syncLoop()
	go d.maintainLoop()
	return d, nil
}

// diskErr marks errors of a full disk as store.ErrFull.
func diskErr(err error) error {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return fmt.Errorf("%w: %w", store.ErrFull, err)
	}
	return fmt.Errorf("store: %w", err)
}

// Sync makes every write so far durable and indexed.
func (d *Disk) Sync() error {
	d.maintMu.Lock()
	defer d.maintMu.Unlock()
	if err := d.waitGroupNow(); err != nil {
		return err
	}
	return d.checkpoint()
}

// Close implements store.Engine: it indexes everything written and closes files.
func (d *Disk) Close() error {
	d.mu.Lock()
	if d.closing {
		d.mu.Unlock()
		return nil
	}
	d.closing = true
	d.mu.Unlock()
	close(d.stopMaint)
	err := d.Sync()
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
	close(d.stopSync)
	// The final sync's group carries any error to the waiters.
	d.wg.Wait()
	if cerr := d.closeFiles(); err == nil {
		err = cerr
	}
	return err
}

func (d *Disk) closeFiles() error {
	d.mu.Lock()
	for _, s := range d.segs {
		s.trim()
		s.f.Close()
		s.unmap()
	}
	d.mu.Unlock()
	return d.db.Close()
}
