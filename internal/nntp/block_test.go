package nntp

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func TestReadArticleKeepsWireForm(t *testing.T) {
	in := "Subject: x\r\n\r\n..leading dot\r\n.\r\nnot the end\n.\r\nNEXT\r\n"
	// The lone dot inside ends the block: everything after it is the
	// next command, as on the wire. The stuffed line stays stuffed.
	r := bufio.NewReader(strings.NewReader(in))
	got, err := ReadArticle(r, nil, 1000)
	if err != nil || string(got) != "Subject: x\r\n\r\n..leading dot\r\n" {
		t.Fatalf("got %q, %v", got, err)
	}
	got, err = ReadArticle(r, nil, 1000)
	if err != nil || string(got) != "not the end\r\n" {
		t.Fatalf("second block %q, %v (LF endings become CRLF)", got, err)
	}
	if l, _ := ReadLine(r, MaxCommandLine); string(l) != "NEXT" {
		t.Fatalf("next line %q", l)
	}
}

func TestReadArticleTooLargeStaysInStep(t *testing.T) {
	body := strings.Repeat("0123456789\r\n", 200)
	r := bufio.NewReaderSize(strings.NewReader(body+".\r\nQUIT\r\n"), 16)
	if _, err := ReadArticle(r, nil, 1000); !errors.Is(err, ErrArticleTooLarge) {
		t.Fatalf("err %v, want ErrArticleTooLarge", err)
	}
	if l, _ := ReadLine(r, MaxCommandLine); string(l) != "QUIT" {
		t.Fatalf("next line %q: the rest of the article was not skipped", l)
	}
}

func TestReadArticleLongLinesInPieces(t *testing.T) {
	line := "." + strings.Repeat("y", 100) // stuffed, longer than the buffer
	r := bufio.NewReaderSize(strings.NewReader(line+"\r\n"+line+"\n.\r\n"), 16)
	got, err := ReadArticle(r, nil, 10000)
	want := line + "\r\n" + line + "\r\n"
	if err != nil || string(got) != want {
		t.Fatalf("got %q, %v", got, err)
	}
}

func TestReadArticleClientDropsMidArticle(t *testing.T) {
	r := bufio.NewReader(strings.NewReader("Subject: x\r\n\r\npart"))
	if _, err := ReadArticle(r, nil, 1000); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("err %v, want ErrUnexpectedEOF", err)
	}
}

func TestAppendBlockThenReadArticle(t *testing.T) {
	for _, data := range []string{"", "a\r\n", ".\r\n", "..\r\n.x\r\nend\r\n", "no newline at end", "lf only\n.dot\n"} {
		b := bytes.NewReader(AppendBlock(nil, []byte(data)))
		got, err := ReadArticle(bufio.NewReader(b), nil, 1000)
		if err != nil {
			t.Fatalf("%q: %v", data, err)
		}
		want := strings.ReplaceAll(strings.ReplaceAll(data, "\r\n", "\n"), "\n", "\r\n")
		if data != "" && !strings.HasSuffix(want, "\r\n") {
			want += "\r\n"
		}
		if text := Unstuff(got); string(text) != want {
			t.Fatalf("%q came back as %q, unstuffed %q, want %q", data, got, text, want)
		}
	}
}

func TestUnstuff(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{".\r\n", ""}, // the terminator alone
		{"a\r\n..\r\n...x\r\n.y\r\n", "a\r\n.\r\n..x\r\ny\r\n"},
		{"a\r\n.\r\nafter\r\n", "a\r\n"}, // the text ends at the terminator
		{"a\n..b", "a\n.b"},
	} {
		if got := string(Unstuff([]byte(tc.in))); got != tc.want {
			t.Errorf("Unstuff(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// FuzzReadArticle: whatever a client sends, the reader never panics, never
// returns more than its limit, returns a block that is valid wire form (no
// bare LF, no line that would end it early), and a block it accepted
// keeps its text through unstuffing, stuffing and a second read.
func FuzzReadArticle(f *testing.F) {
	f.Add([]byte("Subject: x\r\n\r\n..a\r\n.\r\n"))
	f.Add([]byte(".\r\n"))
	f.Add([]byte("a\rb\n\r\n.\n"))
	f.Add([]byte("\x00\xff.\r\n.\r\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		got, err := ReadArticle(bufio.NewReaderSize(bytes.NewReader(in), 16), nil, 4096)
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
		again, err := ReadArticle(bufio.NewReader(bytes.NewReader(AppendBlock(nil, Unstuff(got)))), nil, 8192)
		if err != nil || !bytes.Equal(Unstuff(again), Unstuff(got)) {
			t.Fatalf("round trip of %q gave %q, %v", got, again, err)
		}
	})
}

func TestReadBlock(t *testing.T) {
	for _, tc := range []struct {
		name      string
		in        string
		maxBytes  int
		wantBlock string
		wantLines int
		wantErr   string
	}{
		{"empty", ".\r\n", 100, ".\r\n", 0, ""},
		{"lines", "a\r\n\r\nb c\r\n.\r\nNEXT\r\n", 100, "a\r\n\r\nb c\r\n.\r\n", 3, ""},
		{"stuffed", "..\r\n...x\r\n.\r\n", 100, "..\r\n...x\r\n.\r\n", 2, ""},
		{"dot then text is not the end", ".x\r\n.\r\n", 100, ".x\r\n.\r\n", 1, ""},
		{"bare LF", "a\nb\r\n.\r\n", 100, "", 0, "not ended by CRLF"},
		{"bare LF terminator", "a\r\n.\n", 100, "", 1, "not ended by CRLF"},
		{"EOF", "a\r\nb\r\n", 100, "", 2, "closed inside"},
		{"EOF mid line", "a\r\nb", 100, "", 1, "closed inside"},
		{"too big", "aaaa\r\nbbbb\r\n.\r\n", 10, "", 1, "longer than 10 bytes"},
		{"long line", strings.Repeat("x", 5000) + "\r\n.\r\n", 1 << 20, "", 0, "longer than 4096"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// One byte at a time: no assumption about how replies arrive.
			r := bufio.NewReaderSize(iotest.OneByteReader(strings.NewReader(tc.in)), 4096)
			block, lines, err := readBlock(r, []byte("kept"), tc.maxBytes)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || string(block) != "kept"+tc.wantBlock || lines != tc.wantLines {
				t.Fatalf("got %q, %d lines, %v; want %q, %d lines", block, lines, err, "kept"+tc.wantBlock, tc.wantLines)
			}
			if tc.name == "lines" {
				if rest, _ := io.ReadAll(r); string(rest) != "NEXT\r\n" {
					t.Fatalf("read past the block: %q left", rest)
				}
			}
		})
	}
}

// FuzzReadBlock: whatever a server sends, the client's block reader never
// panics, and a block it returns is a prefix of the input, within the
// limit, made of CRLF lines, ended by the terminator, with its lines
// counted; what AppendBlock writes it reads back whole.
func FuzzReadBlock(f *testing.F) {
	f.Add([]byte(".\r\n"))
	f.Add([]byte("a\r\n..\r\n.\r\n"))
	f.Add([]byte("a\nb\r\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		block, lines, err := readBlock(bufio.NewReaderSize(bytes.NewReader(in), 16), nil, 1<<10)
		if err == nil {
			if !bytes.HasPrefix(in, block) || !bytes.HasSuffix(block, []byte(".\r\n")) || len(block) > 1<<10 {
				t.Fatalf("block %q from %q", block, in)
			}
			if bytes.Count(block, []byte("\n")) != lines+1 || bytes.Count(block, []byte("\r\n")) != lines+1 {
				t.Fatalf("%d lines in %q", lines, block)
			}
		}
		// Text with no line longer than the buffer comes back as sent.
		text := bytes.ReplaceAll(in, []byte("\r"), nil)
		for _, l := range bytes.Split(text, []byte("\n")) {
			if len(l) > 12 {
				return
			}
		}
		sent := AppendBlock(nil, text)
		block, _, err = readBlock(bufio.NewReaderSize(bytes.NewReader(sent), 16), nil, 1<<20)
		if err != nil || !bytes.Equal(block, sent) {
			t.Fatalf("sent %q, read %q, %v", sent, block, err)
		}
	})
}

func TestParseStatus(t *testing.T) {
	for _, tc := range []struct {
		line string
		code Code
		ok   bool
	}{
		{"200 news.example ready", CodePostingAllowed, true},
		{"205", CodeClosing, true},
		{"239 <a@b>", CodeTakeThisOK, true},
		{"20 short", 0, false},
		{"2000 long", 0, false},
		{"abc x", 0, false},
		{"099 low", 0, false},
		{"+99 sign", 0, false},
		{"", 0, false},
	} {
		code, err := ParseStatus([]byte(tc.line))
		if code != tc.code || (err == nil) != tc.ok {
			t.Errorf("ParseStatus(%q) = %d, %v", tc.line, code, err)
		}
	}
}
