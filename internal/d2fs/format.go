package d2fs

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"triad/internal/d2/key"
)

// Sizes and limits of the on-store format.
const (
	// BlockBytes is the most a metadata block (a record's part, a
	// superblock) holds, and the data block size of the volumes made
	// before format 5 (§3: 8 KB).
	BlockBytes = 8192
	// DataBlockBytes is the data block size of a new volume (Mkvol): a
	// file's bytes are cut in blocks of this size. The paper's 8 KB
	// spends a signature, its checks at every holder, a message and a
	// sync share per 8 KB; 64 KB writes a large file 4-5 times faster
	// here (docs/d2.md, "Speed"). MkvolSized makes a volume of another.
	DataBlockBytes = 64 << 10
	// MaxDataBlockBytes is the largest data block size a volume may
	// have: the largest block D2 carries (wire.MaxD2Block).
	MaxDataBlockBytes = 64 << 10
	// MaxNameBytes is the longest name in a directory.
	MaxNameBytes = 255
	// MaxTargetBytes is the longest symlink target.
	MaxTargetBytes = 4095
	// InlineBytes is the largest file a commit keeps in its entry
	// (format 6) rather than in a data block and a record: a small
	// file's close then stores one block, the superblock with its
	// entry, in one round. Two thirds of Go's source files are this
	// small (docs/d2.md, "Small files in their entries").
	InlineBytes = 4096
	// MaxDataBlocks is the most data blocks a file has: data block n is
	// block number n+1 of its key, and block numbers from 2^31 up hold
	// the parts of large metadata records (partBlock), so a file is at
	// most (2^31-1) × 8 KB, 16 TiB; past that a write is EFBIG.
	MaxDataBlocks = 1<<31 - 1
	// MaxFileBytes is the largest file size.
	MaxFileBytes = MaxDataBlocks * BlockBytes

	maxLevels   = 4       // levels of parts above a record (each 256× smaller)
	partsPerLvl = 1 << 27 // block numbers of one level of parts
)

// Format magics: three letters and the format version.
var (
	magicDir   = [4]byte{'d', '2', 'D', 1}
	magicFile  = [4]byte{'d', '2', 'F', 1}
	magicBlob  = [4]byte{'d', '2', 'B', 1}
	magicSuper = [4]byte{'d', '2', 'S', 6}
	// magicSuper5 is the superblock before files could be held in their
	// entries (InlineBytes); it decodes as format 6 (super.v5), whose
	// fields are the same.
	magicSuper5 = [4]byte{'d', '2', 'S', 5}
	// magicSuper4 is the superblock before it named the volume's data
	// block size (8 KB then); it still decodes (super.v4).
	magicSuper4 = [4]byte{'d', '2', 'S', 4}
	// magicSuper3 is the superblock before small commits (no Full, no
	// Deltas); it still decodes (super.v3).
	magicSuper3 = [4]byte{'d', '2', 'S', 3}
	// magicSuper2 is the superblock before it recorded the bytes used
	// and the commit's time; it still decodes (super.v2).
	magicSuper2 = [4]byte{'d', '2', 'S', 2}
	magicLease  = [4]byte{'d', '2', 'L', 1}
)

// ErrFormat reports a block that does not decode: a format error, not an
// I/O one (the block matched its hash, so it was written this way).
var ErrFormat = errors.New("d2fs: malformed block")

// ErrForged reports a superblock that is not signed by the volume's
// writer: someone without the writer's key stored it (which D2's nodes
// refuse), so the mount is refused rather than shown an older commit.
var ErrForged = errors.New("d2fs: superblock not signed by the volume's writer")

// Type is what a directory entry names.
type Type uint8

// Entry types.
const (
	TypeFile    Type = 1
	TypeDir     Type = 2
	TypeSymlink Type = 3
)

// Ptr names one stored version of a block: its key's version and the
// SHA-256 of its bytes (§3: every pointer carries its target's content
// hash). The zero Ptr points at nothing (a hole, or an empty record).
type Ptr struct {
	Version uint32
	Sum     [32]byte
}

// IsZero says p points at nothing.
func (p Ptr) IsZero() bool { return p == Ptr{} }

func (p Ptr) valid() bool { return p.Version != 0 || p.Sum == [32]byte{} }

// Entry is one name in a directory, with the attributes of what it names
// (there are no hard links, so a file's attributes live in its entry).
type Entry struct {
	Name   string
	Slot   key.Slot // the name's 2-byte value in its directory (key.FreeSlot)
	Type   Type
	Mode   uint32 // permission bits, at most 07777
	Uid    uint32
	Gid    uint32
	Size   uint64 // bytes of a file, length of a symlink's target, 0 for a directory
	Mtime  int64  // nanoseconds since 1970
	Base   key.Key
	Meta   Ptr    // block 0 of Base: the file's block list or the directory's entries
	Target string // a symlink's target, or a small file's bytes (InlineBytes)
}

// entryFixed is the bytes of an entry besides its name and target.
const entryFixed = 1 + 2 + 1 + 2 + 4 + 4 + 8 + 8 + key.Size + 4 + 32 + 2

func appendEntry(b []byte, e *Entry) []byte {
	b = append(b, byte(len(e.Name)))
	b = append(b, e.Name...)
	b = binary.BigEndian.AppendUint16(b, uint16(e.Slot))
	b = append(b, byte(e.Type))
	b = binary.BigEndian.AppendUint16(b, uint16(e.Mode))
	b = binary.BigEndian.AppendUint32(b, e.Uid)
	b = binary.BigEndian.AppendUint32(b, e.Gid)
	b = binary.BigEndian.AppendUint64(b, e.Size)
	b = binary.BigEndian.AppendUint64(b, uint64(e.Mtime))
	b = append(b, e.Base[:]...)
	b = appendPtr(b, e.Meta)
	b = binary.BigEndian.AppendUint16(b, uint16(len(e.Target)))
	return append(b, e.Target...)
}

func appendPtr(b []byte, p Ptr) []byte {
	b = binary.BigEndian.AppendUint32(b, p.Version)
	return append(b, p.Sum[:]...)
}

// reader takes fields off a byte slice; the first short read sticks.
type reader struct {
	b   []byte
	err error
}

func (r *reader) take(n int) []byte {
	if r.err != nil || n > len(r.b) {
		if r.err == nil {
			r.err = fmt.Errorf("%w: truncated", ErrFormat)
		}
		return make([]byte, n)
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) u8() uint8   { return r.take(1)[0] }
func (r *reader) u16() uint16 { return binary.BigEndian.Uint16(r.take(2)) }
func (r *reader) u32() uint32 { return binary.BigEndian.Uint32(r.take(4)) }
func (r *reader) u64() uint64 { return binary.BigEndian.Uint64(r.take(8)) }

func (r *reader) ptr() Ptr {
	p := Ptr{Version: r.u32()}
	copy(p.Sum[:], r.take(32))
	return p
}

func (r *reader) entry() Entry {
	var e Entry
	e.Name = string(r.take(int(r.u8())))
	e.Slot = key.Slot(r.u16())
	e.Type = Type(r.u8())
	e.Mode = uint32(r.u16())
	e.Uid = r.u32()
	e.Gid = r.u32()
	e.Size = r.u64()
	e.Mtime = int64(r.u64())
	copy(e.Base[:], r.take(key.Size))
	e.Meta = r.ptr()
	e.Target = string(r.take(int(r.u16())))
	return e
}

// checkName reports whether name may appear in a directory.
func checkName(name string) error {
	switch {
	case len(name) > MaxNameBytes:
		return fmt.Errorf("%w: name of %d bytes", errNameTooLong, len(name))
	case name == "" || name == "." || name == "..":
		return fmt.Errorf("%w: name %q", errInvalid, name)
	case strings.ContainsAny(name, "/\x00"):
		return fmt.Errorf("%w: name %q has / or NUL", errInvalid, name)
	}
	return nil
}

// checkEntry validates one entry of the directory whose base key is dir.
func checkEntry(e *Entry, dir key.Key) error {
	if err := checkName(e.Name); err != nil {
		return fmt.Errorf("%w: %v", ErrFormat, err)
	}
	switch {
	case e.Slot == key.NoSlot:
		return fmt.Errorf("%w: %q has no slot", ErrFormat, e.Name)
	case e.Type < TypeFile || e.Type > TypeSymlink:
		return fmt.Errorf("%w: %q has type %d", ErrFormat, e.Name, e.Type)
	case e.Mode > 0o7777:
		return fmt.Errorf("%w: %q has mode %o", ErrFormat, e.Name, e.Mode)
	case e.Size > MaxFileBytes:
		return fmt.Errorf("%w: %q has size %d", ErrFormat, e.Name, e.Size)
	case e.Base.Volume() != dir.Volume() || e.Base != e.Base.Base() || e.Base == dir.Base() || e.Base.Inode() < firstInode:
		return fmt.Errorf("%w: %q has base key %v", ErrFormat, e.Name, e.Base)
	case !e.Meta.valid():
		return fmt.Errorf("%w: %q has a pointer with version 0", ErrFormat, e.Name)
	}
	switch e.Type {
	case TypeSymlink:
		if e.Target == "" || len(e.Target) > MaxTargetBytes || strings.IndexByte(e.Target, 0) >= 0 || !e.Meta.IsZero() || e.Size != uint64(len(e.Target)) {
			return fmt.Errorf("%w: symlink %q", ErrFormat, e.Name)
		}
	case TypeDir:
		if e.Target != "" || e.Size != 0 {
			return fmt.Errorf("%w: directory %q", ErrFormat, e.Name)
		}
	case TypeFile:
		if e.Target != "" && (!e.Meta.IsZero() || e.Size != uint64(len(e.Target)) || len(e.Target) > InlineBytes) {
			return fmt.Errorf("%w: file %q has %d bytes in its entry (size %d)", ErrFormat, e.Name, len(e.Target), e.Size)
		}
	}
	return nil
}

// EncodeDir is the record of a directory: its entries, which must be
// sorted by name.
func EncodeDir(entries []Entry) []byte {
	n := 8
	for i := range entries {
		n += entryFixed + len(entries[i].Name) + len(entries[i].Target)
	}
	b := make([]byte, 0, n)
	b = append(b, magicDir[:]...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(entries)))
	for i := range entries {
		b = appendEntry(b, &entries[i])
	}
	return b
}

// DecodeDir reads the record of the directory whose base key is dir and
// checks everything: each entry (checkEntry), names strictly increasing,
// slots other than key.Overflow and base keys unique, no trailing bytes.
func DecodeDir(b []byte, dir key.Key) ([]Entry, error) {
	r := reader{b: b}
	if [4]byte(r.take(4)) != magicDir {
		return nil, fmt.Errorf("%w: not a directory record", ErrFormat)
	}
	n := r.u32()
	if r.err != nil || uint64(n) > uint64(len(r.b)/(entryFixed+1)) {
		return nil, fmt.Errorf("%w: %d entries in %d bytes", ErrFormat, n, len(b))
	}
	entries := make([]Entry, 0, n)
	slots := make(map[key.Slot]bool, n)
	bases := make(map[key.Key]bool, n)
	for i := uint32(0); i < n; i++ {
		e := r.entry()
		if r.err != nil {
			return nil, r.err
		}
		if err := checkEntry(&e, dir); err != nil {
			return nil, err
		}
		if i > 0 && entries[i-1].Name >= e.Name {
			return nil, fmt.Errorf("%w: %q after %q", ErrFormat, e.Name, entries[i-1].Name)
		}
		if (e.Slot != key.Overflow && slots[e.Slot]) || bases[e.Base] {
			return nil, fmt.Errorf("%w: %q repeats a slot or a key", ErrFormat, e.Name)
		}
		slots[e.Slot], bases[e.Base] = true, true
		entries = append(entries, e)
	}
	if len(r.b) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", ErrFormat, len(r.b))
	}
	return entries, nil
}

// encodeFile is the record of a file: a pointer per data block.
func encodeFile(ptrs []Ptr) []byte {
	b := make([]byte, 0, 8+36*len(ptrs))
	b = append(b, magicFile[:]...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(ptrs)))
	for _, p := range ptrs {
		b = appendPtr(b, p)
	}
	return b
}

// decodeFile reads a file's record.
func decodeFile(b []byte) ([]Ptr, error) {
	r := reader{b: b}
	if [4]byte(r.take(4)) != magicFile {
		return nil, fmt.Errorf("%w: not a file record", ErrFormat)
	}
	n := r.u32()
	if r.err != nil || n > MaxDataBlocks || uint64(len(r.b)) != 36*uint64(n) {
		return nil, fmt.Errorf("%w: %d block pointers in %d bytes", ErrFormat, n, len(b))
	}
	ptrs := make([]Ptr, n)
	for i := range ptrs {
		ptrs[i] = r.ptr()
		if !ptrs[i].valid() {
			return nil, fmt.Errorf("%w: block %d has a pointer with version 0", ErrFormat, i)
		}
	}
	return ptrs, nil
}

// A record (a file's block list, a directory's entries) is stored as a
// blob at block 0 of its object's key. Block 0 holds a header (magic,
// levels, the record's length) and, when the record fits, the record
// itself (levels 0). A longer record is cut into 8 KB parts at level 1,
// and block 0 holds their SHA-256 sums instead; when the sums do not fit
// either, they are cut again into level-2 parts, and so on. All parts of
// one blob are written with block 0's version.
const blobHeader = 4 + 1 + 8

// blobInline is the most payload block 0 holds.
const blobInline = BlockBytes - blobHeader

// levelLens is the payload length at each level for a record of n
// bytes: lens[0] = n, lens[l] = 32 × parts at level l; the last is what
// block 0 holds.
func levelLens(n uint64) ([]uint64, error) {
	lens := []uint64{n}
	for lens[len(lens)-1] > blobInline {
		if len(lens) > maxLevels {
			return nil, fmt.Errorf("%w: record of %d bytes", errFileTooBig, n)
		}
		parts := (lens[len(lens)-1] + BlockBytes - 1) / BlockBytes
		if parts > partsPerLvl {
			return nil, fmt.Errorf("%w: record of %d bytes", errFileTooBig, n)
		}
		lens = append(lens, 32*parts)
	}
	return lens, nil
}

// partBlock is the block number of part i at level l (l >= 1).
func partBlock(l, i int) uint32 { return 1<<31 + uint32(l-1)*partsPerLvl + uint32(i) }

// blobBlocks are the blocks of a blob: block 0 and the parts at each level.
type blobBlock struct {
	block uint32
	data  []byte
}

// encodeBlob cuts a record into the blocks that store it.
func encodeBlob(record []byte) ([]blobBlock, error) {
	lens, err := levelLens(uint64(len(record)))
	if err != nil {
		return nil, err
	}
	var out []blobBlock
	payload := record
	for l := 1; l < len(lens); l++ {
		var sums []byte
		for i := 0; i*BlockBytes < len(payload); i++ {
			part := payload[i*BlockBytes : min((i+1)*BlockBytes, len(payload))]
			s := sha256.Sum256(part)
			sums = append(sums, s[:]...)
			out = append(out, blobBlock{partBlock(l, i), part})
		}
		payload = sums
	}
	b0 := make([]byte, 0, blobHeader+len(payload))
	b0 = append(b0, magicBlob[:]...)
	b0 = append(b0, byte(len(lens)-1))
	b0 = binary.BigEndian.AppendUint64(b0, uint64(len(record)))
	b0 = append(b0, payload...)
	return append(out, blobBlock{0, b0}), nil
}

// blobParts reads block 0 of a blob: the number of levels, the record's
// length, and block 0's payload, all checked for consistency.
func blobParts(b0 []byte) (lens []uint64, payload []byte, err error) {
	r := reader{b: b0}
	if [4]byte(r.take(4)) != magicBlob {
		return nil, nil, fmt.Errorf("%w: not a record block", ErrFormat)
	}
	levels := int(r.u8())
	n := r.u64()
	if r.err != nil {
		return nil, nil, r.err
	}
	lens, err = levelLens(n)
	if err != nil || len(lens)-1 != levels || uint64(len(r.b)) != lens[levels] {
		return nil, nil, fmt.Errorf("%w: record header (levels %d, %d bytes, payload %d)", ErrFormat, levels, n, len(r.b))
	}
	return lens, r.b, nil
}

// blobKeys lists the blocks a blob of a record of n bytes occupies:
// what to delete when it is replaced.
func blobKeys(base key.Key, p Ptr, n uint64) []key.Key {
	ks := []key.Key{base.WithBlock(0, p.Version)}
	lens, err := levelLens(n)
	if err != nil {
		return ks
	}
	for l := 1; l < len(lens); l++ {
		parts := int(lens[l] / 32)
		for i := 0; i < parts; i++ {
			ks = append(ks, base.WithBlock(partBlock(l, i), p.Version))
		}
	}
	return ks
}

// super is a volume's superblock: one version per commit, at
// superKey(vol, gen); the newest is the volume's state (§3: a new root
// version makes a commit visible). It is signed by the volume's writer
// (signSuper), and a reader takes it only if the signature verifies
// against the public key it carries, the one the volume ID is derived
// from: a block that D2's nodes should have refused (a put under the
// volume without the writer's key) still cannot pass as a commit.
//
// Format 3 added Used and Time, after NextIno and signed with the rest;
// a format-2 superblock (v2) decodes with both zero. Format 4 added Full
// and Deltas (delta.go), after Root; a format-3 one (v3) decodes as a
// full commit. Format 5 added DataBytes; format 6 changed no field but
// lets a file's entry hold its bytes (InlineBytes), which a reader of
// format 5 refuses.
type super struct {
	Gen     uint32 // the commit's number, also its key's version
	NextIno uint32 // the next inode number to hand out
	// Used is the bytes of the volume's files as of this commit: the sum
	// of their sizes (holes included; symlinks and directories count
	// nothing), as Check's Report.Bytes adds them up. The store spends
	// more: r copies of each block, the records, and the blocks of the
	// previous commit for KeepOld.
	Used uint64
	Time int64 // when the writer committed, Unix nanoseconds by its clock
	Root Entry // the root directory (name "/", no slot)
	// Full is the last full commit, at most Gen: the directories' records
	// are as it wrote them, changed since by the Deltas of this
	// superblock and of those Prev leads to (delta.go).
	Full   uint32
	Prev   Ptr // the small commit before this one; zero after a full one
	Deltas []dirDelta
	// DataBytes is the volume's data block size, set by Mkvol and kept
	// by every commit after (BlockBytes before format 5).
	DataBytes uint32
	Pub       []byte // the writer's ed25519 public key: key.VolumeOfKey(Pub) is the volume
	Sig       []byte // Pub's signature of superMessage
	v2        bool   // of format 2: no Used or Time (kept so it encodes as it was read)
	v3        bool   // of format 3: no Full or Deltas
	v4        bool   // of format 4: no DataBytes
	v5        bool   // of format 5: no file held in its entry
}

// superDomain starts every signed superblock message, so a signature made
// for anything else (a D2 grant) never verifies as one.
const superDomain = "triad-d2fs-superblock 1\x00"

// superBody is the superblock's fields before the signature.
func superBody(s *super) []byte {
	magic := magicSuper
	switch {
	case s.v2:
		magic = magicSuper2
	case s.v3:
		magic = magicSuper3
	case s.v4:
		magic = magicSuper4
	case s.v5:
		magic = magicSuper5
	}
	b := append([]byte{}, magic[:]...)
	b = binary.BigEndian.AppendUint32(b, s.Gen)
	b = binary.BigEndian.AppendUint32(b, s.NextIno)
	if !s.v2 {
		b = binary.BigEndian.AppendUint64(b, s.Used)
		b = binary.BigEndian.AppendUint64(b, uint64(s.Time))
	}
	b = appendEntry(b, &s.Root)
	if s.v2 || s.v3 {
		return b
	}
	b = binary.BigEndian.AppendUint32(b, s.Full)
	b = appendPtr(b, s.Prev)
	b = appendDeltas(b, s.Deltas)
	if s.v4 {
		return b
	}
	return binary.BigEndian.AppendUint32(b, s.DataBytes)
}

// superBytes is the encoded size of a superblock of format 6 with root
// and deltas.
func superBytes(root *Entry, ds []dirDelta) int {
	return 4 + 4 + 4 + 8 + 8 + entryFixed + len(root.Name) + len(root.Target) + 4 + 36 + deltaBytes(ds) + 4 +
		ed25519.PublicKeySize + ed25519.SignatureSize + sha256.Size
}

// superMessage is what the writer signs: the domain, the superblock's own
// key (the volume and the commit number, so it cannot be stored as
// another commit or in another volume), then its fields.
func superMessage(vol key.Volume, body []byte) []byte {
	k := superKey(vol, binary.BigEndian.Uint32(body[len(magicSuper):]))
	m := append([]byte(superDomain), k[:]...)
	return append(m, body...)
}

// signSuper signs s with priv, the private key of vol's writer.
func signSuper(s *super, vol key.Volume, priv ed25519.PrivateKey) {
	s.Pub = priv.Public().(ed25519.PublicKey)
	s.Sig = ed25519.Sign(priv, superMessage(vol, superBody(s)))
}

func encodeSuper(s *super) []byte {
	b := superBody(s)
	b = append(b, s.Pub...)
	b = append(b, s.Sig...)
	sum := sha256.Sum256(b)
	return append(b, sum[:]...)
}

// decodeSuper reads a superblock of volume vol stored at version gen and
// checks its writer's signature (ErrForged).
// Nothing points at a superblock, so it carries its own SHA-256.
func decodeSuper(b []byte, vol key.Volume, gen uint32) (*super, error) {
	if len(b) < 32 || sha256.Sum256(b[:len(b)-32]) != [32]byte(b[len(b)-32:]) {
		return nil, fmt.Errorf("%w: superblock %d fails its checksum", ErrFormat, gen)
	}
	r := reader{b: b[:len(b)-32]}
	s := &super{}
	switch [4]byte(r.take(4)) {
	case magicSuper:
	case magicSuper5:
		s.v5 = true
	case magicSuper4:
		s.v4 = true
	case magicSuper3:
		s.v3 = true
	case magicSuper2:
		s.v2 = true
	default:
		return nil, fmt.Errorf("%w: not a superblock (or one of another format)", ErrFormat)
	}
	s.Gen, s.NextIno = r.u32(), r.u32()
	if !s.v2 {
		s.Used, s.Time = r.u64(), int64(r.u64())
	}
	s.Root = r.entry()
	s.Full, s.DataBytes = s.Gen, BlockBytes
	if !s.v2 && !s.v3 {
		s.Full = r.u32()
		s.Prev = r.ptr()
		ds, err := r.deltas(vol)
		if err != nil {
			return nil, fmt.Errorf("superblock %d: %w", gen, err)
		}
		s.Deltas = ds
		if !s.v4 {
			s.DataBytes = r.u32()
		}
	}
	bodyLen := len(b) - 32 - len(r.b)
	s.Pub = bytes.Clone(r.take(ed25519.PublicKeySize))
	s.Sig = bytes.Clone(r.take(ed25519.SignatureSize))
	switch {
	case r.err != nil:
		return nil, r.err
	case len(r.b) != 0:
		return nil, fmt.Errorf("%w: superblock has %d trailing bytes", ErrFormat, len(r.b))
	case s.Gen != gen:
		return nil, fmt.Errorf("%w: superblock %d stored as version %d", ErrFormat, s.Gen, gen)
	case s.Root.Type != TypeDir || s.Root.Base != rootDir(vol) || !s.Root.Meta.valid() || s.Root.Mode > 0o7777 ||
		s.Root.Name != "/" || s.Root.Size != 0 || s.Root.Target != "":
		return nil, fmt.Errorf("%w: superblock %d has a bad root", ErrFormat, gen)
	case !validDataBytes(s.DataBytes):
		return nil, fmt.Errorf("%w: superblock %d has data blocks of %d bytes", ErrFormat, gen, s.DataBytes)
	case s.NextIno < firstInode:
		return nil, fmt.Errorf("%w: superblock %d has next inode %d", ErrFormat, gen, s.NextIno)
	case key.VolumeOfKey(s.Pub) != vol:
		return nil, fmt.Errorf("%w: superblock %d (%v) carries another volume's public key", ErrForged, gen, superKey(vol, gen))
	case !ed25519.Verify(s.Pub, superMessage(vol, b[:bodyLen]), s.Sig):
		return nil, fmt.Errorf("%w: superblock %d (%v) has a bad signature", ErrForged, gen, superKey(vol, gen))
	case s.Full > s.Gen || s.Full == 0:
		return nil, fmt.Errorf("%w: superblock %d names full commit %d", ErrFormat, gen, s.Full)
	case !s.Prev.IsZero() && (s.Prev.Version >= s.Gen || s.Prev.Version <= s.Full) || s.Full == s.Gen && (!s.Prev.IsZero() || len(s.Deltas) > 0):
		return nil, fmt.Errorf("%w: superblock %d (full commit %d) follows %d", ErrFormat, gen, s.Full, s.Prev.Version)
	}
	return s, nil
}

// validDataBytes reports whether n is a data block size a volume may
// have: a power of two from BlockBytes to MaxDataBlockBytes.
func validDataBytes(n uint32) bool {
	return n >= BlockBytes && n <= MaxDataBlockBytes && n&(n-1) == 0
}

// Inode numbers: 0 is the superblock's (and the lease's), 1 the root
// directory's; entries get 2 and up.
const (
	superInode = 0
	rootInode  = 1
	firstInode = 2
)

// withInode is k with its inode field set. (internal/d2/key sets the
// inode only through Child, which also appends a slot; the root
// directory needs depth 0 and inode 1.)
func withInode(k key.Key, ino uint32) key.Key {
	binary.BigEndian.PutUint32(k[52:56], ino)
	return k
}

// rootDir is the base key of a volume's root directory.
func rootDir(v key.Volume) key.Key { return withInode(key.Root(v), rootInode) }

// superKey is the key of the superblock of commit gen.
func superKey(v key.Volume, gen uint32) key.Key { return key.Root(v).WithBlock(0, gen) }

// leaseKey is the key of the volume's writer lease.
func leaseKey(v key.Volume) key.Key { return key.Root(v).WithBlock(1, 0) }

// LeaseKey is the key of volume v's writer lease: what `triad fs status`
// asks the holders of, and what a chaos run aims its kills at.
func LeaseKey(v key.Volume) key.Key { return leaseKey(v) }

// SuperKey is the key of volume v's superblock of commit gen.
func SuperKey(v key.Volume, gen uint32) key.Key { return superKey(v, gen) }
