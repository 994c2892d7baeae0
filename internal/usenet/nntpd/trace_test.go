package nntpd

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"triad/internal/nntp"
	"triad/internal/usenet"
)

// TestTrace replays the scripts in testdata/trace against a real server on
// 127.0.0.1 (one fresh server and site per script): each directive sends
// lines over a connection, and its expected output is what the server
// replied, as it came (multi-line blocks still dot-stuffed). Regenerate
// the expectations with
//
//	go test ./internal/usenet/nntpd -run TestTrace -rewrite
//
// and read the diff: a changed reply is a changed protocol.
//
// Directives:
//
//	dial              a new connection (the current one from now on); prints the greeting
//	send              each input line is a command; prints each reply
//	takethis [id=ID]  input is articles separated by "===" lines, each sent as
//	                  TAKETHIS <its Message-ID, or ID> and the article, all in one
//	                  write (pipelined); prints the replies, in order
//	flush             waits until every acknowledged article is listed
func TestTrace(t *testing.T) {
	datadriven.Walk(t, "testdata/trace", func(t *testing.T, path string) {
		ts := startServer(t, Config{}, usenet.SiteConfig{})
		var c *testClient
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			if c == nil && d.Cmd != "dial" {
				d.Fatalf(t, "%s before dial", d.Cmd)
			}
			var out strings.Builder
			switch d.Cmd {
			case "dial":
				var hello string
				c, hello = ts.dial(t)
				c.T = t
				out.WriteString(hello + "\n")
			case "send":
				for _, line := range strings.Split(d.Input, "\n") {
					if err := c.Send(line); err != nil {
						d.Fatalf(t, "%s: %v", line, err)
					}
					printReply(c, &out, line)
				}
			case "takethis":
				var wire []byte
				var cmds []string
				for _, art := range strings.Split(d.Input, "\n===\n") {
					id := messageIDOf(art)
					d.MaybeScanArgs(t, "id", &id)
					cmd := "TAKETHIS " + id
					cmds = append(cmds, cmd)
					wire = nntp.AppendBlock(append(wire, cmd+"\r\n"...), []byte(art+"\n"))
				}
				if _, err := c.Conn().Write(wire); err != nil {
					d.Fatalf(t, "%v", err)
				}
				for _, cmd := range cmds {
					printReply(c, &out, cmd)
				}
			case "flush":
				ts.site.Flush()
				out.WriteString("ok\n")
			default:
				d.Fatalf(t, "unknown directive %q", d.Cmd)
			}
			return out.String()
		})
	})
}

// printReply reads the reply to cmd, its status line and, if the code
// says one follows, its multi-line block, and prints them line by line.
func printReply(c *testClient, out *strings.Builder, cmd string) {
	c.T.Helper()
	status := c.Line()
	fmt.Fprintln(out, status)
	code, err := nntp.ParseStatus([]byte(status))
	if err != nil {
		c.T.Fatal(err)
	}
	if !multiLine(cmd, code) {
		return
	}
	block, _, err := c.ReadBlock(nil, 1<<20)
	if err != nil {
		c.T.Fatalf("%s: %v", cmd, err)
	}
	out.WriteString(strings.ReplaceAll(string(block), "\r\n", "\n"))
}

// multiLine reports whether a reply to cmd with this code carries a block
// after its status line (RFC 3977 section 3.2).
func multiLine(cmd string, code nntp.Code) bool {
	switch code {
	case nntp.CodeHelpFollows, nntp.CodeCapabilitiesFollow, nntp.CodeListFollows, nntp.CodeArticleFollows,
		nntp.CodeHeadFollows, nntp.CodeBodyFollows, nntp.CodeOverviewFollows, nntp.CodeHeadersFollow,
		nntp.CodeNewArticlesFollow, nntp.CodeNewGroupsFollow:
		return true
	case nntp.CodeGroupSelected:
		return strings.HasPrefix(strings.ToUpper(cmd), "LISTGROUP")
	}
	return false
}

// messageIDOf returns the Message-ID header of an article's text.
func messageIDOf(art string) string {
	for _, line := range strings.Split(art, "\n") {
		if name, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(name, "Message-ID") {
			return strings.TrimSpace(v)
		}
		if line == "" {
			break
		}
	}
	return ""
}
