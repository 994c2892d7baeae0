package disk

import (
	"bytes"
	"errors"
	"testing"

	"triad/internal/store"
)

func TestRecordRoundTrip(t *testing.T) {
	r := record{flags: flagOpaque, key: bytes.Repeat([]byte{7}, 20), expiry: -5, data: []byte("hello")}
	b := appendRecord([]byte("junk"), r)[4:]
	if parts := recordParts(r); !bytes.Equal(bytes.Join(parts[:], nil), b) {
		t.Fatal("the parts of a record differ from its encoding")
	}
	got, n, err := decodeRecord(b, 1<<20)
	if err != nil || n != len(b) || got.flags != r.flags || !bytes.Equal(got.key, r.key) ||
		got.expiry != r.expiry || !bytes.Equal(got.data, r.data) {
		t.Fatalf("round trip: %+v %d %v", got, n, err)
	}
	// Every single-bit flip anywhere in the record is caught.
	for i := range len(b) * 8 {
		c := bytes.Clone(b)
		c[i/8] ^= 1 << (i % 8)
		if _, _, err := decodeRecord(c, 1<<20); !errors.Is(err, errBadRecord) {
			t.Fatalf("flip of bit %d not detected", i)
		}
	}
	for i := range b {
		if _, _, err := decodeRecord(b[:i], 1<<20); err == nil {
			t.Fatalf("record cut to %d bytes accepted", i)
		}
	}
	if _, _, err := decodeRecord(b, 4); err == nil {
		t.Fatal("record over the data limit accepted")
	}
}

func FuzzDecodeRecord(f *testing.F) {
	f.Add(appendRecord(nil, record{key: []byte{1}, data: []byte("x")}))
	f.Add(appendRecord(nil, record{flags: flagOpaque, key: make([]byte, 64), expiry: 1 << 62}))
	f.Add([]byte("TRD1\x00\x14\x00\x00\xff\xff\xff\xff"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, n, err := decodeRecord(b, 1<<16)
		if err != nil {
			return
		}
		if n > len(b) || len(r.key) == 0 || len(r.key) > maxKeyBytes || len(r.data) > 1<<16 {
			t.Fatalf("accepted impossible record: n=%d key=%d data=%d", n, len(r.key), len(r.data))
		}
		again := appendRecord(nil, r)
		if !bytes.Equal(again, b[:n]) {
			t.Fatal("decoded record does not re-encode to the same bytes")
		}
	})
}

// The record format and the space every engine accounts for agree.
func TestRecordLenIsObjectBytes(t *testing.T) {
	for _, c := range [][2]int{{20, 0}, {1, 5}, {maxKeyBytes, 1 << 20}} {
		if got, want := recordLen(c[0], c[1]), store.ObjectBytes(c[0], c[1]); got != want {
			t.Fatalf("a record of a %d-byte key and %d bytes is %d bytes; store.ObjectBytes says %d", c[0], c[1], got, want)
		}
	}
}
