package nntp

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestClientAgainstScriptedServer has a Client talk to a server made of
// this package's server side, over a real listener: the article it posts
// is read in wire form and sent back, and comes back as it was sent.
func TestClientAgainstScriptedServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	served := make(chan error, 1)
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			served <- err
			return
		}
		defer nc.Close()
		nc.SetDeadline(time.Now().Add(10 * time.Second))
		r := bufio.NewReader(nc)
		nc.Write([]byte("200 scripted ready\r\n"))
		var stored []byte
		for {
			line, err := ReadLine(r, MaxCommandLine)
			if err != nil {
				served <- err
				return
			}
			switch string(line) {
			case "POST":
				nc.Write([]byte("340 send it\r\n"))
				if stored, err = ReadArticle(r, nil, 1<<20); err != nil {
					served <- err
					return
				}
				nc.Write([]byte("240 ok\r\n"))
			case "ARTICLE":
				nc.Write(append(append([]byte("220 0 <a@b>\r\n"), stored...), ".\r\n"...))
			case "QUIT":
				nc.Write([]byte("205 bye\r\n"))
				served <- nil
				return
			default:
				nc.Write([]byte("500 what\r\n"))
			}
		}
	}()

	c, err := Dial(ln.Addr().String(), time.Now().Add(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Greeting() != "200 scripted ready" {
		t.Fatalf("greeting %q", c.Greeting())
	}
	text := "Subject: x\r\n\r\n.leading dot\r\n.\r\nlf only\nlast"
	status := func(cmd string, want Code) {
		t.Helper()
		line, err := c.Cmd(cmd)
		if err != nil {
			t.Fatal(err)
		}
		if code, err := ParseStatus(line); err != nil || code != want {
			t.Fatalf("%s: %q, want %d", cmd, line, want)
		}
	}
	status("POST", CodeSendPost)
	if err := c.SendArticle([]byte(text)); err != nil {
		t.Fatal(err)
	}
	if line, err := c.ReadLine(); err != nil || string(line) != "240 ok" {
		t.Fatalf("after the article: %q, %v", line, err)
	}
	status("ARTICLE", CodeArticleFollows)
	block, lines, err := c.ReadBlock(nil, 1<<20)
	if err != nil || lines != 6 {
		t.Fatalf("block %q, %d lines, %v", block, lines, err)
	}
	want := strings.ReplaceAll(strings.ReplaceAll(text, "\r\n", "\n"), "\n", "\r\n") + "\r\n"
	if got := Unstuff(block); !bytes.Equal(got, []byte(want)) {
		t.Fatalf("came back as %q, want %q", got, want)
	}
	status("FROB", CodeUnknownCommand)
	status("QUIT", CodeClosing)
	if err := <-served; err != nil {
		t.Fatal(err)
	}
}

// scriptedServer serves one connection on 127.0.0.1: it greets with 200
// and answers each command line with replies[line], 500 if none, until
// QUIT or EOF. It returns the address and, once the connection ends, the
// command lines it read.
func scriptedServer(t *testing.T, replies map[string]string) (string, <-chan []string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	got := make(chan []string, 1)
	go func() {
		var lines []string
		defer func() { got <- lines }()
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		defer nc.Close()
		nc.SetDeadline(time.Now().Add(10 * time.Second))
		r := bufio.NewReader(nc)
		nc.Write([]byte("200 scripted ready\r\n"))
		for {
			line, err := ReadLine(r, MaxCommandLine)
			if err != nil {
				return
			}
			lines = append(lines, string(line))
			reply, ok := replies[string(line)]
			if !ok {
				reply = "500 what"
			}
			nc.Write([]byte(reply + "\r\n"))
			if string(line) == "QUIT" {
				return
			}
		}
	}()
	return ln.Addr().String(), got
}

// TestClientSessionOpenings runs Auth, ModeStream and Expect against
// scripted servers: what they send, and the *ReplyError (command named,
// password masked, code kept) of a reply they did not want.
func TestClientSessionOpenings(t *testing.T) {
	for _, tc := range []struct {
		name    string
		replies map[string]string
		run     func(c *Client) error
		sent    []string
		err     string // "" for none; else the ReplyError's text
		code    Code
	}{{
		name:    "auth accepted at the user",
		replies: map[string]string{"AUTHINFO USER feeder": "281 welcome"},
		run:     func(c *Client) error { return c.Auth("feeder", "secret") },
		sent:    []string{"AUTHINFO USER feeder"},
	}, {
		name:    "auth with a password",
		replies: map[string]string{"AUTHINFO USER feeder": "381 password please", "AUTHINFO PASS secret": "281 welcome"},
		run:     func(c *Client) error { return c.Auth("feeder", "secret") },
		sent:    []string{"AUTHINFO USER feeder", "AUTHINFO PASS secret"},
	}, {
		name:    "auth refused: the password masked",
		replies: map[string]string{"AUTHINFO USER feeder": "381 password please", "AUTHINFO PASS wrong": "481 no"},
		run:     func(c *Client) error { return c.Auth("feeder", "wrong") },
		sent:    []string{"AUTHINFO USER feeder", "AUTHINFO PASS wrong"},
		err:     `AUTHINFO PASS ********: the server replied "481 no"`,
		code:    CodeAuthFailed,
	}, {
		name:    "auth out of sequence at the user",
		replies: map[string]string{"AUTHINFO USER feeder": "482 not now"},
		run:     func(c *Client) error { return c.Auth("feeder", "secret") },
		sent:    []string{"AUTHINFO USER feeder"},
		err:     `AUTHINFO USER feeder: the server replied "482 not now"`,
		code:    CodeAuthOutOfSequence,
	}, {
		name:    "streaming permitted",
		replies: map[string]string{"MODE STREAM": "203 streaming ok"},
		run:     func(c *Client) error { return c.ModeStream() },
		sent:    []string{"MODE STREAM"},
	}, {
		name: "streaming unknown",
		run:  func(c *Client) error { return c.ModeStream() },
		sent: []string{"MODE STREAM"},
		err:  `MODE STREAM: the server replied "500 what"`,
		code: CodeUnknownCommand,
	}, {
		name:    "expect one of two codes",
		replies: map[string]string{"MODE READER": "201 no posting"},
		run: func(c *Client) error {
			line, err := c.Expect("MODE READER", CodePostingAllowed, CodePostingProhibited)
			if err == nil && line != "201 no posting" {
				t.Errorf("MODE READER returned %q", line)
			}
			return err
		},
		sent: []string{"MODE READER"},
	}, {
		name:    "expect a reply that is not a status line",
		replies: map[string]string{"DATE": "hello"},
		run:     func(c *Client) error { _, err := c.Expect("DATE", CodeDate); return err },
		sent:    []string{"DATE"},
		err:     `DATE: the server replied "hello"`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			addr, got := scriptedServer(t, tc.replies)
			c, err := Dial(addr, time.Now().Add(10*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			err = tc.run(c)
			c.Close()
			var re *ReplyError
			switch {
			case tc.err == "" && err != nil:
				t.Errorf("error %v, want none", err)
			case tc.err != "" && !errors.As(err, &re):
				t.Errorf("error %v, want a *ReplyError", err)
			case tc.err != "" && (re.Error() != tc.err || re.Code != tc.code):
				t.Errorf("error %q (code %d), want %q (code %d)", re.Error(), re.Code, tc.err, tc.code)
			}
			if sent := <-got; !slices.Equal(sent, tc.sent) {
				t.Errorf("sent %q, want %q", sent, tc.sent)
			}
		})
	}
}

// TestExpectReplyAfterEOF reports a connection that ended before the
// reply as an I/O error naming the command, not as a *ReplyError.
func TestExpectReplyAfterEOF(t *testing.T) {
	client, server := net.Pipe()
	go func() {
		server.Write([]byte("200 ready\r\n"))
		server.Close()
	}()
	c, err := NewClient(client, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.ExpectReply("POST <a@b>", CodePosted)
	var re *ReplyError
	if err == nil || errors.As(err, &re) || !errors.Is(err, io.EOF) || !strings.HasPrefix(err.Error(), "POST <a@b>: reading the reply: ") {
		t.Fatalf("error %v, want the EOF of POST <a@b>'s reply", err)
	}
}
