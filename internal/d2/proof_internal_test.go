package d2

import (
	"bytes"
	"testing"

	"triad/internal/wire"
)

// TestStoredRecords: a block's engine record keeps its proof and its
// bytes, the largest proof within RecordOverhead; a record stored before
// proofs were kept, or one whose head does not parse, is all bytes.
func TestStoredRecords(t *testing.T) {
	full := func(n int, b byte) []byte { return bytes.Repeat([]byte{b}, n) }
	largest := wire.D2Proof{Mode: wire.D2PutModes - 1, Prev: full(wire.MaxD2Hash, 1), Auth: wire.D2Auth{
		Pub: full(wire.MaxD2AuthKey, 2), Expires: 1<<64 - 1, Sig: full(wire.MaxD2AuthSig, 3), Signed: full(wire.MaxD2AuthSigned, 4)}}
	data := []byte("the block's bytes")
	rec := encodeStored(largest, data)
	if over := len(rec) - len(data); over > RecordOverhead {
		t.Errorf("the largest proof adds %d bytes, over RecordOverhead %d", over, RecordOverhead)
	}
	p, got := decodeStored(rec)
	if !bytes.Equal(got, data) || !bytes.Equal(p.Auth.Sig, largest.Auth.Sig) || p.Auth.Expires != largest.Auth.Expires || p.Mode != largest.Mode || !bytes.Equal(p.Prev, largest.Prev) {
		t.Errorf("round trip: %+v, %q", p, got)
	}
	if p, got := decodeStored(encodeStored(wire.D2Proof{}, data)); !p.IsZero() || !bytes.Equal(got, data) {
		t.Errorf("no proof: %+v, %q", p, got)
	}
	for _, legacy := range [][]byte{data, {}, storedMagic[:], append(storedMagic[:], 0xff, 0xff, 0xff), append(append(storedMagic[:], 5), "abc"...)} {
		if p, got := decodeStored(legacy); !p.IsZero() || !bytes.Equal(got, legacy) {
			t.Errorf("a record without a proof %q: %+v, %q", legacy, p, got)
		}
	}
}
