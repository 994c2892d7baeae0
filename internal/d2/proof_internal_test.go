package d2

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

	"triad/internal/id"
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

// TestClaimsFile: the name counts round trip through ClaimsFile; a line
// that does not read is skipped, and a client's lines add.
func TestClaimsFile(t *testing.T) {
	counts := map[string]int{"cert alice@site1": 4, "ip 10.0.0.7": 1}
	got := decodeClaims(encodeClaims(counts))
	if len(got) != 2 || got["cert alice@site1"] != 4 || got["ip 10.0.0.7"] != 1 {
		t.Errorf("round trip: %v", got)
	}
	got = decodeClaims([]byte("2 ip 1.2.3.4\nnonsense\n-3 ip 5.6.7.8\n0 ip 9.9.9.9\n3 ip 1.2.3.4\n7\n"))
	if len(got) != 1 || got["ip 1.2.3.4"] != 5 {
		t.Errorf("with bad lines: %v", got)
	}
}

// TestStoredCountsOnlyWhatItWaitsFor: a gateway counts a replica's
// D2Kept only for a put it relayed and is still waiting on, with that
// put's key and hash, once per sender, and at most maxConfirms senders.
func TestStoredCountsOnlyWhatItWaitsFor(t *testing.T) {
	n := &Node{confirming: map[uint64]*confirmWait{}, cfg: Config{VerifyCopies: true}}
	n.self.Addr = "gateway:1"
	p := putReq{key: mustKey(t, 1), data: []byte("block")}
	n.expectConfirms(&p)
	if p.confirmTo != "gateway:1" || p.tag == 0 {
		t.Fatalf("the relayed put names %q and tag %d", p.confirmTo, p.tag)
	}
	sum := Sum(p.data)
	n.stored("a:1", &wire.D2Kept{Key: p.key, Hash: sum, Tag: p.tag})
	n.stored("a:1", &wire.D2Kept{Key: p.key, Hash: sum, Tag: p.tag})         // again
	n.stored("b:1", &wire.D2Kept{Key: mustKey(t, 2), Hash: sum, Tag: p.tag}) // another key
	n.stored("c:1", &wire.D2Kept{Key: p.key, Hash: Sum([]byte("other")), Tag: p.tag})
	n.stored("d:1", &wire.D2Kept{Key: p.key, Hash: sum, Tag: p.tag + 1}) // no such put
	for i := range 2 * maxConfirms {
		n.stored(fmt.Sprintf("e%d:1", i), &wire.D2Kept{Key: p.key, Hash: sum, Tag: p.tag})
	}
	w := n.takeConfirms(p)
	if w == nil || len(w.from) != maxConfirms || w.from[0] != "a:1" || slices.Contains(w.from, "b:1") || slices.Contains(w.from, "c:1") {
		t.Fatalf("counted %v", w)
	}
	n.stored("f:1", &wire.D2Kept{Key: p.key, Hash: sum, Tag: p.tag})
	if len(n.confirming) != 0 {
		t.Errorf("a D2Kept after the put ended kept %d waits", len(n.confirming))
	}
}

// mustKey is a valid D2 key whose first byte is b.
func mustKey(t *testing.T, b byte) id.ID {
	t.Helper()
	raw := make([]byte, KeyBytes)
	raw[0] = b
	k, err := id.FromBytes(raw)
	if err != nil {
		t.Fatal(err)
	}
	return k
}
