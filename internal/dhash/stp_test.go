package dhash

import (
	"errors"
	"testing"

	"triad/internal/fault"
	"triad/internal/node"
	"triad/internal/rpc"
	"triad/internal/wire"
)

// STP's window: calls past it wait in order; a completed call grows it by
// 1/w and lets the next one out; a timeout or a busy peer halves it; a
// full queue refuses; a waiting call that cannot be made is reported.
func TestSTPWindow(t *testing.T) {
	s := newSTP()
	var ends []func(node.Env, error)
	var order []int
	send := func(i int) func(node.Env, func(node.Env, error)) bool {
		return func(_ node.Env, done func(node.Env, error)) bool {
			order = append(order, i)
			ends = append(ends, done)
			return true
		}
	}
	for i := range 10 {
		if !s.call(nil, send(i), func(node.Env) { t.Fatal("failed") }) {
			t.Fatalf("call %d refused", i)
		}
	}
	if s.inflight != stpInitial || len(s.waiting) != 2 {
		t.Fatalf("%d in flight and %d waiting, want %d and 2", s.inflight, len(s.waiting), stpInitial)
	}
	ends[0](nil, nil)
	if s.window != stpInitial+1.0/stpInitial || len(order) != 9 || order[8] != 8 {
		t.Fatalf("after a completion: window %v, sent %v", s.window, order)
	}
	ends[1](nil, rpc.ErrTimeout)
	if s.window != (stpInitial+1.0/stpInitial)/2 {
		t.Fatalf("after a timeout: window %v", s.window)
	}
	ends[2](nil, &wire.Error{Code: fault.CodeBusy})
	if s.window != (stpInitial+1.0/stpInitial)/4 {
		t.Fatalf("after a busy peer: window %v", s.window)
	}
	ends[3](nil, errors.New("not found")) // the block's fault, not congestion
	if s.window != (stpInitial+1.0/stpInitial)/4 {
		t.Fatalf("after another error: window %v", s.window)
	}
	// A waiting call whose send fails is reported as failed.
	s = newSTP()
	s.window = 1
	s.call(nil, send(0), nil)
	failed := false
	s.call(nil, func(node.Env, func(node.Env, error)) bool { return false }, func(node.Env) { failed = true })
	ends[len(ends)-1](nil, nil)
	if !failed {
		t.Fatal("a waiting call that could not be made was not reported")
	}
	s.window, s.maxWait = 1, 1
	s.call(nil, send(1), nil) // in flight
	s.call(nil, send(2), nil) // waits
	if s.call(nil, send(3), nil) {
		t.Fatal("a full queue took another call")
	}
}
