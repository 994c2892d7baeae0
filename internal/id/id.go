package id

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"strings"
)

// Bits is the width of the Chord ring and of content keys.
const Bits = 160

// Bytes is Bits in bytes.
const Bytes = Bits / 8

// MaxBytes bounds any identifier width (D2 uses 512-bit keys).
const MaxBytes = 64

// ErrWidth reports an identifier of an unsupported width.
var ErrWidth = errors.New("id: bad width")

// ID is an unsigned integer of fixed width, big-endian. Its backing store is
// an immutable string, so IDs are comparable with == and usable as map keys.
// The zero ID (no bytes) means "none".
type ID struct{ b string }

// FromBytes returns the ID whose big-endian bytes are b; len(b) is its width.
func FromBytes(b []byte) (ID, error) {
	if len(b) == 0 || len(b) > MaxBytes {
		return ID{}, fmt.Errorf("%w: %d bytes", ErrWidth, len(b))
	}
	return ID{string(b)}, nil
}

// Min and Max are the smallest and the largest ID of a width (1 to
// MaxBytes bytes).
func Min(width int) ID { return ID{string(make([]byte, width))} }

func Max(width int) ID {
	b := make([]byte, width)
	for i := range b {
		b[i] = 0xff
	}
	return ID{string(b)}
}

// Key returns the content key of data: the first 160 bits of SHA-256.
func Key(data []byte) ID {
	sum := sha256.Sum256(data)
	return ID{string(sum[:Bytes])}
}

// Random returns a uniformly random ID of the given width in bytes.
func Random(r *rand.Rand, width int) ID {
	b := make([]byte, width)
	for i := 0; i < width; i += 8 {
		v := r.Uint64()
		for j := 0; j < 8 && i+j < width; j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	return ID{string(b)}
}

// Parse reads a hexadecimal ID of the given width in bytes. A shorter hex
// string is taken as the leading digits (the rest zero), so "8" is half way
// round the ring.
func Parse(s string, width int) (ID, error) {
	s = strings.TrimPrefix(strings.ToLower(s), "0x")
	if len(s) == 0 || len(s) > 2*width {
		return ID{}, fmt.Errorf("id: %q: want 1 to %d hex digits", s, 2*width)
	}
	full := s + strings.Repeat("0", 2*width-len(s))
	b, err := hex.DecodeString(full)
	if err != nil {
		return ID{}, fmt.Errorf("id: %q: %w", s, err)
	}
	return ID{string(b)}, nil
}

// Width is the ID's width in bytes (0 for the zero ID).
func (x ID) Width() int { return len(x.b) }

// IsZero reports whether x is the zero ID ("none"), not the number zero.
func (x ID) IsZero() bool { return len(x.b) == 0 }

// Bytes returns a copy of the big-endian bytes.
func (x ID) Bytes() []byte { return []byte(x.b) }

// AppendTo appends the big-endian bytes to dst.
func (x ID) AppendTo(dst []byte) []byte { return append(dst, x.b...) }

// String is the full hexadecimal form.
func (x ID) String() string { return hex.EncodeToString([]byte(x.b)) }

// Short is the first 8 hex digits, for logs and tables.
func (x ID) Short() string {
	s := x.String()
	if len(s) > 8 {
		return s[:8]
	}
	return s
}

func (x ID) same(y ID) {
	if len(x.b) != len(y.b) {
		panic(fmt.Sprintf("id: width mismatch %d vs %d", len(x.b), len(y.b)))
	}
}

// Cmp compares x and y as unsigned integers of the same width.
func (x ID) Cmp(y ID) int {
	x.same(y)
	return strings.Compare(x.b, y.b)
}

// Between reports whether x lies strictly inside the clockwise arc (a, b).
// When a == b the arc is the whole circle except a.
func (x ID) Between(a, b ID) bool {
	x.same(a)
	x.same(b)
	switch c := strings.Compare(a.b, b.b); {
	case c < 0:
		return a.b < x.b && x.b < b.b
	case c > 0:
		return x.b > a.b || x.b < b.b
	default:
		return x.b != a.b
	}
}

// In reports whether x lies in the half-open arc (a, b], the interval a Chord
// node b is responsible for when a is its predecessor. When a == b the arc is
// the whole circle.
func (x ID) In(a, b ID) bool {
	return x == b || x.Between(a, b)
}

// Add returns x + y modulo 2^width.
func (x ID) Add(y ID) ID {
	x.same(y)
	out := make([]byte, len(x.b))
	carry := 0
	for i := len(x.b) - 1; i >= 0; i-- {
		s := int(x.b[i]) + int(y.b[i]) + carry
		out[i] = byte(s)
		carry = s >> 8
	}
	return ID{string(out)}
}

// Sub returns x - y modulo 2^width: the clockwise distance from y to x.
func (x ID) Sub(y ID) ID {
	x.same(y)
	out := make([]byte, len(x.b))
	borrow := 0
	for i := len(x.b) - 1; i >= 0; i-- {
		d := int(x.b[i]) - int(y.b[i]) - borrow
		borrow = 0
		if d < 0 {
			d += 256
			borrow = 1
		}
		out[i] = byte(d)
	}
	return ID{string(out)}
}

// Distance is the clockwise distance from x to y: y - x modulo 2^width.
func (x ID) Distance(y ID) ID { return y.Sub(x) }

// AddPow2 returns x + 2^i modulo 2^width; the finger targets of Chord.
func (x ID) AddPow2(i int) ID {
	w := len(x.b)
	if i < 0 || i >= 8*w {
		panic(fmt.Sprintf("id: 2^%d out of range for %d bits", i, 8*w))
	}
	p := make([]byte, w)
	p[w-1-i/8] = 1 << (i % 8)
	return x.Add(ID{string(p)})
}

// Float is x as a fraction of the ring in [0, 1); used to place keys for
// statistics and plots, never for routing.
func (x ID) Float() float64 {
	f := 0.0
	scale := 1.0 / 256
	for i := 0; i < len(x.b) && i < 8; i++ {
		f += float64(x.b[i]) * scale
		scale /= 256
	}
	return f
}

// Spaced is the k-th of n positions spread evenly around the ring:
// k·2^Bits/n.
func Spaced(k, n int) ID {
	pos := new(big.Int).Lsh(big.NewInt(int64(k)), Bits)
	pos.Div(pos, big.NewInt(int64(n)))
	x, _ := FromBytes(pos.FillBytes(make([]byte, Bytes)))
	return x
}

// Digit is the i-th digit of x in base 2^bits (bits 1, 2, 4 or 8), most
// significant first: the digits Tapestry routes by (i < 8·Width/bits).
func (x ID) Digit(i, bits int) int {
	bit := i * bits
	b := x.b[bit/8]
	return int(b>>(8-bits-bit%8)) & (1<<bits - 1)
}

// SharedDigits is the number of leading digits in base 2^bits (bits 1, 2,
// 4 or 8) that x and y have in common (both of one width).
func (x ID) SharedDigits(y ID, bits int) int {
	x.same(y)
	for i := 0; i < len(x.b); i++ {
		if x.b[i] != y.b[i] {
			lead := 0
			for v := x.b[i] ^ y.b[i]; v&0x80 == 0; v <<= 1 {
				lead++
			}
			return (8*i + lead) / bits
		}
	}
	return 8 * len(x.b) / bits
}

// RandomIn is a random point of the arc [lo, hi): lo plus an offset
// below the arc's length (a random number masked to the length's bits,
// and one bit fewer when that is not below it).
func RandomIn(r *rand.Rand, lo, hi ID) ID {
	span := hi.Sub(lo).Bytes()
	off := Random(r, len(span)).Bytes()
	lead := 0 // leading zero bits of span
	for lead < 8*len(span) && span[lead/8]&(0x80>>(lead%8)) == 0 {
		lead++
	}
	for i := range lead {
		off[i/8] &^= 0x80 >> (i % 8)
	}
	if bytes.Compare(off, span) >= 0 && lead < 8*len(span) {
		off[lead/8] &^= 0x80 >> (lead % 8)
	}
	o, err := FromBytes(off)
	if err != nil {
		return lo
	}
	return lo.Add(o)
}
