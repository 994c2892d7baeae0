package usenet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// command runs one command line; false ends the connection.
func (c *conn) command(line string) bool {
	if strings.IndexByte(line, 0) >= 0 || !utf8.ValidString(line) {
		return c.reply("501 Command line must be UTF-8 without NUL")
	}
	f := strings.Fields(line)
	if len(f) == 0 {
		return c.reply("500 Empty command")
	}
	verb, args := strings.ToUpper(f[0]), f[1:]
	if need, ok := perms[verb]; ok && need != 0 && c.perm&need == 0 {
		if c.s.cfg.Users != nil && !c.authed {
			return c.reply("480 Authentication required")
		}
		return c.reply("502 Permission denied")
	}
	switch verb {
	case "CAPABILITIES":
		return c.capabilities()
	case "MODE":
		return c.mode(args)
	case "QUIT":
		c.reply("205 Bye")
		return false
	case "DATE":
		return c.reply("111 %s", time.Now().UTC().Format("20060102150405"))
	case "HELP":
		return c.send([]byte("100 Legal commands\r\n" + helpText + ".\r\n"))
	case "AUTHINFO":
		return c.authinfo(args)
	case "GROUP":
		return c.groupCmd(args, false)
	case "LISTGROUP":
		return c.groupCmd(args, true)
	case "LIST":
		return c.list(args)
	case "NEWGROUPS":
		return c.newgroups(args)
	case "NEWNEWS":
		return c.newnews(args)
	case "ARTICLE", "HEAD", "BODY", "STAT":
		return c.article(verb, args)
	case "NEXT", "LAST":
		return c.nextLast(verb == "NEXT", args)
	case "OVER", "XOVER":
		return c.over(args)
	case "HDR", "XHDR":
		return c.hdr(verb, args)
	case "POST":
		return c.post(args)
	case "IHAVE":
		return c.ihave(args)
	case "CHECK":
		return c.check(args)
	case "TAKETHIS":
		return c.takethis(args)
	}
	return c.reply("500 Unknown command %.40q", f[0])
}

// perms is what each command needs.
var perms = map[string]Perm{
	"GROUP": PermRead, "LISTGROUP": PermRead, "LIST": PermRead, "NEWGROUPS": PermRead,
	"NEWNEWS": PermRead, "ARTICLE": PermRead, "HEAD": PermRead, "BODY": PermRead,
	"STAT": PermRead, "NEXT": PermRead, "LAST": PermRead, "OVER": PermRead,
	"XOVER": PermRead, "HDR": PermRead, "XHDR": PermRead, "POST": PermPost,
	"IHAVE": PermFeed, "CHECK": PermFeed, "TAKETHIS": PermFeed,
}

const helpText = `  ARTICLE [message-id|number]
  AUTHINFO USER name|PASS password
  BODY [message-id|number]
  CAPABILITIES [keyword]
  CHECK message-id
  DATE
  GROUP newsgroup
  HDR header [message-id|range]
  HEAD [message-id|number]
  HELP
  IHAVE message-id
  LAST
  LIST [ACTIVE|ACTIVE.TIMES|NEWSGROUPS [wildmat]|HEADERS|OVERVIEW.FMT]
  LISTGROUP [newsgroup [range]]
  MODE READER|STREAM
  NEWGROUPS [yy]yymmdd hhmmss [GMT]
  NEWNEWS wildmat [yy]yymmdd hhmmss [GMT]
  NEXT
  OVER [range|message-id]
  POST
  QUIT
  STAT [message-id|number]
  TAKETHIS message-id
  XHDR header [range|message-id]
  XOVER [range]
`

func (c *conn) capabilities() bool {
	var b strings.Builder
	b.WriteString("101 Capability list:\r\nVERSION 2\r\nIMPLEMENTATION triad\r\n")
	if c.perm&PermRead != 0 {
		b.WriteString("READER\r\nHDR\r\nOVER MSGID\r\nNEWNEWS\r\nLIST ACTIVE NEWSGROUPS OVERVIEW.FMT HEADERS ACTIVE.TIMES\r\n")
	}
	if c.perm&PermPost != 0 {
		b.WriteString("POST\r\n")
	}
	if c.perm&PermFeed != 0 {
		b.WriteString("IHAVE\r\nSTREAMING\r\n")
	}
	if c.s.cfg.Users != nil && !c.authed {
		b.WriteString("AUTHINFO USER\r\n")
	}
	b.WriteString(".\r\n")
	return c.send([]byte(b.String()))
}

func (c *conn) mode(args []string) bool {
	if len(args) != 1 {
		return c.reply("501 Syntax: MODE READER|STREAM")
	}
	switch strings.ToUpper(args[0]) {
	case "READER":
		if c.perm&PermPost != 0 {
			return c.reply("200 Posting allowed")
		}
		return c.reply("201 Posting prohibited")
	case "STREAM":
		if c.perm&PermFeed == 0 {
			return c.reply("502 Feeding not allowed")
		}
		return c.reply("203 Streaming permitted")
	}
	return c.reply("501 Unknown MODE %.40q", args[0])
}

func (c *conn) authinfo(args []string) bool {
	if len(args) < 2 {
		return c.reply("501 Syntax: AUTHINFO USER name|PASS password")
	}
	if c.s.cfg.Users == nil {
		return c.reply("503 No users configured")
	}
	if c.authed {
		return c.reply("502 Already authenticated")
	}
	switch strings.ToUpper(args[0]) {
	case "USER":
		c.user = args[1]
		return c.reply("381 Password required")
	case "PASS":
		if c.user == "" {
			return c.reply("482 AUTHINFO USER first")
		}
		// The password is the rest of the line (it may hold spaces), but
		// Fields already split it; rejoin with single spaces.
		perm, ok := c.s.cfg.Users.Check(c.user, strings.Join(args[1:], " "))
		if !ok {
			c.user = ""
			time.Sleep(100 * time.Millisecond) // slows password guessing
			return c.reply("481 Authentication failed")
		}
		c.authed = true
		c.perm |= perm
		return c.reply("281 Authentication accepted")
	}
	return c.reply("501 Syntax: AUTHINFO USER name|PASS password")
}

func (c *conn) groupCmd(args []string, list bool) bool {
	name := c.group
	if len(args) > 0 {
		name = args[0]
	}
	if name == "" {
		return c.reply("412 No newsgroup selected")
	}
	if len(args) > 2 || !list && len(args) != 1 {
		return c.reply("501 Syntax: GROUP newsgroup | LISTGROUP [newsgroup [range]]")
	}
	g, ok := c.site.Group(name)
	if !ok {
		return c.reply("411 No such newsgroup %.80s", name)
	}
	c.group = g.Name
	c.current = 0
	if g.Count > 0 {
		c.current = g.Low
	}
	head := fmt.Appendf(nil, "211 %d %d %d %s", g.Count, lowOf(g), g.High, g.Name)
	if !list {
		return c.send(append(head, "\r\n"...))
	}
	lo, hi := lowOf(g), g.High
	if len(args) == 2 {
		var ok bool
		if lo, hi, ok = parseRange(args[1], g.High); !ok {
			return c.reply("501 Bad range %.40q", args[1])
		}
	}
	out := append(head, " list follows\r\n"...)
	for lo <= hi && hi > 0 {
		l, err := c.site.Overview(g.Name, lo, hi, 10000)
		if err != nil {
			return c.reply("403 %v", err)
		}
		for _, o := range l {
			out = strconv.AppendUint(out, o.Num, 10)
			out = append(out, '\r', '\n')
		}
		if len(l) < 10000 {
			break
		}
		lo = l[len(l)-1].Num + 1
	}
	return c.send(append(out, ".\r\n"...))
}

// lowOf is the low water mark as GROUP reports it.
func lowOf(g Group) uint64 {
	if g.Count == 0 {
		return g.High + 1
	}
	return g.Low
}

// parseRange parses "n", "n-" or "n-m" (RFC 3977 section 1.8).
func parseRange(s string, high uint64) (lo, hi uint64, ok bool) {
	a, b, dash := strings.Cut(s, "-")
	lo, err := strconv.ParseUint(a, 10, 63)
	if err != nil {
		return 0, 0, false
	}
	switch {
	case !dash:
		return lo, lo, true
	case b == "":
		return lo, max(high, lo), true
	}
	hi, err = strconv.ParseUint(b, 10, 63)
	return lo, hi, err == nil
}

func (c *conn) list(args []string) bool {
	kw := "ACTIVE"
	if len(args) > 0 {
		kw = strings.ToUpper(args[0])
	}
	pattern := ""
	if len(args) > 1 {
		pattern = args[1]
		if !validWildmat(pattern) {
			return c.reply("501 Bad wildmat %.40q", pattern)
		}
	}
	if len(args) > 2 {
		return c.reply("501 Syntax: LIST [keyword [wildmat]]")
	}
	var b strings.Builder
	switch kw {
	case "ACTIVE":
		b.WriteString("215 Newsgroups in form \"group high low status\"\r\n")
		for _, g := range c.site.Groups(pattern) {
			fmt.Fprintf(&b, "%s %d %d %s\r\n", g.Name, g.High, lowOf(g), g.Status)
		}
	case "NEWSGROUPS":
		b.WriteString("215 Descriptions in form \"group description\"\r\n")
		for _, g := range c.site.Groups(pattern) {
			fmt.Fprintf(&b, "%s\t%s\r\n", g.Name, overviewField(g.Desc))
		}
	case "ACTIVE.TIMES":
		b.WriteString("215 Group creations in form \"group time who\"\r\n")
		for _, g := range c.site.Groups(pattern) {
			fmt.Fprintf(&b, "%s %d %s\r\n", g.Name, g.Created, "news@"+c.site.PathHost())
		}
	case "OVERVIEW.FMT":
		b.WriteString("215 Order of fields in overview database\r\nSubject:\r\nFrom:\r\nDate:\r\nMessage-ID:\r\nReferences:\r\n:bytes\r\n:lines\r\nXref:full\r\n")
	case "HEADERS":
		b.WriteString("215 Headers and metadata items supported\r\n:\r\n:bytes\r\n:lines\r\n")
	default:
		return c.reply("501 Unknown LIST keyword %.40q", args[0])
	}
	b.WriteString(".\r\n")
	return c.send([]byte(b.String()))
}

// parseDate parses NEWGROUPS/NEWNEWS's "[yy]yymmdd hhmmss [GMT]". Times
// are taken as UTC either way: the server runs in UTC.
func parseDate(args []string) (time.Time, bool) {
	if len(args) < 2 || len(args) > 3 || len(args) == 3 && !strings.EqualFold(args[2], "GMT") {
		return time.Time{}, false
	}
	d, t := args[0], args[1]
	if len(t) != 6 {
		return time.Time{}, false
	}
	switch len(d) {
	case 6:
		// RFC 3977 section 7.3.2: the century closest to now.
		yy, err := strconv.Atoi(d[:2])
		if err != nil {
			return time.Time{}, false
		}
		now := time.Now().UTC().Year()
		y := now/100*100 + yy
		if y > now+50 {
			y -= 100
		} else if y < now-50 {
			y += 100
		}
		d = strconv.Itoa(y) + d[2:]
	case 8:
	default:
		return time.Time{}, false
	}
	tm, err := time.Parse("20060102150405", d+t)
	return tm, err == nil
}

func (c *conn) newgroups(args []string) bool {
	since, ok := parseDate(args)
	if !ok {
		return c.reply("501 Syntax: NEWGROUPS [yy]yymmdd hhmmss [GMT]")
	}
	var b strings.Builder
	b.WriteString("231 List of new newsgroups follows\r\n")
	for _, g := range c.site.Groups("") {
		if g.Created >= since.Unix() {
			fmt.Fprintf(&b, "%s %d %d %s\r\n", g.Name, g.High, lowOf(g), g.Status)
		}
	}
	b.WriteString(".\r\n")
	return c.send([]byte(b.String()))
}

func (c *conn) newnews(args []string) bool {
	if len(args) < 3 || !validWildmat(args[0]) {
		return c.reply("501 Syntax: NEWNEWS wildmat [yy]yymmdd hhmmss [GMT]")
	}
	since, ok := parseDate(args[1:])
	if !ok {
		return c.reply("501 Syntax: NEWNEWS wildmat [yy]yymmdd hhmmss [GMT]")
	}
	out := []byte("230 List of new articles follows\r\n")
	seen := map[string]bool{}
	for _, g := range c.site.Groups(args[0]) {
		// Numbers rise with arrival: walk back from the newest.
		hi := g.High
		for hi > 0 {
			lo := max(lowOf(g), hi-min(hi, 999))
			l, err := c.site.Overview(g.Name, lo, hi, 1000)
			if err != nil {
				return c.reply("403 %v", err)
			}
			done := lo <= lowOf(g)
			for i := len(l) - 1; i >= 0; i-- {
				if l[i].Arrived < since.UnixNano() {
					done = true
					break
				}
				if !seen[l[i].MessageID] {
					seen[l[i].MessageID] = true
					out = append(out, l[i].MessageID...)
					out = append(out, '\r', '\n')
				}
			}
			if done || lo <= 1 {
				break
			}
			hi = lo - 1
		}
	}
	return c.send(append(out, ".\r\n"...))
}

// target resolves ARTICLE/HEAD/BODY/STAT/OVER's argument: a message-id,
// a number in the selected group, or the current article. It replies with
// the error itself and returns ok false when there is none.
func (c *conn) target(args []string) (num uint64, e HistEntry, msgid string, ok, alive bool) {
	if len(args) > 1 {
		return 0, e, "", false, c.reply("501 Too many arguments")
	}
	if len(args) == 1 && strings.HasPrefix(args[0], "<") {
		msgid = args[0]
		if CheckMessageID(msgid) != nil {
			return 0, e, "", false, c.reply("501 Malformed message-id")
		}
		h, found, err := c.site.Lookup(msgid)
		if err != nil {
			return 0, e, "", false, c.reply("403 %v", err)
		}
		if !found {
			return 0, e, "", false, c.reply("430 No article with that message-id")
		}
		return 0, h, msgid, true, true
	}
	if c.group == "" {
		return 0, e, "", false, c.reply("412 No newsgroup selected")
	}
	num = c.current
	if len(args) == 1 {
		n, err := strconv.ParseUint(args[0], 10, 63)
		if err != nil {
			return 0, e, "", false, c.reply("501 Bad article number %.40q", args[0])
		}
		num = n
	} else if num == 0 {
		return 0, e, "", false, c.reply("420 No current article selected")
	}
	o, err := c.site.Entry(c.group, num)
	if err != nil {
		return 0, e, "", false, c.reply("403 %v", err)
	}
	if o == nil {
		if len(args) == 0 {
			return 0, e, "", false, c.reply("420 Current article number is invalid")
		}
		return 0, e, "", false, c.reply("423 No article with that number")
	}
	if len(args) == 1 {
		c.current = num
	}
	return num, HistEntry{Key: o.Key, Arrived: o.Arrived}, o.MessageID, true, true
}

func (c *conn) article(verb string, args []string) bool {
	num, e, msgid, ok, alive := c.target(args)
	if !ok {
		return alive
	}
	code := map[string]int{"ARTICLE": 220, "HEAD": 221, "BODY": 222, "STAT": 223}[verb]
	if verb == "STAT" {
		return c.reply("%d %d %s", code, num, msgid)
	}
	// Articles are stored in wire form: they go out as the spool lends
	// them, with no scan and no copy. (A spool that waits on others, the
	// DHT's, bounds its own waits: the server passes no deadline.)
	sent := true
	err := c.site.ViewArticle(context.Background(), e, func(raw []byte) error {
		part := raw
		if verb != "ARTICLE" {
			head, body := splitArticle(raw)
			part = body
			if verb == "HEAD" {
				part = head
			}
		}
		sent = c.send(fmt.Appendf(nil, "%d %d %s\r\n", code, num, msgid), part, []byte(".\r\n"))
		return nil
	})
	if err != nil {
		c.s.cfg.Log.Warn("article listed but unreadable", "msgid", msgid, "err", err)
		if num != 0 {
			return c.reply("423 Article %d is unreadable: %v", num, err)
		}
		return c.reply("430 Article %s is unreadable: %v", msgid, err)
	}
	return sent
}

// splitArticle splits a stored article into its header lines (each with
// its CRLF) and its body.
func splitArticle(raw []byte) (head, body []byte) {
	if i := bytes.Index(raw, []byte("\r\n\r\n")); i >= 0 {
		return raw[:i+2], raw[i+4:]
	}
	return raw, nil
}

func (c *conn) nextLast(next bool, args []string) bool {
	if len(args) > 0 {
		return c.reply("501 No arguments allowed")
	}
	if c.group == "" {
		return c.reply("412 No newsgroup selected")
	}
	if c.current == 0 {
		return c.reply("420 No current article selected")
	}
	n, err := c.site.Neighbour(c.group, c.current, next)
	if err != nil {
		return c.reply("403 %v", err)
	}
	if n == 0 {
		if next {
			return c.reply("421 No next article in this group")
		}
		return c.reply("422 No previous article in this group")
	}
	o, err := c.site.Entry(c.group, n)
	if err != nil || o == nil {
		return c.reply("403 Article %d vanished", n)
	}
	c.current = n
	return c.reply("223 %d %s", n, o.MessageID)
}

// entries resolves OVER/HDR's argument to overview entries.
func (c *conn) entries(arg string) (l []*Overview, byID, ok, alive bool) {
	if strings.HasPrefix(arg, "<") {
		if CheckMessageID(arg) != nil {
			return nil, true, false, c.reply("501 Malformed message-id")
		}
		h, found, err := c.site.Lookup(arg)
		if err != nil {
			return nil, true, false, c.reply("403 %v", err)
		}
		if !found {
			return nil, true, false, c.reply("430 No article with that message-id")
		}
		// The overview lives per group; rebuild the entry from the article.
		raw, err := c.site.Article(context.Background(), h)
		if err != nil {
			return nil, true, false, c.reply("430 Article %s is unreadable: %v", arg, err)
		}
		a, err := ParseArticle(raw)
		if err != nil {
			return nil, true, false, c.reply("403 Stored article is damaged: %v", err)
		}
		return []*Overview{overviewOf(a, 0, h)}, true, true, true
	}
	if c.group == "" {
		return nil, false, false, c.reply("412 No newsgroup selected")
	}
	g, _ := c.site.Group(c.group)
	lo, hi := c.current, c.current
	if arg != "" {
		var ok bool
		if lo, hi, ok = parseRange(arg, g.High); !ok {
			return nil, false, false, c.reply("501 Bad range %.40q", arg)
		}
	} else if lo == 0 {
		return nil, false, false, c.reply("420 No current article selected")
	}
	l, err := c.site.Overview(c.group, lo, hi, maxOverLines)
	if err != nil {
		return nil, false, false, c.reply("403 %v", err)
	}
	if len(l) == 0 {
		if arg == "" {
			return nil, false, false, c.reply("420 Current article number is invalid")
		}
		return nil, false, false, c.reply("423 No articles in that range")
	}
	return l, false, true, true
}

// maxOverLines bounds one OVER or HDR reply.
const maxOverLines = 1_000_000

func overviewOf(a *Article, num uint64, h HistEntry) *Overview {
	o := &Overview{Num: num, Key: h.Key, Bytes: uint32(len(a.Raw)), Lines: uint32(a.Lines())}
	o.Subject, _ = a.Header("Subject")
	o.From, _ = a.Header("From")
	o.Date, _ = a.Header("Date")
	o.MessageID, _ = a.Header("Message-ID")
	o.References, _ = a.Header("References")
	o.Xref = h.Xref
	return o
}

func appendOverLine(out []byte, o *Overview) []byte {
	out = strconv.AppendUint(out, o.Num, 10)
	for _, f := range []string{o.Subject, o.From, o.Date, o.MessageID, o.References} {
		out = append(out, '\t')
		out = append(out, overviewField(f)...)
	}
	out = append(out, '\t')
	out = strconv.AppendUint(out, uint64(o.Bytes), 10)
	out = append(out, '\t')
	out = strconv.AppendUint(out, uint64(o.Lines), 10)
	out = append(out, "\tXref: "...)
	out = append(out, overviewField(o.Xref)...)
	return append(out, '\r', '\n')
}

func (c *conn) over(args []string) bool {
	if len(args) > 1 {
		return c.reply("501 Syntax: OVER [range|message-id]")
	}
	arg := ""
	if len(args) == 1 {
		arg = args[0]
	}
	l, _, ok, alive := c.entries(arg)
	if !ok {
		return alive
	}
	out := make([]byte, 0, 64+len(l)*200)
	out = append(out, "224 Overview information follows\r\n"...)
	for _, o := range l {
		out = appendOverLine(out, o)
	}
	return c.send(append(out, ".\r\n"...))
}

// overviewHeader returns an overview field by header name, and whether
// the overview has it.
func overviewHeader(o *Overview, name string) (string, bool) {
	switch strings.ToLower(name) {
	case "subject":
		return o.Subject, true
	case "from":
		return o.From, true
	case "date":
		return o.Date, true
	case "message-id":
		return o.MessageID, true
	case "references":
		return o.References, true
	case "xref":
		return o.Xref, true
	case ":bytes", "bytes":
		return strconv.Itoa(int(o.Bytes)), true
	case ":lines", "lines":
		return strconv.Itoa(int(o.Lines)), true
	}
	return "", false
}

// maxHdrFetch bounds the articles HDR reads for a header the overview
// lacks.
const maxHdrFetch = 10000

func (c *conn) hdr(verb string, args []string) bool {
	if len(args) < 1 || len(args) > 2 {
		return c.reply("501 Syntax: %s header [range|message-id]", verb)
	}
	arg := ""
	if len(args) == 2 {
		arg = args[1]
	}
	l, byID, ok, alive := c.entries(arg)
	if !ok {
		return alive
	}
	code := 225
	if verb == "XHDR" {
		code = 221
	}
	if _, known := overviewHeader(l[0], args[0]); !known && len(l) > maxHdrFetch {
		return c.reply("503 %s of a header not in the overview is limited to %d articles", verb, maxHdrFetch)
	}
	out := fmt.Appendf(nil, "%d Headers follow\r\n", code)
	for _, o := range l {
		v, known := overviewHeader(o, args[0])
		if !known {
			raw, err := c.site.Article(context.Background(), HistEntry{Key: o.Key})
			if err == nil {
				if a, err := ParseArticle(raw); err == nil {
					v, _ = a.Header(args[0])
				}
			}
		}
		if byID && verb == "XHDR" {
			out = append(out, o.MessageID...)
		} else {
			out = strconv.AppendUint(out, o.Num, 10)
		}
		out = append(out, ' ')
		out = append(out, overviewField(v)...)
		out = append(out, '\r', '\n')
	}
	return c.send(append(out, ".\r\n"...))
}

// readArticle reads a dot-terminated article after a 340 or 335 reply, or
// after TAKETHIS, into a recycled buffer; the caller hands it back with
// freeArticle once Accept has returned. A client that stalls is dropped by
// the idle deadline.
func (c *conn) readArticle() ([]byte, error) {
	c.nc.SetReadDeadline(time.Now().Add(c.s.cfg.IdleTimeout))
	buf := articleBufs.Get().(*[]byte)
	raw, err := readDotBlock(c.r, (*buf)[:0], c.site.MaxArticle())
	if err != nil {
		articleBufs.Put(buf)
		return nil, err
	}
	return raw, nil
}

// articleBufs recycles the buffers articles arrive in. Allocating one
// per article, grown line by line, cost a feed more than the article's
// SHA-256; the pool empties itself at garbage collections.
var articleBufs = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

// freeArticle returns an article's buffer, which nothing may use after.
func freeArticle(raw []byte) {
	raw = raw[:0]
	articleBufs.Put(&raw)
}

// accept stores an article read by readArticle and hands its buffer back.
// A streamed one (TAKETHIS) is answered once durable, before it is listed.
func (c *conn) accept(raw []byte, offered string, posted, streamed bool) (string, error) {
	defer freeArticle(raw)
	if streamed {
		return c.site.AcceptStreamed(context.Background(), raw, offered)
	}
	return c.site.Accept(context.Background(), raw, offered, posted)
}

func (c *conn) post(args []string) bool {
	if len(args) > 0 {
		return c.reply("501 POST takes no arguments")
	}
	if !c.reply("340 Send article to be posted") {
		return false
	}
	raw, err := c.readArticle()
	if errors.Is(err, ErrArticleTooLarge) {
		return c.reply("441 Article larger than %d bytes", c.site.MaxArticle())
	}
	if err != nil {
		return false // the client went away mid-article: nothing is stored
	}
	msgid, err := c.accept(raw, "", true, false)
	if err != nil {
		return c.reply("441 Posting failed: %v", err)
	}
	return c.reply("240 Article received %s", msgid)
}

func (c *conn) ihave(args []string) bool {
	if len(args) != 1 || CheckMessageID(args[0]) != nil {
		return c.reply("501 Syntax: IHAVE message-id")
	}
	seen, err := c.site.Seen(args[0])
	switch {
	case err != nil:
		return c.reply("436 Cannot check history: %v", err)
	case seen:
		return c.reply("435 Duplicate")
	}
	if !c.reply("335 Send it") {
		return false
	}
	raw, err := c.readArticle()
	if errors.Is(err, ErrArticleTooLarge) {
		return c.reply("437 Article larger than %d bytes", c.site.MaxArticle())
	}
	if err != nil {
		return false
	}
	_, err = c.accept(raw, args[0], false, false)
	switch code, text := feedResult(err); code {
	case 239:
		return c.reply("235 Article transferred OK")
	case 431:
		return c.reply("436 %s", text)
	default:
		return c.reply("437 %s", text)
	}
}

// feedResult maps Accept's result to a streaming code: 239 stored, 431
// try later, 439 refused for good.
func feedResult(err error) (int, string) {
	switch {
	case err == nil:
		return 239, "OK"
	case errors.Is(err, ErrDeferred), errors.Is(err, ErrSiteClosed):
		return 431, "Try later: " + err.Error()
	case errors.Is(err, ErrDuplicate):
		return 439, "Duplicate"
	case errors.Is(err, ErrBadArticle), errors.Is(err, ErrNoGroups), errors.Is(err, ErrNoPosting), errors.Is(err, ErrUnapproved):
		return 439, "Refused: " + err.Error()
	}
	return 431, "Try later: " + err.Error()
}

func (c *conn) check(args []string) bool {
	if len(args) != 1 || CheckMessageID(args[0]) != nil {
		return c.reply("501 Syntax: CHECK message-id")
	}
	seen, err := c.site.Seen(args[0])
	switch {
	case err != nil:
		return c.reply("431 %s", args[0])
	case seen:
		return c.reply("438 %s", args[0])
	}
	return c.reply("238 %s", args[0])
}

// takethis reads the article, then stores it on a stream worker: up to
// Streams articles of one connection are stored at once, their replies
// written in order.
func (c *conn) takethis(args []string) bool {
	if len(args) != 1 {
		// The article follows anyway; read it to stay in step.
		raw, err := c.readArticle()
		if err != nil && !errors.Is(err, ErrArticleTooLarge) {
			return false
		}
		if err == nil {
			freeArticle(raw)
		}
		return c.reply("501 Syntax: TAKETHIS message-id")
	}
	msgid := args[0]
	raw, err := c.readArticle()
	if errors.Is(err, ErrArticleTooLarge) {
		return c.reply("439 %s Article larger than %d bytes", msgid, c.site.MaxArticle())
	}
	if err != nil {
		return false
	}
	if CheckMessageID(msgid) != nil {
		freeArticle(raw)
		return c.reply("439 %.80s Malformed message-id", msgid)
	}
	n := c.seq.take()
	c.stream(func() {
		_, err := c.accept(raw, msgid, false, true)
		code, text := feedResult(err)
		if code == 431 {
			// TAKETHIS has no "try later": 400 makes the feeder requeue
			// what is unanswered and reconnect.
			c.s.cfg.Log.Warn("closing a feed: spool busy", "peer", c.addr, "err", err)
			c.seq.write(n, fmt.Appendf(nil, "400 %s\r\n", text))
			c.nc.Close()
			return
		}
		if code == 439 {
			c.seq.write(n, fmt.Appendf(nil, "439 %s %s\r\n", msgid, text))
			return
		}
		c.seq.write(n, fmt.Appendf(nil, "239 %s\r\n", msgid))
	})
	return true
}
