package d2fs

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"testing"

	"triad/internal/d2/key"
)

func sampleDir() (key.Key, []Entry) {
	vol := key.VolumeOf("fuzz", nil)
	dir := rootDir(vol)
	return dir, []Entry{
		{Name: "a", Slot: 1, Type: TypeFile, Mode: 0o644, Size: 10, Mtime: 1, Base: key.Child(dir, 1, "a", 2), Meta: Ptr{Version: 3, Sum: sha256.Sum256([]byte("x"))}},
		{Name: "b", Slot: 2, Type: TypeDir, Mode: 0o755, Base: key.Child(dir, 2, "b", 3)},
		{Name: "c", Slot: key.Overflow, Type: TypeSymlink, Mode: 0o777, Size: 1, Base: key.Child(dir, key.Overflow, "c", 4), Target: "a"},
	}
}

func TestDirRoundTrip(t *testing.T) {
	dir, want := sampleDir()
	got, err := DecodeDir(EncodeDir(want), dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d entries, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("entry %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestDecodeDirRejects(t *testing.T) {
	dir, good := sampleDir()
	cases := map[string]func(e []Entry) []Entry{
		"unsorted":      func(e []Entry) []Entry { e[0], e[1] = e[1], e[0]; return e },
		"same slot":     func(e []Entry) []Entry { e[1].Slot = 1; return e },
		"no slot":       func(e []Entry) []Entry { e[0].Slot = 0; return e },
		"same key":      func(e []Entry) []Entry { e[1].Base = e[0].Base; return e },
		"other volume":  func(e []Entry) []Entry { e[0].Base = key.Root(key.VolumeOf("x", nil)); return e },
		"versioned key": func(e []Entry) []Entry { e[0].Base = e[0].Base.WithBlock(0, 1); return e },
		"slash":         func(e []Entry) []Entry { e[0].Name = "a/b"; return e },
		"dot":           func(e []Entry) []Entry { e[0].Name = "."; return e },
		"type":          func(e []Entry) []Entry { e[0].Type = 9; return e },
		"mode":          func(e []Entry) []Entry { e[0].Mode = 0o10000; return e },
		"dir size":      func(e []Entry) []Entry { e[1].Size = 1; return e },
		"version 0":     func(e []Entry) []Entry { e[0].Meta.Version = 0; return e },
		"file target":   func(e []Entry) []Entry { e[0].Target = "x"; return e },
		"symlink size":  func(e []Entry) []Entry { e[2].Size = 5; return e },
	}
	for name, mutate := range cases {
		e := mutate(append([]Entry(nil), good...))
		if _, err := DecodeDir(EncodeDir(e), dir); !errors.Is(err, ErrFormat) {
			t.Errorf("%s: %v, want ErrFormat", name, err)
		}
	}
	b := EncodeDir(good)
	for _, bad := range [][]byte{nil, b[:len(b)-1], append(b, 0), append([]byte("d2D\x02"), b[4:]...)} {
		if _, err := DecodeDir(bad, dir); !errors.Is(err, ErrFormat) {
			t.Errorf("%q: %v, want ErrFormat", bad, err)
		}
	}
}

// Records of every size, up to two levels of parts, come back whole.
func TestBlobRoundTrip(t *testing.T) {
	ctx := context.Background()
	for _, n := range []int{0, 1, blobInline, blobInline + 1, 3 * BlockBytes, 3 << 20} {
		rec := pattern(n, n)
		b := NewMemBlocks()
		f := &FS{blocks: b, cache: map[key.Key][]byte{}, cfg: Config{CacheBytes: 1, MaxPuts: 4}}
		base := rootDir(key.VolumeOf("blob", nil))
		plan := &commitPlan{gen: 7}
		p, err := f.storeBlob(plan, base, rec)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.putAll(ctx, plan.puts); err != nil {
			t.Fatal(err)
		}
		if want := len(blobKeys(base, p, uint64(n))); b.Len() != want {
			t.Fatalf("%d bytes: %d blocks stored, blobKeys lists %d", n, b.Len(), want)
		}
		got, err := f.loadBlob(ctx, base, p)
		if err != nil || !bytes.Equal(got, rec) {
			t.Fatalf("%d bytes: got %d bytes, %v", n, len(got), err)
		}
	}
	lens, _ := levelLens(3 << 20)
	if len(lens) != 3 {
		t.Fatalf("3 MB record has %d levels, want 2 levels of parts", len(lens)-1)
	}
}

func FuzzDecodeDir(f *testing.F) {
	dir, good := sampleDir()
	f.Add(EncodeDir(good))
	f.Add(EncodeDir(nil))
	f.Add([]byte("d2D\x01\xff\xff\xff\xff"))
	f.Fuzz(func(t *testing.T, b []byte) {
		entries, err := DecodeDir(b, dir)
		if err != nil {
			return
		}
		// What decodes re-encodes to the same bytes.
		if again := EncodeDir(entries); !bytes.Equal(again, b) {
			t.Fatalf("re-encoding %d entries gives other bytes", len(entries))
		}
	})
}

func FuzzDecodeBlocks(f *testing.F) {
	f.Add([]byte{}, uint8(0))
	f.Add(encodeFile([]Ptr{{Version: 1}}), uint8(1))
	f.Add(encodeLease(leaseRec{expiry: 5}), uint8(2))
	vol := key.VolumeOfKey(testWriter().Public().(ed25519.PublicKey))
	sb := &super{Gen: 1, Full: 1, NextIno: 2, Root: Entry{Name: "/", Type: TypeDir, Base: rootDir(vol)}}
	signSuper(sb, vol, testWriter())
	f.Add(encodeSuper(sb), uint8(3))
	sb = &super{Gen: 2, Full: 1, NextIno: 3, Root: sb.Root, Deltas: sampleDeltas(vol)}
	signSuper(sb, vol, testWriter())
	f.Add(encodeSuper(sb), uint8(3))
	f.Fuzz(func(t *testing.T, b []byte, which uint8) {
		switch which % 4 {
		case 0:
			if lens, payload, err := blobParts(b); err == nil && uint64(len(payload)) != lens[len(lens)-1] {
				t.Fatal("blob payload length unchecked")
			}
		case 1:
			if ptrs, err := decodeFile(b); err == nil && !bytes.Equal(encodeFile(ptrs), b) {
				t.Fatal("file record does not re-encode")
			}
		case 2:
			if r, err := decodeLease(b); err == nil && !bytes.Equal(encodeLease(r), b) {
				t.Fatal("lease does not re-encode")
			}
		case 3:
			if s, err := decodeSuper(b, vol, 1); err == nil && !bytes.Equal(encodeSuper(s), b) {
				t.Fatal("superblock does not re-encode")
			}
		}
	})
}

// sampleDeltas is a superblock's deltas: the root's (a set and a
// remove) and a subdirectory's.
func sampleDeltas(vol key.Volume) []dirDelta {
	root := rootDir(vol)
	sub := key.Child(root, 1, "sub", 2)
	return []dirDelta{
		{Dir: root, Ops: []deltaOp{
			{Remove: true, Entry: Entry{Name: "old"}},
			{Entry: Entry{Name: "sub", Slot: 1, Type: TypeDir, Mode: 0o755, Base: sub}},
		}},
		{Dir: sub, Ops: []deltaOp{
			{Entry: Entry{Name: "f", Slot: 1, Type: TypeFile, Mode: 0o644, Size: 3, Base: key.Child(sub, 1, "f", 3), Meta: Ptr{Version: 2, Sum: [32]byte{1}}}},
		}},
	}
}

func FuzzDecodeDeltas(f *testing.F) {
	vol := key.VolumeOfKey(testWriter().Public().(ed25519.PublicKey))
	f.Add(appendDeltas(nil, sampleDeltas(vol)))
	f.Add(appendDeltas(nil, nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		r := reader{b: b}
		ds, err := r.deltas(vol)
		if err != nil || r.err != nil {
			return
		}
		// What decodes re-encodes to the bytes it took, and its size is
		// what deltaBytes says.
		used := b[:len(b)-len(r.b)]
		if again := appendDeltas(nil, ds); !bytes.Equal(again, used) || len(again) != deltaBytes(ds) {
			t.Fatalf("%d deltas re-encode to other bytes", len(ds))
		}
	})
}
