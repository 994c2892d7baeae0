package disk

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// A record is one object in a segment file:
//
//	offset  size  field
//	0       4     magic "TRD1"
//	4       1     flags (flagOpaque: the key is not the content hash;
//	              flagTombstone: a delete, with no data)
//	5       1     key length, 1..64
//	6       2     zero
//	8       4     data length
//	12      8     expiry, Unix nanoseconds
//	20      K     key
//	20+K    N     data
//	20+K+N  4     CRC-32C of everything before it
//	24+K+N  4     CRC-32 (IEEE) of the same bytes
//
// The magic lets recovery find the next record after a damaged one. The two
// CRCs have coprime polynomials, so together they act as a 64-bit CRC: every
// burst of up to 64 flipped bits is caught, and other damage slips through
// with odds of 2^-64. They run at over 10 GB/s, where SHA-256 runs at about
// 1 GB/s per core here, so reads check them rather than the content hash,
// which Put checks once before the record is written (docs/storage.md).
//
// A tombstone is the record of a delete: no data, and in place of an
// expiry its cutoff. Every record of its key that expires at or before the
// cutoff is dead, wherever and in whatever order recovery meets it, and
// the tombstone lives in the cutoff's window, so it outlasts them.
const (
	recordMagic  = "TRD1"
	headerBytes  = 20
	trailerBytes = 8
	maxKeyBytes  = 64

	flagOpaque    = 1 << 0
	flagTombstone = 1 << 1

	// formatMaxData bounds a record's data in the format itself. Reading
	// checks against it, not store.Options.MaxObject, so lowering the put limit
	// never makes stored records look damaged.
	formatMaxData = 1 << 30
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// errBadRecord marks bytes that are not a whole, intact record.
var errBadRecord = errors.New("store: bad record")

// record is a decoded record. Data aliases the buffer it was decoded from.
type record struct {
	flags  byte
	key    []byte
	expiry int64
	data   []byte
}

func recordLen(keyLen, dataLen int) int { return headerBytes + keyLen + dataLen + trailerBytes }

// appendRecord appends the encoding of r to dst.
func appendRecord(dst []byte, r record) []byte {
	start := len(dst)
	dst = append(dst, recordMagic...)
	dst = append(dst, r.flags, byte(len(r.key)), 0, 0)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(r.data)))
	dst = binary.LittleEndian.AppendUint64(dst, uint64(r.expiry))
	dst = append(dst, r.key...)
	dst = append(dst, r.data...)
	body := dst[start:]
	dst = binary.LittleEndian.AppendUint32(dst, crc32.Checksum(body, castagnoli))
	return binary.LittleEndian.AppendUint32(dst, crc32.ChecksumIEEE(body))
}

// recordParts returns the record r as three slices to write with one
// vectored write, so the data is not copied: header and key, the data
// itself, and the checksums.
func recordParts(r record) [3][]byte {
	head := make([]byte, 0, headerBytes+len(r.key))
	head = append(head, recordMagic...)
	head = append(head, r.flags, byte(len(r.key)), 0, 0)
	head = binary.LittleEndian.AppendUint32(head, uint32(len(r.data)))
	head = binary.LittleEndian.AppendUint64(head, uint64(r.expiry))
	head = append(head, r.key...)
	c := crc32.Update(crc32.Checksum(head, castagnoli), castagnoli, r.data)
	i := crc32.Update(crc32.ChecksumIEEE(head), crc32.IEEETable, r.data)
	tail := binary.LittleEndian.AppendUint32(make([]byte, 0, trailerBytes), c)
	return [3][]byte{head, r.data, binary.LittleEndian.AppendUint32(tail, i)}
}

// peekLen returns the length of the record whose header starts b, checking
// only the header fields, so a reader knows how much more to read.
func peekLen(b []byte, maxData int) (int, error) {
	if len(b) < headerBytes {
		return 0, fmt.Errorf("%w: %d bytes, short of a header", errBadRecord, len(b))
	}
	if string(b[:4]) != recordMagic {
		return 0, fmt.Errorf("%w: no magic", errBadRecord)
	}
	if b[4]&^(flagOpaque|flagTombstone) != 0 || b[4] == flagOpaque|flagTombstone || b[6] != 0 || b[7] != 0 {
		return 0, fmt.Errorf("%w: unknown flags", errBadRecord)
	}
	k := int(b[5])
	n := binary.LittleEndian.Uint32(b[8:12])
	if b[4]&flagTombstone != 0 && n != 0 {
		return 0, fmt.Errorf("%w: a tombstone with %d bytes of data", errBadRecord, n)
	}
	if k == 0 || k > maxKeyBytes {
		return 0, fmt.Errorf("%w: key length %d", errBadRecord, k)
	}
	if uint64(n) > uint64(maxData) {
		return 0, fmt.Errorf("%w: data length %d over the limit %d", errBadRecord, n, maxData)
	}
	return recordLen(k, int(n)), nil
}

// decodeRecord decodes the record at the start of b, which must hold it
// whole, and returns it with its length.
func decodeRecord(b []byte, maxData int) (record, int, error) {
	n, err := peekLen(b, maxData)
	if err != nil {
		return record{}, 0, err
	}
	if len(b) < n {
		return record{}, 0, fmt.Errorf("%w: %d of %d bytes", errBadRecord, len(b), n)
	}
	body := b[:n-trailerBytes]
	sums := b[n-trailerBytes : n]
	if crc32.Checksum(body, castagnoli) != binary.LittleEndian.Uint32(sums) ||
		crc32.ChecksumIEEE(body) != binary.LittleEndian.Uint32(sums[4:]) {
		return record{}, 0, fmt.Errorf("%w: checksum mismatch", errBadRecord)
	}
	k := int(b[5])
	return record{
		flags:  b[4],
		key:    body[headerBytes : headerBytes+k],
		expiry: int64(binary.LittleEndian.Uint64(b[12:20])),
		data:   body[headerBytes+k:],
	}, n, nil
}
