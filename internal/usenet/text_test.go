package usenet

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
	r := bufio.NewReaderSize(strings.NewReader("GROUP a.b\r\n"+long+"\r\nDATE\n"), 16)
	if l, err := readLine(r, MaxCommandLine); err != nil || string(l) != "GROUP a.b" {
		t.Fatalf("got %q, %v", l, err)
	}
	if _, err := readLine(r, MaxCommandLine); !errors.Is(err, ErrLineTooLong) {
		t.Fatalf("600-octet line: err %v, want ErrLineTooLong", err)
	}
	// The long line was consumed: the stream is still in step.
	if l, err := readLine(r, MaxCommandLine); err != nil || string(l) != "DATE" {
		t.Fatalf("after the long line got %q, %v", l, err)
	}
	if _, err := readLine(r, MaxCommandLine); err != io.EOF {
		t.Fatalf("at the end: %v", err)
	}
}

func TestReadDotBlockUnstuffs(t *testing.T) {
	in := "Subject: x\r\n\r\n..leading dot\r\n.\r\nnot the end\n.\r\nNEXT\r\n"
	// The lone dot inside ends the block: everything after it is the
	// next command, as on the wire.
	r := bufio.NewReader(strings.NewReader(in))
	got, err := readDotBlock(r, nil, 1000)
	if err != nil || string(got) != "Subject: x\r\n\r\n.leading dot\r\n" {
		t.Fatalf("got %q, %v", got, err)
	}
	got, err = readDotBlock(r, nil, 1000)
	if err != nil || string(got) != "not the end\r\n" {
		t.Fatalf("second block %q, %v (LF endings become CRLF)", got, err)
	}
	if l, _ := readLine(r, 512); string(l) != "NEXT" {
		t.Fatalf("next line %q", l)
	}
}

func TestReadDotBlockTooLargeStaysInStep(t *testing.T) {
	body := strings.Repeat("0123456789\r\n", 200)
	r := bufio.NewReaderSize(strings.NewReader(body+".\r\nQUIT\r\n"), 16)
	if _, err := readDotBlock(r, nil, 1000); !errors.Is(err, ErrArticleTooLarge) {
		t.Fatalf("err %v, want ErrArticleTooLarge", err)
	}
	if l, _ := readLine(r, 512); string(l) != "QUIT" {
		t.Fatalf("next line %q: the rest of the article was not skipped", l)
	}
}

func TestReadDotBlockLongLinesInPieces(t *testing.T) {
	line := "." + strings.Repeat("y", 100) // stuffed, longer than the buffer
	r := bufio.NewReaderSize(strings.NewReader(line+"\r\n"+line+"\n.\r\n"), 16)
	got, err := readDotBlock(r, nil, 10000)
	want := strings.Repeat("y", 100) + "\r\n" + strings.Repeat("y", 100) + "\r\n"
	if err != nil || string(got) != want {
		t.Fatalf("got %q, %v", got, err)
	}
}

func TestReadDotBlockClientDropsMidArticle(t *testing.T) {
	r := bufio.NewReader(strings.NewReader("Subject: x\r\n\r\npart"))
	if _, err := readDotBlock(r, nil, 1000); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("err %v, want ErrUnexpectedEOF", err)
	}
}

func TestWriteThenReadDotBlock(t *testing.T) {
	for _, data := range []string{"", "a\r\n", ".\r\n", "..\r\n.x\r\nend\r\n", "no newline at end", "lf only\n.dot\n"} {
		b := bytes.NewReader(appendDotBlock(nil, []byte(data)))
		got, err := readDotBlock(bufio.NewReader(b), nil, 1000)
		if err != nil {
			t.Fatalf("%q: %v", data, err)
		}
		want := strings.ReplaceAll(strings.ReplaceAll(data, "\r\n", "\n"), "\n", "\r\n")
		if data != "" && !strings.HasSuffix(want, "\r\n") {
			want += "\r\n"
		}
		if string(got) != want {
			t.Fatalf("%q came back as %q, want %q", data, got, want)
		}
	}
}

// FuzzDotBlock: whatever a client sends, the reader never panics, never
// returns more than its limit, and a block it accepted survives a write
// and a second read unchanged.
func FuzzDotBlock(f *testing.F) {
	f.Add([]byte("Subject: x\r\n\r\n..a\r\n.\r\n"))
	f.Add([]byte(".\r\n"))
	f.Add([]byte("a\rb\n\r\n.\n"))
	f.Add([]byte("\x00\xff.\r\n.\r\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		got, err := readDotBlock(bufio.NewReaderSize(bytes.NewReader(in), 16), nil, 4096)
		if err != nil {
			return
		}
		if len(got) > 4096 {
			t.Fatalf("block of %d bytes past the 4096 limit", len(got))
		}
		again, err := readDotBlock(bufio.NewReader(bytes.NewReader(appendDotBlock(nil, got))), nil, 8192)
		if err != nil || !bytes.Equal(again, got) {
			t.Fatalf("round trip of %q gave %q, %v", got, again, err)
		}
	})
}
