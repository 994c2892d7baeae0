package nntp

import (
	"bufio"
	"errors"
	"io"
)

// MaxCommandLine is RFC 3977's limit on a command line, CRLF included
// (section 3.1).
const MaxCommandLine = 512

// ErrLineTooLong means a line passed its limit; the rest of it was read and
// dropped, so the stream is still in step.
var ErrLineTooLong = errors.New("nntp: line too long")

// ReadLine reads one line of at most maxBytes bytes including its line
// ending (CRLF, or a bare LF) and returns it without the ending. A longer
// line, or one longer than r's buffer, is consumed and reported as
// ErrLineTooLong. The returned slice is r's own, valid until the next read.
func ReadLine(r *bufio.Reader, maxBytes int) ([]byte, error) {
	line, err := readRawLine(r, maxBytes)
	if err != nil {
		return nil, err
	}
	return trimEOL(line), nil
}

// readRawLine is ReadLine keeping the line's ending, for a reader that
// checks it.
func readRawLine(r *bufio.Reader, maxBytes int) ([]byte, error) {
	line, err := r.ReadSlice('\n')
	if err == nil {
		if len(line) > maxBytes {
			return nil, ErrLineTooLong
		}
		return line, nil
	}
	if err != bufio.ErrBufferFull {
		if err == io.EOF && len(line) > 0 {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	// Longer than the reader's buffer: skip to the end of the line.
	for err == bufio.ErrBufferFull {
		_, err = r.ReadSlice('\n')
	}
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return nil, ErrLineTooLong
}

// trimEOL drops a line's LF and the CR before it, if any.
func trimEOL(line []byte) []byte {
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line
}
