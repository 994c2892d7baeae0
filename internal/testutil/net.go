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
