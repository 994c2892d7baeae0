package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"triad/internal/nntp"
)

// consecutiveFreePorts finds n consecutive ports on 127.0.0.1 that are free
// now (triad up puts node i on port+i).
func consecutiveFreePorts(t *testing.T, n int) int {
	t.Helper()
	for _, base := range freePorts(t, 20) {
		if base+n > 65000 {
			continue
		}
		var lns []net.Listener
		ok := true
		for i := 0; i < n && ok; i++ {
			ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", base+i))
			if err != nil {
				ok = false
				break
			}
			lns = append(lns, ln)
		}
		for _, ln := range lns {
			ln.Close()
		}
		if ok {
			return base
		}
	}
	t.Fatal("no run of free ports")
	return 0
}

// TestUpQuickStart runs the README's `triad up` as a real process: the ring
// comes up consistent, a file put through one node reads back through
// another, the news server takes a post and serves it back, and SIGINT
// stops everything cleanly. Started again on the same data, the file is
// still there.
func TestUpQuickStart(t *testing.T) {
	bin := buildTriad(t)
	dir := t.TempDir()
	port := consecutiveFreePorts(t, 3)
	newsPort := freePorts(t, 1)[0]
	args := []string{"up", "--nodes", "3", "--port", fmt.Sprint(port), "--nntp-port", fmt.Sprint(newsPort), "--data", filepath.Join(dir, "data")}
	start := func() (*exec.Cmd, *bytes.Buffer, chan string) {
		cmd := exec.Command(bin, args...)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill() })
		lines := make(chan string, 100)
		go func() {
			s := bufio.NewScanner(out)
			for s.Scan() {
				lines <- s.Text()
			}
			close(lines)
		}()
		return cmd, &stderr, lines
	}
	waitFor := func(lines chan string, stderr *bytes.Buffer, prefix string) {
		t.Helper()
		deadline := time.After(60 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("triad up exited before printing %q; stderr:\n%s", prefix, stderr.String())
				}
				if strings.HasPrefix(l, prefix) {
					return
				}
			case <-deadline:
				t.Fatalf("triad up did not print %q within 60s; stderr:\n%s", prefix, stderr.String())
			}
		}
	}
	stop := func(cmd *exec.Cmd, lines chan string, stderr *bytes.Buffer) {
		t.Helper()
		cmd.Process.Signal(syscall.SIGINT)
		waitFor(lines, stderr, "stopped")
		if err := cmd.Wait(); err != nil {
			t.Fatalf("triad up after SIGINT: %v; stderr:\n%s", err, stderr.String())
		}
	}

	cmd, stderr, lines := start()
	waitFor(lines, stderr, "ring consistent")

	in := filepath.Join(dir, "file")
	data := []byte(strings.Repeat("triad up quick start\n", 1000))
	if err := os.WriteFile(in, data, 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := runPut([]string{in, "--addr", fmt.Sprintf("127.0.0.1:%d", port)}, &out, io.Discard); err != nil {
		t.Fatalf("triad put: %v", err)
	}
	key := strings.TrimSpace(out.String())
	get := func() []byte {
		t.Helper()
		var got bytes.Buffer
		if err := runGet([]string{key, "--addr", fmt.Sprintf("127.0.0.1:%d", port+2)}, &got, io.Discard); err != nil {
			t.Fatalf("triad get: %v", err)
		}
		return got.Bytes()
	}
	if !bytes.Equal(get(), data) {
		t.Fatal("triad get returned other bytes than were put")
	}

	c, err := nntp.Dial(fmt.Sprintf("127.0.0.1:%d", newsPort), time.Now().Add(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if reply, err := c.Cmd("POST"); err != nil || !strings.HasPrefix(string(reply), "340") {
		t.Fatalf("POST: %q %v", reply, err)
	}
	article := "From: up@test\r\nNewsgroups: local.test\r\nSubject: up\r\nMessage-ID: <up1@test>\r\n\r\n.leading dot\r\nbody\r\n"
	if err := c.SendArticle([]byte(article)); err != nil {
		t.Fatal(err)
	}
	if reply, err := c.ReadLine(); err != nil || !strings.HasPrefix(string(reply), "240") {
		t.Fatalf("after the article: %q %v", reply, err)
	}
	if reply, err := c.Cmd("BODY <up1@test>"); err != nil || !strings.HasPrefix(string(reply), "222") {
		t.Fatalf("BODY: %q %v", reply, err)
	}
	body, _, err := c.ReadBlock(nil, 1<<20)
	if err != nil || !strings.Contains(string(nntp.Unstuff(body)), ".leading dot\r\nbody") {
		t.Fatalf("BODY returned %q, %v", body, err)
	}
	c.Close()
	stop(cmd, lines, stderr)

	// The same command on the same data: the ring comes back with the file.
	cmd, stderr, lines = start()
	waitFor(lines, stderr, "ring consistent")
	if !bytes.Equal(get(), data) {
		t.Fatal("after a restart, triad get returned other bytes than were put")
	}
	stop(cmd, lines, stderr)
}
