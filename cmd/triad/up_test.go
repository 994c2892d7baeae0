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
	peerPort := e2e.ConsecutiveFreePorts(t, 3)
	args := []string{"--sites", "3", "--port", fmt.Sprint(port), "--nntp-port", fmt.Sprint(newsPort), "--peer-port", fmt.Sprint(peerPort), "--data", filepath.Join(dir, "data")}

	up := e2e.StartUp(t, bin, args...)
	up.WaitFor("Press Ctrl-C") // started, the ring consistent before the sites
	// The news ports open once the ring is consistent (a post in the
	// first second got "441 too few live hosts").
	if r, s := strings.Index(up.Seen, "ring consistent"), strings.Index(up.Seen, "started news site"); r < 0 || s < r {
		t.Errorf("a news site started before the ring was consistent:\n%s", up.Seen)
	}
	// --peer-port sets the sites' feed ports (they could not be set).
	if want := fmt.Sprintf("peers over TLS on 127.0.0.1:%d", peerPort+2); !strings.Contains(up.Seen, want) {
		t.Errorf("triad up --peer-port %d: no %q in\n%s", peerPort, want, up.Seen)
	}

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

	// The D2 lines it printed work as printed: a volume made, a file put
	// and read back (the path commands; mount needs root).
	mkvol := printedCommand(t, up.Seen, "fs mkvol myvol")
	keyFile := filepath.Join(dir, "myvol.key")
	if err := runFS(append(mkvol[1:], "--tls", operator, "--key", keyFile), io.Discard, io.Discard); err != nil {
		t.Fatalf("the printed %v: %v", mkvol, err)
	}
	fsArgs := []string{"--addr", mkvol[len(mkvol)-1], "--tls", operator, "--key", keyFile}
	if err := runFS(append([]string{"put", "myvol:/f", in}, fsArgs...), io.Discard, io.Discard); err != nil {
		t.Fatalf("fs put: %v", err)
	}
	var cat bytes.Buffer
	if err := runFS(append([]string{"cat", "myvol:/f"}, fsArgs[:4]...), &cat, io.Discard); err != nil || !bytes.Equal(cat.Bytes(), data) {
		t.Fatalf("fs cat: %d bytes, %v; want the %d put", cat.Len(), err, len(data))
	}

	// triad status: the three nodes and the three sites, nothing amiss.
	var st, stErr bytes.Buffer
	if rc := run([]string{"status", "--addr", fmt.Sprintf("127.0.0.1:%d", port), "--site", fmt.Sprintf("127.0.0.1:%d", peerPort), "--tls", operator}, &st, &stErr); rc != 0 ||
		strings.Count(st.String(), "  up  ") != 3 || !strings.Contains(st.String(), "site site1 (") || !strings.Contains(st.String(), "site site3 (") {
		t.Errorf("triad status: exit %d\n%s%s", rc, st.String(), stErr.String())
	}

	// Its nodes run no Tapestry: publish says how to run it.
	var perr bytes.Buffer
	if rc := run([]string{"publish", in, "--addr", fmt.Sprintf("127.0.0.1:%d", port), "--tls", operator}, io.Discard, &perr); rc != 1 || !strings.Contains(perr.String(), "runs no Tapestry (start its node with --tapestry)") {
		t.Errorf("publish to a node without Tapestry: exit %d, %q", rc, perr.String())
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
	up.WaitFor("Press Ctrl-C") // started, the ring consistent before the sites
	if !bytes.Equal(get(), data) {
		t.Fatal("after a restart, triad get returned other bytes than were put")
	}
	up.Interrupt()
}

// printedCommand is the arguments of the "go run ./cmd/triad" line of
// output that contains what (after the program's name).
func printedCommand(t *testing.T, output, what string) []string {
	t.Helper()
	for _, line := range strings.Split(output, "\n") {
		if _, rest, ok := strings.Cut(line, "go run ./cmd/triad "); ok && strings.HasPrefix(rest, what) {
			return strings.Fields(rest)
		}
	}
	t.Fatalf("no line of output runs %q:\n%s", what, output)
	return nil
}
