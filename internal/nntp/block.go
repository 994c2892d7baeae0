package nntp

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// Multi-line data blocks (RFC 3977 section 3.1.1): lines ending in CRLF,
// a line starting with "." sent with one more "." in front (dot-stuffing),
// and a line of "." alone to end the block.

// ErrArticleTooLarge means a block passed its limit; ReadArticle read the
// rest of it and dropped it, up to the terminating line.
var ErrArticleTooLarge = errors.New("nntp: article too large")

// ReadArticle reads a dot-terminated block, as a server reads an article
// after POST, IHAVE or TAKETHIS, and appends it to dst in wire form:
// dot-stuffing kept, every line ending in CRLF (a bare LF becomes CRLF),
// the terminating line left off. Articles are stored this way, as INN
// stores them, so that ARTICLE, HEAD and BODY send stored bytes as they
// are. A block over maxBytes is read to its end and dropped
// (ErrArticleTooLarge), so the connection stays in step. Lines longer
// than r's buffer are read in pieces: feeders send long lines in real
// articles. The caller owns dst (a server recycles it).
func ReadArticle(r *bufio.Reader, dst []byte, maxBytes int) ([]byte, error) {
	start := len(dst)
	var failed error
	for {
		line, err := r.ReadSlice('\n')
		midLine := false // the line so far was longer than the buffer
		for err == bufio.ErrBufferFull {
			if failed == nil && len(dst)-start+len(line) > maxBytes {
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
		if failed == nil && len(dst)-start+len(body)+2 > maxBytes {
			failed = ErrArticleTooLarge
		}
		if failed == nil {
			dst = append(dst, body...)
			dst = append(dst, '\r', '\n')
		}
	}
}

// readBlock reads a multi-line data block as a client reads one after a
// 220, 222 or 224 reply, up to and including its terminating ".\r\n"
// line, appends its wire bytes, still dot-stuffed, to dst, and returns
// them with the number of lines before the terminator. A line not ended by
// CRLF or longer than r's buffer, or a block over maxBytes, is an error;
// the connection is out of step after it.
func readBlock(r *bufio.Reader, dst []byte, maxBytes int) ([]byte, int, error) {
	start, lines := len(dst), 0
	for {
		// Check the whole lines buffered in one pass and copy them at
		// once: taking a 240 KB article line by line cost the load
		// generator more than the server spent sending it.
		if r.Buffered() == 0 {
			if _, err := r.Peek(1); err != nil {
				return dst, lines, blockReadErr(err, r.Size())
			}
		}
		buf, _ := r.Peek(r.Buffered())
		whole := buf[:bytes.LastIndexByte(buf, '\n')+1]
		if len(whole) == 0 {
			// Part of a line: wait for its end, within the buffer's size.
			line, err := r.ReadSlice('\n')
			if err != nil {
				return dst, lines, blockReadErr(err, r.Size())
			}
			whole = line
			buf = nil // consumed by ReadSlice
		}
		for i := 0; i < len(whole); {
			end := i + bytes.IndexByte(whole[i:], '\n') + 1
			line := whole[i:end]
			switch {
			case len(line) < 2 || line[len(line)-2] != '\r':
				return dst, lines, fmt.Errorf("nntp: line %d of a block not ended by CRLF: %.40q", lines+1, line)
			case len(dst)-start+end > maxBytes:
				return dst, lines, fmt.Errorf("nntp: a block longer than %d bytes", maxBytes)
			case len(line) == 3 && line[0] == '.':
				dst = append(dst, whole[:end]...)
				if buf != nil {
					r.Discard(end)
				}
				return dst, lines, nil
			}
			lines++
			i = end
		}
		dst = append(dst, whole...)
		if buf != nil {
			r.Discard(len(whole))
		}
	}
}

// blockReadErr says what a read error inside a data block means.
func blockReadErr(err error, size int) error {
	switch {
	case errors.Is(err, bufio.ErrBufferFull):
		return fmt.Errorf("nntp: a line longer than %d bytes", size)
	case errors.Is(err, io.EOF):
		return fmt.Errorf("nntp: the connection closed inside a multi-line block: %w", io.ErrUnexpectedEOF)
	}
	return err
}

// AppendBlock appends text (lines ending in CRLF or a bare LF; a last line
// without an ending gets one) to dst as a multi-line block: every line
// ending in CRLF, dot-stuffed, and terminated by ".\r\n", as a client
// sends an article.
func AppendBlock(dst, text []byte) []byte {
	for len(text) > 0 {
		if text[0] == '.' {
			dst = append(dst, '.')
		}
		i := bytes.IndexByte(text, '\n')
		if i < 0 {
			dst = append(dst, text...)
			dst = append(dst, '\r', '\n')
			break
		}
		if i == 0 || text[i-1] != '\r' {
			dst = append(dst, text[:i]...)
			dst = append(dst, '\r', '\n')
		} else {
			dst = append(dst, text[:i+1]...)
		}
		text = text[i+1:]
	}
	return append(dst, ".\r\n"...)
}

// Unstuff returns the text of a block in wire form, with or without its
// terminating line: the leading dot of each line removed, and the
// terminating "." line, if there, left off (inside a block a lone dot is
// sent as "..", so a "." line can only be the terminator). Line endings
// are kept as they are.
func Unstuff(block []byte) []byte {
	out := make([]byte, 0, len(block))
	for len(block) > 0 {
		i := bytes.IndexByte(block, '\n')
		line := block
		if i >= 0 {
			line = block[:i+1]
		}
		block = block[len(line):]
		if t := trimEOL0(line); len(t) == 1 && t[0] == '.' {
			break
		}
		if line[0] == '.' {
			line = line[1:]
		}
		out = append(out, line...)
	}
	return out
}

// trimEOL0 is trimEOL for a line that may have no ending.
func trimEOL0(line []byte) []byte {
	if len(line) > 0 && line[len(line)-1] == '\n' {
		return trimEOL(line)
	}
	return line
}
