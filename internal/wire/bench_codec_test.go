package wire

import (
	"math/rand/v2"
	"reflect"
	"testing"
)

func BenchmarkCodecHot(b *testing.B) {
	for _, name := range []string{"StoreBlocks", "ClientPut", "Block", "Lookup", "D2Store", "TapRoute", "TreeInfo"} {
		var ti *typeInfo
		for i := range types {
			if types[i].name == name {
				ti = &types[i]
			}
		}
		m := ti.new()
		fill(b, rand.New(rand.NewPCG(1, 2)), reflect.ValueOf(m).Elem())
		b.Run(name, func(b *testing.B) {
			buf := make([]byte, 0, 1<<16)
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				buf = Encode(buf[:0], Envelope{Kind: Reply, ReqID: uint64(i), Msg: m})
				if _, err := Decode(buf); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestNestedValuesDecodeWithoutAllocating: a nested value decodes into its
// place, with no allocation of its own. The first generated decoders
// called a nested value's decodeField through a type parameter, which
// made the value escape: a StoreBlocks of three blocks took 3 allocations
// more to decode (issue 45).
func TestNestedValuesDecodeWithoutAllocating(t *testing.T) {
	m := &StoreBlocks{}
	for i := range 3 {
		m.Blocks = append(m.Blocks, StoreBlock{Data: []byte{byte(i), 1, 2}, Expiry: 9})
	}
	frame := Encode(nil, Envelope{Kind: Request, ReqID: 1, Msg: m})
	// As many as the hand-written codec took: the message, the slice of
	// blocks as it grows (1, 2, 4), each block's bytes copied out of the
	// frame, and one more of Decode's own.
	const want = 8
	if got := testing.AllocsPerRun(100, func() {
		if _, err := Decode(frame); err != nil {
			t.Fatal(err)
		}
	}); got > want {
		t.Errorf("decoding a StoreBlocks of 3 blocks: %v allocations, want at most %d", got, want)
	}
}
