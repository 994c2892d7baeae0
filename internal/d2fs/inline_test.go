package d2fs

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"triad/internal/d2/key"
)

// A file of at most InlineBytes is committed in its entry: its close
// stores the superblock alone. Every reader sees its bytes; it moves to
// blocks when it grows past InlineBytes and back when it shrinks (its
// blocks then garbage); a truncate then a grow reads zeros; and a commit
// whose small files do not all fit in the superblock puts them in blocks
// rather than fall back to a full commit.
func TestSmallFilesInTheirEntries(t *testing.T) {
	ctx := context.Background()
	b, vol, c := newCountingVolume(t, DataBlockBytes)
	w := mustOpen(t, b, vol, false, c)
	r := mustOpen(t, b, vol, true, c)
	closeFile(t, w, "d/seed", []byte("x")) // the directory exists
	b.puts.Store(0)
	small, edge, big := pattern(100, 1), pattern(InlineBytes, 2), pattern(InlineBytes+1, 3)
	closeFile(t, w, "d/small", small)
	closeFile(t, w, "d/edge", edge)
	if got := b.puts.Load(); got != 2 {
		t.Fatalf("%d puts for 2 closes of files of at most InlineBytes, want 2 (the superblocks)", got)
	}
	closeFile(t, w, "d/big", big)
	if got := b.puts.Load(); got != 2+3 {
		t.Fatalf("%d puts after a close of InlineBytes+1 bytes, want 5 (block, record, superblock)", got)
	}
	if st := w.Stats(); st.Inlined != 3 {
		t.Fatalf("Stats.Inlined %d, want 3", st.Inlined)
	}
	for _, g := range []*FS{mustOpen(t, b, vol, true, c), refreshed(t, r)} {
		mustRead(t, g, "d/small", small)
		mustRead(t, g, "d/edge", edge)
		mustRead(t, g, "d/big", big)
	}

	// Grown past InlineBytes at an offset that leaves block 0 unwritten
	// on 8 KB blocks is covered below; here, an append.
	n := mustWalk(t, w, "d/small")
	more := pattern(2*InlineBytes, 4)
	if _, err := w.WriteAt(ctx, n, more, int64(len(small))); err != nil {
		t.Fatal(err)
	}
	if err := w.Flushed(ctx, n); err != nil {
		t.Fatal(err)
	}
	grown := append(bytes.Clone(small), more...)
	mustRead(t, mustOpen(t, b, vol, true, c), "d/small", grown)
	if keys := blocksOf(b.MemBlocks, n.Key()); keys == 0 {
		t.Fatal("a file grown past InlineBytes has no blocks")
	}
	// Shrunk back: held in its entry again, its blocks garbage.
	size := uint64(10)
	if err := w.Setattr(ctx, n, SetAttr{Size: &size}); err != nil {
		t.Fatal(err)
	}
	if err := w.Flushed(ctx, n); err != nil {
		t.Fatal(err)
	}
	mustRead(t, mustOpen(t, b, vol, true, c), "d/small", grown[:10])
	c.Advance(w.cfg.KeepOld + time.Second)
	if err := w.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	if keys := blocksOf(b.MemBlocks, n.Key()); keys != 0 {
		t.Fatalf("a file shrunk into its entry still has %d blocks after KeepOld", keys)
	}
	// Cut (to a few bytes, and to none), then grown again by a write
	// past the end: zeros between.
	for _, cut := range []uint64{3, 0} {
		head := bytes.Clone(grown[:cut])
		if err := w.Setattr(ctx, n, SetAttr{Size: &cut}); err != nil {
			t.Fatal(err)
		}
		if _, err := w.WriteAt(ctx, n, []byte("end"), 20); err != nil {
			t.Fatal(err)
		}
		if err := w.Flushed(ctx, n); err != nil {
			t.Fatal(err)
		}
		want := append(append(head, make([]byte, 20-cut)...), "end"...)
		mustRead(t, mustOpen(t, b, vol, true, c), "d/small", want)
		grown = want
	}

	// Many small files in one commit: what does not fit in the
	// superblock goes in blocks, and the commit is still a small one.
	before := w.Stats()
	for i := range 8 {
		writeFile(t, w, fmt.Sprintf("d/many%d", i), pattern(3000, i))
	}
	if err := w.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if st := w.Stats(); st.SmallCommits != before.SmallCommits+1 {
		t.Fatalf("8 files of 3,000 bytes in one commit: %d small commits, want 1", st.SmallCommits-before.SmallCommits)
	}
	g := mustOpen(t, b, vol, true, c)
	for i := range 8 {
		mustRead(t, g, fmt.Sprintf("d/many%d", i), pattern(3000, i))
	}
	if rep, err := g.Check(ctx); err != nil || len(rep.Bad) != 0 {
		t.Fatalf("check: %+v, %v", rep, err)
	}
}

// A file held in its entry, on 8 KB data blocks, grown by a write that
// starts past block 0: its bytes become block 0 (the write does not
// touch it).
func TestInlineFileGrownPastBlockZero(t *testing.T) {
	ctx := context.Background()
	w, b, vol, c := newVolume(t)
	closeFile(t, w, "f", []byte("head"))
	n := mustWalk(t, w, "f")
	if _, err := w.WriteAt(ctx, n, []byte("tail"), 3*BlockBytes); err != nil {
		t.Fatal(err)
	}
	if err := w.Flushed(ctx, n); err != nil {
		t.Fatal(err)
	}
	want := make([]byte, 3*BlockBytes+4)
	copy(want, "head")
	copy(want[3*BlockBytes:], "tail")
	mustRead(t, mustOpen(t, b, vol, true, c), "f", want)
}

// A superblock that holds a file's bytes is format 6; a reader refuses
// an entry whose bytes disagree with its size or that also points at a
// record.
func TestInlineEntryChecked(t *testing.T) {
	dir := rootDir(key.VolumeOf("v", nil))
	e := Entry{Name: "f", Slot: 1, Type: TypeFile, Mode: 0o644, Size: 3, Base: withInode(dir, 5), Target: "abc"}
	if err := checkEntry(&e, dir); err != nil {
		t.Fatalf("a file of 3 bytes in its entry: %v", err)
	}
	for _, bad := range []Entry{
		{Name: "f", Slot: 1, Type: TypeFile, Size: 4, Base: withInode(dir, 5), Target: "abc"},
		{Name: "f", Slot: 1, Type: TypeFile, Size: 3, Base: withInode(dir, 5), Target: "abc", Meta: Ptr{Version: 1}},
		{Name: "f", Slot: 1, Type: TypeFile, Size: InlineBytes + 1, Base: withInode(dir, 5), Target: string(make([]byte, InlineBytes+1))},
	} {
		if err := checkEntry(&bad, dir); err == nil {
			t.Errorf("entry of size %d with %d bytes and record %v: accepted", bad.Size, len(bad.Target), bad.Meta)
		}
	}
}

// refreshed is read-only mount r after it has taken the newest commit.
func refreshed(t *testing.T, r *FS) *FS {
	t.Helper()
	if err := r.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	return r
}

// blocksOf counts the stored blocks of the file whose key is k.
func blocksOf(b *MemBlocks, k key.Key) int {
	n := 0
	for _, sk := range b.Keys() {
		if key.SameFile(sk, k) {
			n++
		}
	}
	return n
}
