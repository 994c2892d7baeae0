package bench

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"triad/internal/id"
	"triad/internal/stats"
	"triad/internal/store"
	"triad/internal/store/disk"
)

// StoreConfig is one run of the storage benchmark.
type StoreConfig struct {
	Dir          string        // where the files go; must exist
	Size         int           // object size in bytes
	Objects      int           // objects to write and read; zero: 1 GB worth, at least 100 and at most 200,000
	Writers      int           // concurrent puts, each waiting for durability
	Readers      int           // concurrent gets
	SyncInterval time.Duration // group commit interval, for the store and the raw file
	Reopen       int           // if > 0: only build a store of this many keys and time its reopening
	CheckKeys    bool          // the store hashes each object; else the caller has (as DHash does)
	Progress     func(phase string, total int64) Progress
}

// Progress receives a phase's advance.
type Progress interface {
	Add(n int)
	Finish()
}

// StoreResult holds the figures; rates are per second, MB is 10^6 bytes.
type StoreResult struct {
	Size           int     `json:"size"`
	Objects        int     `json:"objects"`
	Writers        int     `json:"writers,omitempty"`
	Readers        int     `json:"readers,omitempty"`
	SyncIntervalMS float64 `json:"sync_interval_ms"`
	CheckKeys      bool    `json:"check_keys"`

	RawWriteMBps float64 `json:"raw_write_mbps,omitempty"`
	WriteMBps    float64 `json:"write_mbps,omitempty"`
	WriteObjs    float64 `json:"write_objects_per_sec,omitempty"`
	WriteRatio   float64 `json:"write_ratio,omitempty"`
	IndexCatchUp float64 `json:"index_catch_up_seconds,omitempty"`

	RawReadMBps float64 `json:"raw_read_mbps,omitempty"`
	ReadMBps    float64 `json:"read_mbps,omitempty"`
	ReadObjs    float64 `json:"read_objects_per_sec,omitempty"`
	ReadRatio   float64 `json:"read_ratio,omitempty"`

	ReopenKeys    int     `json:"reopen_keys,omitempty"`
	ReopenSeconds float64 `json:"reopen_seconds"`
}

// objects generates the benchmark's objects: slices of a random pool, each
// made unique by its number in the first 8 bytes.
type objects struct {
	pool []byte
	size int
	keys []id.ID
}

func newObjects(n, size int, p Progress) *objects {
	o := &objects{size: size, pool: make([]byte, 64<<20+size)}
	rand.NewChaCha8([32]byte{1}).Read(o.pool)
	o.keys = make([]id.ID, n)
	buf := make([]byte, size)
	for i := range o.keys {
		o.fill(i, buf)
		o.keys[i] = id.Key(buf)
		p.Add(1)
	}
	p.Finish()
	return o
}

func (o *objects) fill(i int, buf []byte) {
	off := (i * 4099) % (len(o.pool) - o.size)
	copy(buf, o.pool[off:off+o.size])
	if len(buf) >= 8 {
		binary.LittleEndian.PutUint64(buf, uint64(i))
	} else {
		sum := sha256.Sum256(binary.LittleEndian.AppendUint64(nil, uint64(i)))
		copy(buf, sum[:])
	}
}

type nop struct{}

func (nop) Add(int) {}
func (nop) Finish() {}

func (c *StoreConfig) progress(phase string, total int) Progress {
	return startProgress(c.Progress, phase, total)
}

// startProgress starts a phase's progress with f, or none when f is nil.
func startProgress(f func(phase string, total int64) Progress, phase string, total int) Progress {
	if f == nil {
		return nop{}
	}
	return f(phase, int64(total))
}

// Store runs the storage benchmark.
func Store(c StoreConfig) (StoreResult, error) {
	if c.Objects == 0 {
		c.Objects = min(200_000, max(100, 1_000_000_000/c.Size))
	}
	res := StoreResult{Size: c.Size, Objects: c.Objects, SyncIntervalMS: float64(c.SyncInterval) / 1e6, CheckKeys: c.CheckKeys}
	if c.Reopen > 0 {
		return reopenOnly(c, res)
	}
	res.Writers, res.Readers = c.Writers, c.Readers
	objs := newObjects(c.Objects, c.Size, c.progress("preparing objects", c.Objects))
	total := float64(c.Objects) * float64(c.Size)

	rawPath := filepath.Join(c.Dir, "raw.dat")
	secs, err := rawWrite(rawPath, objs, c)
	if err != nil {
		return res, err
	}
	res.RawWriteMBps = total / secs / 1e6

	storeDir := filepath.Join(c.Dir, "store")
	st, err := disk.Open(store.Options{Dir: storeDir, SyncInterval: c.SyncInterval})
	if err != nil {
		return res, err
	}
	defer func() {
		if st != nil {
			st.Close()
		}
	}()
	secs, err = storeWrite(st, objs, c)
	if err != nil {
		return res, err
	}
	res.WriteMBps = total / secs / 1e6
	res.WriteObjs = float64(c.Objects) / secs
	res.WriteRatio = res.WriteMBps / res.RawWriteMBps
	start := time.Now()
	if err := st.Sync(); err != nil {
		return res, err
	}
	res.IndexCatchUp = time.Since(start).Seconds()

	// Both reads start cold: the files leave the page cache first. The disk
	// is shared and noisy, so the two alternate and the medians count.
	segs, _ := filepath.Glob(filepath.Join(storeDir, "*.seg"))
	var raws, reads []float64
	for round := 0; round < readRounds; round++ {
		if err := dropCache(append(segs, rawPath)...); err != nil {
			return res, err
		}
		if secs, err = rawRead(rawPath, c); err != nil {
			return res, err
		}
		raws = append(raws, total/secs/1e6)
		if err := dropCache(segs...); err != nil {
			return res, err
		}
		if secs, err = storeRead(st, objs, c); err != nil {
			return res, err
		}
		reads = append(reads, total/secs/1e6)
	}
	res.RawReadMBps = stats.Median(raws)
	res.ReadMBps = stats.Median(reads)
	res.ReadObjs = res.ReadMBps * 1e6 / float64(c.Size)
	res.ReadRatio = res.ReadMBps / res.RawReadMBps

	if err := st.Close(); err != nil {
		return res, err
	}
	st = nil
	start = time.Now()
	st, err = disk.Open(store.Options{Dir: storeDir})
	if err != nil {
		return res, err
	}
	res.ReopenSeconds = time.Since(start).Seconds()
	res.ReopenKeys = st.Stats().Objects
	return res, os.Remove(rawPath)
}

// readRounds is how many times each read phase runs.
const readRounds = 3

// rawWrite writes the objects back to back to one plain file under the same
// sync policy as the store: an fdatasync whenever the interval has passed,
// and one at the end.
func rawWrite(path string, objs *objects, c StoreConfig) (float64, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	p := c.progress("raw file write", c.Objects)
	defer p.Finish()
	buf := make([]byte, objs.size)
	start := time.Now()
	last := start
	for i := 0; i < c.Objects; i++ {
		objs.fill(i, buf)
		if _, err := f.Write(buf); err != nil {
			return 0, err
		}
		if time.Since(last) >= c.SyncInterval {
			if err := unix.Fdatasync(int(f.Fd())); err != nil {
				return 0, err
			}
			last = time.Now()
		}
		p.Add(1)
	}
	if err := unix.Fdatasync(int(f.Fd())); err != nil {
		return 0, err
	}
	return time.Since(start).Seconds(), nil
}

// storeWrite puts the objects from c.Writers goroutines, each put waiting
// until its object is durable. Unless c.CheckKeys, puts say the key was
// checked, as DHash's do: it hashes each block it receives before storing
// it, so the store need not hash it again.
func storeWrite(st *disk.Disk, objs *objects, c StoreConfig) (float64, error) {
	p := c.progress("store write", c.Objects)
	defer p.Finish()
	expiry := time.Now().Add(24 * time.Hour)
	return inParallel(c.Objects, c.Writers, func() func(int) error {
		buf := make([]byte, objs.size)
		return func(i int) error {
			objs.fill(i, buf)
			err := st.Put(objs.keys[i], buf, expiry, store.PutOptions{KeyChecked: !c.CheckKeys})
			p.Add(1)
			return err
		}
	})
}

// inParallel runs op(0) … op(n-1) on the given number of goroutines, each
// with its own op from newOp, and returns the seconds taken and the first
// error, after which no new op starts.
func inParallel(n, goroutines int, newOp func() func(int) error) (float64, error) {
	var next atomic.Int64
	var failed atomic.Bool
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < goroutines; w++ {
		wg.Add(1)
		go func(op func(int) error) {
			defer wg.Done()
			for !failed.Load() {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := op(i); err != nil {
					once.Do(func() { firstErr = err })
					failed.Store(true)
				}
			}
		}(newOp())
	}
	wg.Wait()
	return time.Since(start).Seconds(), firstErr
}

func rawRead(path string, c StoreConfig) (float64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	p := c.progress("raw file read", c.Objects)
	defer p.Finish()
	buf := make([]byte, 1<<20)
	start := time.Now()
	var n int64
	for {
		k, err := f.Read(buf)
		n += int64(k)
		p.Add(int(n/int64(c.Size)) - int(((n - int64(k)) / int64(c.Size))))
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, err
		}
	}
	return time.Since(start).Seconds(), nil
}

// storeRead gets every object once in random order from c.Readers
// goroutines; the store checks each against its record checksums.
func storeRead(st *disk.Disk, objs *objects, c StoreConfig) (float64, error) {
	p := c.progress("store random read", c.Objects)
	defer p.Finish()
	order := rand.New(rand.NewPCG(1, 2)).Perm(c.Objects)
	return inParallel(c.Objects, c.Readers, func() func(int) error {
		var data []byte
		return func(i int) error {
			var err error
			data, _, err = st.GetInto(objs.keys[order[i]], data)
			if err == nil && len(data) != c.Size {
				err = fmt.Errorf("object %d: %d bytes, want %d", order[i], len(data), c.Size)
			}
			p.Add(1)
			return err
		}
	})
}

// dropCache syncs files and asks the kernel to forget their cached pages.
func dropCache(paths ...string) error {
	for _, path := range paths {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		err = unix.Fdatasync(int(f.Fd()))
		if err == nil {
			err = unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
		}
		f.Close()
		if err != nil {
			return fmt.Errorf("dropping %s from the page cache: %w", path, err)
		}
	}
	return nil
}

// reopenOnly builds a store of c.Reopen keys, closes it, and times Open.
func reopenOnly(c StoreConfig, res StoreResult) (StoreResult, error) {
	dir := filepath.Join(c.Dir, "store")
	st, err := disk.Open(store.Options{Dir: dir})
	if err != nil {
		return res, err
	}
	p := c.progress("building store", c.Reopen)
	expiry := time.Now().Add(24 * time.Hour)
	buf := make([]byte, c.Size)
	for i := 0; i < c.Reopen; i++ {
		binary.LittleEndian.PutUint64(buf, uint64(i))
		if err := st.Put(id.Key(buf), buf, expiry, store.PutOptions{NoWait: true}); err != nil {
			st.Close()
			return res, err
		}
		p.Add(1)
	}
	p.Finish()
	if err := st.Close(); err != nil {
		return res, err
	}
	start := time.Now()
	st, err = disk.Open(store.Options{Dir: dir})
	if err != nil {
		return res, err
	}
	res.ReopenSeconds = time.Since(start).Seconds()
	res.ReopenKeys = st.Stats().Objects
	res.Objects = c.Reopen
	return res, st.Close()
}

// SyncLatency is the median time, over n rounds, of writing 4 KB to a
// file in dir and fdatasync'ing it: the least a durable write there waits.
func SyncLatency(dir string, n int) (time.Duration, error) {
	f, err := os.CreateTemp(dir, "sync-probe-*")
	if err != nil {
		return 0, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	buf := make([]byte, 4096)
	lat := make([]time.Duration, 0, n)
	for i := range n {
		t := time.Now()
		if _, err := f.WriteAt(buf, int64(i%64)*4096); err != nil {
			return 0, err
		}
		if err := unix.Fdatasync(int(f.Fd())); err != nil {
			return 0, err
		}
		lat = append(lat, time.Since(t))
	}
	slices.Sort(lat)
	return lat[len(lat)/2], nil
}
