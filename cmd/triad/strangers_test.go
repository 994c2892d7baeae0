package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"triad/internal/e2e"

	"triad/internal/bench"
)

// A real node under strangers (issue 27, finding 5): 100 connections that
// each declare a 4 MiB frame and send 64 KiB of it, and 2,000 idle
// connections, from 40 other loopback addresses. Before, the declared
// frames took the whole in-flight budget and the idle ones every slot, and
// the operator's `triad ring` from the node's own machine got no answer.
// Now it is answered within 1 s, each time, and the node's resident memory
// stays under 128 MiB.
func TestNodeAnswersRingUnderStrangers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node process and 2,100 connections")
	}
	const idle, declaring = 2000, 100
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if lim.Cur < idle+declaring+500 {
		lim.Cur = min(lim.Max, idle+declaring+500)
		syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
	}
	if lim.Cur < idle+declaring+500 {
		t.Skipf("open files limited to %d", lim.Cur)
	}
	c := e2e.NewCluster(t)
	addr := fmt.Sprintf("127.0.0.1:%d", e2e.FreePorts(t, 1)[0])
	p := c.Start("node0", addr, filepath.Join(c.Dir, "data0"), "")

	dialFrom := func(i int) net.Conn {
		d := net.Dialer{Timeout: 2 * time.Second, LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 1, byte(2+i%40))}}
		nc, err := d.Dial("tcp", addr)
		if err != nil {
			return nil // refused or reset: the limits at work
		}
		t.Cleanup(func() { nc.Close() })
		return nc
	}
	body := make([]byte, 64<<10)
	for i := range declaring {
		nc := dialFrom(i)
		if nc == nil {
			continue
		}
		frame := binary.BigEndian.AppendUint32(nil, 4<<20)
		nc.SetWriteDeadline(time.Now().Add(time.Second))
		nc.Write(append(frame, body...)) // may block or fail once the node stops reading: fine
	}
	opened := 0
	for i := range idle {
		if dialFrom(i) != nil {
			opened++
		}
	}
	t.Logf("%d of %d idle connections opened; %d declared 4 MiB frames", opened, idle, declaring)

	for i := range 5 {
		var out, errb bytes.Buffer
		start := time.Now()
		if rc := run([]string{"ring", "--addr", addr, "--json", "--timeout", "1s"}, &out, &errb); rc != 0 {
			t.Fatalf("triad ring #%d from the node's machine: exit %d after %v: %s", i, rc, time.Since(start), errb.String())
		}
		t.Logf("triad ring #%d answered in %v", i, time.Since(start).Round(time.Millisecond))
	}
	rss, err := bench.ProcessRSS(p.Pid())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("node resident: %.0f MiB now, %.0f MiB peak", rss.Current, rss.Peak)
	if rss.Peak > 128 {
		t.Errorf("node's peak resident memory %.0f MiB, budget 128", rss.Peak)
	}
}
