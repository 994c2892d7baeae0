package nntp

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestReadLineBounds(t *testing.T) {
	long := strings.Repeat("x", 600)
	r := bufio.NewReaderSize(strings.NewReader("GROUP a.b\r\n"+long+"\r\nDATE\n"+long[:100]+"\r\n"+long), 16)
	if l, err := ReadLine(r, MaxCommandLine); err != nil || string(l) != "GROUP a.b" {
		t.Fatalf("got %q, %v", l, err)
	}
	if _, err := ReadLine(r, MaxCommandLine); !errors.Is(err, ErrLineTooLong) {
		t.Fatalf("600-octet line: err %v, want ErrLineTooLong", err)
	}
	// The long line was consumed: the stream is still in step.
	if l, err := ReadLine(r, MaxCommandLine); err != nil || string(l) != "DATE" {
		t.Fatalf("after the long line got %q, %v", l, err)
	}
	// Within the buffer but over the limit.
	r2 := bufio.NewReader(strings.NewReader(long[:100] + "\r\nQUIT\r\n"))
	if _, err := ReadLine(r2, 50); !errors.Is(err, ErrLineTooLong) {
		t.Fatalf("100 bytes with a limit of 50: err %v", err)
	}
	if l, err := ReadLine(r2, 50); err != nil || string(l) != "QUIT" {
		t.Fatalf("after the long line got %q, %v", l, err)
	}
	if _, err := ReadLine(r, MaxCommandLine); !errors.Is(err, ErrLineTooLong) {
		t.Fatal(err)
	}
	// A long last line cut by the end of the stream.
	if _, err := ReadLine(r, MaxCommandLine); err != io.ErrUnexpectedEOF {
		t.Fatalf("at the end: %v", err)
	}
	if _, err := ReadLine(bufio.NewReader(strings.NewReader("")), MaxCommandLine); err != io.EOF {
		t.Fatalf("nothing to read: %v, want io.EOF", err)
	}
	if _, err := ReadLine(bufio.NewReader(strings.NewReader("QU")), MaxCommandLine); err != io.ErrUnexpectedEOF {
		t.Fatalf("half a line: %v, want io.ErrUnexpectedEOF", err)
	}
}

// FuzzReadLine: whatever a client sends, the reader never panics, returns
// no line past its limit, never a line ending, and reads every line in
// order: the lines it returns and the ones it refused account for the
// whole input.
func FuzzReadLine(f *testing.F) {
	f.Add([]byte("GROUP a.b\r\nDATE\n"), 16)
	f.Add([]byte(strings.Repeat("x", 40)+"\r\nQUIT\r\n"), 20)
	f.Add([]byte("a\rb\r\r\n\n"), 3)
	f.Add([]byte("no end"), 512)
	f.Fuzz(func(t *testing.T, in []byte, maxBytes int) {
		maxBytes = 1 + int(uint(maxBytes)%600)
		r := bufio.NewReaderSize(bytes.NewReader(in), 16)
		var lines [][]byte
		for {
			line, err := ReadLine(r, maxBytes)
			if errors.Is(err, ErrLineTooLong) {
				lines = append(lines, nil)
				continue
			}
			if err != nil {
				if err != io.EOF && err != io.ErrUnexpectedEOF {
					t.Fatalf("error %v from a bytes.Reader", err)
				}
				if (err == io.EOF) != (len(in) == 0 || in[len(in)-1] == '\n') {
					t.Fatalf("%v at the end of %q", err, in)
				}
				break
			}
			lines = append(lines, bytes.Clone(line))
		}
		// Every complete line of the input, in order: returned whole or
		// refused as too long.
		want := bytes.SplitAfter(in, []byte("\n"))
		if len(want) > 0 && !bytes.HasSuffix(want[len(want)-1], []byte("\n")) {
			want = want[:len(want)-1] // the unterminated tail
		}
		if len(lines) != len(want) {
			t.Fatalf("%d lines from %q, want %d", len(lines), in, len(want))
		}
		for i, w := range want {
			switch {
			case lines[i] == nil:
				if len(w) <= maxBytes && len(w) <= 16 {
					t.Fatalf("line %q of %d bytes refused with a limit of %d", w, len(w), maxBytes)
				}
			case len(w) > maxBytes:
				t.Fatalf("line %q of %d bytes returned with a limit of %d", w, len(w), maxBytes)
			case !bytes.Equal(lines[i], trimEOL(w)):
				t.Fatalf("line %d is %q, want %q", i, lines[i], trimEOL(w))
			}
		}
	})
}
