package usenet

import (
	"bytes"
	"errors"
	"fmt"
	"net/mail"
	"strings"
	"time"
	"unicode/utf8"
)

// An Article is one news article in wire form, as it is stored and sent:
// header lines, an empty line, the body, every line ending in CRLF and
// dot-stuffed, without the terminating line.
type Article struct {
	Raw     []byte
	headers []header
	body    int // offset of the body in Raw
}

type header struct {
	name  string // as written
	value string // unfolded, trimmed
}

// ErrBadArticle wraps every reason an article is refused.
var ErrBadArticle = errors.New("bad article")

func badf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadArticle, fmt.Sprintf(format, args...))
}

// MaxMessageID is RFC 3977's limit on a message-id, in octets.
const MaxMessageID = 250

// Limits on an article's header block, checked while it is parsed: each
// header line costs a parse, and the block is kept in news.db's out log and
// sent in every announcement.
const (
	// maxHeaders bounds the header fields of one article.
	maxHeaders = 1000
	// maxHeaderLines bounds its header lines, continuation lines included.
	maxHeaderLines = 2000
	// MaxHeaderBytes bounds its header lines' bytes, CRLFs included, the
	// empty line after them not: as much as an announcement may carry.
	MaxHeaderBytes = maxHead
)

// headerLimits are the bounds parseArticle checks.
type headerLimits struct{ fields, lines, bytes int }

// ParseArticle splits raw into headers and body and checks the header
// syntax: no NUL anywhere, UTF-8 headers, "Name: value" fields with folded
// continuations, and an empty line before the body (an article may end
// right after its headers). At most maxHeaders fields in maxHeaderLines
// lines of MaxHeaderBytes are read; past any of them the article is
// refused. Required headers are checked by Validate.
func ParseArticle(raw []byte) (*Article, error) {
	return parseArticle(raw, headerLimits{maxHeaders, maxHeaderLines, MaxHeaderBytes})
}

// parseArticle is ParseArticle with limits of its own. It costs time and
// memory in proportion to the header block: a folded value is gathered
// once, when its field ends, not rebuilt at every continuation line.
func parseArticle(raw []byte, lim headerLimits) (*Article, error) {
	if bytes.IndexByte(raw, 0) >= 0 {
		return nil, badf("NUL byte in article")
	}
	a := &Article{Raw: raw, body: len(raw)}
	// The field being read: its value runs from raw[vstart] to raw[vend]
	// (continuation lines and their CRLFs included when folded).
	vstart, vend, folded := 0, 0, false
	finish := func() {
		if len(a.headers) > 0 {
			a.headers[len(a.headers)-1].value = unfold(raw[vstart:vend], folded)
		}
	}
	pos, lines := 0, 0
	for pos < len(raw) {
		i := bytes.Index(raw[pos:], []byte("\r\n"))
		if i < 0 {
			return nil, badf("article does not end in CRLF")
		}
		line := raw[pos : pos+i]
		start := pos
		pos += i + 2
		if len(line) == 0 {
			a.body = pos
			break
		}
		if lines++; lines > lim.lines {
			return nil, badf("more than %d header lines", lim.lines)
		}
		if pos > lim.bytes {
			return nil, badf("headers longer than %d bytes", lim.bytes)
		}
		if !utf8.Valid(line) {
			return nil, badf("header line is not UTF-8")
		}
		if line[0] == ' ' || line[0] == '\t' {
			if len(a.headers) == 0 {
				return nil, badf("continuation line before any header")
			}
			vend, folded = start+i, true
			continue
		}
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 {
			return nil, badf("header line without a name: %.40q", line)
		}
		name := line[:colon]
		for _, c := range name {
			if c <= ' ' || c >= 0x7f {
				return nil, badf("bad header name %.40q", name)
			}
		}
		if len(a.headers) >= lim.fields {
			return nil, badf("more than %d header fields", lim.fields)
		}
		finish()
		a.headers = append(a.headers, header{name: string(name)})
		vstart, vend, folded = start+colon+1, start+i, false
	}
	if len(a.headers) == 0 {
		return nil, badf("no headers")
	}
	finish()
	return a, nil
}

// unfold is a header value as the fields' users see it: each of its lines
// trimmed, and those left non-empty joined by single spaces.
func unfold(v []byte, folded bool) string {
	if !folded {
		return string(bytes.TrimSpace(v))
	}
	var b strings.Builder
	b.Grow(len(v))
	for len(v) > 0 {
		line, rest, _ := bytes.Cut(v, []byte("\r\n"))
		v = rest
		if line = bytes.TrimSpace(line); len(line) == 0 {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.Write(line)
	}
	return b.String()
}

// Header returns the first value of the named header ("" if none) and how
// many times it appears.
func (a *Article) Header(name string) (string, int) {
	var v string
	n := 0
	for _, h := range a.headers {
		if strings.EqualFold(h.name, name) {
			if n == 0 {
				v = h.value
			}
			n++
		}
	}
	return v, n
}

// prependPath puts host first in the parsed Path header, as addPath did in
// Raw.
func (a *Article) prependPath(host string) {
	for i := range a.headers {
		if strings.EqualFold(a.headers[i].name, "Path") {
			a.headers[i].value = host + "!" + a.headers[i].value
			return
		}
	}
}

// Body is the article's body, lines ending in CRLF.
func (a *Article) Body() []byte { return a.Raw[a.body:] }

// Lines counts the body's lines.
func (a *Article) Lines() int { return bytes.Count(a.Body(), []byte("\n")) }

// required are the headers RFC 5536 section 3.1 requires of every article.
var required = []string{"Date", "From", "Message-ID", "Newsgroups", "Path", "Subject"}

// Validate checks what RFC 5536 requires: each of Date, From, Message-ID,
// Newsgroups, Path and Subject exactly once, a Date that is a date (RFC
// 5322 section 3.3, its obsolete forms too), a well-formed message-id
// (equal to want when want is not empty: the id IHAVE or TAKETHIS named),
// and well-formed newsgroup names.
func (a *Article) Validate(want string) error {
	for _, name := range required {
		v, n := a.Header(name)
		switch {
		case n == 0:
			return badf("no %s header", name)
		case n > 1:
			return badf("%d %s headers", n, name)
		case v == "":
			return badf("empty %s header", name)
		}
	}
	if date, _ := a.Header("Date"); !isDate(date) {
		return badf("Date header %q is not a date (RFC 5322 section 3.3)", date)
	}
	id, _ := a.Header("Message-ID")
	if err := CheckMessageID(id); err != nil {
		return err
	}
	if want != "" && id != want {
		return badf("Message-ID %s is not %s as offered", id, want)
	}
	_, err := a.Groups()
	return err
}

// isDate says whether v parses as an RFC 5322 date-time, with or without
// its day of the week and seconds, with a numeric or named zone.
func isDate(v string) bool {
	// The form almost every server writes first: mail.ParseDate tries
	// dozens of layouts, on the path of every article fed.
	if _, err := time.Parse(time.RFC1123Z, v); err == nil {
		return true
	}
	_, err := mail.ParseDate(v)
	return err == nil
}

// Groups lists the Newsgroups header's groups.
func (a *Article) Groups() ([]string, error) {
	v, _ := a.Header("Newsgroups")
	var out []string
	for _, g := range strings.Split(v, ",") {
		g = strings.TrimSpace(g)
		if g == "" {
			continue
		}
		if err := CheckGroupName(g); err != nil {
			return nil, err
		}
		if !contains(out, g) {
			out = append(out, g)
		}
	}
	if len(out) == 0 {
		return nil, badf("no newsgroups")
	}
	return out, nil
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// CheckMessageID checks RFC 5536's msg-id syntax in its common form:
// "<left@right>" of printable ASCII, no spaces or further angle brackets,
// at most MaxMessageID octets.
func CheckMessageID(id string) error {
	if len(id) < 5 || len(id) > MaxMessageID || id[0] != '<' || id[len(id)-1] != '>' {
		return badf("malformed message-id %.80q", id)
	}
	inner := id[1 : len(id)-1]
	at := strings.LastIndexByte(inner, '@')
	if at <= 0 || at == len(inner)-1 {
		return badf("malformed message-id %.80q: no left@right", id)
	}
	for i := 0; i < len(inner); i++ {
		c := inner[i]
		if c <= ' ' || c >= 0x7f || c == '<' || c == '>' {
			return badf("malformed message-id %.80q", id)
		}
	}
	return nil
}

// CheckGroupName checks a newsgroup name: dot-separated components of
// lower-case letters, digits, '+', '-' and '_' (RFC 5536 section 3.1.4,
// as news servers accept it), at most 128 octets.
func CheckGroupName(g string) error {
	if g == "" || len(g) > 128 || g[0] == '.' || g[len(g)-1] == '.' || strings.Contains(g, "..") {
		return badf("bad newsgroup name %.80q", g)
	}
	for i := 0; i < len(g); i++ {
		c := g[i]
		ok := c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '-' || c == '_' || c == '.'
		if !ok {
			return badf("bad newsgroup name %.80q", g)
		}
	}
	return nil
}

// OverviewField cleans a header value for an overview line: TAB, CR and
// LF become spaces (RFC 3977 section 8.3.2).
func OverviewField(v string) string {
	if !strings.ContainsAny(v, "\t\r\n") {
		return v
	}
	return strings.Map(func(r rune) rune {
		if r == '\t' || r == '\r' || r == '\n' {
			return ' '
		}
		return r
	}, v)
}
