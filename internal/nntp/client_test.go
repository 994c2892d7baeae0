package nntp

import (
	"bufio"
	"bytes"
	"net"
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
