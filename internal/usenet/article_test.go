package usenet

import (
	"bytes"
	"errors"
	"runtime"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

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

// foldedArticle is an article whose X-Fold header is folded over
// continuation lines of width bytes (CRLF included, at least 4) until its
// header block is about size bytes.
func foldedArticle(size, width int) []byte {
	cont := " " + strings.Repeat("x", width-3) + "\r\n"
	raw := []byte(article("<fold@example.com>", "local.test", "body\r\n", "X-Fold: start"))
	head, body, _ := bytes.Cut(raw, []byte("\r\n\r\n"))
	out := append(bytes.Clone(head), "\r\n"...)
	for len(out) < size {
		out = append(out, cont...)
	}
	out = append(out, "\r\n"...)
	return append(out, body...)
}

// allocatedBy is the heap bytes fn allocates (runtime.MemStats.TotalAlloc
// counts every allocation, collected or not).
func allocatedBy(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// A folded header costs memory in proportion to its size, not to its size
// times its lines: the value used to be rebuilt at every continuation
// line, and 1 MB of them took 18.8 s of a server's CPU (issue 27). Here a
// header block at the limits (1,900 continuation lines in 64 KB) may
// allocate at most 8 times its size; the old parse allocated 60 MB.
func TestFoldedHeaderParseIsLinear(t *testing.T) {
	raw := foldedArticle(MaxHeaderBytes-1000, 33)
	var a *Article
	var err error
	got := allocatedBy(func() { a, err = ParseArticle(raw) })
	if err != nil {
		t.Fatal(err)
	}
	x := strings.Repeat("x", 30)
	if v, _ := a.Header("X-Fold"); !strings.HasPrefix(v, "start "+x+" "+x) || len(v) != len("start")+31*strings.Count(string(raw), " "+x+"\r\n") {
		t.Fatalf("X-Fold unfolded to %d bytes: %.40q", len(v), v)
	}
	if limit := 8 * uint64(len(raw)); got > limit {
		t.Fatalf("parsing a %d-byte folded header allocated %d bytes, more than %d", len(raw), got, limit)
	}
	t.Logf("a %d-byte folded header: %d bytes allocated", len(raw), got)
	// Past the limits, 1 MB of continuation lines, still in proportion.
	big := foldedArticle(1<<20, 4)
	got = allocatedBy(func() { a, err = parseArticle(big, headerLimits{1 << 30, 1 << 30, 1 << 30}) })
	if err != nil {
		t.Fatal(err)
	}
	if limit := 8 * uint64(len(big)); got > limit {
		t.Fatalf("parsing a %d-byte folded header allocated %d bytes, more than %d", len(big), got, limit)
	}
}

// BenchmarkParseFoldedHeader parses 1 MB of folded header lines with the
// limits lifted (the work of 262,000 continuation lines), and an article
// at the real limits.
func BenchmarkParseFoldedHeader(b *testing.B) {
	for _, c := range []struct {
		name string
		size int
		lim  headerLimits
	}{
		{"1MB-unlimited", 1 << 20, headerLimits{1 << 30, 1 << 30, 1 << 30}},
		{"64KB-at-limits", MaxHeaderBytes - 1000, headerLimits{maxHeaders, maxHeaderLines, MaxHeaderBytes}},
		{"1MB-refused", 1 << 20, headerLimits{maxHeaders, maxHeaderLines, MaxHeaderBytes}},
	} {
		width := 4
		if c.size < 1<<20 {
			width = 33
		}
		raw := foldedArticle(c.size, width)
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				parseArticle(raw, c.lim)
			}
		})
	}
}

// Header blocks past a limit are refused, whichever limit it is.
func TestHeaderLimits(t *testing.T) {
	base := article("<lim@example.com>", "local.test", "body\r\n")
	head, body, _ := strings.Cut(base, "\r\n\r\n")
	for _, c := range []struct {
		name  string
		extra string
		want  string // "" if it parses
	}{
		{"a few fields", strings.Repeat("X-A: b\r\n", 10), ""},
		{"too many fields", strings.Repeat("X-A: b\r\n", maxHeaders), "header fields"},
		{"lines at the limit", "X-A: b\r\n" + strings.Repeat(" c\r\n", maxHeaderLines-7), ""},
		{"too many lines", "X-A: b\r\n" + strings.Repeat(" c\r\n", maxHeaderLines), "header lines"},
		{"too many bytes", "X-A: " + strings.Repeat("b", MaxHeaderBytes) + "\r\n", "longer than"},
		{"folded too long", "X-A: b\r\n" + strings.Repeat(" "+strings.Repeat("c", 100)+"\r\n", MaxHeaderBytes/100), "longer than"},
		{"continuation not UTF-8", "X-A: b\r\n \xff\xfe\r\n", "not UTF-8"},
	} {
		_, err := ParseArticle([]byte(head + "\r\n" + c.extra + "\r\n" + body))
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (!errors.Is(err, ErrBadArticle) || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: got %v, want an ErrBadArticle with %q", c.name, err, c.want)
		}
	}
}

// parseNaive is the plain parse ParseArticle must agree with: each
// continuation line appended to the value as it comes (quadratic, fine for
// the fuzzer's small inputs).
func parseNaive(raw []byte) ([]header, int, error) {
	if bytes.IndexByte(raw, 0) >= 0 {
		return nil, 0, ErrBadArticle
	}
	var hs []header
	lines, pos := 0, 0
	for pos < len(raw) {
		i := bytes.Index(raw[pos:], []byte("\r\n"))
		if i < 0 {
			return nil, 0, ErrBadArticle
		}
		line := raw[pos : pos+i]
		pos += i + 2
		if len(line) == 0 {
			if len(hs) == 0 {
				return nil, 0, ErrBadArticle
			}
			return hs, pos, nil
		}
		lines++
		if lines > maxHeaderLines || pos > MaxHeaderBytes || !utf8.Valid(line) {
			return nil, 0, ErrBadArticle
		}
		if line[0] == ' ' || line[0] == '\t' {
			if len(hs) == 0 {
				return nil, 0, ErrBadArticle
			}
			h := &hs[len(hs)-1]
			h.value = strings.TrimSpace(h.value + " " + strings.TrimSpace(string(line)))
			continue
		}
		name, value, ok := strings.Cut(string(line), ":")
		if !ok || name == "" || strings.IndexFunc(name, func(r rune) bool { return r <= ' ' || r >= 0x7f }) >= 0 || len(hs) >= maxHeaders {
			return nil, 0, ErrBadArticle
		}
		hs = append(hs, header{name, strings.TrimSpace(value)})
	}
	if len(hs) == 0 {
		return nil, 0, ErrBadArticle
	}
	return hs, len(raw), nil
}

// FuzzParseArticle checks ParseArticle against parseNaive: the same
// headers, values and body, or both refuse.
func FuzzParseArticle(f *testing.F) {
	f.Add([]byte(article("<p@x>", "local.test", "body\r\n")))
	f.Add([]byte("A: b\r\n c \r\n\t\r\n  d\r\n\r\nbody"))
	f.Add([]byte("A:\r\n x\r\nB: \xc2\xa0y\xc2\xa0\r\n \xe2\x80\x83\r\n"))
	f.Add([]byte(" x\r\nA: b\r\n"))
	f.Add([]byte("A: b\r\r\n c\r\n"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		want, body, werr := parseNaive(raw)
		a, err := ParseArticle(raw)
		if (err != nil) != (werr != nil) {
			t.Fatalf("%q: ParseArticle says %v, the naive parse %v", raw, err, werr)
		}
		if err != nil {
			if !errors.Is(err, ErrBadArticle) {
				t.Fatalf("%q: %v is not an ErrBadArticle", raw, err)
			}
			return
		}
		if !slices.Equal(a.headers, want) || a.body != body {
			t.Fatalf("%q:\ngot  %q body at %d\nwant %q body at %d", raw, a.headers, a.body, want, body)
		}
	})
}

// A Date header is an RFC 5322 date: the common forms pass, and what is
// no date does not (it was taken while a missing Date was refused).
func TestDateMustParse(t *testing.T) {
	for _, v := range []string{"Sat, 21 Nov 2026 10:00:00 +0000", "21 Nov 2026 10:00 GMT", "Sat, 21 Nov 2026 10:00:00 UTC", "Sat, 21 Nov 2026 10:00:00 -0500 (EST)"} {
		if !isDate(v) {
			t.Errorf("isDate(%q) = false", v)
		}
	}
	for _, v := range []string{"yesterday", "31 Foo 2026 99:00", "2026-11-21T10:00:00Z"} {
		if isDate(v) {
			t.Errorf("isDate(%q) = true", v)
		}
	}
}
