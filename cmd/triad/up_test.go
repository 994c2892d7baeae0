package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"triad/internal/e2e"

	"triad/internal/nntp"
)

// TestUpQuickStart runs the README's `triad up` as a real process: the ring
// comes up consistent, a file put through one node reads back through
// another, the news server takes a post and serves it back, and SIGINT
// stops everything cleanly. Started again on the same data, the file is
// still there.
func TestUpQuickStart(t *testing.T) {
	bin := e2e.Build(t)
	dir := t.TempDir()
	port := e2e.ConsecutiveFreePorts(t, 3)
	newsPort := e2e.ConsecutiveFreePorts(t, 3)
	args := []string{"--sites", "3", "--port", fmt.Sprint(port), "--nntp-port", fmt.Sprint(newsPort), "--data", filepath.Join(dir, "data")}

	up := e2e.StartUp(t, bin, args...)
	up.WaitFor("ring consistent")

	in := filepath.Join(dir, "file")
	data := []byte(strings.Repeat("triad up quick start\n", 1000))
	if err := os.WriteFile(in, data, 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	// triad up runs mutual TLS with a CA of its own: the operator's
	// certificate it made lets the commands in; without it they are
	// refused.
	operator := filepath.Join(dir, "data", "ca", "bundles", "operator")
	if err := runPut([]string{in, "--addr", fmt.Sprintf("127.0.0.1:%d", port)}, io.Discard, io.Discard); err == nil {
		t.Fatal("a put without a certificate succeeded")
	}
	if err := runPut([]string{in, "--addr", fmt.Sprintf("127.0.0.1:%d", port), "--tls", operator}, &out, io.Discard); err != nil {
		t.Fatalf("triad put: %v", err)
	}
	key := strings.TrimSpace(out.String())
	get := func() []byte {
		t.Helper()
		var got bytes.Buffer
		if err := runGet([]string{key, "--addr", fmt.Sprintf("127.0.0.1:%d", port+2), "--tls", operator}, &got, io.Discard); err != nil {
			t.Fatalf("triad get: %v", err)
		}
		return got.Bytes()
	}
	if !bytes.Equal(get(), data) {
		t.Fatal("triad get returned other bytes than were put")
	}

	c := e2e.PostArticle(t, fmt.Sprintf("127.0.0.1:%d", newsPort),
		"From: up@test\r\nNewsgroups: local.test\r\nSubject: up\r\nMessage-ID: <up1@test>\r\n\r\n.leading dot\r\nbody\r\n")
	if reply, err := c.Cmd("BODY <up1@test>"); err != nil || !strings.HasPrefix(string(reply), "222") {
		t.Fatalf("BODY: %q %v", reply, err)
	}
	body, _, err := c.ReadBlock(nil, 1<<20)
	if err != nil || !strings.Contains(string(nntp.Unstuff(body)), ".leading dot\r\nbody") {
		t.Fatalf("BODY returned %q, %v", body, err)
	}
	c.Close()
	up.Interrupt()

	// The same command on the same data: the ring comes back with the file.
	up = e2e.StartUp(t, bin, args...)
	up.WaitFor("ring consistent")
	if !bytes.Equal(get(), data) {
		t.Fatal("after a restart, triad get returned other bytes than were put")
	}
	up.Interrupt()
}
