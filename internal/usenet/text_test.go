package usenet

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"slices"
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

func TestReadDotBlockKeepsWireForm(t *testing.T) {
	in := "Subject: x\r\n\r\n..leading dot\r\n.\r\nnot the end\n.\r\nNEXT\r\n"
	// The lone dot inside ends the block: everything after it is the
	// next command, as on the wire. The stuffed line stays stuffed.
	r := bufio.NewReader(strings.NewReader(in))
	got, err := readDotBlock(r, nil, 1000)
	if err != nil || string(got) != "Subject: x\r\n\r\n..leading dot\r\n" {
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
	want := line + "\r\n" + line + "\r\n"
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
		if text := unstuff(got); string(text) != want {
			t.Fatalf("%q came back as %q, unstuffed %q, want %q", data, got, text, want)
		}
	}
}

// FuzzDotBlock: whatever a client sends, the reader never panics, never
// returns more than its limit, returns a block that is valid wire form (no
// bare LF, no line that would end it early), and a block it accepted
// keeps its text through unstuffing, stuffing and a second read.
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
		for i, c := range got {
			if c == '\n' && (i == 0 || got[i-1] != '\r') {
				t.Fatalf("bare LF at %d of %q", i, got)
			}
		}
		if bytes.HasPrefix(got, []byte(".\r\n")) || bytes.Contains(got, []byte("\n.\r\n")) {
			t.Fatalf("block %q has a lone-dot line", got)
		}
		again, err := readDotBlock(bufio.NewReader(bytes.NewReader(appendDotBlock(nil, unstuff(got)))), nil, 8192)
		if err != nil || !bytes.Equal(unstuff(again), unstuff(got)) {
			t.Fatalf("round trip of %q gave %q, %v", got, again, err)
		}
	})
}

// unstuff returns a wire-form block's text: the leading dot of each
// stuffed line removed.
func unstuff(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for len(b) > 0 {
		if b[0] == '.' {
			b = b[1:]
		}
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			return append(out, b...)
		}
		out = append(out, b[:i+1]...)
		b = b[i+1:]
	}
	return out
}

// appendDotBlock appends data (lines ending in CRLF or LF) dot-stuffed
// and terminated by ".\r\n", as a client sends an article.
func appendDotBlock(out, data []byte) []byte {
	for len(data) > 0 {
		if data[0] == '.' {
			out = append(out, '.')
		}
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			out = append(out, data...)
			out = append(out, '\r', '\n')
			break
		}
		if i == 0 || data[i-1] != '\r' {
			out = append(out, data[:i]...)
			out = append(out, '\r', '\n')
		} else {
			out = append(out, data[:i+1]...)
		}
		data = data[i+1:]
	}
	return append(out, ".\r\n"...)
}

// addPath edits the parsed article in place of parsing it again: the
// result must be what parsing the new bytes gives.
func TestAddPathMatchesReparse(t *testing.T) {
	s := &Site{cfg: SiteConfig{PathHost: "here.example"}}
	for _, raw := range []string{
		article("<p1@x>", "local.test", "body\r\n"),
		"From: a@b\r\npath:  up.example!not-for-mail\r\nSubject: s\r\n\r\n..dot line\r\n",
		"Path: a!b\r\n\tc\r\nFrom: a@b\r\n\r\n",
	} {
		a, err := ParseArticle([]byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		s.addPath(a)
		want, err := ParseArticle(slices.Clone(a.Raw))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(a.headers, want.headers) || a.body != want.body || !bytes.Equal(a.Body(), want.Body()) {
			t.Fatalf("after addPath %q:\nedited %+v body %d\nparsed %+v body %d", a.Raw, a.headers, a.body, want.headers, want.body)
		}
		if p, _ := a.Header("Path"); !strings.HasPrefix(p, "here.example!") {
			t.Fatalf("Path %q does not start with this site", p)
		}
	}
}
