package bench

import (
	"encoding/binary"
	"fmt"
	"path/filepath"
	"time"

	"triad/internal/id"
	"triad/internal/maint"
	"triad/internal/store"
	"triad/internal/store/disk"
)

// SyncConfig is one run of the synchronization benchmark: what Passing
// Tone's local maintenance spends to compare a replica range with a
// neighbour that holds the same keys.
type SyncConfig struct {
	Dir      string // where the two stores go; must exist
	Keys     int    // keys in the range, held by both stores
	Outside  int    // keys the neighbour also holds past the range's end
	Progress func(phase string, total int64) Progress
}

// SyncCase is what one synchronization cost.
type SyncCase struct {
	Name    string `json:"case"`
	Queries int    `json:"queries"`
	Bytes   int    `json:"bytes"`
	Missing int    `json:"missing"`
}

// SyncResult holds the cases, in the order they ran.
type SyncResult struct {
	Keys         int        `json:"keys"`
	Outside      int        `json:"outside"`
	Cases        []SyncCase `json:"cases"`
	BuildSeconds float64    `json:"build_seconds"`
}

// Sync builds two storage engines (the real disk engine, with its
// persisted Merkle tree) holding the same Keys keys in a replica range
// (lo, hi] of half the ring, and measures with maint.SyncCost (the code a
// round runs: the neighbour's describe, our compare) three
// synchronizations of that range: the stores equal; the neighbour also
// holding Outside keys past hi (a successor's own range); and, on top,
// one key of the range that only the neighbour has. BuildSeconds is the
// time to fill the stores, not part of any sync.
func Sync(c SyncConfig) (SyncResult, error) {
	res := SyncResult{Keys: c.Keys, Outside: c.Outside}
	if c.Keys < 1 || c.Outside < 0 {
		return res, fmt.Errorf("bench sync: want at least one key and no negative count")
	}
	ours, err := disk.Open(store.Options{Dir: filepath.Join(c.Dir, "ours")})
	if err != nil {
		return res, err
	}
	defer ours.Close()
	theirs, err := disk.Open(store.Options{Dir: filepath.Join(c.Dir, "theirs")})
	if err != nil {
		return res, err
	}
	defer theirs.Close()

	lo, hi, err := syncRange()
	if err != nil {
		return res, err
	}
	start := time.Now()
	expiry := start.Add(24 * time.Hour)
	p := startProgress(c.Progress, "building two stores", c.Keys+c.Outside)
	put := func(e *disk.Disk, key id.ID, data []byte) error {
		return e.Put(key, data, expiry, store.PutOptions{NoWait: true, KeyChecked: true})
	}
	// First the range, on both sides; the keys past it are noted by
	// their counter and put on the neighbour after the first measure.
	in := 0
	buf := make([]byte, 32)
	object := func(i uint64) []byte {
		binary.LittleEndian.PutUint64(buf, i)
		return buf
	}
	var outside []uint64
	extra := uint64(0) // the first object of the range past Keys: the one ours lacks
	for i := uint64(1); in < c.Keys || len(outside) < c.Outside || extra == 0; i++ {
		key := id.Key(object(i))
		switch {
		case !key.In(lo, hi):
			if len(outside) < c.Outside {
				outside = append(outside, i)
			}
		case in < c.Keys:
			in++
			if err := put(ours, key, buf); err != nil {
				return res, err
			}
			if err := put(theirs, key, buf); err != nil {
				return res, err
			}
			p.Add(1)
		case extra == 0:
			extra = i
		}
	}
	measure := func(name string) error {
		q, b, missing, err := maint.SyncCost(ours, theirs, lo, hi)
		if err != nil {
			return fmt.Errorf("bench sync: %s: %w", name, err)
		}
		res.Cases = append(res.Cases, SyncCase{Name: name, Queries: q, Bytes: b, Missing: len(missing)})
		return nil
	}
	if err := measure(fmt.Sprintf("the same %d keys on both", c.Keys)); err != nil {
		return res, err
	}
	for _, i := range outside {
		if err := put(theirs, id.Key(object(i)), buf); err != nil {
			return res, err
		}
		p.Add(1)
	}
	p.Finish()
	res.BuildSeconds = time.Since(start).Seconds()
	if c.Outside > 0 {
		// The neighbour's keys past hi change its tree, not the range.
		if err := measure(fmt.Sprintf("and %d more on the neighbour past the range", c.Outside)); err != nil {
			return res, err
		}
	}
	if err := put(theirs, id.Key(object(extra)), buf); err != nil {
		return res, err
	}
	if err := measure("and one key of the range only on the neighbour"); err != nil {
		return res, err
	}
	return res, nil
}

// syncRange is the replica range (lo, hi] of the benchmark: half the
// ring, so that content keys fall in it or past it at random, and objects
// are made until each side has its count. Neither end is on a subtree's
// edge, as a real range's would not be.
func syncRange() (lo, hi id.ID, err error) {
	edge := make([]byte, id.Bytes)
	for i := range edge {
		edge[i] = byte(0x5a + 17*i)
	}
	if lo, err = id.FromBytes(edge); err != nil {
		return lo, hi, err
	}
	edge[0] += 0x80
	hi, err = id.FromBytes(edge)
	return lo, hi, err
}
