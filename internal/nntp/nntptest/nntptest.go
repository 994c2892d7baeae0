package nntptest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"triad/internal/nntp"
)

// Client is an nntp.Client that fails the test T on a broken connection;
// every read has 10 seconds.
type Client struct {
	T testing.TB
	*nntp.Client
}

// Line reads one status line.
func (c *Client) Line() string {
	c.T.Helper()
	c.Conn().SetDeadline(time.Now().Add(10 * time.Second))
	l, err := c.ReadLine()
	if err != nil {
		c.T.Fatalf("reading a reply: %v", err)
	}
	return string(l)
}

// Status sends a command line and returns the status line of its reply.
func (c *Client) Status(format string, args ...any) string {
	c.T.Helper()
	c.Conn().SetDeadline(time.Now().Add(10 * time.Second))
	if err := c.Send(fmt.Sprintf(format, args...)); err != nil {
		c.T.Fatal(err)
	}
	return c.Line()
}

// Block reads a multi-line block's lines, undoing dot-stuffing.
func (c *Client) Block() []string {
	c.T.Helper()
	b, _, err := c.ReadBlock(nil, 64<<20)
	if err != nil {
		c.T.Fatalf("reading a block: %v", err)
	}
	text := string(nntp.Unstuff(b))
	if text == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(text, "\r\n"), "\r\n")
}

// SendText writes an article dot-stuffed and terminated. It may run on a
// goroutine of its own (a feeder's writer): a failure is an Errorf.
func (c *Client) SendText(a string) {
	c.T.Helper()
	if err := c.SendArticle([]byte(a)); err != nil {
		c.T.Errorf("sending an article: %v", err)
	}
}

// Code fails t unless reply begins with the status code want.
func Code(t testing.TB, reply string, want string) {
	t.Helper()
	if !strings.HasPrefix(reply, want) {
		t.Fatalf("reply %q, want %s", reply, want)
	}
}
