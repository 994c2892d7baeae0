package testutil

import (
	"net"
	"testing"
)

// FreeAddr is a port on 127.0.0.1 that is free now: for a node whose
// address must be known before it starts (a certificate names it, or a
// restart must find it again).
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// Serve listens on a free port of 127.0.0.1 until the test ends, runs
// serve on each connection it accepts (in a goroutine of its own, which
// should close it), and returns the address: a fake peer's socket.
func Serve(t testing.TB, serve func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go serve(c)
		}
	}()
	return ln.Addr().String()
}
