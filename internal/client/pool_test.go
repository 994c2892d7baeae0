package client

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// A pool dials a node once and reuses the connection, dials again after
// Drop or once the connection broke, and refuses after Close.
func TestPoolReusesAndRedials(t *testing.T) {
	s := startStub(t, "1", never)
	p := NewPool(Options{})
	c1, err := p.Conn(ctx(t), s.ref.Addr)
	if err != nil {
		t.Fatal(err)
	}
	if c2, err := p.Conn(ctx(t), s.ref.Addr); err != nil || c2 != c1 {
		t.Fatalf("second Conn = %p, %v; want the first, %p", c2, err, c1)
	}
	p.Drop(s.ref.Addr, c1)
	if c1.closedErr() == nil {
		t.Fatal("a dropped connection is still open")
	}
	c3, err := p.Conn(ctx(t), s.ref.Addr)
	if err != nil || c3 == c1 {
		t.Fatalf("Conn after Drop = %p, %v; want a new connection", c3, err)
	}
	c3.Close() // broken from outside, as a reset would
	if c4, err := p.Conn(ctx(t), s.ref.Addr); err != nil || c4 == c3 {
		t.Fatalf("Conn after the connection broke = %p, %v; want a new one", c4, err)
	}
	p.Close()
	if _, err := p.Conn(ctx(t), s.ref.Addr); !errors.Is(err, ErrClosed) {
		t.Fatalf("Conn after Close: %v", err)
	}
}

// Failover asks the nodes from start, wraps around, stops at an answer
// Retry declines, pauses between passes and gives up after the last,
// asks at most Limit nodes a pass, and ends with the context.
func TestFailover(t *testing.T) {
	retryable := errors.New("unreachable")
	final := errors.New("not found")
	var asked []int
	answers := func(m map[int]error) func(int) error {
		asked = nil
		return func(i int) error { asked = append(asked, i); return m[i] }
	}
	retry := func(err error) bool { return errors.Is(err, retryable) }
	f := Failover{Passes: 2, Backoff: time.Millisecond, Retry: retry}

	i, _, err := f.Run(ctx(t), 4, 2, answers(map[int]error{2: retryable, 3: retryable, 0: nil}))
	if i != 0 || err != nil || fmt.Sprint(asked) != "[2 3 0]" {
		t.Fatalf("Run = %d, %v after asking %v; want node 0 after [2 3 0]", i, err, asked)
	}
	i, errs, err := f.Run(ctx(t), 3, 0, answers(map[int]error{0: retryable, 1: final}))
	if i != 1 || err != nil || errs[1] != final || fmt.Sprint(asked) != "[0 1]" {
		t.Fatalf("Run = %d, %v, %v after asking %v; want node 1's final answer", i, errs, err, asked)
	}
	all := map[int]error{0: retryable, 1: retryable, 2: retryable}
	i, errs, err = f.Run(ctx(t), 3, 1, answers(all))
	if i != -1 || err != nil || fmt.Sprint(asked) != "[1 2 0 1 2 0]" || !errors.Is(errs[0], retryable) {
		t.Fatalf("Run = %d, %v, %v after asking %v; want two passes and -1", i, errs, err, asked)
	}
	limited := Failover{Passes: 1, Limit: 2, Retry: retry}
	if i, _, _ := limited.Run(ctx(t), 3, 0, answers(all)); i != -1 || fmt.Sprint(asked) != "[0 1]" {
		t.Fatalf("limited Run = %d after asking %v; want two nodes asked", i, asked)
	}
	c, cancel := context.WithCancel(ctx(t))
	slow := Failover{Passes: 3, Backoff: time.Hour, Retry: retry}
	cancel()
	if i, _, err := slow.Run(c, 3, 0, answers(all)); i != -1 || !errors.Is(err, context.Canceled) || len(asked) != 1 {
		t.Fatalf("Run with an ended context = %d, %v after asking %v", i, err, asked)
	}
}
