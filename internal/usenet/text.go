package usenet

import (
	"bufio"
	"errors"
	"io"
)

// The NNTP text layer. net/textproto's ReadLine and DotReader have no bound
// on a line or a block, and its DotReader goes byte by byte; these read
// with bounds, a line at a time, and keep articles in wire form.

// MaxCommandLine is RFC 3977's limit on a command line, CRLF included.
const MaxCommandLine = 512

var (
	// ErrLineTooLong means a line passed its limit; the rest of it was
	// read and dropped, so the stream is still in step.
	ErrLineTooLong = errors.New("line too long")
	// ErrArticleTooLarge means a dot-terminated block passed its limit;
	// the rest of it was read and dropped up to the terminating dot.
	ErrArticleTooLarge = errors.New("article too large")
)

// readLine reads one line of at most max bytes including its line ending
// and returns it without the ending. A longer line is consumed and
// reported as ErrLineTooLong. The returned slice is valid until the next
// read.
func readLine(r *bufio.Reader, max int) ([]byte, error) {
	line, err := r.ReadSlice('\n')
	if err == nil {
		if len(line) > max {
			return nil, ErrLineTooLong
		}
		return trimEOL(line), nil
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
		return nil, err
	}
	return nil, ErrLineTooLong
}

func trimEOL(line []byte) []byte {
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line
}

// readDotBlock reads a dot-terminated block (an article, RFC 3977 section
// 3.1.1) and appends it to dst in wire form: dot-stuffing kept, every
// line ending in CRLF (a bare LF becomes CRLF), the terminating line left
// off. Articles are stored this way, as INN stores them, so that ARTICLE,
// HEAD and BODY send stored bytes as they are. A block over max bytes is
// read to its end and dropped (ErrArticleTooLarge), so the connection
// stays in step. Lines longer than the reader's buffer are read in pieces:
// feeders send long lines in real articles.
func readDotBlock(r *bufio.Reader, dst []byte, max int) ([]byte, error) {
	start := len(dst)
	var failed error
	for {
		line, err := r.ReadSlice('\n')
		midLine := false // the line so far was longer than the buffer
		for err == bufio.ErrBufferFull {
			if failed == nil && len(dst)-start+len(line) > max {
				failed = ErrArticleTooLarge
			}
			if failed == nil {
				dst = append(dst, line...)
			}
			midLine = true
			line, err = r.ReadSlice('\n')
		}
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		body := trimEOL(line)
		if midLine && len(body) == 0 && len(line) == 1 && len(dst) > start && dst[len(dst)-1] == '\r' {
			dst = dst[:len(dst)-1] // the CR of a CRLF split across pieces
		}
		if !midLine && len(body) == 1 && body[0] == '.' {
			if failed != nil {
				return nil, failed
			}
			return dst, nil
		}
		if failed == nil && len(dst)-start+len(body)+2 > max {
			failed = ErrArticleTooLarge
		}
		if failed == nil {
			dst = append(dst, body...)
			dst = append(dst, '\r', '\n')
		}
	}
}
