package vfs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
)

// ZeroChunk is the most WriteZeros writes in one call, and the room a
// log file keeps written ahead of its last record (the block store's
// segments, a site's journal): a record then lands on bytes the file
// already holds, and its fdatasync writes its pages but not the inode.
const ZeroChunk = 1 << 20

var zeros [ZeroChunk]byte

// WriteZeros writes n zero bytes (at most ZeroChunk) at off, and reports
// whether it did. Zeros that do not fit (a full file system) are not an
// error: the file is cut back to off, as it was, and the caller writes
// its record past the end as it would without them. The error is for a
// file that could not be cut back.
func WriteZeros(f File, off, n int64) (written bool, err error) {
	n = min(n, ZeroChunk)
	werr := WriteFullAt(f, [][]byte{zeros[:n]}, off)
	if werr == nil {
		return true, nil
	}
	if terr := f.Truncate(off); terr != nil {
		return false, fmt.Errorf("writing zeros: %w; cutting them: %w", werr, terr)
	}
	return false, nil
}

// AllZero reports whether f holds only zero bytes from pos to end: the
// zeros a log wrote ahead of its records, which recovery cuts quietly,
// rather than damage.
func AllZero(f File, pos, end int64) (bool, error) {
	buf := make([]byte, min(end-pos, ZeroChunk))
	for pos < end {
		n, err := f.ReadAt(buf[:min(int64(len(buf)), end-pos)], pos)
		if err != nil && !errors.Is(err, io.EOF) {
			return false, err
		}
		if n == 0 || !bytes.Equal(buf[:n], zeros[:n]) {
			return false, nil
		}
		pos += int64(n)
	}
	return true, nil
}
