package merkle

import (
	"encoding/hex"
	"fmt"

	"triad/internal/id"
)

// DigitBits is the number of key bits each level of the tree consumes:
// 6 bits gives the 64-way branching of Passing Tone.
const DigitBits = 6

// Fanout is the number of children of an internal node.
const Fanout = 1 << DigitBits

// LeafMax is the most keys a leaf holds. A node with more keys is internal.
// Because the rule depends only on the key set, two servers holding the same
// keys build the same tree and compare equal at every prefix.
const LeafMax = 64

// MaxKeyBytes bounds key width: the ring uses 20-byte keys, D2 64-byte ones.
const MaxKeyBytes = 64

// Prefix names a node of the tree: the first Depth digits of a key. Prefixes
// are values and can be used as map keys.
type Prefix struct {
	depth int
	bits  string // the key's first ceil(depth*6/8) bytes, bits past depth*6 zeroed
}

// Root is the prefix of the root node, depth zero.
func Root() Prefix { return Prefix{} }

// PrefixOf returns the prefix of key at the given depth.
func PrefixOf(key []byte, depth int) Prefix {
	nbits := depth * DigitBits
	if nbits > len(key)*8 {
		nbits = len(key) * 8
	}
	n := (nbits + 7) / 8
	b := make([]byte, n)
	copy(b, key[:n])
	if r := nbits % 8; r != 0 {
		b[n-1] &= byte(0xff << (8 - r))
	}
	return Prefix{depth: depth, bits: string(b)}
}

// Depth returns the number of digits in p.
func (p Prefix) Depth() int { return p.depth }

// Child returns the prefix of p followed by digit d. Only nodes with a whole
// digit of key bits below them have children, so d always has six bits.
func (p Prefix) Child(d int) Prefix {
	buf := make([]byte, p.depth*DigitBits/8+2)
	copy(buf, p.bits)
	setDigit(buf, p.depth, d)
	return PrefixOf(buf, p.depth+1)
}

// Contains reports whether key starts with p.
func (p Prefix) Contains(key []byte) bool {
	return PrefixOf(key, p.depth) == p
}

// Digit returns the digit of key at the given depth (0 for bits past the
// key's end, so the last, shorter digit takes the values d<<k only).
func Digit(key []byte, depth int) int {
	bit := depth * DigitBits
	i := bit / 8
	var v uint16
	if i < len(key) {
		v = uint16(key[i]) << 8
	}
	if i+1 < len(key) {
		v |= uint16(key[i+1])
	}
	return int(v>>(16-bit%8-DigitBits)) & (Fanout - 1)
}

func setDigit(buf []byte, depth, d int) {
	bit := depth * DigitBits
	i := bit / 8
	shift := 16 - bit%8 - DigitBits
	v := uint16(buf[i])<<8 | uint16(buf[i+1])
	v &^= uint16(Fanout-1) << shift
	v |= uint16(d&(Fanout-1)) << shift
	buf[i] = byte(v >> 8)
	buf[i+1] = byte(v)
}

// CanSplit reports whether a node at p can have children for keys of the
// given width, that is whether bits remain below it.
func (p Prefix) CanSplit(width int) bool { return p.depth*DigitBits < width*8 }

// Encode returns the byte form of p: the depth, then the prefix bytes. Byte
// order sorts prefixes by depth and then numerically, so the children of a
// node are adjacent.
func (p Prefix) Encode() []byte {
	return append([]byte{byte(p.depth)}, p.bits...)
}

// DecodePrefix parses the output of Encode, rejecting anything Encode would
// not produce.
func DecodePrefix(b []byte) (Prefix, error) {
	if len(b) == 0 {
		return Prefix{}, fmt.Errorf("merkle: empty prefix")
	}
	depth := int(b[0])
	if depth*DigitBits > MaxKeyBytes*8+DigitBits {
		return Prefix{}, fmt.Errorf("merkle: prefix depth %d too deep", depth)
	}
	n, nbits := len(b)-1, depth*DigitBits
	full := n == (nbits+7)/8
	short := n*8 < nbits && n*8 > nbits-DigitBits // the last digit of a key
	if !full && !short {
		return Prefix{}, fmt.Errorf("merkle: prefix of %d bytes at depth %d", n, depth)
	}
	p := PrefixOf(b[1:], depth)
	if p.bits != string(b[1:]) {
		return Prefix{}, fmt.Errorf("merkle: malformed prefix %x at depth %d", b[1:], depth)
	}
	return p, nil
}

// String shows the depth and the prefix bytes in hex.
func (p Prefix) String() string {
	return fmt.Sprintf("%d/%s", p.depth, hex.EncodeToString([]byte(p.bits)))
}

// lowKey returns the smallest key of the given width under p.
func (p Prefix) lowKey(width int) []byte {
	b := make([]byte, width)
	copy(b, p.bits)
	return b
}

// Bounds returns the smallest and largest keys of the given width under p.
func (p Prefix) Bounds(width int) (lo, hi []byte) {
	lo = p.lowKey(width)
	hi = p.lowKey(width)
	nbits := min(p.depth*DigitBits, width*8)
	for i := range hi {
		switch {
		case (i+1)*8 <= nbits:
		case i*8 >= nbits:
			hi[i] = 0xff
		default:
			hi[i] |= 0xff >> (nbits - i*8)
		}
	}
	return lo, hi
}

// OverlapsArc reports whether some key under p lies in the ring arc
// (lo, hi] (lo == hi: the whole ring), for keys as wide as lo.
func (p Prefix) OverlapsArc(lo, hi id.ID) bool {
	if lo == hi {
		return true
	}
	a, b := p.Bounds(lo.Width())
	first, err1 := id.FromBytes(a)
	last, err2 := id.FromBytes(b)
	if err1 != nil || err2 != nil {
		return false
	}
	// The prefix's keys are the interval [first, last]: it meets the arc
	// if one of its ends is in the arc, or the arc starts inside it.
	return first.In(lo, hi) || last.In(lo, hi) || (lo.Cmp(first) >= 0 && lo.Cmp(last) < 0)
}
