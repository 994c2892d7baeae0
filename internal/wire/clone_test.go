package wire

import (
	"math/rand/v2"
	"reflect"
	"testing"

	"triad/internal/id"
)

var idType = reflect.TypeFor[id.ID]()

// fill sets every field reachable from v to a random non-zero value the
// decoder accepts: slices get one to three elements, byte strings one to 16
// bytes, 32-bit integers stay under every bound the codec puts on them
// (MaxCCHops). It works by reflection, so that a field added to a message
// is filled, and compared, without anyone remembering to.
func fill(t testing.TB, r *rand.Rand, v reflect.Value) {
	if v.Type() == idType {
		v.Set(reflect.ValueOf(id.Random(r, id.Bytes)))
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(t, r, v.Elem())
	case reflect.Struct:
		for i := range v.NumField() {
			if !v.Type().Field(i).IsExported() {
				t.Fatalf("%s.%s is unexported: fill cannot set it", v.Type(), v.Type().Field(i).Name)
			}
			fill(t, r, v.Field(i))
		}
	case reflect.Slice:
		n := 1 + r.IntN(3)
		if v.Type().Elem().Kind() == reflect.Uint8 {
			n = 1 + r.IntN(16)
		}
		v.Set(reflect.MakeSlice(v.Type(), n, n))
		for i := range n {
			fill(t, r, v.Index(i))
		}
	case reflect.String:
		b := make([]byte, 1+r.IntN(16))
		for i := range b {
			b[i] = 'a' + byte(r.IntN(26))
		}
		v.SetString(string(b))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Uint8, reflect.Uint16, reflect.Uint32:
		v.SetUint(1 + r.Uint64N(63))
	case reflect.Uint64:
		v.SetUint(1 + r.Uint64N(1<<63))
	case reflect.Int32:
		v.SetInt(1 + r.Int64N(63))
	case reflect.Int64:
		v.SetInt(r.Int64()>>1 | 1)
	case reflect.Float64:
		v.SetFloat(1 + r.Float64())
	default:
		t.Fatalf("fill: no generator for %s (%s)", v.Type(), v.Kind())
	}
}

// scramble changes in place everything reachable from v that a shallow
// copy would share: after it, a deep copy taken before must still equal
// what was encoded before.
func scramble(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			scramble(v.Elem())
		}
	case reflect.Struct:
		if v.Type() == idType {
			return // immutable
		}
		for i := range v.NumField() {
			scramble(v.Field(i))
		}
	case reflect.Slice:
		for i := range v.Len() {
			scramble(v.Index(i))
		}
	case reflect.String:
		v.SetString(v.String() + "!")
	case reflect.Bool:
		v.SetBool(!v.Bool())
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(v.Uint() + 1)
	case reflect.Int32, reflect.Int64:
		v.SetInt(v.Int() + 1)
	case reflect.Float64:
		v.SetFloat(v.Float() + 1)
	}
}

// TestCloneIsTheCodec holds Clone, the simulator's fast path, to the codec:
// for every registered message type, with every field filled at random,
// Clone(m) equals Decode(Encode(m)), and it shares nothing with m; the
// decoded message equals m and shares nothing with the frame. Clone once
// dropped TreeInfo's Expiries and Sizes, so the simulator ran maintenance
// blind to expiry while the real network did not; and Decode left
// CCRequest's payload pointing into the frame.
func TestCloneIsTheCodec(t *testing.T) {
	r := rand.New(rand.NewPCG(27, 8))
	for _, ti := range types {
		ty := ti.typ
		// The zero message: nil lists stay nil, as the codec leaves them.
		z := newMsg(ty)
		if dec, err := Decode(Encode(nil, Envelope{Msg: z})); err != nil {
			t.Errorf("%s: the zero message: %v", ty, err)
		} else if !reflect.DeepEqual(Clone(z), dec.Msg) {
			t.Errorf("%s: Clone of the zero message %#v, the codec %#v", ty, Clone(z), dec.Msg)
		}
		for range 20 {
			m := newMsg(ty)
			fill(t, r, reflect.ValueOf(m).Elem())
			frame := Encode(nil, Envelope{Msg: m})
			dec, err := Decode(frame)
			if err != nil {
				t.Fatalf("%s: %v (filled %+v)", ty, err, m)
			}
			clear(frame) // Decode copies what it keeps: the driver reuses its buffer
			// Every field filled survives the codec, so a field the
			// codec forgets fails here, and one Clone forgets below.
			if !reflect.DeepEqual(dec.Msg, m) {
				t.Fatalf("%s: the codec loses a field:\nsent %+v\ngot  %+v", ty, m, dec.Msg)
			}
			c := Clone(m)
			if !reflect.DeepEqual(c, dec.Msg) {
				t.Fatalf("%s: Clone differs from the codec:\nclone %+v\ncodec %+v", ty, c, dec.Msg)
			}
			scramble(reflect.ValueOf(m))
			if !reflect.DeepEqual(c, dec.Msg) {
				t.Fatalf("%s: Clone shares memory with the original:\nclone %+v\ncodec %+v", ty, c, dec.Msg)
			}
		}
	}
}

// Hand copies a message as Clone does, but for the blocks a put carries,
// whose bytes it shares: every other field of a put, and every other
// message, is the copy's own.
func TestHandSharesOnlyBlockBytes(t *testing.T) {
	r := rand.New(rand.NewPCG(28, 9))
	// The same bytes, and no room past them to append into.
	sameBytes := func(a, b []byte) bool {
		return len(a) == len(b) && cap(a) == len(a) && (len(a) == 0 || &a[0] == &b[0])
	}
	for _, ti := range types {
		for range 5 {
			m := newMsg(ti.typ)
			fill(t, r, reflect.ValueOf(m).Elem())
			switch x := m.(type) { // blocks with room to spare, as append leaves them
			case *ClientPut:
				x.Data = append(x.Data, 0)[:len(x.Data)]
			case *ClientPutBatch:
				for i := range x.Items {
					x.Items[i].Data = append(x.Items[i].Data, 0)[:len(x.Items[i].Data)]
				}
			}
			want, h := Clone(m), Hand(m)
			if !reflect.DeepEqual(h, want) {
				t.Fatalf("%s: Hand differs from Clone:\nhand  %+v\nclone %+v", ti.typ, h, want)
			}
			switch x := m.(type) {
			case *ClientPut:
				if !sameBytes(h.(*ClientPut).Data, x.Data) {
					t.Fatalf("ClientPut: Hand copied the block's bytes")
				}
				x.Expiry, x.Redundancy = x.Expiry+1, x.Redundancy+1
			case *ClientPutBatch:
				for i := range x.Items {
					if !sameBytes(h.(*ClientPutBatch).Items[i].Data, x.Items[i].Data) {
						t.Fatalf("ClientPutBatch: Hand copied item %d's bytes", i)
					}
					x.Items[i] = PutItem{Expiry: -1}
				}
				x.Fresh = !x.Fresh
			default:
				scramble(reflect.ValueOf(m))
			}
			if !reflect.DeepEqual(h, want) {
				t.Fatalf("%s: Hand shares more than the blocks' bytes with the original:\nhand  %+v\nclone %+v", ti.typ, h, want)
			}
		}
	}
}
