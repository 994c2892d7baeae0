package metrics

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"triad/internal/testutil"
)

// The HTTP server holds at most maxHTTPConns connections: one more is
// closed as it arrives, and once a slot frees the next client is served.
func TestServerBoundsConnections(t *testing.T) {
	s, err := Listen("127.0.0.1:0", NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var idle []net.Conn
	for range maxHTTPConns {
		c, err := net.Dial("tcp", s.Addr)
		if err != nil {
			t.Fatal(err)
		}
		idle = append(idle, c)
	}
	get := func(c net.Conn) (string, error) {
		fmt.Fprintf(c, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
		c.SetReadDeadline(time.Now().Add(time.Second))
		return bufio.NewReader(c).ReadString('\n')
	}
	extra, err := net.Dial("tcp", s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	if line, err := get(extra); err == nil {
		t.Fatalf("connection %d was served (%q) while %d were open", maxHTTPConns+1, line, maxHTTPConns)
	}
	idle[0].Close()
	// Once a slot frees, a new client is served.
	var line string
	testutil.Poll(5*time.Second, func() bool {
		c, err := net.Dial("tcp", s.Addr)
		if err != nil {
			t.Fatal(err)
		}
		line, err = get(c)
		c.Close()
		return err == nil
	})
	if !strings.HasPrefix(line, "HTTP/1.1 200") {
		t.Fatalf("after a slot freed: %q", line)
	}
	for _, c := range idle[1:] {
		c.Close()
	}
	// The server frees their slots as it sees them closed, which may take
	// a moment (CI once got there first and was refused).
	var resp *http.Response
	if !testutil.Poll(5*time.Second, func() bool {
		resp, err = http.Get("http://" + s.Addr + "/metrics")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil && resp.StatusCode == 200
	}) {
		t.Fatalf("GET /metrics after the idle connections closed: %v %v", resp, err)
	}
}
