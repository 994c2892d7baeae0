package d2fs

import (
	"context"
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// checkUsed fails unless the mount's count of the volume's bytes is want,
// and, once committed, what Check adds up from the store.
func checkUsed(t *testing.T, f *FS, what string, want uint64) {
	t.Helper()
	if got := f.Used(); got != want {
		t.Fatalf("%s: used %d, want %d", what, got, want)
	}
	if err := f.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	r, err := f.Check(context.Background())
	if err != nil || r.Bytes != want {
		t.Fatalf("%s: fsck counts %d bytes (%v), the mount %d", what, r.Bytes, err, want)
	}
}

// TestUsedBytes: the volume's bytes follow writes (a hole counts),
// truncates, removes and a rename over a file; a file unlinked while open
// no longer counts, whatever is written to it. The count is in every
// superblock: a remount, a read-only mount and ReadStatus see it.
func TestUsedBytes(t *testing.T) {
	ctx := context.Background()
	f, b, vol, c := newVolume(t)
	checkUsed(t, f, "empty", 0)
	a := writeFile(t, f, "d/a", pattern(3*BlockBytes+5, 1))
	writeFile(t, f, "d/b", pattern(100, 2))
	checkUsed(t, f, "two files", 3*BlockBytes+105)
	if _, err := f.WriteAt(ctx, a, []byte("end"), 10*BlockBytes); err != nil { // a hole in between
		t.Fatal(err)
	}
	checkUsed(t, f, "a hole", 10*BlockBytes+3+100)
	size := uint64(BlockBytes + 1)
	if err := f.Setattr(ctx, a, SetAttr{Size: &size}); err != nil {
		t.Fatal(err)
	}
	checkUsed(t, f, "a truncate", BlockBytes+1+100)
	if _, err := f.Symlink(ctx, f.Root(), "l", "d/a", 0, 0); err != nil {
		t.Fatal(err)
	}
	writeFile(t, f, "c", pattern(7000, 3))
	d := mustWalk(t, f, "d")
	if err := f.Rename(ctx, f.Root(), "c", d, "b", false); err != nil { // replaces b's 100 bytes
		t.Fatal(err)
	}
	checkUsed(t, f, "a rename over a file", BlockBytes+1+7000)

	f.Opened(a)
	if err := f.Unlink(ctx, d, "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(ctx, a, pattern(5*BlockBytes, 4), 0); err != nil {
		t.Fatal(err)
	}
	checkUsed(t, f, "unlinked while open", 7000)
	f.Released(a)

	writeFile(t, f, "e", pattern(2*BlockBytes, 5))
	if err := f.Close(ctx); err != nil {
		t.Fatal(err)
	}
	const want = 7000 + 2*BlockBytes
	again := mustOpen(t, b, vol, false, c)
	checkUsed(t, again, "after a remount", want)
	ro := mustOpen(t, b, vol, true, c)
	if ro.Used() != want {
		t.Fatalf("a read-only mount: used %d, want %d", ro.Used(), want)
	}
	if err := again.Unlink(ctx, mustWalk(t, again, "d"), "b"); err != nil {
		t.Fatal(err)
	}
	if err := again.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ro.Refresh(ctx); err != nil || ro.Used() != 2*BlockBytes {
		t.Fatalf("a read-only mount after the writer removed a file: used %d (%v), want %d", ro.Used(), err, 2*BlockBytes)
	}
	st, err := ReadStatus(ctx, b, vol, c.Now())
	switch {
	case err != nil:
		t.Fatal(err)
	case st.Used != 2*BlockBytes || st.Gen != again.Stats().Gen || !st.Committed.Equal(c.Now()) || st.OldFormat:
		t.Fatalf("status %+v", st)
	case !st.Lease.Found || !st.Lease.Live || st.Lease.Holder != again.lease.holder || !st.Lease.Expiry.Equal(again.lease.expiry):
		t.Fatalf("lease while a mount holds it: %+v", st.Lease)
	}
	if _, data, err := b.Latest(ctx, st.SuperKey, st.SuperKey); err != nil || sha256.Sum256(data) != st.SuperSum {
		t.Fatalf("the status's superblock sum is not the stored block's (%v)", err)
	}
	if err := again.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if st, err = ReadStatus(ctx, b, vol, c.Now()); err != nil || !st.Lease.Found || st.Lease.Live || !st.Lease.Expiry.IsZero() {
		t.Fatalf("lease after an unmount: %+v, %v", st.Lease, err)
	}
}

// TestSuperFormat2: a superblock of format 2 (no bytes used, no time)
// still decodes, re-encodes as it was, and is read by ReadStatus as of the
// old format. A mount of it counts from 0 and a remove never takes the
// count below 0; its next commit is of format 3.
func TestSuperFormat2(t *testing.T) {
	ctx := context.Background()
	f, b, vol, c := newVolume(t)
	writeFile(t, f, "old", pattern(5000, 1))
	if err := f.Close(ctx); err != nil {
		t.Fatal(err)
	}
	s, err := f.newestSuper(ctx)
	if err != nil {
		t.Fatal(err)
	}
	old := &super{Gen: s.Gen + 1, NextIno: s.NextIno, Root: s.Root, v2: true}
	signSuper(old, vol, testWriter())
	sb := encodeSuper(old)
	if got, err := decodeSuper(sb, vol, old.Gen); err != nil || !got.v2 || got.Used != 0 || got.Time != 0 || string(encodeSuper(got)) != string(sb) {
		t.Fatalf("a format-2 superblock: %+v, %v", got, err)
	}
	if err := b.PutIf(ctx, superKey(vol, old.Gen), [32]byte{}, sb); err != nil {
		t.Fatal(err)
	}
	st, err := ReadStatus(ctx, b, vol, c.Now())
	if err != nil || !st.OldFormat || st.Used != 0 || !st.Committed.IsZero() || st.Gen != old.Gen {
		t.Fatalf("status of a format-2 superblock: %+v, %v", st, err)
	}
	g := mustOpen(t, b, vol, false, c)
	if err := g.Unlink(ctx, g.Root(), "old"); err != nil {
		t.Fatal(err)
	}
	if g.Used() != 0 {
		t.Fatalf("used %d after removing a file a format-2 volume did not count", g.Used())
	}
	writeFile(t, g, "new", pattern(300, 2))
	if err := g.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if st, err := ReadStatus(ctx, b, vol, c.Now()); err != nil || st.OldFormat || st.Used != 300 {
		t.Fatalf("status after a commit over a format-2 superblock: %+v, %v", st, err)
	}
}

// roomBlocks is MemBlocks whose store says how much room it has.
type roomBlocks struct {
	*MemBlocks
	room  Room
	err   error
	calls int
}

func (r *roomBlocks) Room(ctx context.Context) (Room, error) {
	r.calls++
	return r.room, r.err
}

// TestSpace: statfs's figures: the volume's bytes used, the gateway's free
// bytes over r available, asked again only every roomTTL; a failed ask
// keeps the last figures, and a store that sets no bound (or cannot say)
// gives the stand-in.
func TestSpace(t *testing.T) {
	ctx := context.Background()
	c := newClock()
	b := &roomBlocks{MemBlocks: NewMemBlocks(), room: Room{Node: "n1", Capacity: 1 << 30, Usage: 1 << 20, Replicas: 3}}
	vol, err := MkvolSized(ctx, b, testWriter(), c.Now(), BlockBytes)
	if err != nil {
		t.Fatal(err)
	}
	f := mustOpen(t, b, vol, false, c)
	writeFile(t, f, "f", pattern(12345, 1))
	s := f.Space(ctx)
	if want := uint64(1<<30-1<<20) / 3; s.Used != 12345 || s.Avail != want || !s.Bounded || s.Room.Node != "n1" || s.Err != nil {
		t.Fatalf("space %+v, want %d available", s, want)
	}
	b.room.Usage = 1 << 29
	b.err = errors.New("down")
	if s := f.Space(ctx); b.calls != 1 || s.Avail != uint64(1<<30-1<<20)/3 {
		t.Fatalf("asked %d times within %v: %+v", b.calls, roomTTL, s)
	}
	c.Advance(roomTTL)
	if s := f.Space(ctx); b.calls != 2 || s.Err == nil || s.Avail != uint64(1<<30-1<<20)/3 || !s.At.Equal(c.Now().Add(-roomTTL)) {
		t.Fatalf("a failed ask: %d calls, %+v", b.calls, s)
	}
	c.Advance(roomTTL)
	b.err, b.room.Capacity = nil, 0
	if s := f.Space(ctx); s.Bounded || s.Avail != NoBoundBytes || s.Err != nil {
		t.Fatalf("a gateway without a bound: %+v", s)
	}
	m := NewMemBlocks()
	vol2, err := MkvolSized(ctx, m, testWriter(), c.Now(), BlockBytes)
	if err != nil {
		t.Fatal(err)
	}
	if s := mustOpen(t, m, vol2, true, c).Space(ctx); s.Bounded || s.Avail != NoBoundBytes || !s.At.IsZero() {
		t.Fatalf("a store that cannot say: %+v", s)
	}
}

// TestFUSEStatfs: statfs on a mount (df) shows the volume's bytes used, in
// 8 KB blocks, and the gateway's free bytes over r available.
func TestFUSEStatfs(t *testing.T) {
	b := &roomBlocks{MemBlocks: NewMemBlocks(), room: Room{Node: "n1", Capacity: 3 << 30, Usage: 3 << 20, Replicas: 3}}
	dir, _, unmount := mountNew(t, b)
	defer func() {
		if err := unmount(); err != nil {
			t.Error(err)
		}
	}()
	if err := os.WriteFile(filepath.Join(dir, "f"), pattern(3*BlockBytes+1, 1), 0o644); err != nil {
		t.Fatal(err)
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	avail := uint64(3<<30-3<<20) / 3 / BlockBytes
	if st.Bsize != BlockBytes || st.Blocks-st.Bfree != 4 || st.Bfree != avail || st.Bavail != avail {
		t.Fatalf("statfs: block %d, %d blocks, %d free, %d available; want 4 used and %d available", st.Bsize, st.Blocks, st.Bfree, st.Bavail, avail)
	}
}

// slowRoom is a store whose first Room answers once released, as a
// loaded gateway does; entered is told when an ask begins.
type slowRoom struct {
	*MemBlocks
	entered, release chan struct{}
}

func (r *slowRoom) Room(ctx context.Context) (Room, error) {
	r.entered <- struct{}{}
	select {
	case <-r.release:
		return Room{Node: "n1", Capacity: 1 << 30, Replicas: 3}, nil
	case <-ctx.Done():
		return Room{}, ctx.Err()
	}
}

// Until the gateway's first answer, a statfs waits for the ask in flight
// instead of giving the stand-in: df right after a mount, while the first
// ask was slow, showed 1 PiB free (TestFS, issue 45).
func TestFirstSpaceWaitsForTheAnswer(t *testing.T) {
	ctx := context.Background()
	c := newClock()
	b := &slowRoom{MemBlocks: NewMemBlocks(), entered: make(chan struct{}, 1), release: make(chan struct{})}
	vol, err := MkvolSized(ctx, b, testWriter(), c.Now(), BlockBytes)
	if err != nil {
		t.Fatal(err)
	}
	f := mustOpen(t, b, vol, false, c)
	first := make(chan Space, 1)
	go func() { first <- f.Space(ctx) }()
	<-b.entered // the first ask is in flight
	second := make(chan Space, 1)
	go func() { second <- f.Space(ctx) }()
	// The second must wait for the ask. (Given 100 ms to return early,
	// as it did: a slower scheduler only makes this check miss, never
	// fail wrongly.)
	select {
	case s := <-second:
		t.Fatalf("a statfs while the first ask was in flight returned at once: %+v", s)
	case <-time.After(100 * time.Millisecond):
	}
	close(b.release)
	for _, ch := range []chan Space{first, second} {
		if s := <-ch; !s.Bounded || s.Avail != (1<<30)/3 {
			t.Fatalf("a statfs while the first ask was in flight: %+v, want the gateway's figure", s)
		}
	}
}
