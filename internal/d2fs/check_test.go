package d2fs

import (
	"context"
	"strings"
	"testing"

	"triad/internal/d2/key"
)

func TestCheck(t *testing.T) {
	ctx := context.Background()
	f, b, vol, c := newVolume(t)
	n := writeFile(t, f, "a/b/f", pattern(3*BlockBytes+1, 0))
	writeFile(t, f, "a/g", []byte("g"))
	writeFile(t, f, "empty", nil)
	if _, err := f.Symlink(ctx, f.Root(), "l", "a/g", 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(ctx); err != nil {
		t.Fatal(err)
	}
	g := mustOpen(t, b, vol, true, c)
	r, err := g.Check(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Blocks: superblock; records of /, a, a/b, f; f's 4 data blocks. g,
	// of one byte, is held in its entry (InlineBytes).
	if r.Dirs != 3 || r.Files != 3 || r.Symlinks != 1 || r.Bytes != 3*BlockBytes+2 || r.Blocks != 9 || len(r.Bad) != 0 {
		t.Fatalf("report %+v", r)
	}
	ks, err := g.BlockKeys(ctx, mustWalk(t, g, "a/b/f"))
	if err != nil || len(ks) != 5 {
		t.Fatalf("BlockKeys: %v, %v", ks, err)
	}
	for _, k := range ks {
		if !key.SameFile(k, n.Key()) {
			t.Fatalf("BlockKeys lists %v, not a block of %v", k, n.Key())
		}
	}
	b.Corrupt(ks[2])
	r, err = g.Check(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Bad) != 1 || !strings.HasPrefix(r.Bad[0], "/a/b/f:") || r.Blocks != 8 {
		t.Fatalf("report after corrupting a block: %+v", r)
	}
}

// TestBlockRefs: BlockRefs lists BlockKeys's keys, a large record's parts
// included, each with the SHA-256 of the bytes stored under it.
func TestBlockRefs(t *testing.T) {
	ctx := context.Background()
	f, b, vol, c := newVolume(t)
	writeFile(t, f, "big", pattern(300*BlockBytes, 1)) // a record of 300 pointers: two parts
	writeFile(t, f, "small", pattern(InlineBytes+1, 2))
	writeFile(t, f, "tiny", []byte("s")) // held in its entry
	if err := f.Close(ctx); err != nil {
		t.Fatal(err)
	}
	g := mustOpen(t, b, vol, true, c)
	for _, tc := range []struct {
		path   string
		blocks int
	}{{"big", 1 + 2 + 300}, {"small", 2}, {"tiny", 0}, {"/", 1}} {
		n := mustWalk(t, g, tc.path)
		ks, err := g.BlockKeys(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		refs, err := g.BlockRefs(ctx, n)
		if err != nil || len(refs) != tc.blocks || len(ks) != tc.blocks {
			t.Fatalf("%s: %d refs (%v), %d keys, want %d", tc.path, len(refs), err, len(ks), tc.blocks)
		}
		want := map[key.Key]bool{}
		for _, k := range ks {
			want[k] = true
		}
		for _, r := range refs {
			if !want[r.Key] {
				t.Errorf("%s: BlockRefs lists %v, which BlockKeys does not", tc.path, r.Key)
			}
			if _, err := b.Get(ctx, r.Key, r.Sum); err != nil {
				t.Errorf("%s: %v with its sum: %v", tc.path, r.Key, err)
			}
		}
	}
}
