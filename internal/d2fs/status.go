package d2fs

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"time"

	"triad/internal/d2/key"
)

// The bytes a volume uses: the sum of its files' sizes (super.Used), kept
// by the writer as files are written, truncated and removed (setSize,
// dropSize), recorded in every superblock so that any mount, and triad fs
// status, knows it without walking the tree. A read-only mount takes it
// from each commit it follows. A volume whose superblock is of format 2
// (before the field) counts from 0: what it shows is the bytes written
// since, and never goes below 0; triad fs fsck adds up the true sum.

// setSize sets file n's size, and the volume's bytes with it unless n is
// unlinked (its bytes left the volume when it was removed).
func (f *FS) setSize(n *Inode, size uint64) {
	if !n.unlinked && n.e.Type == TypeFile {
		f.used = floorSub(f.used+size, n.e.Size)
	}
	n.e.Size = size
}

// dropSize takes n's bytes off the volume's as n is removed.
func (f *FS) dropSize(n *Inode) {
	if !n.unlinked && n.e.Type == TypeFile {
		f.used = floorSub(f.used, n.e.Size)
	}
}

// floorSub is a-b, or 0 when b is greater (a format-2 volume's count).
func floorSub(a, b uint64) uint64 {
	if a < b {
		return 0
	}
	return a - b
}

// Used is the bytes of the volume's files as this mount sees them:
// committed or not (a writer's), or as of the commit it follows (a
// read-only mount's).
func (f *FS) Used() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.used
}

// Room is what a store says of its room for new blocks: one node's (the
// gateway's) D2 engine.
type Room struct {
	Node     string // who answered
	Capacity uint64 // bytes its engine may take; 0: no bound set (only its disk limits it)
	Usage    uint64 // bytes its engine takes, every volume's blocks and replicas
	Replicas int    // r: the copies kept of each block; 0 is taken as 1
}

// RoomTeller is a Blocks that can say how much room its store has:
// d2client's asks the first node that answers (a D2GetSpace). MemBlocks
// cannot; a mount over it reports no bound.
type RoomTeller interface {
	Room(ctx context.Context) (Room, error)
}

// Space is what statfs (df) reports of a mounted volume, in bytes.
//
//   - Used is the volume's bytes (Used): the sum of its files' sizes, not
//     the store's bytes for them (r copies, records, replaced blocks kept
//     for KeepOld).
//   - Avail is the gateway's free bytes (its engine's capacity less its
//     usage) divided by r, each block being stored r times: how much more
//     the volume may grow if the other holders have as much room as the
//     gateway, which they need not. Other volumes share that room.
//   - When the gateway sets no capacity (a node without --capacity-mb,
//     bounded only by its disk, which D2 does not measure), or no node
//     answered yet, there is no figure: Bounded is false and Avail is
//     NoBoundBytes, a stand-in, not a measure.
//
// Size (df's) is Used plus Avail.
type Space struct {
	Used    uint64
	Avail   uint64
	Bounded bool
	Room    Room      // the gateway's answer; zero if none came
	At      time.Time // when it came; zero: never
	Err     error     // the last ask's failure (the figures are then the last known)
}

// NoBoundBytes is Space.Avail when there is no figure: 1 PiB.
const NoBoundBytes = 1 << 50

// Asking the gateway for room: at most every roomTTL, each ask bounded by
// roomTimeout, and never two at once (a statfs meanwhile takes the last
// answer), so df on a mount whose nodes are down costs roomTimeout once
// per roomTTL, not a hang.
//
// Until the first answer comes, a statfs waits for the ask in flight, and
// the ask has firstRoomTimeout: the first df after a mount, on a loaded
// machine, showed the stand-in (1 PiB) where a second more would have
// given the figure (TestFS, issue 45).
const (
	roomTTL          = 5 * time.Second
	roomTimeout      = 2 * time.Second
	firstRoomTimeout = 10 * time.Second
)

// roomCache is the last answer about the store's room.
type roomCache struct {
	asking sync.Mutex // held by the one ask in flight
	mu     sync.Mutex // guards the rest
	room   Room
	at     time.Time // when room came; zero: never
	tried  time.Time // the last ask
	err    error     // the last ask's failure
}

// Space is what df shows of the volume (see Space): the volume's bytes,
// and the gateway's room, asked at most every 5 s within 2 s.
func (f *FS) Space(ctx context.Context) Space {
	f.mu.Lock()
	used := f.used
	f.mu.Unlock()
	f.askRoom(ctx)
	rc := &f.room
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return spaceOf(used, rc.room, rc.at, rc.err)
}

// askRoom asks the store for its room when the last answer is roomTTL
// old, unless an ask is in flight already or the store cannot say.
func (f *FS) askRoom(ctx context.Context) {
	rc := &f.room
	rt, ok := f.blocks.(RoomTeller)
	if !ok {
		return
	}
	rc.mu.Lock()
	answered := !rc.at.IsZero()
	rc.mu.Unlock()
	if answered {
		if !rc.asking.TryLock() {
			return // the last answer serves
		}
	} else {
		rc.asking.Lock() // none yet: wait for the ask in flight
	}
	defer rc.asking.Unlock()
	now := f.cfg.Now()
	rc.mu.Lock()
	due := rc.tried.IsZero() || now.Sub(rc.tried) >= roomTTL
	if due {
		rc.tried = now
	}
	timeout := roomTimeout
	if rc.at.IsZero() {
		timeout = firstRoomTimeout
	}
	rc.mu.Unlock()
	if !due {
		return
	}
	actx, cancel := context.WithTimeout(ctx, timeout)
	room, err := rt.Room(actx)
	cancel()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.err = err; err == nil {
		rc.room, rc.at = room, now
	}
}

// spaceOf computes Space from the volume's bytes and the gateway's room.
func spaceOf(used uint64, room Room, at time.Time, err error) Space {
	s := Space{Used: used, Avail: NoBoundBytes, Room: room, At: at, Err: err}
	if at.IsZero() || room.Capacity == 0 {
		return s
	}
	r := uint64(max(room.Replicas, 1))
	s.Avail, s.Bounded = floorSub(room.Capacity, room.Usage)/r, true
	return s
}

// Status is a volume's state as the store holds it (triad fs status): its
// last commit and its writer lease. A mount's changes not yet committed
// are not in the store, so not here: the mount's log tells of them.
type Status struct {
	Volume key.Volume
	Gen    uint32 // the last commit
	// Committed is when, by the writer's clock; zero for a superblock of
	// format 2, which does not say.
	Committed time.Time
	// Used is the bytes of the volume's files at that commit (super.Used);
	// a format-2 superblock (OldFormat) does not record it (0).
	Used      uint64
	OldFormat bool
	SuperKey  key.Key  // the superblock's key
	SuperSum  [32]byte // and its SHA-256: what its holders are asked about
	Lease     LeaseStatus
}

// LeaseStatus is the volume's writer lease as stored (lease.go).
type LeaseStatus struct {
	Key key.Key
	// Found is false when there is no lease block: no writable mount or
	// writing command ever held it.
	Found  bool
	Sum    [32]byte  // the block's SHA-256
	Holder [16]byte  // the holding mount's random ID
	Expiry time.Time // zero: given back (a clean unmount)
	// Live says the expiry is still ahead: the holder may commit. A lapsed
	// lease (a mount that died, or stalled) may be taken by a new writer.
	Live bool
	// Bad says why the block does not decode (a new writer takes it over).
	Bad string
}

// ReadStatus reads volume vol's newest commit and writer lease from b; now
// judges the lease. ErrNoVolume when the store holds no superblock.
func ReadStatus(ctx context.Context, b Blocks, vol key.Volume, now time.Time) (Status, error) {
	f := &FS{blocks: b, vol: vol}
	s, err := f.newestSuper(ctx)
	if err != nil {
		return Status{}, err
	}
	st := Status{Volume: vol, Gen: s.Gen, Used: s.Used, OldFormat: s.v2, SuperKey: superKey(vol, s.Gen),
		SuperSum: sha256.Sum256(encodeSuper(s))}
	if !s.v2 {
		st.Committed = time.Unix(0, s.Time)
	}
	st.Lease.Key = leaseKey(vol)
	_, data, err := b.Latest(ctx, st.Lease.Key, st.Lease.Key)
	switch {
	case errors.Is(err, ErrNotFound):
		return st, nil
	case err != nil:
		return st, fmt.Errorf("%w: lease: %w", errIO, err)
	}
	st.Lease.Found, st.Lease.Sum = true, sha256.Sum256(data)
	r, err := decodeLease(data)
	if err != nil {
		st.Lease.Bad = err.Error()
		return st, nil
	}
	st.Lease.Holder = r.holder
	if r.expiry != 0 {
		st.Lease.Expiry = time.Unix(0, r.expiry)
	}
	st.Lease.Live = now.UnixNano() < r.expiry
	return st, nil
}

// Pending lists the paths (from the volume's root, sorted) whose data or
// entry has changed since the last commit: what an unmount now would
// drop if no commit can land (the lease was lost). Only the part of the
// tree the mount has loaded can hold such changes.
func (f *FS) Pending() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	var walk func(n *Inode, path string)
	walk = func(n *Inode, path string) {
		if n.unsynced > f.gen && path != "" {
			out = append(out, path)
		}
		if !n.changed {
			return // nothing below it differs from the commit
		}
		for _, c := range entriesOf(n) {
			walk(c, path+"/"+c.e.Name)
		}
	}
	walk(f.root, "")
	return out
}
