package powercut

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"sync"

	bolt "go.etcd.io/bbolt"
	bolterr "go.etcd.io/bbolt/errors"

	"triad/internal/vfs"
)

// Point is what a power cut leaves at one moment.
type Point[S any] struct {
	// FS is the files as synced. Reopen from FS.CrashClone(), a fresh
	// copy for each reopen, so that every reopen starts from the cut.
	FS    *vfs.MemFS
	State S // the test's own, as state returned it at the cut
}

// Recorder keeps the crash points of a workload: one before every sync of
// the MemFS it records, and a last one after the workload (Last). It is
// safe for concurrent use by the workload's writers.
type Recorder[S any] struct {
	state func() S

	mu     sync.Mutex
	points []Point[S]
}

// New returns a Recorder that takes state at each crash point. state runs
// inside the MemFS's sync, with the MemFS locked: it must not use it.
func New[S any](state func() S) *Recorder[S] {
	return &Recorder[S]{state: state}
}

// Record makes r keep a crash point before every sync of mem, until
// Cut or Last.
func (r *Recorder[S]) Record(mem *vfs.MemFS) {
	mem.OnSync(func(crashed *vfs.MemFS) {
		p := Point[S]{FS: crashed, State: r.state()}
		r.mu.Lock()
		r.points = append(r.points, p)
		r.mu.Unlock()
	})
}

// Now returns what a power cut now would leave, without keeping it: for a
// test that checks one chosen moment.
func (r *Recorder[S]) Now(mem *vfs.MemFS) Point[S] {
	return Point[S]{FS: mem.CrashClone(), State: r.state()}
}

// Cut is a power cut the workload goes on from: r stops recording mem and
// returns what the cut leaves. The workload restores its State, reopens on
// the point's FS and calls Record on it to go on.
func (r *Recorder[S]) Cut(mem *vfs.MemFS) Point[S] {
	mem.OnSync(nil)
	return r.Now(mem)
}

// Last stops recording mem and keeps a last crash point: what is left
// after the workload's last sync.
func (r *Recorder[S]) Last(mem *vfs.MemFS) {
	p := r.Cut(mem)
	r.mu.Lock()
	r.points = append(r.points, p)
	r.mu.Unlock()
}

// Points returns the crash points kept, in the order of the syncs.
func (r *Recorder[S]) Points() []Point[S] {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.points[:len(r.points):len(r.points)]
}

// Committed returns the bbolt file at path as last committed, which is
// what a power cut leaves of it: while db is open (nil: none is), read in
// a read transaction, as its commits may come at any moment; otherwise
// (being opened, or closed) the file, which nothing writes then. It
// returns nil if there is no file yet.
func Committed(db *bolt.DB, path string) ([]byte, error) {
	if db != nil {
		var buf bytes.Buffer
		err := db.View(func(tx *bolt.Tx) error {
			_, err := tx.WriteTo(&buf)
			return err
		})
		if !errors.Is(err, bolterr.ErrDatabaseNotOpen) {
			return buf.Bytes(), err
		}
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return b, err
}

// Restore puts data, a bbolt file as Committed returned it (nil: none),
// at path.
func Restore(path string, data []byte) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if data == nil {
		return nil
	}
	return os.WriteFile(path, data, 0o600)
}
