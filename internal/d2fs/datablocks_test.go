package d2fs

import (
	"context"
	"errors"
	"testing"
)

// TestLargeDataBlocks: a volume Mkvol makes cuts its files in
// DataBlockBytes blocks: a file written at odd offsets, grown and cut
// back, reads back through the writer and a fresh read-only mount, and
// fsck counts one block per 64 KB begun. MkvolSized refuses a size that
// is not a power of two in range.
func TestLargeDataBlocks(t *testing.T) {
	ctx := context.Background()
	b := NewMemBlocks()
	c := newClock()
	vol, err := Mkvol(ctx, b, testWriter(), c.Now())
	if err != nil {
		t.Fatal(err)
	}
	f := mustOpen(t, b, vol, false, c)
	data := pattern(3*DataBlockBytes+100, 7)
	n := writeFile(t, f, "big", data)
	if _, err := f.WriteAt(ctx, n, []byte("middle"), DataBlockBytes-3); err != nil {
		t.Fatal(err)
	}
	copy(data[DataBlockBytes-3:], "middle")
	size := uint64(DataBlockBytes + 70)
	if err := f.Setattr(ctx, n, SetAttr{Size: &size}); err != nil {
		t.Fatal(err)
	}
	data = data[:size]
	if err := f.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	mustRead(t, f, "big", data)
	if r, err := f.Check(ctx); err != nil || r.Bytes != uint64(len(data)) || len(r.Bad) != 0 {
		t.Fatalf("fsck: %+v, %v", r, err)
	}
	ro := mustOpen(t, b, vol, true, c)
	mustRead(t, ro, "big", data)
	if got := dataBlocks(t, ro, "big"); got != 2 {
		t.Errorf("a file of %d bytes in %d data blocks, want 2 of 64 KB", len(data), got)
	}
	for _, size := range []int{0, BlockBytes / 2, 12 << 10, 2 * MaxDataBlockBytes} {
		if _, err := MkvolSized(ctx, NewMemBlocks(), testWriter(), c.Now(), size); err == nil {
			t.Errorf("MkvolSized with data blocks of %d bytes: no error", size)
		}
	}
}

// TestSuperFormat4: a superblock of format 4 (before the data block
// size) decodes as a volume of 8 KB data blocks and re-encodes as it
// was; a writer that mounts it keeps its files' 8 KB blocks, and its next
// commit, of format 5, says 8 KB. A superblock naming a size out of range
// does not decode.
func TestSuperFormat4(t *testing.T) {
	ctx := context.Background()
	f, b, vol, c := newVolume(t)
	old := pattern(2*BlockBytes+5, 3)
	writeFile(t, f, "old", old)
	if err := f.Close(ctx); err != nil {
		t.Fatal(err)
	}
	s, err := f.newestSuper(ctx)
	if err != nil {
		t.Fatal(err)
	}
	v4 := *s
	v4.Gen, v4.Full, v4.Prev, v4.Deltas, v4.DataBytes, v4.v4 = s.Gen+1, s.Gen+1, Ptr{}, nil, 0, true
	signSuper(&v4, vol, testWriter())
	sb := encodeSuper(&v4)
	got, err := decodeSuper(sb, vol, v4.Gen)
	if err != nil || !got.v4 || got.DataBytes != BlockBytes || string(encodeSuper(got)) != string(sb) {
		t.Fatalf("a format-4 superblock: %+v, %v", got, err)
	}
	if err := b.PutIf(ctx, superKey(vol, v4.Gen), [32]byte{}, sb); err != nil {
		t.Fatal(err)
	}
	g := mustOpen(t, b, vol, false, c)
	mustRead(t, g, "old", old)
	fresh := pattern(3*BlockBytes+1, 4)
	writeFile(t, g, "new", fresh)
	if err := g.Close(ctx); err != nil {
		t.Fatal(err)
	}
	s, err = g.newestSuper(ctx)
	if err != nil || s.v4 || s.DataBytes != BlockBytes {
		t.Fatalf("the commit after a format-4 superblock: %+v, %v; want format 5 of 8 KB blocks", s, err)
	}
	h := mustOpen(t, b, vol, true, c)
	mustRead(t, h, "old", old)
	mustRead(t, h, "new", fresh)
	if r, err := h.Check(ctx); err != nil || len(r.Bad) != 0 {
		t.Fatalf("fsck: %+v, %v", r, err)
	}
	if o, n := dataBlocks(t, h, "old"), dataBlocks(t, h, "new"); o != 3 || n != 4 {
		t.Errorf("data blocks: %d and %d, want 3 and 4 of 8 KB", o, n)
	}

	for _, size := range []uint32{0, 4096, 3 * BlockBytes, 2 * MaxDataBlockBytes} {
		bad := *s
		bad.Gen, bad.DataBytes = s.Gen+1, size
		signSuper(&bad, vol, testWriter())
		if _, err := decodeSuper(encodeSuper(&bad), vol, bad.Gen); !errors.Is(err, ErrFormat) {
			t.Errorf("a superblock of %d-byte data blocks: %v, want ErrFormat", size, err)
		}
	}
}

// dataBlocks is the number of data blocks path's committed record lists.
func dataBlocks(t *testing.T, f *FS, path string) int {
	t.Helper()
	ctx := context.Background()
	n, err := f.Walk(ctx, path)
	if err == nil {
		f.mu.Lock()
		err = f.loadFile(ctx, n)
		f.mu.Unlock()
	}
	if err != nil {
		t.Fatal(err)
	}
	return len(n.ptrs)
}

// The first read in a directory of many small files warms them all on a
// volume of 64 KB data blocks too: warm's budget counts the bytes a
// block holds, not data blocks of 64 KB (it counted blocks, so 128 of
// these 300 files were warmed, and a cold tar c of Go's src took twice
// as long as on 8 KB blocks).
func TestWarmCountsBytesNotBlocks(t *testing.T) {
	w, mem, vol, c := newVolumeSized(t, DataBlockBytes)
	checkFirstReadWarms(t, w, mem, vol, c, 300, func(i int) []byte { return pattern(3000+i, i) })
}
