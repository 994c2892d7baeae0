package dhash

import (
	"errors"

	"triad/internal/fault"
	"triad/internal/node"
	"triad/internal/rpc"
)

// stp is DHash++'s Striped Transport Protocol window (§5): one window of
// block transfers (copies stored at and fetched from other hosts) in
// flight across every destination, with no state per destination. It
// grows by 1/w when a call completes and halves when one times out or the
// other end is too busy, as TCP's congestion window does; the calls past
// it wait here, in order, until one completes. Timeouts are the RPC
// layer's: the peer's measured round trip, or for a peer never measured
// the Vivaldi prediction and its error. A call that times out is not sent
// again to the same host: a put places its copy at the next successor and
// a get asks the next holder.
type stp struct {
	window   float64
	max      float64
	inflight int
	waiting  []func(env node.Env)
	maxWait  int
	// Counters.
	Grown, Shrunk uint64
}

// Bounds of the STP window and its queue.
const (
	stpInitial = 8
	stpMax     = 1024
	stpMaxWait = 8192
)

func newSTP() *stp { return &stp{window: stpInitial, max: stpMax, maxWait: stpMaxWait} }

// call runs send now if the window has room, or once it has, in order. It
// reports false when the queue is full too: the caller defers. send makes
// the call and calls done exactly once when it ends, with its error; if
// send cannot make it (false) once it had waited here, failed runs instead.
func (s *stp) call(env node.Env, send func(env node.Env, done func(env node.Env, err error)) bool, failed func(env node.Env)) bool {
	run := func(env node.Env) bool {
		s.inflight++
		if !send(env, func(env node.Env, err error) { s.complete(env, err) }) {
			s.inflight--
			return false
		}
		return true
	}
	if s.inflight < int(s.window) && len(s.waiting) == 0 {
		return run(env)
	}
	if len(s.waiting) >= s.maxWait {
		return false
	}
	s.waiting = append(s.waiting, func(env node.Env) {
		if !run(env) {
			failed(env)
		}
	})
	return true
}

// complete ends a call: the window grows on success and shrinks on a sign
// of congestion, and the calls waiting for room go out.
func (s *stp) complete(env node.Env, err error) {
	s.inflight--
	switch {
	case err == nil:
		s.window = min(s.window+1/s.window, s.max)
		s.Grown++
	case errors.Is(err, rpc.ErrTimeout) || fault.CodeOf(err) == fault.CodeBusy:
		s.window = max(s.window/2, 1)
		s.Shrunk++
	}
	for len(s.waiting) > 0 && s.inflight < int(s.window) {
		next := s.waiting[0]
		s.waiting[0] = nil
		s.waiting = s.waiting[1:]
		next(env)
	}
}
