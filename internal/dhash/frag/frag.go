package frag

import (
	"crypto/sha512"
	"encoding/binary"
	"errors"
	"fmt"

	"triad/internal/id"
)

// Version is the format's first byte, in descriptors and fragments.
// Version 2 fragments named their block's key in the header, which anyone
// could write; they are refused.
const Version = 3

// MaxTotal is the largest l a descriptor may have.
const MaxTotal = 255

// ErrInvalid is what every check here fails with, wrapped with detail.
var ErrInvalid = errors.New("frag: invalid")

// Descriptor describes a fragmented block. Its encoding is: version, m,
// l, the block's size (8 bytes, little-endian), the block's content hash
// (id.Bytes) and the l shard hashes (id.Bytes each, by index).
type Descriptor struct {
	M, L   int
	Size   int
	Block  id.ID   // id.Key of the block
	Shards []id.ID // id.Key of each fragment's shard, by index
}

// descFixed is a descriptor's length but for its shard hashes.
const descFixed = 3 + 8 + id.Bytes

// DescriptorBytes is the length of the encoding of a descriptor with l
// fragments.
func DescriptorBytes(l int) int { return descFixed + l*id.Bytes }

// HeaderBytes is the length of a fragment's header when the block has l
// fragments: the descriptor and the fragment's index.
func HeaderBytes(l int) int { return DescriptorBytes(l) + 1 }

// ShardBytes is the length of every shard of a size-byte block coded m of l.
func ShardBytes(size, m int) int { return (size + m - 1) / m }

// Append appends d's encoding to b.
func (d Descriptor) Append(b []byte) []byte {
	b = append(b, Version, byte(d.M), byte(d.L))
	b = binary.LittleEndian.AppendUint64(b, uint64(d.Size))
	b = d.Block.AppendTo(b)
	for _, s := range d.Shards {
		b = s.AppendTo(b)
	}
	return b
}

// Key is the key of the block d describes.
func (d Descriptor) Key() id.ID { return keyOf(d.Append(make([]byte, 0, DescriptorBytes(d.L)))) }

func keyOf(enc []byte) id.ID {
	sum := sha512.Sum512_256(enc)
	k, _ := id.FromBytes(sum[:id.Bytes]) // never fails: id.Bytes bytes
	return k
}

// ParseDescriptor decodes the descriptor at the start of b and returns it
// with the bytes after it. It checks the encoding only, not any key.
func ParseDescriptor(b []byte) (Descriptor, []byte, error) {
	if len(b) < descFixed {
		return Descriptor{}, nil, fmt.Errorf("%w: %d bytes, shorter than a descriptor", ErrInvalid, len(b))
	}
	if b[0] != Version {
		return Descriptor{}, nil, fmt.Errorf("%w: format version %d, want %d", ErrInvalid, b[0], Version)
	}
	d := Descriptor{M: int(b[1]), L: int(b[2])}
	size := binary.LittleEndian.Uint64(b[3:])
	if d.M < 1 || d.L <= d.M {
		return Descriptor{}, nil, fmt.Errorf("%w: %d-of-%d coding", ErrInvalid, d.M, d.L)
	}
	if size == 0 || size > 1<<40 {
		return Descriptor{}, nil, fmt.Errorf("%w: block of %d bytes", ErrInvalid, size)
	}
	d.Size = int(size)
	n := DescriptorBytes(d.L)
	if len(b) < n {
		return Descriptor{}, nil, fmt.Errorf("%w: %d bytes, shorter than a descriptor of %d fragments", ErrInvalid, len(b), d.L)
	}
	d.Block, _ = id.FromBytes(b[11:descFixed])
	d.Shards = make([]id.ID, d.L)
	for i := range d.Shards {
		d.Shards[i], _ = id.FromBytes(b[descFixed+i*id.Bytes : descFixed+(i+1)*id.Bytes])
	}
	return d, b[n:], nil
}

// Fragment is a parsed fragment: its index, its block's descriptor and
// its shard. Encoded, it is the descriptor, the index (one byte) and the
// shard.
type Fragment struct {
	Index int
	Desc  Descriptor
	Shard []byte
}

// Encode returns the fragment of index i of the block d describes, with
// shard as its data.
func Encode(d Descriptor, i int, shard []byte) []byte {
	b := make([]byte, 0, HeaderBytes(d.L)+len(shard))
	b = d.Append(b)
	b = append(b, byte(i))
	return append(b, shard...)
}

// Parse decodes a fragment and checks that it is well formed: an index
// below l and a shard of the length the size and m give. It does not check
// it against a key (Verify does).
func Parse(b []byte) (Fragment, error) {
	d, rest, err := ParseDescriptor(b)
	if err != nil {
		return Fragment{}, err
	}
	if len(rest) < 1 {
		return Fragment{}, fmt.Errorf("%w: fragment without an index", ErrInvalid)
	}
	f := Fragment{Index: int(rest[0]), Desc: d, Shard: rest[1:]}
	if f.Index >= d.L {
		return Fragment{}, fmt.Errorf("%w: fragment %d of %d", ErrInvalid, f.Index, d.L)
	}
	if want := ShardBytes(d.Size, d.M); len(f.Shard) != want {
		return Fragment{}, fmt.Errorf("%w: shard of %d bytes, a %d-byte block coded %d of %d has %d", ErrInvalid, len(f.Shard), d.Size, d.M, d.L, want)
	}
	return f, nil
}

// Verify checks that f belongs under key: its descriptor is key's and its
// shard is the one the descriptor lists at its index. It hashes the
// shard.
func (f Fragment) Verify(key id.ID) error {
	if k := f.Desc.Key(); k != key {
		return fmt.Errorf("%w: a fragment of %s, not of %s", ErrInvalid, k.Short(), key.Short())
	}
	if id.Key(f.Shard) != f.Desc.Shards[f.Index] {
		return fmt.Errorf("%w: shard %d does not match its hash", ErrInvalid, f.Index)
	}
	return nil
}

// Check parses b as a fragment and verifies it against key.
func Check(key id.ID, b []byte) (Fragment, error) {
	f, err := Parse(b)
	if err == nil {
		err = f.Verify(key)
	}
	return f, err
}

// CheckBlock checks a block rebuilt from fragments against key: the
// descriptor's key must be key, and the block its size and content hash.
// A gateway sends the descriptor with a fragmented block (see
// docs/dhash.md) so that its client can check it this way.
func (d Descriptor) CheckBlock(key id.ID, block []byte) error {
	switch {
	case d.Key() != key:
		return fmt.Errorf("%w: the descriptor of %s, not of %s", ErrInvalid, d.Key().Short(), key.Short())
	case len(block) != d.Size:
		return fmt.Errorf("%w: %d bytes, the descriptor says %d", ErrInvalid, len(block), d.Size)
	case id.Key(block) != d.Block:
		return fmt.Errorf("%w: the block does not match its hash", ErrInvalid)
	}
	return nil
}
