package nntpd

import (
	"errors"
	"strings"

	"triad/internal/nntp"
	"triad/internal/usenet"
)

// The operator's commands (PermAdmin), as ctlinnd gives INN's operator:
// private extensions (RFC 3977 section 3.3.2: names that start with X).
// triad news sends them, to a site and then to each of its peers.
//
//	XNEWGROUP group [y|n|m] [description]   288: carried from now on
//	XRMGROUP group                          288: no longer carried
//	XPEERS                                  289: "name address" of each peer
//	XFEEDS                                  289: each feed's state
//	XPAUSE [peer]                           288: feeds held (all without peer)
//	XRESUME [peer]                          288: feeds let go

// adminPerms are what the operator's commands need.
var adminPerms = map[string]Perm{"XNEWGROUP": PermAdmin, "XRMGROUP": PermAdmin, "XPEERS": PermAdmin, "XFEEDS": PermAdmin, "XPAUSE": PermAdmin, "XRESUME": PermAdmin}

// admin runs an operator's command; ok is false for a verb that is not
// one.
func (c *conn) admin(verb string, args []string) (keep, ok bool) {
	switch verb {
	case "XNEWGROUP":
		return c.newgroup(args), true
	case "XRMGROUP":
		if len(args) != 1 {
			return c.reply(nntp.CodeSyntaxError, "Syntax: XRMGROUP group"), true
		}
		if err := c.list.RemoveGroup(args[0]); errors.Is(err, usenet.ErrNoSuchGroup) {
			return c.reply(nntp.CodeNoSuchGroup, "No such group %s here", args[0]), true
		} else if err != nil {
			return c.reply(nntp.CodeInternalFault, "Removing %s: %v", args[0], err), true
		}
		c.s.cfg.Log.Info("newsgroup removed by the operator", "group", args[0], "by", c.user)
		return c.reply(nntp.CodeAdminDone, "%s removed", args[0]), true
	case "XPEERS", "XFEEDS":
		if c.s.cfg.Admin == nil {
			return c.reply(nntp.CodeFeatureNotSupported, "This server has no feeds"), true
		}
		var lines []string
		if verb == "XFEEDS" {
			lines = c.s.cfg.Admin.Feeds()
		} else {
			for _, p := range c.s.cfg.Admin.Peers() {
				lines = append(lines, p.Name+" "+p.Addr)
			}
		}
		var b strings.Builder
		b.Write(statusLine(nntp.CodeAdminFollows, "%d lines follow", len(lines)))
		for _, l := range lines {
			if strings.HasPrefix(l, ".") {
				b.WriteByte('.')
			}
			b.WriteString(l)
			b.WriteString("\r\n")
		}
		b.WriteString(".\r\n")
		return c.send([]byte(b.String())), true
	case "XPAUSE", "XRESUME":
		if c.s.cfg.Admin == nil {
			return c.reply(nntp.CodeFeatureNotSupported, "This server has no feeds"), true
		}
		if len(args) > 1 {
			return c.reply(nntp.CodeSyntaxError, "Syntax: %s [peer]", verb), true
		}
		peer := ""
		if len(args) == 1 {
			peer = args[0]
		}
		if err := c.s.cfg.Admin.PauseFeeds(peer, verb == "XPAUSE"); err != nil {
			return c.reply(nntp.CodeSyntaxError, "%v", err), true
		}
		what := "every feed"
		if peer != "" {
			what = "the feed to " + peer
		}
		if verb == "XPAUSE" {
			return c.reply(nntp.CodeAdminDone, "%s held; articles wait in the log", what), true
		}
		return c.reply(nntp.CodeAdminDone, "%s going again", what), true
	}
	return true, false
}

// newgroup is XNEWGROUP group [y|n|m] [description...].
func (c *conn) newgroup(args []string) bool {
	if len(args) < 1 {
		return c.reply(nntp.CodeSyntaxError, "Syntax: XNEWGROUP group [y|n|m] [description]")
	}
	name, status, desc := args[0], "y", ""
	if len(args) > 1 {
		status = args[1]
	}
	if len(args) > 2 {
		desc = strings.Join(args[2:], " ")
	} else if g, ok := c.list.Group(name); ok {
		desc = g.Desc // a newgroup again keeps the description
	}
	if err := usenet.CheckGroupName(name); err != nil {
		return c.reply(nntp.CodeSyntaxError, "%v", err)
	}
	if err := c.list.AddGroup(name, status, desc); err != nil {
		return c.reply(nntp.CodeSyntaxError, "%v", err)
	}
	c.s.cfg.Log.Info("newsgroup added by the operator", "group", name, "status", status, "by", c.user)
	return c.reply(nntp.CodeAdminDone, "%s carried, status %s", name, status)
}
