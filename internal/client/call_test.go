package client

import (
	"context"
	"errors"
	"testing"

	"triad/internal/wire"
)

// TestCall makes one-shot calls to a stub node: a reply comes back as the
// message, an error reply as a *wire.Error, and each call has its own
// connection.
func TestCall(t *testing.T) {
	s := startStub(t, "10", func(req wire.Envelope, reply func(wire.Msg)) {
		if _, ok := req.Msg.(*wire.Ping); ok {
			reply(&wire.Ack{})
			return
		}
		reply(&wire.Error{Text: "refused"})
	})
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	m, err := Call(ctx, s.ref.Addr, &wire.Ping{}, Options{})
	if err != nil {
		t.Fatalf("Call(Ping): %v", err)
	}
	if _, ok := m.(*wire.Ack); !ok {
		t.Fatalf("Call(Ping) = %T, want *wire.Ack", m)
	}
	_, err = Call(ctx, s.ref.Addr, &wire.GetRingInfo{}, Options{})
	var werr *wire.Error
	if !errors.As(err, &werr) || werr.Text != "refused" {
		t.Fatalf("Call(GetRingInfo) = %v, want the stub's *wire.Error", err)
	}
	s.mu.Lock()
	conns := len(s.conns)
	s.mu.Unlock()
	if conns != 2 {
		t.Errorf("%d connections for two calls, want 2", conns)
	}
}
