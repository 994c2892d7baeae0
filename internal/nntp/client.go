package nntp

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"slices"
	"time"
)

// MaxReplyLine is the longest line a Client reads, its ending included: the
// size of its read buffer.
const MaxReplyLine = 64 << 10

// Client is one blocking client connection: it sends command lines and
// articles, and reads status lines and multi-line blocks through a buffer
// that bounds lines. It is for one goroutine at a time, except that one
// goroutine may read replies while another writes commands (a streaming
// feed). Deadlines are the caller's, on Conn.
type Client struct {
	conn     net.Conn
	r        *bufio.Reader
	greeting string
}

// Dial connects to addr over TCP and reads the greeting, all before
// deadline, which stays set on the connection.
func Dial(addr string, deadline time.Time) (*Client, error) {
	return DialTLS(addr, nil, deadline)
}

// DialTLS is Dial over TLS with cfg (plain TCP if cfg is nil); the
// handshake is before deadline too.
func DialTLS(addr string, cfg *tls.Config, deadline time.Time) (*Client, error) {
	d := net.Dialer{Deadline: deadline}
	var nc net.Conn
	var err error
	if cfg != nil {
		nc, err = (&tls.Dialer{NetDialer: &d, Config: cfg}).Dial("tcp", addr)
	} else {
		nc, err = d.Dial("tcp", addr)
	}
	if err != nil {
		return nil, err
	}
	nc.SetDeadline(deadline) // only fails on a closed connection, which the read reports
	c, err := NewClient(nc, nil)
	if err != nil {
		nc.Close()
		return nil, err
	}
	return c, nil
}

// NewClient wraps conn and reads the server's greeting, whatever its code
// (Greeting returns it). Replies are read through src, conn itself when
// src is nil: a caller may put a reader in between (the load generator
// re-arms TCP_QUICKACK before every read). On error the caller still owns
// conn.
func NewClient(conn net.Conn, src io.Reader) (*Client, error) {
	if src == nil {
		src = conn
	}
	c := &Client{conn: conn, r: bufio.NewReaderSize(src, MaxReplyLine)}
	line, err := c.ReadLine()
	if err != nil {
		return nil, fmt.Errorf("nntp: reading the greeting: %w", err)
	}
	c.greeting = string(line)
	return c, nil
}

// Greeting is the status line the server greeted with.
func (c *Client) Greeting() string { return c.greeting }

// Conn is the connection, for deadlines and for writes the Client does not
// make (a feeder's TAKETHIS and article in one writev).
func (c *Client) Conn() net.Conn { return c.conn }

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// Send writes one command line, adding its CRLF.
func (c *Client) Send(line string) error {
	_, err := c.conn.Write([]byte(line + "\r\n"))
	return err
}

// ReadLine reads a status line (or any one line) ended by CRLF and returns
// it without the CRLF, valid until the next read.
func (c *Client) ReadLine() ([]byte, error) {
	line, err := readRawLine(c.r, MaxReplyLine)
	switch {
	case err == ErrLineTooLong:
		return nil, fmt.Errorf("nntp: a reply line longer than %d bytes", MaxReplyLine)
	case err != nil:
		return nil, err
	case len(line) < 2 || line[len(line)-2] != '\r':
		return nil, fmt.Errorf("nntp: a reply line not ended by CRLF: %q", line)
	}
	return line[:len(line)-2], nil
}

// Cmd sends a command line and returns the reply's status line, valid
// until the next read.
func (c *Client) Cmd(line string) ([]byte, error) {
	if err := c.Send(line); err != nil {
		return nil, fmt.Errorf("%s: %w", line, err)
	}
	reply, err := c.ReadLine()
	if err != nil {
		return nil, fmt.Errorf("%s: reading the reply: %w", line, err)
	}
	return reply, nil
}

// Expect sends a command line and returns the reply's status line, or a
// *ReplyError if its code is none of want. Unlike Cmd's, the line is the
// caller's to keep.
func (c *Client) Expect(line string, want ...Code) (string, error) {
	if err := c.Send(line); err != nil {
		return "", fmt.Errorf("%s: %w", line, err)
	}
	return c.ExpectReply(line, want...)
}

// ExpectReply reads the status line that answers cmd, sent before (the
// reply to an article after 340, or to a pipelined command), and returns
// it, or a *ReplyError if its code is none of want. cmd names the command
// in errors.
func (c *Client) ExpectReply(cmd string, want ...Code) (string, error) {
	reply, err := c.ReadLine()
	if err != nil {
		return "", fmt.Errorf("%s: reading the reply: %w", cmd, err)
	}
	code, _ := ParseStatus(reply) // not a status line: code 0, wanted by none
	if !slices.Contains(want, code) {
		return "", &ReplyError{Cmd: cmd, Line: string(reply), Code: code}
	}
	return string(reply), nil
}

// Auth logs in with AUTHINFO USER and, if the server asks for it (381),
// AUTHINFO PASS (RFC 4643 section 2.3). Errors never show the password.
func (c *Client) Auth(user, pass string) error {
	line, err := c.Expect("AUTHINFO USER "+user, CodeAuthAccepted, CodePasswordRequired)
	if err != nil {
		return err
	}
	if code, _ := ParseStatus([]byte(line)); code == CodeAuthAccepted {
		return nil
	}
	const masked = "AUTHINFO PASS ********"
	if err := c.Send("AUTHINFO PASS " + pass); err != nil {
		return fmt.Errorf("%s: %w", masked, err)
	}
	_, err = c.ExpectReply(masked, CodeAuthAccepted)
	return err
}

// ModeStream asks for streaming (MODE STREAM, RFC 4644 section 2.3),
// which the server must permit (203) before CHECK and TAKETHIS.
func (c *Client) ModeStream() error {
	_, err := c.Expect("MODE STREAM", CodeStreamingPermitted)
	return err
}

// ReplyError is a status line the client did not expect: the command sent
// and the server's reply. A caller tells it from a broken connection,
// after which the connection cannot go on, with errors.As.
type ReplyError struct {
	Cmd  string // the command, a password masked
	Line string // the server's status line
	Code Code   // its code; zero if the line is not a status line
}

func (e *ReplyError) Error() string { return fmt.Sprintf("%s: the server replied %q", e.Cmd, e.Line) }

// ReadBlock reads the multi-line block that follows a status line such as
// 220 or 224, up to and including its terminating ".\r\n", and appends it
// to dst as it came (dot-stuffed: Unstuff gives the text). It returns the
// bytes and the number of lines before the terminator. A line not ended by
// CRLF or longer than MaxReplyLine, or a block over maxBytes, is an error
// after which the connection is out of step.
func (c *Client) ReadBlock(dst []byte, maxBytes int) ([]byte, int, error) {
	return readBlock(c.r, dst, maxBytes)
}

// SendArticle writes text (lines ending in CRLF or LF) as a multi-line
// block: dot-stuffed and terminated, after a 340 or 335 reply or a
// TAKETHIS line.
func (c *Client) SendArticle(text []byte) error {
	_, err := c.conn.Write(AppendBlock(nil, text))
	return err
}
