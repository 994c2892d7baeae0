package d2fs

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"triad/internal/d2/key"
)

// pausing is a Blocks that stops before the superblock of a commit is
// stored, so a test can look at the store mid-commit.
type pausing struct {
	*MemBlocks
	vol     key.Volume
	reached chan struct{} // closed when the superblock PutIf arrives
	resume  chan struct{}
}

func (p *pausing) PutIf(ctx context.Context, k key.Key, prev [32]byte, data []byte) error {
	if key.SameFile(k, key.Root(p.vol)) && k.Block() == 0 && k.Version() > 1 {
		close(p.reached)
		<-p.resume
	}
	return p.MemBlocks.PutIf(ctx, k, prev, data)
}

// A reader opened on the old commit sees the old tree while the writer
// commits, and a reader opened mid-commit too: never a mix.
func TestCommitVisibility(t *testing.T) {
	ctx := context.Background()
	f, b, vol, c := newVolume(t)
	writeFile(t, f, "d/one", []byte("one, old"))
	writeFile(t, f, "d/two", []byte("two, old"))
	if err := f.Close(ctx); err != nil {
		t.Fatal(err)
	}
	p := &pausing{MemBlocks: b, vol: vol, reached: make(chan struct{}), resume: make(chan struct{})}
	w := mustOpen(t, p, vol, false, c)
	old := mustOpen(t, b, vol, true, c)
	oldTree := tree(t, old)
	writeFile(t, w, "d/one", []byte("one, new"))
	writeFile(t, w, "d/two", []byte("two, new, longer"))
	writeFile(t, w, "d/three", []byte("three"))
	if err := w.Rename(ctx, w.Root(), "d", w.Root(), "e", false); err != nil {
		t.Fatal(err)
	}
	newTree := tree(t, w)
	done := make(chan error, 1)
	go func() { done <- w.Sync(ctx) }()
	<-p.reached // every block of the commit but the superblock is stored
	if got := tree(t, old); got != oldTree {
		t.Fatalf("old reader mid-commit sees\n%s\nwant\n%s", got, oldTree)
	}
	mid := mustOpen(t, b, vol, true, c)
	if got := tree(t, mid); got != oldTree {
		t.Fatalf("reader opened mid-commit sees\n%s\nwant the old tree\n%s", got, oldTree)
	}
	close(p.resume)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := tree(t, old); got != oldTree {
		t.Fatalf("old reader after the commit sees\n%s\nwant (until it remounts)\n%s", got, oldTree)
	}
	after := mustOpen(t, b, vol, true, c)
	if got := tree(t, after); got != newTree {
		t.Fatalf("reader after the commit sees\n%s\nwant\n%s", got, newTree)
	}
}

// A mount that dies mid-commit leaves the last commit: a remount (once
// the dead mount's lease lapsed) sees it whole.
func TestCrashMidCommit(t *testing.T) {
	ctx := context.Background()
	// The commit stores d/a's 3 blocks and record, then the superblock
	// (d/new is held in its entry): 4 fails only the superblock.
	for _, failAfter := range []int{0, 1, 3, 4} {
		t.Run(fmt.Sprint(failAfter), func(t *testing.T) {
			f, b, vol, c := newVolume(t)
			writeFile(t, f, "d/a", pattern(2*BlockBytes, 1))
			writeFile(t, f, "b", []byte("committed"))
			if err := f.Sync(ctx); err != nil {
				t.Fatal(err)
			}
			committed := tree(t, f)
			writeFile(t, f, "d/a", pattern(3*BlockBytes, 2))
			writeFile(t, f, "d/new", []byte("lost"))
			if err := f.Unlink(ctx, f.Root(), "b"); err != nil {
				t.Fatal(err)
			}
			var puts atomic.Int32
			b.FailPut = func(k key.Key) error {
				if puts.Add(1) > int32(failAfter) {
					return errors.New("crash")
				}
				return nil
			}
			if err := f.Sync(ctx); err == nil {
				t.Fatal("commit succeeded through a crash")
			}
			b.FailPut = nil
			// f is dead: it never renews its lease.
			if _, err := Open(ctx, b, vol, false, testConfig(c)); !errors.Is(err, ErrLeased) {
				t.Fatalf("writable remount while the dead mount's lease holds: %v", err)
			}
			c.Advance(61 * time.Second)
			g := mustOpen(t, b, vol, false, c)
			if got := tree(t, g); got != committed {
				t.Fatalf("remount sees\n%s\nwant the last commit\n%s", got, committed)
			}
			// And it commits over the dead mount's leftovers.
			writeFile(t, g, "d/new", []byte("again"))
			if err := g.Close(ctx); err != nil {
				t.Fatal(err)
			}
			h := mustOpen(t, b, vol, true, c)
			mustRead(t, h, "d/new", []byte("again"))
			mustRead(t, h, "d/a", pattern(2*BlockBytes, 1))
		})
	}
}

// A failed commit leaves every change dirty; the next one commits them.
func TestCommitRetry(t *testing.T) {
	ctx := context.Background()
	f, b, vol, c := newVolume(t)
	writeFile(t, f, "x/y", pattern(BlockBytes+1, 5))
	b.FailPut = func(key.Key) error { return errors.New("store down") }
	if err := f.Sync(ctx); err == nil {
		t.Fatal("commit succeeded with the store down")
	}
	b.FailPut = nil
	if err := f.Close(ctx); err != nil {
		t.Fatal(err)
	}
	mustRead(t, mustOpen(t, b, vol, true, c), "x/y", pattern(BlockBytes+1, 5))
}

func TestLease(t *testing.T) {
	ctx := context.Background()
	f, b, vol, c := newVolume(t)
	if _, err := Open(ctx, b, vol, false, testConfig(c)); !errors.Is(err, ErrLeased) || !errors.Is(err, syscall.EBUSY) {
		t.Fatalf("second writable mount: %v, want ErrLeased", err)
	}
	ro := mustOpen(t, b, vol, true, c)
	if _, err := ro.Create(ctx, ro.Root(), "x", 0o644, 0, 0); !errors.Is(err, syscall.EROFS) {
		t.Fatalf("create on a read-only mount: %v, want EROFS", err)
	}
	// The mount renews its lease: ten minutes on, it still holds.
	for range 60 {
		c.Advance(10 * time.Second)
		if err := f.Tick(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Open(ctx, b, vol, false, testConfig(c)); !errors.Is(err, ErrLeased) {
		t.Fatalf("second writable mount after renewals: %v, want ErrLeased", err)
	}
	// The mount stalls past its term: another takes the volume, and the
	// stalled one commits nothing more.
	writeFile(t, f, "stalled", []byte("x"))
	c.Advance(61 * time.Second)
	g := mustOpen(t, b, vol, false, c)
	writeFile(t, g, "winner", []byte("y"))
	if err := g.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(ctx); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("commit by the stalled mount: %v, want ErrLeaseLost", err)
	}
	if err := g.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// Unmount gives the lease back at once.
	h := mustOpen(t, b, vol, true, c)
	mustRead(t, h, "winner", []byte("y"))
	if _, err := h.Walk(ctx, "stalled"); !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("the stalled mount's file: %v, want ENOENT", err)
	}
	mustOpen(t, b, vol, false, c)
}

// Two mounts that both start from the same commit cannot both commit the
// next one: the superblock's conditional put is a fence even when the
// lease is bypassed.
func TestCommitFence(t *testing.T) {
	ctx := context.Background()
	f, b, vol, c := newVolume(t)
	c.Advance(61 * time.Second) // f's lease lapses without f noticing
	g := mustOpen(t, b, vol, false, c)
	f.lease.expiry = c.Now().Add(time.Hour) // f believes it still holds
	writeFile(t, g, "g", []byte("g"))
	writeFile(t, f, "f", []byte("f"))
	if err := g.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(ctx); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("second commit of one number: %v, want ErrLeaseLost", err)
	}
}

// Changes are committed WriteBack after the first one, not before.
func TestWriteBack(t *testing.T) {
	ctx := context.Background()
	f, _, _, c := newVolume(t)
	writeFile(t, f, "a", []byte("a"))
	c.Advance(29 * time.Second)
	if err := f.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	if g := f.Stats().Gen; g != 1 {
		t.Fatalf("committed at 29 s: gen %d", g)
	}
	c.Advance(time.Second)
	if err := f.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	if g := f.Stats().Gen; g != 2 {
		t.Fatalf("not committed at 30 s: gen %d", g)
	}
}

// Past MaxDirtyBytes a write commits first.
func TestDirtyLimit(t *testing.T) {
	ctx := context.Background()
	b := NewMemBlocks()
	c := newClock()
	vol, err := MkvolSized(ctx, b, testWriter(), c.Now(), BlockBytes)
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(c)
	cfg.MaxDirtyBytes = 4 * BlockBytes
	f, err := Open(ctx, b, vol, false, cfg)
	if err != nil {
		t.Fatal(err)
	}
	n := writeFile(t, f, "f", pattern(4*BlockBytes, 0))
	if g := f.Stats().Gen; g != 1 {
		t.Fatalf("committed at the limit: gen %d", g)
	}
	if _, err := f.WriteAt(ctx, n, []byte("more"), 4*BlockBytes); err != nil {
		t.Fatal(err)
	}
	if g := f.Stats().Gen; g != 2 {
		t.Fatalf("write past the limit did not commit: gen %d", g)
	}
}

// A block that does not match its pointer is never returned: EIO.
func TestCorruptBlock(t *testing.T) {
	ctx := context.Background()
	f, b, vol, c := newVolume(t)
	data := pattern(3*BlockBytes, 9)
	n := writeFile(t, f, "f", data)
	if err := f.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if !b.Corrupt(n.Key().WithBlock(2, 2)) {
		t.Fatal("no block 2 of version 2")
	}
	g := mustOpen(t, b, vol, true, c)
	m, err := g.Walk(ctx, "f")
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, BlockBytes)
	if _, err := g.ReadAt(ctx, m, buf, 0); err != nil {
		t.Fatalf("block 0 is fine: %v", err)
	}
	if _, err := g.ReadAt(ctx, m, buf, BlockBytes); !errors.Is(err, syscall.EIO) {
		t.Fatalf("corrupt block: %v, want EIO", err)
	}
	// A Get that fails (no replica answers) is EIO too.
	b.FailGet = func(k key.Key) error { return ErrNotFound }
	if _, err := g.ReadAt(ctx, m, buf, 2*BlockBytes); !errors.Is(err, syscall.EIO) {
		t.Fatalf("failed get: %v, want EIO", err)
	}
	if s := g.Stats(); s.BadBlocks != 2 {
		t.Fatalf("BadBlocks %d, want 2", s.BadBlocks)
	}
}

// Paths deeper than 12 levels are placed by hash, counted, and work.
func TestDeepPath(t *testing.T) {
	ctx := context.Background()
	f, b, vol, c := newVolume(t)
	var parts []string
	for i := range 20 {
		parts = append(parts, fmt.Sprintf("d%d", i))
	}
	path := strings.Join(parts, "/") + "/file"
	n := writeFile(t, f, path, []byte("deep"))
	if !n.Key().Hashed() {
		t.Fatalf("key of a file 21 levels down is not hashed: %v", n.Key())
	}
	if h := f.Stats().Hashed; h != 9 {
		t.Fatalf("Hashed %d, want 9 (levels 13 to 21)", h)
	}
	if err := f.Close(ctx); err != nil {
		t.Fatal(err)
	}
	mustRead(t, mustOpen(t, b, vol, true, c), path, []byte("deep"))
}

// A directory with more names than slots places the rest by hash; the
// test lowers the slot limit to 100 (65,534 real entries take minutes).
func TestFullDirectory(t *testing.T) {
	ctx := context.Background()
	f, b, vol, c := newVolume(t)
	f.maxSlot = 100
	d, err := f.Mkdir(ctx, f.Root(), "big", 0o755, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 150 {
		if _, err := f.Create(ctx, d, fmt.Sprintf("f%03d", i), 0o644, 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	if h := f.Stats().Hashed; h != 50 {
		t.Fatalf("Hashed %d, want 50", h)
	}
	// Free a slot: the next name takes it.
	if err := f.Unlink(ctx, d, "f007"); err != nil {
		t.Fatal(err)
	}
	n, err := f.Create(ctx, d, "again", 0o644, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if n.Key().Hashed() {
		t.Fatal("a name created after a slot was freed is hashed")
	}
	want := tree(t, f)
	if err := f.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if got := tree(t, mustOpen(t, b, vol, true, c)); got != want {
		t.Fatalf("remount sees\n%s\nwant\n%s", got, want)
	}
}

// A record longer than a block is stored in parts: a directory of 5,000
// names (1 MB), a file of 300 blocks (10,808 bytes of pointers).
func TestLargeRecords(t *testing.T) {
	ctx := context.Background()
	f, b, vol, c := newVolume(t)
	d, err := f.Mkdir(ctx, f.Root(), "many", 0o755, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5000 {
		if _, err := f.Create(ctx, d, fmt.Sprintf("%0100d", i), 0o644, 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, f, "large", pattern(300*BlockBytes, 4)) // 10,800-byte block list
	if err := f.Close(ctx); err != nil {
		t.Fatal(err)
	}
	g := mustOpen(t, b, vol, true, c)
	ents, err := g.ReadDir(ctx, mustWalk(t, g, "many"))
	if err != nil || len(ents) != 5000 {
		t.Fatalf("readdir: %d entries, %v", len(ents), err)
	}
	mustRead(t, g, "large", pattern(300*BlockBytes, 4))
}

func mustWalk(t *testing.T, f *FS, path string) *Inode {
	t.Helper()
	n, err := f.Walk(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A read-only mount follows the writer's commits, whole, keeping the
// Inodes of what did not go away; a failed read leaves it where it was.
func TestReadOnlyRefresh(t *testing.T) {
	ctx := context.Background()
	w, b, vol, c := newVolume(t)
	writeFile(t, w, "d/keep", []byte("keep"))
	writeFile(t, w, "d/gone", []byte("gone"))
	writeFile(t, w, "d/sub/f", []byte("v1"))
	if err := w.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	r := mustOpen(t, b, vol, true, c)
	v1 := tree(t, r)
	keep := mustWalk(t, r, "d/keep")
	sub := mustWalk(t, r, "d/sub/f")
	writeFile(t, w, "d/sub/f", []byte("v2, longer"))
	writeFile(t, w, "d/new", []byte("new"))
	if err := w.Unlink(ctx, mustWalk(t, w, "d"), "gone"); err != nil {
		t.Fatal(err)
	}
	// A full commit: its new directory records are what the refresh
	// must read (a small commit's deltas are in the superblock).
	w.mu.Lock()
	err := w.commitAs(ctx, true)
	w.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	v2 := tree(t, w)
	if err := r.Tick(ctx); err != nil { // within Refresh of the open
		t.Fatal(err)
	}
	if got := tree(t, r); got != v1 {
		t.Fatalf("reader refreshed before Refresh passed:\n%s", got)
	}
	b.FailGet = func(key.Key) error { return ErrNotFound }
	c.Advance(5 * time.Second)
	if err := r.Tick(ctx); !errors.Is(err, syscall.EIO) {
		t.Fatalf("refresh with the store failing: %v, want EIO", err)
	}
	b.FailGet = nil
	if got := tree(t, r); got != v1 {
		t.Fatalf("a failed refresh left\n%s\nwant\n%s", got, v1)
	}
	c.Advance(5 * time.Second)
	if err := r.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	if got := tree(t, r); got != v2 {
		t.Fatalf("refreshed reader sees\n%s\nwant\n%s", got, v2)
	}
	if mustWalk(t, r, "d/keep") != keep || mustWalk(t, r, "d/sub/f") != sub {
		t.Fatal("refresh replaced the Inodes of files that stayed")
	}
	if a := r.Attr(sub); a.Size != uint64(len("v2, longer")) {
		t.Fatalf("kept Inode has size %d after refresh", a.Size)
	}
}

// A commit whose context is cancelled stores no superblock.
func TestCommitCancelled(t *testing.T) {
	f, b, vol, c := newVolume(t)
	writeFile(t, f, "f", pattern(40*BlockBytes, 2))
	ctx, cancel := context.WithCancel(context.Background())
	var puts atomic.Int32
	b.FailPut = func(key.Key) error {
		if puts.Add(1) == 3 {
			cancel() // Puts themselves ignore ctx in MemBlocks
		}
		return nil
	}
	if err := f.Sync(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled commit: %v", err)
	}
	b.FailPut = nil
	if g := mustOpen(t, b, vol, true, c).Stats().Gen; g != 1 {
		t.Fatalf("a cancelled commit stored superblock %d", g)
	}
}

// TestForgedSuper: a superblock with a higher commit number that is not
// the writer's (signed by another key, or carrying the writer's public
// key with a bad signature), stored past the nodes' check, is refused:
// a mount fails with ErrForged naming its key rather than show an older
// commit, and a read-only mount's refresh fails and keeps its tree.
func TestForgedSuper(t *testing.T) {
	ctx := context.Background()
	_, mallory, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		forge func(s *super, vol key.Volume)
	}{
		{"another key", func(s *super, vol key.Volume) { signSuper(s, vol, mallory) }},
		{"bad signature", func(s *super, vol key.Volume) {
			signSuper(s, vol, testWriter())
			s.Sig[0] ^= 1
		}},
		{"signed for another commit", func(s *super, vol key.Volume) {
			s.Gen--
			signSuper(s, vol, testWriter())
			s.Gen++
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, b, vol, c := newVolume(t)
			writeFile(t, f, "real", []byte("the writer's"))
			if err := f.Close(ctx); err != nil {
				t.Fatal(err)
			}
			ro := mustOpen(t, b, vol, true, c)
			want := tree(t, ro)
			gen := ro.Stats().Gen + 1
			s := &super{Gen: gen, NextIno: firstInode, DataBytes: BlockBytes, Root: Entry{Name: "/", Type: TypeDir, Mode: 0o755, Base: rootDir(vol)}}
			tc.forge(s, vol)
			if err := b.Put(ctx, superKey(vol, gen), encodeSuper(s)); err != nil {
				t.Fatal(err)
			}
			_, err := Open(ctx, b, vol, true, testConfig(c))
			if !errors.Is(err, ErrForged) || !errors.Is(err, syscall.EIO) || !strings.Contains(err.Error(), superKey(vol, gen).String()) {
				t.Fatalf("mount over a forged superblock: %v; want ErrForged naming %v", err, superKey(vol, gen))
			}
			if err := ro.Refresh(ctx); !errors.Is(err, ErrForged) {
				t.Fatalf("refresh over a forged superblock: %v, want ErrForged", err)
			}
			if got := tree(t, ro); got != want || ro.Stats().Gen != gen-1 {
				t.Fatalf("after a refused refresh the mount shows commit %d\n%s\nwant %d\n%s", ro.Stats().Gen, got, gen-1, want)
			}
		})
	}
}

// A renewal that finds an older copy of the mount's own lease (a node
// that holds the lease block was down while it was renewed, and came back
// with its old copy) or bytes it cannot read as a lease takes the lease
// again and the mount stays writable (issue 43: before, it turned
// read-only for good); a lease that names another mount and has not
// expired is lost, and the mount says whose it is.
func TestLeaseRetakenOverAStaleCopy(t *testing.T) {
	ctx := context.Background()
	f, b, vol, c := newVolume(t)
	lk := leaseKey(vol)
	_, stale, err := b.Latest(ctx, lk, lk)
	if err != nil {
		t.Fatal(err)
	}
	for round, old := range [][]byte{stale, []byte("not a lease")} {
		c.Advance(25 * time.Second) // past the renewal time: the lease is renewed
		if err := f.Tick(ctx); err != nil {
			t.Fatal(err)
		}
		if err := b.Put(ctx, lk, old); err != nil { // the store answers an older copy
			t.Fatal(err)
		}
		c.Advance(25 * time.Second)
		if err := f.Tick(ctx); err != nil {
			t.Fatalf("round %d: renewal over a stale lease: %v", round, err)
		}
		name := fmt.Sprintf("after-%d", round)
		writeFile(t, f, name, []byte(name))
		if err := f.Sync(ctx); err != nil {
			t.Fatalf("round %d: commit after the retake: %v", round, err)
		}
		if got := f.Stats().LeaseRetakes; got != round+1 {
			t.Errorf("round %d: %d retakes counted", round, got)
		}
	}
	// A node decides the retake against another copy than the one read
	// (a ring re-forming after a cold start): the renewal fails, the
	// mount stays writable, and the next one takes the lease.
	conflicts := 0
	b.FailPut = func(k key.Key) error {
		if k == lk && conflicts < 2 {
			conflicts++
			return fmt.Errorf("%w: injected", ErrConflict)
		}
		return nil
	}
	c.Advance(25 * time.Second)
	if err := f.Tick(ctx); err == nil || errors.Is(err, ErrLeaseLost) {
		t.Fatalf("a retake that met another copy: %v, want a failed renewal that is not a loss", err)
	}
	b.FailPut = nil
	c.Advance(2 * time.Second)
	if err := f.Tick(ctx); err != nil {
		t.Fatalf("the renewal after a contended retake: %v", err)
	}
	writeFile(t, f, "after-contention", []byte("x"))
	if err := f.Sync(ctx); err != nil {
		t.Fatalf("commit after a contended retake: %v", err)
	}
	// Another mount's live lease: lost, and said; the changes not yet
	// committed are listed, for the unmount to refuse to drop silently.
	writeFile(t, f, "unsaved", []byte("not committed"))
	other := encodeLease(leaseRec{holder: [16]byte{1, 2, 3}, expiry: c.Now().Add(time.Minute).UnixNano()})
	if err := b.Put(ctx, lk, other); err != nil {
		t.Fatal(err)
	}
	c.Advance(25 * time.Second)
	if err := f.Tick(ctx); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("renewal over another mount's lease: %v, want ErrLeaseLost", err)
	}
	if s := f.Stats().LeaseLost; !strings.Contains(s, "held until") {
		t.Errorf("the lost lease is explained as %q", s)
	}
	if _, err := f.Create(ctx, f.Root(), "refused", 0o644, 0, 0); !errors.Is(err, syscall.EROFS) {
		t.Errorf("create after the lease was lost: %v, want EROFS", err)
	}
	if p := f.Pending(); !slices.Equal(p, []string{"/unsaved"}) {
		t.Errorf("pending after the lease was lost: %q, want [/unsaved]", p)
	}
}

// lostReply is a Blocks whose first superblock put past commit 1 is
// stored but answered with an error: the reply of a node killed once it
// had stored it.
type lostReply struct {
	*MemBlocks
	vol  key.Volume
	lost atomic.Bool
}

func (l *lostReply) PutIf(ctx context.Context, k key.Key, prev [32]byte, data []byte) error {
	err := l.MemBlocks.PutIf(ctx, k, prev, data)
	if err == nil && k.Version() > 1 && k == superKey(l.vol, k.Version()) && l.lost.CompareAndSwap(false, true) {
		return errors.New("connection reset before the reply")
	}
	return err
}

// A commit whose superblock was stored though its put failed is the
// volume's state for a reader, so the next commit must not write its
// blocks again at the same version: the second try rewrote them with the
// tree as it was by then, met the first try's superblock, took the lease
// for lost, and left a superblock pointing at blocks no longer there
// (chaos --d2: every file lost, "lease lost", issue 45).
func TestCommitAfterALostReply(t *testing.T) {
	ctx := context.Background()
	b := &lostReply{MemBlocks: NewMemBlocks()}
	c := newClock()
	vol, err := MkvolSized(ctx, b, testWriter(), c.Now(), BlockBytes)
	if err != nil {
		t.Fatal(err)
	}
	b.vol = vol
	f := mustOpen(t, b, vol, false, c)
	writeFile(t, f, "a", pattern(BlockBytes+1, 1))
	if err := f.Sync(ctx); err == nil {
		t.Fatal("a commit whose superblock put failed was taken as done")
	}
	// What a reader sees now is the first try's commit: whole.
	mustRead(t, mustOpen(t, b, vol, true, c), "a", pattern(BlockBytes+1, 1))
	writeFile(t, f, "b", pattern(100, 2))
	if err := f.Sync(ctx); err != nil {
		t.Fatalf("the commit after a lost reply: %v", err)
	}
	g := mustOpen(t, b, vol, true, c)
	mustRead(t, g, "a", pattern(BlockBytes+1, 1))
	mustRead(t, g, "b", pattern(100, 2))
	if err := f.Close(ctx); err != nil {
		t.Fatal(err)
	}
}
