package wire

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"

	"triad/internal/id"
)

// field is one decoded protobuf field: a varint or a length-delimited value.
type field struct {
	num protowire.Number
	typ protowire.Type
	u   uint64
	b   []byte
}

// decoder collects the first error of a decode so that per-message code can
// read fields without checking after each one.
type decoder struct {
	err   error
	owned bool // the frame is the decoder's to keep: data fields alias it
	// aliasMin, when owned, is the least length of a data field that
	// aliases the frame; shorter ones are copied. aliased counts the
	// bytes of the fields that alias it.
	aliasMin, aliased int
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s", ErrMalformed, fmt.Sprintf(format, args...))
	}
}

// each calls fn for every known-shaped field of b, skipping fields of other
// wire types so that newer peers may add fields.
func (d *decoder) each(b []byte, fn func(field)) {
	for len(b) > 0 && d.err == nil {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			d.fail("tag")
			return
		}
		b = b[n:]
		f := field{num: num, typ: typ}
		switch typ {
		case protowire.VarintType:
			f.u, n = protowire.ConsumeVarint(b)
		case protowire.BytesType:
			f.b, n = protowire.ConsumeBytes(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			d.fail("field %d", num)
			return
		}
		b = b[n:]
		if typ == protowire.VarintType || typ == protowire.BytesType {
			fn(f)
		}
	}
}

func (d *decoder) uint(f field) uint64 {
	if f.typ != protowire.VarintType {
		d.fail("field %d: want varint", f.num)
	}
	return f.u
}

func (d *decoder) uint32(f field) uint32 {
	v := d.uint(f)
	if v > 1<<32-1 {
		d.fail("field %d: %d overflows uint32", f.num, v)
	}
	return uint32(v)
}

func (d *decoder) bool(f field) bool { return d.uint(f) != 0 }

func (d *decoder) bytes(f field) []byte {
	if f.typ != protowire.BytesType {
		d.fail("field %d: want bytes", f.num)
	}
	return f.b
}

func (d *decoder) str(f field, max int) string {
	b := d.bytes(f)
	if len(b) > max {
		d.fail("field %d: %d bytes > %d", f.num, len(b), max)
		return ""
	}
	return string(b)
}

func (d *decoder) id(f field) id.ID {
	x, err := id.FromBytes(d.bytes(f))
	if err != nil && d.err == nil {
		d.fail("field %d: %v", f.num, err)
	}
	return x
}

// node decodes a nested NodeRef {1: id, 2: addr, 3: machine}.
func (d *decoder) node(f field) NodeRef {
	n := d.nodeRef(f)
	if n.ID.IsZero() && d.err == nil {
		d.fail("field %d: node without id", f.num)
	}
	return n
}

// nodeRef decodes a NodeRef's fields, whatever they hold.
func (d *decoder) nodeRef(f field) NodeRef {
	var n NodeRef
	d.each(d.bytes(f), func(g field) {
		switch g.num {
		case 1:
			n.ID = d.id(g)
		case 2:
			n.Addr = d.str(g, MaxAddrBytes)
		case 3:
			n.Machine = d.uint(g)
		}
	})
	return n
}

// sender decodes an envelope's sender: a vnode, or a host with no vnode
// (the host runtime's own replies), which has an address and no ID.
func (d *decoder) sender(f field) NodeRef {
	n := d.nodeRef(f)
	if n.Addr == "" && d.err == nil {
		d.fail("field %d: sender without address", f.num)
	}
	return n
}

// nested decodes a length-delimited sub-message with fn.
func (d *decoder) nested(f field, fn func(field)) {
	d.each(d.bytes(f), fn)
}

// Sizes of what the put functions below append.

func sizeUint(num protowire.Number, v uint64) int {
	if v == 0 {
		return 0
	}
	return protowire.SizeTag(num) + protowire.SizeVarint(v)
}

func sizeString(num protowire.Number, s string) int { return sizeLen(num, len(s)) }

// sizeLen is the size of a non-empty length-delimited field of n bytes.
func sizeLen(num protowire.Number, n int) int {
	if n == 0 {
		return 0
	}
	return protowire.SizeTag(num) + protowire.SizeBytes(n)
}

func sizeID(num protowire.Number, x id.ID) int {
	if x.IsZero() {
		return 0
	}
	return protowire.SizeTag(num) + protowire.SizeBytes(x.Width())
}

// nodeBodySize is the size of a NodeRef's fields {1: id, 2: addr, 3: machine}.
func nodeBodySize(n NodeRef) int {
	return sizeID(1, n.ID) + sizeString(2, n.Addr) + sizeUint(3, n.Machine)
}

func sizeNode(num protowire.Number, n NodeRef) int {
	if n.IsZero() && n.Addr == "" {
		return 0
	}
	return protowire.SizeTag(num) + protowire.SizeBytes(nodeBodySize(n))
}

func sizeNodes(num protowire.Number, list []NodeRef) int {
	n := 0
	for _, x := range list {
		n += sizeNode(num, x)
	}
	return n
}

func sizeCoord(num protowire.Number, c Coord) int {
	if c.IsZero() {
		return 0
	}
	return protowire.SizeTag(num) + protowire.SizeBytes(coordBytes)
}

func putUint(b []byte, num protowire.Number, v uint64) []byte {
	if v == 0 {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}

func putBool(b []byte, num protowire.Number, v bool) []byte {
	return putUint(b, num, protowire.EncodeBool(v))
}

func putString(b []byte, num protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

func putID(b []byte, num protowire.Number, x id.ID) []byte {
	if x.IsZero() {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(x.Width()))
	return x.AppendTo(b)
}

func putNode(b []byte, num protowire.Number, n NodeRef) []byte {
	if n.IsZero() && n.Addr == "" {
		return b
	}
	// The body's length is known up front: no nested encoding to shift.
	b = protowire.AppendTag(b, num, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(nodeBodySize(n)))
	b = putID(b, 1, n.ID)
	b = putString(b, 2, n.Addr)
	return putUint(b, 3, n.Machine)
}

// appendNested appends a length-delimited value written by fn. The length
// prefix is reserved at its largest size and the body moved back if the real
// prefix is shorter, so nothing is encoded twice.
func appendNested(b []byte, fn func([]byte) []byte) []byte {
	const reserve = 3 // varint of up to 2 MiB; larger bodies are shifted
	start := len(b)
	b = append(b, make([]byte, reserve)...)
	b = fn(b)
	n := len(b) - start - reserve
	size := protowire.SizeVarint(uint64(n))
	switch {
	case size < reserve:
		copy(b[start+size:], b[start+reserve:])
		b = b[:start+size+n]
	case size > reserve:
		b = append(b, make([]byte, size-reserve)...)
		copy(b[start+size:], b[start+reserve:start+reserve+n])
	}
	protowire.AppendVarint(b[start:start], uint64(n))
	return b
}

func appendTagBytes(b []byte, num protowire.Number) []byte {
	return protowire.AppendTag(b, num, protowire.BytesType)
}

// putNested appends field num holding the nested value encode writes, or
// nothing when the value has no field to write.
func putNested(b []byte, num protowire.Number, encode func([]byte) []byte) []byte {
	start := len(b)
	b = appendTagBytes(b, num)
	mark := len(b)
	b = appendNested(b, encode)
	if len(b) == mark+1 { // a zero length and no body
		return b[:start]
	}
	return b
}

// appendVarintField appends field num holding v, zero too: a list's
// elements pair with another list's by position.
func appendVarintField(b []byte, num protowire.Number, v uint64) []byte {
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}

// dataUpTo is data for a field of at most max bytes.
func (d *decoder) dataUpTo(f field, max int) []byte {
	b := d.data(f)
	if len(b) > max {
		d.fail("field %d: %d bytes > %d", f.num, len(b), max)
		return nil
	}
	return b
}
