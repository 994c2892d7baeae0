package frag_test

import (
	"bytes"
	"testing"

	"triad/internal/dhash/frag"
	"triad/internal/id"
)

func example() (frag.Descriptor, [][]byte) {
	shards := [][]byte{[]byte("abc"), []byte("def"), []byte("ghi")}
	d := frag.Descriptor{M: 2, L: 3, Size: 6, Block: id.Key([]byte("abcdef"))}
	for _, s := range shards {
		d.Shards = append(d.Shards, id.Key(s))
	}
	return d, shards
}

// Each fragment verifies on its own against its block's key, and against
// no other; a changed byte anywhere makes it fail.
func TestVerify(t *testing.T) {
	d, shards := example()
	key := d.Key()
	if key == id.Key(d.Append(nil)) {
		t.Fatal("a descriptor's key is the content hash of its bytes: a whole block could claim it")
	}
	for i, s := range shards {
		b := frag.Encode(d, i, s)
		f, err := frag.Check(key, b)
		if err != nil || f.Index != i || !bytes.Equal(f.Shard, s) {
			t.Fatalf("fragment %d: %+v, %v", i, f, err)
		}
		if _, err := frag.Check(id.Key([]byte("abcdef")), b); err == nil {
			t.Fatalf("fragment %d verified under the block's content hash", i)
		}
		for j := range b {
			bad := bytes.Clone(b)
			bad[j] ^= 1
			if _, err := frag.Check(key, bad); err == nil {
				t.Fatalf("fragment %d with byte %d changed verified", i, j)
			}
		}
	}
	if err := d.CheckBlock(key, []byte("abcdef")); err != nil {
		t.Fatal(err)
	}
	if err := d.CheckBlock(key, []byte("abcdeg")); err == nil {
		t.Fatal("other bytes passed as the block")
	}
}

// FuzzParse: whatever the bytes, Parse never panics, and a fragment it
// accepts encodes back to the same bytes.
func FuzzParse(f *testing.F) {
	d, shards := example()
	f.Add(frag.Encode(d, 1, shards[1]))
	f.Add([]byte{3, 1, 2})
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, err := frag.Parse(b)
		if err != nil {
			return
		}
		if got := frag.Encode(fr.Desc, fr.Index, fr.Shard); !bytes.Equal(got, b) {
			t.Fatalf("parsed %x, encodes to %x", b, got)
		}
	})
}
