package client

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"triad/internal/wire"
)

// defaultCallTimeout bounds a Call whose context has no deadline.
const defaultCallTimeout = 30 * time.Second

// Call sends one request to the node at addr on a connection of its own,
// as a client with no listen address (or as opt.From), and returns the reply; the
// connection is closed before Call returns. It suits a command that asks
// one question (triad ring, triad maint, a benchmark's probe); a Client is
// for many calls. An error reply comes back as *wire.Error. Without a
// deadline on ctx, the call (TLS handshake included) is bounded by 30 s.
func Call(ctx context.Context, addr string, m wire.Msg, opt Options) (wire.Msg, error) {
	var dialer net.Dialer
	c, err := dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	// The deadline covers the TLS handshake too: a stalled server cannot
	// hold a call without one.
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	} else {
		c.SetDeadline(time.Now().Add(defaultCallTimeout))
	}
	if opt.TLS != nil {
		tc := tls.Client(c, opt.TLS.ClientConfig(addr))
		if err := tc.HandshakeContext(ctx); err != nil {
			return nil, fmt.Errorf("TLS with %s: %w", addr, err)
		}
		c = tc
	}
	const reqID = 1
	if err := wire.WriteFrame(c, wire.Envelope{Kind: wire.Request, ReqID: reqID, From: opt.From, Msg: m}); err != nil {
		return nil, err
	}
	frame, err := wire.ReadFrame(c, nil, wire.MaxFrameBytes)
	if err != nil {
		if opt.TLS == nil && errors.Is(err, io.EOF) {
			// A node with --tls closes a plain connection at its first bytes.
			return nil, fmt.Errorf("%s closed the connection without a reply (if it runs with --tls, give a certificate: --tls or $TRIAD_TLS): %w", addr, err)
		}
		return nil, fmt.Errorf("reading reply from %s: %w", addr, err)
	}
	e, err := wire.Decode(frame)
	if err != nil {
		return nil, err
	}
	if e.Kind != wire.Reply || e.ReqID != reqID {
		return nil, fmt.Errorf("%s: unexpected %v frame", addr, e.Msg.Type())
	}
	if werr, ok := e.Msg.(*wire.Error); ok {
		return nil, werr
	}
	return e.Msg, nil
}
