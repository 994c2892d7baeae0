package d2fs

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// One writer per volume (§3). The lease is a block at a fixed key of the
// volume (leaseKey): the holder's random ID and an expiry. A writable
// mount takes it when the block is absent, expired or its own, renews it
// every third of LeaseTerm, and gives it back (expiry 0)
// at unmount; a mount that dies stops renewing, and its lease lapses
// LeaseTerm (60 s) later. Read-only mounts take no lease.
//
// What it guarantees: every change of the lease block is a PutIf against
// the bytes last read, so two mounts racing for a free lease cannot both
// win, and a renewal by a mount whose lease was taken over fails (the
// mount then commits nothing more: ErrLeaseLost). A mount commits only
// while its clock says its lease holds; a mount that stalls past its
// expiry (and whose lease someone else took) may still be writing the
// blocks of a commit, but its superblock PutIf fails if the new writer
// committed that number first, and the new writer's fails if the stalled
// one did: commits never fork. What it does not guarantee: a stalled
// writer's data blocks of commit g may overwrite the new writer's blocks
// of the same commit number before its superblock fails; such a block no
// longer matches its pointer and reads answer EIO (never wrong bytes).
// Clocks are trusted to agree within a small fraction of LeaseTerm.
type leaseState struct {
	holder [16]byte
	sum    [32]byte  // SHA-256 of the lease block as last written
	expiry time.Time // zero: not held
	lost   bool
	// lostWhy says who holds the lease that was lost, and until when.
	lostWhy string
}

// leaseRenewAt is when the lease is renewed: a third of its term after
// it was last written (every 20 s by default), so two missed renewals
// still leave it held.
func (f *FS) leaseRenewAt() time.Time { return f.lease.expiry.Add(-2 * f.cfg.LeaseTerm / 3) }

type leaseRec struct {
	holder [16]byte
	expiry int64 // Unix nanoseconds
}

func encodeLease(r leaseRec) []byte {
	b := append([]byte{}, magicLease[:]...)
	b = append(b, r.holder[:]...)
	return binary.BigEndian.AppendUint64(b, uint64(r.expiry))
}

func decodeLease(b []byte) (leaseRec, error) {
	var r leaseRec
	if len(b) != 4+16+8 || [4]byte(b[:4]) != magicLease {
		return r, fmt.Errorf("%w: lease of %d bytes", ErrFormat, len(b))
	}
	copy(r.holder[:], b[4:20])
	r.expiry = int64(binary.BigEndian.Uint64(b[20:]))
	return r, nil
}

// readLease reads the volume's lease: the SHA-256 of its bytes (zero
// when there is none), or ErrLeased when it names another mount and has
// not expired. A lease block that does not decode is free to take over:
// nothing this code wrote looks like it.
func (f *FS) readLease(ctx context.Context, now time.Time) (prev [32]byte, err error) {
	k := leaseKey(f.vol)
	_, data, err := f.blocks.Latest(ctx, k, k)
	switch {
	case errors.Is(err, ErrNotFound):
		return prev, nil
	case err != nil:
		return prev, fmt.Errorf("%w: lease: %w", errIO, err)
	}
	prev = sha256.Sum256(data)
	if r, err := decodeLease(data); err == nil && r.holder != f.lease.holder && now.UnixNano() < r.expiry {
		return prev, fmt.Errorf("%w: lease held until %v", ErrLeased, time.Unix(0, r.expiry).UTC())
	}
	return prev, nil
}

// acquireLease takes the volume's lease, or returns ErrLeased.
func (f *FS) acquireLease(ctx context.Context, now time.Time) error {
	prev, err := f.readLease(ctx, now)
	if err != nil {
		return err
	}
	if err := f.writeLease(ctx, prev, now.Add(f.cfg.LeaseTerm)); err != nil {
		if errors.Is(err, ErrConflict) {
			return fmt.Errorf("%w: lost the race for it: %w", ErrLeased, err)
		}
		return err
	}
	return nil
}

// writeLease replaces the lease block whose hash is prev with ours.
func (f *FS) writeLease(ctx context.Context, prev [32]byte, expiry time.Time) error {
	b := encodeLease(leaseRec{holder: f.lease.holder, expiry: expiry.UnixNano()})
	if err := f.blocks.PutIf(ctx, leaseKey(f.vol), prev, b); err != nil {
		return fmt.Errorf("d2fs: lease: %w", err)
	}
	f.lease.sum, f.lease.expiry = sha256.Sum256(b), expiry
	return nil
}

// renewLease extends the lease. A renewal whose conditional put finds
// other bytes than this mount last wrote reads the lease again before it
// gives up: a copy of the lease block older than this mount's last
// renewal (a node that holds it was down while it was renewed) or one it
// wrote itself in a try that seemed to fail is not another writer, and
// the mount takes the lease again over it (acquireLease). Only a lease
// that names another mount and has not expired is lost, and losing it is
// final: the mount turns read-only (ErrLeaseLost) and says whose it is.
func (f *FS) renewLease(ctx context.Context, now time.Time) error {
	if now.After(f.lease.expiry) {
		// It lapsed (the mount stalled): take it again only if no
		// one else did.
		return f.retakeLease(ctx, now)
	}
	err := f.writeLease(ctx, f.lease.sum, now.Add(f.cfg.LeaseTerm))
	if errors.Is(err, ErrConflict) {
		f.stats.LeaseRetakes++
		return f.retakeLease(ctx, now)
	}
	return err
}

// retakeLease takes the lease again unless another mount holds it, in
// which case the lease is lost for good. A retake whose conditional put
// conflicts although the lease read before it was this mount's own (or
// lapsed) is not a loss: the node that decided the put held another
// copy than the one read (a ring re-forming after a cold start, whose
// first node owns every key until the others join), and the next renewal
// tries again. Only a lease read back naming another mount, unexpired, is
// lost; meanwhile the mount commits nothing (holdLease fails).
func (f *FS) retakeLease(ctx context.Context, now time.Time) error {
	err := f.acquireLease(ctx, now)
	if !errors.Is(err, ErrLeased) {
		return err
	}
	if other, rerr := f.leaseHeldByOther(ctx, now); rerr != nil || !other {
		return fmt.Errorf("%w: lease: taking it again met another copy than the one read; retrying: %w", errIO, errors.Join(err, rerr))
	}
	f.lease.lost = true
	f.lease.lostWhy = err.Error()
	return fmt.Errorf("%w: %w", ErrLeaseLost, err)
}

// leaseHeldByOther reads the lease and reports whether it names another
// mount and has not expired.
func (f *FS) leaseHeldByOther(ctx context.Context, now time.Time) (bool, error) {
	_, err := f.readLease(ctx, now)
	if errors.Is(err, ErrLeased) {
		return true, nil
	}
	return false, err
}

// holdLease makes sure the lease holds before a commit.
func (f *FS) holdLease(ctx context.Context, now time.Time) error {
	if f.lease.lost {
		return ErrLeaseLost
	}
	if !now.Before(f.leaseRenewAt()) {
		return f.renewLease(ctx, now)
	}
	return nil
}

// releaseLease gives the lease back: an expired record, so the next
// mount need not wait LeaseTerm.
func (f *FS) releaseLease(ctx context.Context) error {
	return f.writeLease(ctx, f.lease.sum, time.Unix(0, 0))
}
