package tcp

import (
	"encoding/binary"
	"errors"
	"os"
	"runtime"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"triad/internal/node"
	"triad/internal/testutil"
)

// A reader that wants more bytes than are free waits until the loop gives
// some back, a large frame leaves the reserve to small ones, a wait ends at
// its deadline, and a closed budget lets every waiter go.
func TestByteBudgetWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newByteBudget(100, 20)
		if err := b.acquire(60, false, time.Time{}); err != nil {
			t.Fatal("first acquire refused:", err)
		}
		got := make(chan error, 1)
		go func() { got <- b.acquire(30, true, time.Time{}) }() // 40 free, 20 of them reserved
		synctest.Wait()
		select {
		case <-got:
			t.Fatal("a large frame took the reserve")
		default:
		}
		if err := b.acquire(40, false, time.Time{}); err != nil {
			t.Fatal("a small frame could not take the reserve:", err)
		}
		b.release(60)
		synctest.Wait()
		if err := <-got; err != nil {
			t.Fatal("acquire failed after release:", err)
		}
		if err := b.acquire(50, false, time.Now().Add(time.Second)); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("acquire of more than is free until a deadline: %v, want a deadline error", err)
		}
		go func() { got <- b.acquire(100, false, time.Time{}) }()
		synctest.Wait()
		b.close()
		if err := <-got; !errors.Is(err, errStopping) {
			t.Fatalf("acquire on a closed budget: %v", err)
		}
		b.release(10) // a reader giving a frame back after the driver stopped
	})
}

// Past MaxConns, new connections are closed on arrival and counted; once
// one closes, the next is served.
func TestMaxConnsRefusesMore(t *testing.T) {
	d := runDriver(t, Config{MaxConns: 2}, pingHandler{})

	a := dialFrom(t, "127.0.0.2", d.Addr())
	if err := rawPing(a, 1); err != nil {
		t.Fatal(err)
	}
	b := dialFrom(t, "127.0.0.3", d.Addr())
	if err := rawPing(b, 2); err != nil {
		t.Fatal(err)
	}
	expectClosed(t, dialFrom(t, "127.0.0.4", d.Addr()))
	if n := d.Stats.Refused.Load(); n != 1 {
		t.Errorf("Refused = %d, want 1", n)
	}
	a.Close()
	testutil.WaitFor(t, 5*time.Second, "the closed connection to be counted out", func() bool { return d.accepted.Load() < 2 })
	if err := rawPing(dialFrom(t, "127.0.0.4", d.Addr()), 3); err != nil {
		t.Fatalf("after a connection closed: %v", err)
	}
}

// A peer that sends a frame's length and then stalls is dropped after
// FrameTimeout, not after the idle timeout, and its bytes go back to the
// budget.
func TestStalledFrameIsDropped(t *testing.T) {
	d := runDriver(t, Config{FrameTimeout: 200 * time.Millisecond,
		MaxFrameBytes: 1 << 20, MaxInflightBytes: 1 << 20}, pingHandler{})

	c := dial(t, d.Addr())
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], 1<<20) // the whole budget
	c.Write(hdr[:])
	c.Write(make([]byte, 10))
	expectClosed(t, c)
	// The budget is whole again: a full-size frame gets through.
	if err := rawPing(dial(t, d.Addr()), 9); err != nil {
		t.Fatalf("after the stalled frame: %v", err)
	}
	testutil.WaitFor(t, 5*time.Second, "the budget to be whole", func() bool {
		d.inflight.mu.Lock()
		defer d.inflight.mu.Unlock()
		return d.inflight.free == 1<<20
	})
}

// blockingWork counts itself started, waits for its gate, then reports
// its number.
type blockingWork struct {
	n       int
	gate    chan struct{}
	started *atomic.Int64
}

func (w blockingWork) Run(node.Storage) (any, error) {
	w.started.Add(1)
	<-w.gate
	return w.n, nil
}

// countHandler offloads n blocking works at Start and counts their results.
type countHandler struct {
	n       int
	gate    chan struct{}
	started *atomic.Int64
	got     chan int
}

func (h countHandler) Handle(env node.Env, ev node.Event) {
	switch ev := ev.(type) {
	case node.Start:
		for i := range h.n {
			env.Offload(blockingWork{i, h.gate, h.started})
		}
	case node.WorkDone:
		h.got <- ev.Result.(int)
	}
}

// Offloaded work runs on Workers goroutines, however much is offloaded at
// once; the rest waits its turn, and all of it runs.
func TestOffloadRunsOnBoundedWorkers(t *testing.T) {
	const n = 500
	h := countHandler{n: n, gate: make(chan struct{}), started: new(atomic.Int64), got: make(chan int, n)}
	before := runtime.NumGoroutine()
	runDriver(t, Config{Workers: 3}, h)
	testutil.WaitFor(t, 5*time.Second, "every worker to be busy", func() bool { return h.started.Load() == 3 })
	if h.started.Load() != 3 {
		t.Fatalf("%d works started with 3 workers", h.started.Load())
	}
	if extra := runtime.NumGoroutine() - before; extra > 20 {
		t.Errorf("%d more goroutines with %d works offloaded to 3 workers", extra, n)
	}
	close(h.gate)
	seen := make(map[int]bool)
	if !testutil.Poll(10*time.Second, func() bool {
		for {
			select {
			case i := <-h.got:
				seen[i] = true
			default:
				return len(seen) == n
			}
		}
	}) {
		t.Fatalf("%d of %d works done after 10s", len(seen), n)
	}
	if len(seen) != n {
		t.Fatalf("%d distinct results, want %d", len(seen), n)
	}
}
