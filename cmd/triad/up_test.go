package main

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"triad/internal/e2e"

	"triad/internal/nntp"
	"triad/internal/proc"
)

// consecutiveFreePorts finds n consecutive ports on 127.0.0.1 that are free
// now (triad up puts node i on port+i), outside the kernel's ephemeral
// range: a port in it can be taken by any outgoing connection (the nodes'
// own dials among them) between this check and the daemon's bind. Runs
// handed out before in this test binary are not handed out again.
func consecutiveFreePorts(t *testing.T, n int) int {
	t.Helper()
	lo, hi := 32768, 60999 // Linux's default ephemeral range
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		fmt.Sscan(string(b), &lo, &hi)
	}
	// Candidates: above the ephemeral range, else below it.
	from, to := hi+1, 65535-n
	if to-from < 1000 {
		from, to = 10000, lo-n
	}
	portsMu.Lock()
	defer portsMu.Unlock()
	for range 2000 {
		base := from + rand.IntN(to-from)
		taken := false
		for i := range n {
			taken = taken || handedOut[base+i]
		}
		if taken {
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
			for i := range n {
				handedOut[base+i] = true
			}
			return base
		}
	}
	t.Fatal("no run of free ports")
	return 0
}

var (
	portsMu   sync.Mutex
	handedOut = map[int]bool{} // ports consecutiveFreePorts gave out
)

// postArticle POSTs article to the news server at addr, fails the test
// unless it is taken (240), and returns the connection, open until the
// test ends.
func postArticle(t *testing.T, addr, article string) *nntp.Client {
	t.Helper()
	c, err := nntp.Dial(addr, time.Now().Add(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if reply, err := c.Cmd("POST"); err != nil || !strings.HasPrefix(string(reply), "340") {
		t.Fatalf("POST: %q %v", reply, err)
	}
	if err := c.SendArticle([]byte(article)); err != nil {
		t.Fatal(err)
	}
	if reply, err := c.ReadLine(); err != nil || !strings.HasPrefix(string(reply), "240") {
		t.Fatalf("after the article: %q %v", reply, err)
	}
	return c
}

// upProc is a running `triad up` process (internal/proc runs it).
type upProc struct {
	*proc.Proc
	T    *testing.T
	seen string // the stdout lines printed by the time waitFor returned
}

// startUp runs `triad up` with args, without HTTP servers unless args ask
// for them (tests must not depend on 9101 being free).
func startUp(t *testing.T, bin string, args ...string) *upProc {
	t.Helper()
	if !slices.Contains(args, "--http-port") {
		args = append(args, "--http-port", "0")
	}
	p, err := proc.Start(proc.Config{Binary: bin, Args: append([]string{"up"}, args...), Log: filepath.Join(t.TempDir(), "up.log")})
	t.Cleanup(func() {
		if err := p.Kill(); err != nil {
			t.Error(err)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return &upProc{Proc: p, T: t}
}

// output is everything the process printed, stdout and stderr.
func (u *upProc) output() string {
	b, err := os.ReadFile(u.Log())
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// waitFor waits until stdout has a line that starts with prefix, for at
// most 60 s.
func (u *upProc) waitFor(prefix string) {
	u.T.Helper()
	if _, err := u.WaitLine(prefix, 60*time.Second); err != nil {
		u.T.Fatalf("triad up: %v", err)
	}
	u.seen = strings.Join(u.Lines(), "\n") + "\n"
}

// stop sends SIGINT and waits for a clean exit.
func (u *upProc) stop() {
	u.T.Helper()
	if err := u.Stop(syscall.SIGINT, 60*time.Second); err != nil {
		u.T.Fatalf("triad up after SIGINT: %v; output:\n%s", err, u.output())
	}
	u.waitFor("stopped")
}

// TestUpQuickStart runs the README's `triad up` as a real process: the ring
// comes up consistent, a file put through one node reads back through
// another, the news server takes a post and serves it back, and SIGINT
// stops everything cleanly. Started again on the same data, the file is
// still there.
func TestUpQuickStart(t *testing.T) {
	bin := e2e.Build(t)
	dir := t.TempDir()
	port := consecutiveFreePorts(t, 3)
	newsPort := consecutiveFreePorts(t, 3)
	args := []string{"--sites", "3", "--port", fmt.Sprint(port), "--nntp-port", fmt.Sprint(newsPort), "--data", filepath.Join(dir, "data")}

	up := startUp(t, bin, args...)
	up.waitFor("ring consistent")

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

	c := postArticle(t, fmt.Sprintf("127.0.0.1:%d", newsPort),
		"From: up@test\r\nNewsgroups: local.test\r\nSubject: up\r\nMessage-ID: <up1@test>\r\n\r\n.leading dot\r\nbody\r\n")
	if reply, err := c.Cmd("BODY <up1@test>"); err != nil || !strings.HasPrefix(string(reply), "222") {
		t.Fatalf("BODY: %q %v", reply, err)
	}
	body, _, err := c.ReadBlock(nil, 1<<20)
	if err != nil || !strings.Contains(string(nntp.Unstuff(body)), ".leading dot\r\nbody") {
		t.Fatalf("BODY returned %q, %v", body, err)
	}
	c.Close()
	up.stop()

	// The same command on the same data: the ring comes back with the file.
	up = startUp(t, bin, args...)
	up.waitFor("ring consistent")
	if !bytes.Equal(get(), data) {
		t.Fatal("after a restart, triad get returned other bytes than were put")
	}
	up.stop()
}
