package nntpd

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

	"triad/internal/fault"
	"triad/internal/id"
	"triad/internal/nntp"
	"triad/internal/usenet"
)

// command runs one command line; false ends the connection.
func (c *conn) command(line string) bool {
	if strings.IndexByte(line, 0) >= 0 || !utf8.ValidString(line) {
		return c.reply(nntp.CodeSyntaxError, "Command line must be UTF-8 without NUL")
	}
	f := strings.Fields(line)
	if len(f) == 0 {
		return c.reply(nntp.CodeUnknownCommand, "Empty command")
	}
	verb, args := strings.ToUpper(f[0]), f[1:]
	need, ok := perms[verb]
	if !ok {
		need, ok = adminPerms[verb]
	}
	if ok && need != 0 && c.perm&need == 0 {
		if c.s.cfg.Users != nil && !c.authed {
			return c.reply(nntp.CodeAuthRequired, "Authentication required")
		}
		return c.reply(nntp.CodeAccessDenied, "Permission denied")
	}
	switch verb {
	case "CAPABILITIES":
		return c.capabilities()
	case "MODE":
		return c.mode(args)
	case "QUIT":
		c.reply(nntp.CodeClosing, "Bye")
		return false
	case "DATE":
		return c.reply(nntp.CodeDate, "%s", time.Now().UTC().Format("20060102150405"))
	case "HELP":
		return c.send(statusLine(nntp.CodeHelpFollows, "Legal commands"), helpBlock)
	case "AUTHINFO":
		return c.authinfo(args)
	case "GROUP":
		return c.groupCmd(args, false)
	case "LISTGROUP":
		return c.groupCmd(args, true)
	case "LIST":
		return c.listCmd(args)
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
	case "TAKEDHT":
		return c.takedht(args)
	case "TAKETHIS":
		return c.takethis(args)
	}
	if keep, ok := c.admin(verb, args); ok {
		return keep
	}
	return c.reply(nntp.CodeUnknownCommand, "Unknown command %.40q", f[0])
}

// perms is what each command needs.
var perms = map[string]Perm{
	"GROUP": PermRead, "LISTGROUP": PermRead, "LIST": PermRead, "NEWGROUPS": PermRead,
	"NEWNEWS": PermRead, "ARTICLE": PermRead, "HEAD": PermRead, "BODY": PermRead,
	"STAT": PermRead, "NEXT": PermRead, "LAST": PermRead, "OVER": PermRead,
	"XOVER": PermRead, "HDR": PermRead, "XHDR": PermRead, "POST": PermPost,
	"IHAVE": PermFeed, "CHECK": PermFeed, "TAKETHIS": PermFeed,
}

// helpBlock is HELP's text as a block on the wire: CRLF lines (RFC 3977
// section 3.1.1; the raw string below has bare LFs) and the final dot.
var helpBlock = []byte(strings.ReplaceAll(helpText, "\n", "\r\n") + ".\r\n")

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
  TAKEDHT message-id (peer sites of the ring: headers and X-ChordID only)
  TAKETHIS message-id
  XHDR header [range|message-id]
  XOVER [range]
`

func (c *conn) capabilities() bool {
	var b strings.Builder
	b.Write(statusLine(nntp.CodeCapabilitiesFollow, "Capability list:"))
	b.WriteString("VERSION 2\r\nIMPLEMENTATION triad\r\n")
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
		return c.reply(nntp.CodeSyntaxError, "Syntax: MODE READER|STREAM")
	}
	switch strings.ToUpper(args[0]) {
	case "READER":
		if c.perm&PermPost != 0 {
			return c.reply(nntp.CodePostingAllowed, "Posting allowed")
		}
		return c.reply(nntp.CodePostingProhibited, "Posting prohibited")
	case "STREAM":
		if c.perm&PermFeed == 0 {
			return c.reply(nntp.CodeAccessDenied, "Feeding not allowed")
		}
		return c.reply(nntp.CodeStreamingPermitted, "Streaming permitted")
	}
	return c.reply(nntp.CodeSyntaxError, "Unknown MODE %.40q", args[0])
}

func (c *conn) authinfo(args []string) bool {
	if len(args) < 2 {
		return c.reply(nntp.CodeSyntaxError, "Syntax: AUTHINFO USER name|PASS password")
	}
	if c.s.cfg.Users == nil {
		return c.reply(nntp.CodeFeatureNotSupported, "No users configured")
	}
	if c.authed {
		return c.reply(nntp.CodeAccessDenied, "Already authenticated")
	}
	switch strings.ToUpper(args[0]) {
	case "USER":
		c.user = args[1]
		return c.reply(nntp.CodePasswordRequired, "Password required")
	case "PASS":
		if c.user == "" {
			return c.reply(nntp.CodeAuthOutOfSequence, "AUTHINFO USER first")
		}
		// The password is the rest of the line (it may hold spaces), but
		// Fields already split it; rejoin with single spaces.
		perm, ok := c.s.cfg.Users.Check(c.user, strings.Join(args[1:], " "))
		if !ok {
			c.user = ""
			time.Sleep(100 * time.Millisecond) // slows password guessing
			return c.reply(nntp.CodeAuthFailed, "Authentication failed")
		}
		c.authed = true
		c.perm |= perm
		return c.reply(nntp.CodeAuthAccepted, "Authentication accepted")
	}
	return c.reply(nntp.CodeSyntaxError, "Syntax: AUTHINFO USER name|PASS password")
}

func (c *conn) groupCmd(args []string, list bool) bool {
	if len(args) > 2 || !list && len(args) != 1 {
		return c.reply(nntp.CodeSyntaxError, "Syntax: GROUP newsgroup | LISTGROUP [newsgroup [range]]")
	}
	name := c.group
	if len(args) > 0 {
		name = args[0]
	}
	if name == "" {
		return c.reply(nntp.CodeNoGroupSelected, "No newsgroup selected")
	}
	g, ok := c.list.Group(name)
	if !ok {
		return c.reply(nntp.CodeNoSuchGroup, "No such newsgroup %.80s", name)
	}
	c.group = g.Name
	c.current = 0
	if g.Count > 0 {
		c.current = g.Low
	}
	if !list {
		return c.reply(nntp.CodeGroupSelected, "%d %d %d %s", g.Count, lowOf(g), g.High, g.Name)
	}
	lo, hi := lowOf(g), g.High
	if len(args) == 2 {
		var ok bool
		if lo, hi, ok = parseRange(args[1], g.High); !ok {
			return c.reply(nntp.CodeSyntaxError, "Bad range %.40q", args[1])
		}
	}
	out := statusLine(nntp.CodeGroupSelected, "%d %d %d %s list follows", g.Count, lowOf(g), g.High, g.Name)
	for lo <= hi && hi > 0 {
		l, err := c.list.Overview(g.Name, lo, hi, 10000)
		if err != nil {
			return c.reply(nntp.CodeInternalFault, "%v", err)
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
func lowOf(g usenet.Group) uint64 {
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

func (c *conn) listCmd(args []string) bool {
	kw := "ACTIVE"
	if len(args) > 0 {
		kw = strings.ToUpper(args[0])
	}
	pattern := ""
	if len(args) > 1 {
		pattern = args[1]
		if !usenet.ValidWildmat(pattern) {
			return c.reply(nntp.CodeSyntaxError, "Bad wildmat %.40q", pattern)
		}
	}
	if len(args) > 2 {
		return c.reply(nntp.CodeSyntaxError, "Syntax: LIST [keyword [wildmat]]")
	}
	var b strings.Builder
	switch kw {
	case "ACTIVE":
		b.Write(statusLine(nntp.CodeListFollows, "Newsgroups in form \"group high low status\""))
		for _, g := range c.list.Groups(pattern) {
			fmt.Fprintf(&b, "%s %d %d %s\r\n", g.Name, g.High, lowOf(g), g.Status)
		}
	case "NEWSGROUPS":
		b.Write(statusLine(nntp.CodeListFollows, "Descriptions in form \"group description\""))
		for _, g := range c.list.Groups(pattern) {
			fmt.Fprintf(&b, "%s\t%s\r\n", g.Name, usenet.OverviewField(g.Desc))
		}
	case "ACTIVE.TIMES":
		b.Write(statusLine(nntp.CodeListFollows, "Group creations in form \"group time who\""))
		for _, g := range c.list.Groups(pattern) {
			fmt.Fprintf(&b, "%s %d %s\r\n", g.Name, g.Created, "news@"+c.site.PathHost())
		}
	case "OVERVIEW.FMT":
		b.Write(statusLine(nntp.CodeListFollows, "Order of fields in overview database"))
		b.WriteString("Subject:\r\nFrom:\r\nDate:\r\nMessage-ID:\r\nReferences:\r\n:bytes\r\n:lines\r\nXref:full\r\n")
	case "HEADERS":
		b.Write(statusLine(nntp.CodeListFollows, "Headers and metadata items supported"))
		b.WriteString(":\r\n:bytes\r\n:lines\r\n")
	default:
		return c.reply(nntp.CodeSyntaxError, "Unknown LIST keyword %.40q", args[0])
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
		return c.reply(nntp.CodeSyntaxError, "Syntax: NEWGROUPS [yy]yymmdd hhmmss [GMT]")
	}
	var b strings.Builder
	b.Write(statusLine(nntp.CodeNewGroupsFollow, "List of new newsgroups follows"))
	for _, g := range c.list.Groups("") {
		if g.Created >= since.Unix() {
			fmt.Fprintf(&b, "%s %d %d %s\r\n", g.Name, g.High, lowOf(g), g.Status)
		}
	}
	b.WriteString(".\r\n")
	return c.send([]byte(b.String()))
}

func (c *conn) newnews(args []string) bool {
	if len(args) < 3 || !usenet.ValidWildmat(args[0]) {
		return c.reply(nntp.CodeSyntaxError, "Syntax: NEWNEWS wildmat [yy]yymmdd hhmmss [GMT]")
	}
	since, ok := parseDate(args[1:])
	if !ok {
		return c.reply(nntp.CodeSyntaxError, "Syntax: NEWNEWS wildmat [yy]yymmdd hhmmss [GMT]")
	}
	out := statusLine(nntp.CodeNewArticlesFollow, "List of new articles follows")
	seen := map[string]bool{}
	for _, g := range c.list.Groups(args[0]) {
		// Numbers rise with arrival: walk back from the newest.
		hi := g.High
		for hi > 0 {
			lo := max(lowOf(g), hi-min(hi, 999))
			l, err := c.list.Overview(g.Name, lo, hi, 1000)
			if err != nil {
				return c.reply(nntp.CodeInternalFault, "%v", err)
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
func (c *conn) target(args []string) (num uint64, e usenet.HistEntry, msgid string, ok, alive bool) {
	if len(args) > 1 {
		return 0, e, "", false, c.reply(nntp.CodeSyntaxError, "Too many arguments")
	}
	if len(args) == 1 && strings.HasPrefix(args[0], "<") {
		msgid = args[0]
		if usenet.CheckMessageID(msgid) != nil {
			return 0, e, "", false, c.reply(nntp.CodeSyntaxError, "Malformed message-id")
		}
		h, found, err := c.list.Lookup(msgid)
		if err != nil {
			return 0, e, "", false, c.reply(nntp.CodeInternalFault, "%v", err)
		}
		if !found {
			return 0, e, "", false, c.reply(nntp.CodeNoArticleID, "No article with that message-id")
		}
		return 0, h, msgid, true, true
	}
	if !c.inGroup() {
		return 0, e, "", false, c.reply(nntp.CodeNoGroupSelected, "No newsgroup selected")
	}
	num = c.current
	if len(args) == 1 {
		n, err := strconv.ParseUint(args[0], 10, 63)
		if err != nil {
			return 0, e, "", false, c.reply(nntp.CodeSyntaxError, "Bad article number %.40q", args[0])
		}
		num = n
	} else if num == 0 {
		return 0, e, "", false, c.reply(nntp.CodeNoCurrentArticle, "No current article selected")
	}
	o, err := c.list.Numbered(c.group, num)
	if err != nil {
		return 0, e, "", false, c.reply(nntp.CodeInternalFault, "%v", err)
	}
	if o == nil {
		if len(args) == 0 {
			return 0, e, "", false, c.reply(nntp.CodeNoCurrentArticle, "Current article number is invalid")
		}
		return 0, e, "", false, c.reply(nntp.CodeNoArticleNumber, "No article with that number")
	}
	if len(args) == 1 {
		c.current = num
	}
	return num, usenet.HistEntry{Key: o.Key, Arrived: o.Arrived}, o.MessageID, true, true
}

func (c *conn) article(verb string, args []string) bool {
	num, e, msgid, ok, alive := c.target(args)
	if !ok {
		return alive
	}
	code := map[string]nntp.Code{"ARTICLE": nntp.CodeArticleFollows, "HEAD": nntp.CodeHeadFollows, "BODY": nntp.CodeBodyFollows, "STAT": nntp.CodeArticleExists}[verb]
	if verb == "STAT" {
		return c.reply(code, "%d %s", num, msgid)
	}
	// Articles are stored in wire form: they go out as the spool lends
	// them, with no scan and no copy. (A spool that waits on others, the
	// DHT's, bounds its own waits: the server passes no deadline.)
	sent := true
	err := c.site.ViewArticle(context.Background(), e, func(head, body []byte) error {
		status := statusLine(code, "%d %s", num, msgid)
		switch verb {
		case "ARTICLE":
			sent = c.send(status, head, body, []byte(".\r\n"))
		case "HEAD":
			sent = c.send(status, headerLines(head), []byte(".\r\n"))
		default:
			sent = c.send(status, body, []byte(".\r\n"))
		}
		return nil
	})
	if err == nil && num != 0 {
		c.readAhead(num)
	}
	if err != nil {
		c.s.cfg.Log.Warn("article listed but unreadable", "msgid", msgid, "err", err)
		if num != 0 {
			return c.reply(nntp.CodeNoArticleNumber, "Article %d is unreadable: %v", num, err)
		}
		return c.reply(nntp.CodeNoArticleID, "Article %s is unreadable: %v", msgid, err)
	}
	return sent
}

// readAhead notes that article num of the group was read. The second in
// a row in order (num right after the last one read) has the site fetch
// the next ReadAhead articles into its cache, those not asked for
// already, so that a reader going through a group finds each one fetched
// or on its way.
func (c *conn) readAhead(num uint64) {
	n := uint64(c.s.cfg.ReadAhead)
	if c.readGroup != c.group {
		c.readGroup, c.lastRead, c.aheadTo = c.group, 0, 0
	}
	inOrder := c.lastRead != 0 && num == c.lastRead+1
	c.lastRead = num
	if n == 0 || !inOrder {
		return
	}
	from := max(num+1, c.aheadTo+1)
	var keys []id.ID
	for k := from; k <= num+n; k++ {
		o, err := c.list.Numbered(c.group, k)
		if err != nil || o == nil {
			break // past the group's end, or a gap: the next read asks again
		}
		keys = append(keys, o.Key)
		c.aheadTo = k
	}
	if len(keys) > 0 {
		c.site.Prefetch(keys)
	}
}

// headerLines is a head as HEAD sends it: the header lines, each with its
// CRLF, without the empty line that ends them.
func headerLines(head []byte) []byte {
	if bytes.HasSuffix(head, []byte("\r\n\r\n")) {
		return head[:len(head)-2]
	}
	return head
}

// inGroup reports whether a group is selected, and still carried: one the
// operator removed since (XRMGROUP) is selected no more.
func (c *conn) inGroup() bool {
	if c.group != "" && c.list.Removed(c.group) {
		c.group, c.current = "", 0
	}
	return c.group != ""
}

func (c *conn) nextLast(next bool, args []string) bool {
	if len(args) > 0 {
		return c.reply(nntp.CodeSyntaxError, "No arguments allowed")
	}
	if !c.inGroup() {
		return c.reply(nntp.CodeNoGroupSelected, "No newsgroup selected")
	}
	if c.current == 0 {
		return c.reply(nntp.CodeNoCurrentArticle, "No current article selected")
	}
	n, err := c.list.Neighbour(c.group, c.current, next)
	if err != nil {
		return c.reply(nntp.CodeInternalFault, "%v", err)
	}
	if n == 0 {
		if next {
			return c.reply(nntp.CodeNoNextArticle, "No next article in this group")
		}
		return c.reply(nntp.CodeNoPrevArticle, "No previous article in this group")
	}
	o, err := c.list.Numbered(c.group, n)
	if err != nil || o == nil {
		return c.reply(nntp.CodeInternalFault, "Article %d vanished", n)
	}
	c.current = n
	return c.reply(nntp.CodeArticleExists, "%d %s", n, o.MessageID)
}

// overRange is what OVER or HDR covers: one entry found by message-id, or
// the entries numbered lo to hi in the selected group, read a page at a
// time so that a reply of any length holds one page in memory.
type overRange struct {
	byID   bool
	lo, hi uint64
	first  []*usenet.Overview // the first page (the one entry, by message-id)
}

// overPage is the overview entries read and written at a time.
const overPage = 1000

// entries resolves OVER/HDR's argument and reads its first page of page
// entries; ok is false when it replied with an error instead.
func (c *conn) entries(arg string, page int) (r overRange, ok, alive bool) {
	if strings.HasPrefix(arg, "<") {
		if usenet.CheckMessageID(arg) != nil {
			return r, false, c.reply(nntp.CodeSyntaxError, "Malformed message-id")
		}
		h, found, err := c.list.Lookup(arg)
		if err != nil {
			return r, false, c.reply(nntp.CodeInternalFault, "%v", err)
		}
		if !found {
			return r, false, c.reply(nntp.CodeNoArticleID, "No article with that message-id")
		}
		// The overview lives per group; rebuild the entry from the article.
		raw, err := c.site.Article(context.Background(), h)
		if err != nil {
			return r, false, c.reply(nntp.CodeNoArticleID, "Article %s is unreadable: %v", arg, err)
		}
		a, err := usenet.ParseArticle(raw)
		if err != nil {
			return r, false, c.reply(nntp.CodeInternalFault, "Stored article is damaged: %v", err)
		}
		return overRange{byID: true, first: []*usenet.Overview{overviewOf(a, 0, h)}}, true, true
	}
	if !c.inGroup() {
		return r, false, c.reply(nntp.CodeNoGroupSelected, "No newsgroup selected")
	}
	g, _ := c.list.Group(c.group)
	lo, hi := c.current, c.current
	if arg != "" {
		var ok bool
		if lo, hi, ok = parseRange(arg, g.High); !ok {
			return r, false, c.reply(nntp.CodeSyntaxError, "Bad range %.40q", arg)
		}
	} else if lo == 0 {
		return r, false, c.reply(nntp.CodeNoCurrentArticle, "No current article selected")
	}
	l, err := c.list.Overview(c.group, lo, hi, page)
	if err != nil {
		return r, false, c.reply(nntp.CodeInternalFault, "%v", err)
	}
	if len(l) == 0 {
		if arg == "" {
			return r, false, c.reply(nntp.CodeNoCurrentArticle, "Current article number is invalid")
		}
		return r, false, c.reply(nntp.CodeNoArticleNumber, "No articles in that range")
	}
	return overRange{lo: lo, hi: hi, first: l}, true, true
}

// each calls fn for every entry of r, a page at a time, up to
// maxOverLines or until fn returns false. A page that cannot be read ends
// the walk with its error.
func (c *conn) each(r overRange, page int, fn func(*usenet.Overview) bool) error {
	l, n := r.first, 0
	for {
		for _, o := range l {
			if n == maxOverLines || !fn(o) {
				return nil
			}
			n++
		}
		if r.byID || len(l) < page || l[len(l)-1].Num >= r.hi {
			return nil
		}
		var err error
		if l, err = c.list.Overview(c.group, l[len(l)-1].Num+1, r.hi, page); err != nil {
			return err
		}
	}
}

// streamLines sends a multi-line reply: the status line, then what add
// appends for each entry of r, in chunks of about 64 KiB, then the
// terminating dot. A page that cannot be read mid-reply closes the
// connection, so that the client never takes a cut list for a whole one.
func (c *conn) streamLines(status []byte, r overRange, page int, add func([]byte, *usenet.Overview) []byte) bool {
	return c.sendStream(func(put func([]byte) bool) {
		out := append(make([]byte, 0, 72<<10), status...)
		err := c.each(r, page, func(o *usenet.Overview) bool {
			if out = add(out, o); len(out) < 64<<10 {
				return true
			}
			ok := put(out)
			out = out[:0]
			return ok
		})
		if err != nil {
			c.s.cfg.Log.Error("overview unreadable mid-reply; closing the connection", "group", c.group, "err", err)
			c.nc.Close()
			return
		}
		put(append(out, ".\r\n"...))
	})
}

// maxOverLines bounds one OVER or HDR reply.
const maxOverLines = 1_000_000

func overviewOf(a *usenet.Article, num uint64, h usenet.HistEntry) *usenet.Overview {
	o := &usenet.Overview{Num: num, Key: h.Key, Bytes: uint32(len(a.Raw)), Lines: uint32(a.Lines())}
	o.Subject, _ = a.Header("Subject")
	o.From, _ = a.Header("From")
	o.Date, _ = a.Header("Date")
	o.MessageID, _ = a.Header("Message-ID")
	o.References, _ = a.Header("References")
	o.Xref = h.Xref
	return o
}

func appendOverLine(out []byte, o *usenet.Overview) []byte {
	out = strconv.AppendUint(out, o.Num, 10)
	for _, f := range []string{o.Subject, o.From, o.Date, o.MessageID, o.References} {
		out = append(out, '\t')
		out = append(out, usenet.OverviewField(f)...)
	}
	out = append(out, '\t')
	out = strconv.AppendUint(out, uint64(o.Bytes), 10)
	out = append(out, '\t')
	out = strconv.AppendUint(out, uint64(o.Lines), 10)
	out = append(out, "\tXref: "...)
	out = append(out, usenet.OverviewField(o.Xref)...)
	return append(out, '\r', '\n')
}

func (c *conn) over(args []string) bool {
	if len(args) > 1 {
		return c.reply(nntp.CodeSyntaxError, "Syntax: OVER [range|message-id]")
	}
	arg := ""
	if len(args) == 1 {
		arg = args[0]
	}
	r, ok, alive := c.entries(arg, overPage)
	if !ok {
		return alive
	}
	return c.streamLines(statusLine(nntp.CodeOverviewFollows, "Overview information follows"), r, overPage, appendOverLine)
}

// overviewHeader returns an overview field by header name, and whether
// the overview has it.
func overviewHeader(o *usenet.Overview, name string) (string, bool) {
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
		return c.reply(nntp.CodeSyntaxError, "Syntax: %s header [range|message-id]", verb)
	}
	arg := ""
	if len(args) == 2 {
		arg = args[1]
	}
	// A header the overview lacks is read from each article: the range
	// must fit one page of maxHdrFetch.
	_, known := overviewHeader(&usenet.Overview{}, args[0])
	page := overPage
	if !known {
		page = maxHdrFetch + 1
	}
	r, ok, alive := c.entries(arg, page)
	if !ok {
		return alive
	}
	if !known && len(r.first) > maxHdrFetch {
		return c.reply(nntp.CodeFeatureNotSupported, "%s of a header not in the overview is limited to %d articles", verb, maxHdrFetch)
	}
	code := nntp.CodeHeadersFollow
	if verb == "XHDR" {
		code = nntp.CodeHeadFollows // XHDR predates HDR and answers so
	}
	return c.streamLines(statusLine(code, "Headers follow"), r, page, func(out []byte, o *usenet.Overview) []byte {
		v, _ := overviewHeader(o, args[0])
		if !known {
			raw, err := c.site.Article(context.Background(), usenet.HistEntry{Key: o.Key})
			if err == nil {
				if a, err := usenet.ParseArticle(raw); err == nil {
					v, _ = a.Header(args[0])
				}
			}
		}
		if r.byID && verb == "XHDR" {
			out = append(out, o.MessageID...)
		} else {
			out = strconv.AppendUint(out, o.Num, 10)
		}
		out = append(out, ' ')
		out = append(out, usenet.OverviewField(v)...)
		return append(out, '\r', '\n')
	})
}

// readArticle reads a dot-terminated article after a 340 or 335 reply, or
// after TAKETHIS, into a recycled buffer; the caller hands it back with
// freeArticle once Accept has returned. A client that stalls is dropped by
// the idle deadline.
func (c *conn) readArticle() ([]byte, error) { return c.readBlock(c.site.MaxArticle()) }

// readBlock is readArticle with a limit of its own.
func (c *conn) readBlock(limit int) ([]byte, error) {
	c.nc.SetReadDeadline(time.Now().Add(c.s.cfg.IdleTimeout))
	buf := articleBufs.Get().(*[]byte)
	c.growReader()
	raw, err := nntp.ReadArticle(c.r, (*buf)[:0], limit)
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

// accept stores and lists an article read by readArticle and hands its
// buffer back. A failure that is not the article's fault (the spool's or
// the listing's) is logged: the client is told to try later.
func (c *conn) accept(raw []byte, offered string, posted bool) (string, error) {
	defer freeArticle(raw)
	msgid, err := c.site.Accept(context.Background(), raw, offered, posted)
	if code, _ := feedResult(err); code == nntp.CodeCheckLater {
		c.s.cfg.Log.Warn("article not taken", "peer", c.addr, "msgid", msgid, "err", err)
	}
	return msgid, err
}

func (c *conn) post(args []string) bool {
	if len(args) > 0 {
		return c.reply(nntp.CodeSyntaxError, "POST takes no arguments")
	}
	if !c.reply(nntp.CodeSendPost, "Send article to be posted") {
		return false
	}
	raw, err := c.readArticle()
	if errors.Is(err, nntp.ErrArticleTooLarge) {
		return c.reply(nntp.CodePostingFailed, "Article larger than %d bytes", c.site.MaxArticle())
	}
	if err != nil {
		return false // the client went away mid-article: nothing is stored
	}
	msgid, err := c.accept(raw, "", true)
	if err != nil {
		return c.reply(nntp.CodePostingFailed, "Posting failed: %v", err)
	}
	return c.reply(nntp.CodePosted, "Article received %s", msgid)
}

func (c *conn) ihave(args []string) bool {
	if len(args) != 1 || usenet.CheckMessageID(args[0]) != nil {
		return c.reply(nntp.CodeSyntaxError, "Syntax: IHAVE message-id")
	}
	seen, err := c.site.Seen(args[0])
	switch {
	case err != nil:
		return c.reply(nntp.CodeTransferLater, "Cannot check history: %v", err)
	case seen:
		return c.reply(nntp.CodeNotWanted, "Duplicate")
	}
	if !c.reply(nntp.CodeSendTransfer, "Send it") {
		return false
	}
	raw, err := c.readArticle()
	if errors.Is(err, nntp.ErrArticleTooLarge) {
		return c.reply(nntp.CodeTransferRejected, "Article larger than %d bytes", c.site.MaxArticle())
	}
	if err != nil {
		return false
	}
	_, err = c.accept(raw, args[0], false)
	switch code, text := feedResult(err); code {
	case nntp.CodeTakeThisOK:
		return c.reply(nntp.CodeTransferred, "Article transferred OK")
	case nntp.CodeCheckLater:
		return c.reply(nntp.CodeTransferLater, "%s", text)
	default:
		return c.reply(nntp.CodeTransferRejected, "%s", text)
	}
}

// feedResult maps Accept's result to a streaming code: 239 stored, 431
// try later, 439 refused for good. Only a failure marked fault.ErrBusy
// (deferred, or a site that is closing) is temporary; any other is a
// refusal, so that a new kind of refusal is never retried for ever by the
// sender.
func feedResult(err error) (nntp.Code, string) {
	switch {
	case err == nil:
		return nntp.CodeTakeThisOK, "OK"
	case errors.Is(err, fault.ErrBusy):
		return nntp.CodeCheckLater, "Try later: " + err.Error()
	case errors.Is(err, usenet.ErrDuplicate):
		return nntp.CodeTakeThisRejected, "Duplicate"
	}
	return nntp.CodeTakeThisRejected, "Refused: " + err.Error()
}

func (c *conn) check(args []string) bool {
	if len(args) != 1 || usenet.CheckMessageID(args[0]) != nil {
		return c.replySoon(nntp.CodeSyntaxError, "Syntax: CHECK message-id")
	}
	seen, err := c.site.Seen(args[0])
	switch {
	case err != nil:
		return c.replySoon(nntp.CodeCheckLater, "%s", args[0])
	case seen:
		return c.replySoon(nntp.CodeCheckNotWanted, "%s", args[0])
	}
	return c.replySoon(nntp.CodeCheckSend, "%s", args[0])
}

// takethis reads the article, then stores it on a stream worker: up to
// Streams articles of one connection are stored at once, their replies
// written in order.
func (c *conn) takethis(args []string) bool {
	if len(args) != 1 {
		// The article follows anyway; read it to stay in step.
		raw, err := c.readArticle()
		if err != nil && !errors.Is(err, nntp.ErrArticleTooLarge) {
			return false
		}
		if err == nil {
			freeArticle(raw)
		}
		return c.reply(nntp.CodeSyntaxError, "Syntax: TAKETHIS message-id")
	}
	msgid := args[0]
	raw, err := c.readArticle()
	if errors.Is(err, nntp.ErrArticleTooLarge) {
		return c.reply(nntp.CodeTakeThisRejected, "%s Article larger than %d bytes", msgid, c.site.MaxArticle())
	}
	if err != nil {
		return false
	}
	if usenet.CheckMessageID(msgid) != nil {
		freeArticle(raw)
		return c.reply(nntp.CodeTakeThisRejected, "%.80s Malformed message-id", msgid)
	}
	n := c.seq.take()
	c.stream(func() {
		_, err := c.accept(raw, msgid, false)
		code, text := feedResult(err)
		if code == nntp.CodeCheckLater {
			// TAKETHIS has no "try later" (RFC 4644 gives it 239 and
			// 439, and 439 means never again): 400 closes the feed, and
			// innfeed defers every article left unanswered and offers
			// them again when it reconnects.
			c.s.cfg.Log.Warn("closing a feed: article not taken", "peer", c.addr, "err", err)
			c.seq.write(n, statusLine(nntp.CodeUnavailable, "%s", text))
			c.nc.Close()
			return
		}
		if code == nntp.CodeTakeThisRejected {
			c.seq.write(n, statusLine(nntp.CodeTakeThisRejected, "%s %s", msgid, text))
			return
		}
		c.seq.write(n, statusLine(nntp.CodeTakeThisOK, "%s", msgid))
	})
	return true
}

// takedht reads an announcement (announce.go) and lists it on a stream
// worker, as takethis stores an article. Only a peer site, identified by
// the name it logged in with, may announce.
func (c *conn) takedht(args []string) bool {
	head, err := c.readBlock(usenet.MaxAnnouncement)
	if err != nil && !errors.Is(err, nntp.ErrArticleTooLarge) {
		return false
	}
	msgid := ""
	if len(args) == 1 {
		msgid = args[0]
	}
	refuse := func(code nntp.Code, format string, a ...any) bool {
		if err == nil {
			freeArticle(head)
		}
		return c.reply(code, format, a...)
	}
	switch {
	case c.perm&PermAnnounce == 0 && !c.authed:
		return refuse(nntp.CodeAuthRequired, "Only configured peer sites may announce: authenticate first")
	case c.perm&PermAnnounce == 0:
		return refuse(nntp.CodeAccessDenied, "%.80s is not a peer site of this one: announcement refused", c.user)
	case len(args) != 1:
		return refuse(nntp.CodeSyntaxError, "Syntax: TAKEDHT message-id")
	case err != nil:
		return c.reply(nntp.CodeTakeThisRejected, "%.80s Announcement larger than %d bytes", msgid, usenet.MaxAnnouncement)
	case usenet.CheckMessageID(msgid) != nil:
		return refuse(nntp.CodeTakeThisRejected, "%.80s Malformed message-id", msgid)
	}
	// An exact copy waits for the announcer; the recycled buffer (which
	// may have grown to an article's size) goes back at once.
	j := annJob{n: c.seq.take(), head: bytes.Clone(head), msgid: msgid}
	freeArticle(head)
	c.announce(j)
	return true
}

// annJob is a TAKEDHT waiting to be listed, with its reply's turn.
type annJob struct {
	n     uint64
	head  []byte
	msgid string
}

// maxAnnBatch bounds the announcements listed together.
const maxAnnBatch = 512

// announce hands a TAKEDHT to the connection's announcer, started on the
// first: it lists the announcements waiting when it is free as one batch
// (Site.AnnounceBatch), so a peer's burst costs one commit, not one per
// article. The queue is bounded; a full one holds the reader, and the
// peer waits in TCP.
func (c *conn) announce(j annJob) {
	if c.anns == nil {
		c.anns = make(chan annJob, maxAnnBatch)
		c.streamWG.Add(1)
		go c.announcer()
	}
	c.anns <- j
}

func (c *conn) announcer() {
	defer c.streamWG.Done()
	for j := range c.anns {
		jobs := []annJob{j}
	more:
		for len(jobs) < maxAnnBatch {
			select {
			case j, ok := <-c.anns:
				if !ok {
					break more
				}
				jobs = append(jobs, j)
			default:
				break more
			}
		}
		batch := make([]usenet.Announcement, len(jobs))
		for i, j := range jobs {
			batch[i] = usenet.Announcement{Head: j.head, Offered: j.msgid}
		}
		c.site.AnnounceBatch(context.Background(), batch)
		ns := make([]uint64, len(jobs))
		replies := make([][]byte, len(jobs))
		closing := false
		for i, j := range jobs {
			ns[i] = j.n
			err := batch[i].Err
			switch code, text := feedResult(err); code {
			case nntp.CodeCheckLater:
				if !closing {
					c.s.cfg.Log.Warn("closing a peer's feed: announcement not taken", "peer", c.user, "err", err)
				}
				replies[i], closing = statusLine(nntp.CodeUnavailable, "%s", text), true
			case nntp.CodeTakeThisRejected:
				replies[i] = statusLine(code, "%s %s", j.msgid, text)
			default:
				replies[i] = statusLine(code, "%s", j.msgid)
			}
		}
		c.seq.writeEach(ns, replies)
		if closing {
			c.nc.Close()
		}
	}
}
