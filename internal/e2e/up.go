package e2e

import (
	"fmt"
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

	"triad/internal/proc"
)

// ConsecutiveFreePorts finds n consecutive ports on 127.0.0.1 that are free
// now (triad up puts node i on port+i), outside the kernel's ephemeral
// range: a port in it can be taken by any outgoing connection (the nodes'
// own dials among them) between this check and the daemon's bind. Runs
// handed out before in this test binary are not handed out again.
func ConsecutiveFreePorts(t *testing.T, n int) int {
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
	handedOut = map[int]bool{} // ports ConsecutiveFreePorts gave out
)

// Up is a running `triad up` process (internal/proc runs it).
type Up struct {
	*proc.Proc
	T    *testing.T
	Seen string // the stdout lines printed by the time WaitFor returned
}

// StartUp runs `triad up` from bin with args, without HTTP servers unless
// args ask for them (tests must not depend on 9101 being free). t's
// cleanup kills it.
func StartUp(t *testing.T, bin string, args ...string) *Up {
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
	return &Up{Proc: p, T: t}
}

// Output is everything the process printed, stdout and stderr.
func (u *Up) Output() string {
	b, err := os.ReadFile(u.Log())
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// WaitFor waits until stdout has a line that starts with prefix, for at
// most 60 s.
func (u *Up) WaitFor(prefix string) {
	u.T.Helper()
	if _, err := u.WaitLine(prefix, 60*time.Second); err != nil {
		u.T.Fatalf("triad up: %v", err)
	}
	u.Seen = strings.Join(u.Lines(), "\n") + "\n"
}

// Interrupt sends SIGINT and waits for a clean exit (proc.Proc's Stop,
// with the test's failure and the wait for "stopped" on top).
func (u *Up) Interrupt() {
	u.T.Helper()
	if err := u.Stop(syscall.SIGINT, 60*time.Second); err != nil {
		u.T.Fatalf("triad up after SIGINT: %v; output:\n%s", err, u.Output())
	}
	u.WaitFor("stopped")
}
