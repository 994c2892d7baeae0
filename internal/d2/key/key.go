package key

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"

	"triad/internal/id"
)

// Sizes and offsets of Fig. 3's fields.
const (
	Size        = 64 // bytes in a key
	VolumeBytes = 20
	Levels      = 12 // directory levels with a slot of their own

	offSlots   = VolumeBytes
	offDeep    = offSlots + 2*Levels
	offInode   = offDeep + 8
	offBlock   = offInode + 4
	offVersion = offBlock + 4
)

// Slot values. 0 ends a path; Overflow marks a name placed by hash because
// its directory had no free slot.
const (
	NoSlot   Slot = 0
	MaxSlot  Slot = 0xfffe
	Overflow Slot = 0xffff
)

// Slot is a name's 2-byte value within its directory.
type Slot uint16

// Volume identifies a volume: the first 20 bytes of every key in it.
type Volume [VolumeBytes]byte

// VolumeOf derives a volume ID from a name and a creation nonce, so two
// volumes of one name do not share keys.
func VolumeOf(name string, nonce []byte) Volume {
	h := sha256.New()
	h.Write([]byte("triad-d2-volume\x00"))
	h.Write([]byte(name))
	h.Write([]byte{0})
	h.Write(nonce)
	var v Volume
	copy(v[:], h.Sum(nil))
	return v
}

// String is the volume ID in hex.
func (v Volume) String() string { return fmt.Sprintf("%x", v[:]) }

// Key is a D2 block key. Comparing keys as bytes is ring order.
type Key [Size]byte

// ErrWidth reports a key that is not 64 bytes.
var ErrWidth = errors.New("d2 key: not 64 bytes")

// Root is the key of a volume's root directory, block 0, version 0.
func Root(v Volume) Key {
	var k Key
	copy(k[:], v[:])
	return k
}

// Parse reads a key from its 64 bytes.
func Parse(b []byte) (Key, error) {
	var k Key
	if len(b) != Size {
		return k, fmt.Errorf("%w: %d bytes", ErrWidth, len(b))
	}
	copy(k[:], b)
	return k, nil
}

// FromID reads a key from a 64-byte identifier.
func FromID(x id.ID) (Key, error) { return Parse(x.Bytes()) }

// ID is the key as a ring identifier of width 64.
func (k Key) ID() id.ID {
	x, _ := id.FromBytes(k[:]) // 64 bytes is always a valid width
	return x
}

// String is the key in hex, its fields apart: volume/slots/deep/inode/block/version.
func (k Key) String() string {
	return fmt.Sprintf("%x/%x/%x/%d/%d/%d", k[:offSlots], k[offSlots:offDeep], k[offDeep:offInode], k.Inode(), k.Block(), k.Version())
}

// Volume is the key's volume.
func (k Key) Volume() Volume {
	var v Volume
	copy(v[:], k[:VolumeBytes])
	return v
}

// Slot is the slot at level i (0 <= i < Levels).
func (k Key) Slot(i int) Slot { return Slot(binary.BigEndian.Uint16(k[offSlots+2*i:])) }

// Depth is the number of levels the key's path fills (0 for the root).
func (k Key) Depth() int {
	for i := 0; i < Levels; i++ {
		if k.Slot(i) == NoSlot {
			return i
		}
	}
	return Levels
}

// Hashed says the key was placed by hash: its path is deeper than 12
// levels or passes through a name that had no free slot.
func (k Key) Hashed() bool { return binary.BigEndian.Uint64(k[offDeep:]) != 0 }

// Inode is the file's or directory's inode number.
func (k Key) Inode() uint32 { return binary.BigEndian.Uint32(k[offInode:]) }

// Block is the block number within the file or directory.
func (k Key) Block() uint32 { return binary.BigEndian.Uint32(k[offBlock:]) }

// Version tells apart the versions of an overwritten block.
func (k Key) Version() uint32 { return binary.BigEndian.Uint32(k[offVersion:]) }

// WithBlock is the key of block n, version ver, of the same file.
func (k Key) WithBlock(n, ver uint32) Key {
	binary.BigEndian.PutUint32(k[offBlock:], n)
	binary.BigEndian.PutUint32(k[offVersion:], ver)
	return k
}

// Base is the key with block and version zero: what a directory entry
// keeps to name its file.
func (k Key) Base() Key { return k.WithBlock(0, 0) }

// SameFile says a and b are blocks of one file or directory.
func SameFile(a, b Key) bool { return a.Base() == b.Base() }

// Child is the base key of a new entry of the directory whose base key is
// parent: the parent's path with slot s appended, the given inode, block
// and version zero. When the parent's path already fills 12 levels, is
// placed by hash, or s is Overflow, the child is placed by a hash of the
// parent's key, the name and the inode instead (it keeps the parent's
// slots, so it stays in the parent's volume and near its ancestors).
func Child(parent Key, s Slot, name string, inode uint32) Key {
	k := parent.Base()
	binary.BigEndian.PutUint32(k[offInode:], inode)
	depth := parent.Depth()
	if s != NoSlot && s != Overflow && depth < Levels && !parent.Hashed() {
		binary.BigEndian.PutUint16(k[offSlots+2*depth:], uint16(s))
		return k
	}
	if depth < Levels && !parent.Hashed() {
		binary.BigEndian.PutUint16(k[offSlots+2*depth:], uint16(Overflow))
	}
	h := sha256.New()
	h.Write(parent[:offInode+4])
	h.Write([]byte(name))
	var ino [4]byte
	binary.BigEndian.PutUint32(ino[:], inode)
	h.Write(ino[:])
	deep := binary.BigEndian.Uint64(h.Sum(nil))
	if deep == 0 {
		deep = 1 // 0 means "not hashed"
	}
	binary.BigEndian.PutUint64(k[offDeep:], deep)
	return k
}

// Range is the first and last key of the blocks of a file or directory
// and, for a directory whose path has a free level, of everything under
// it: the keys that a task reading it meets.
func Range(base Key) (lo, hi Key) {
	lo = base.Base()
	hi = lo
	depth := base.Depth()
	if !base.Hashed() && depth < Levels {
		for i := offSlots + 2*depth; i < Size; i++ {
			hi[i] = 0xff
		}
		// The entries under it share its inode field only when hashed; a
		// slot path below depth covers them whatever their inode.
		return lo, hi
	}
	for i := offBlock; i < Size; i++ {
		hi[i] = 0xff
	}
	return lo, hi
}

// FreeSlot returns a slot unused in a directory, given whether each slot
// is used, starting the search at hint (the slot after the last one
// given, so that slots follow creation order and a scan rarely repeats).
// It returns Overflow when all 65,534 are taken.
func FreeSlot(used func(Slot) bool, hint Slot) Slot {
	if hint == NoSlot || hint > MaxSlot {
		hint = 1
	}
	s := hint
	for range MaxSlot {
		if !used(s) {
			return s
		}
		s++
		if s > MaxSlot {
			s = 1
		}
	}
	return Overflow
}
