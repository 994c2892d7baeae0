package tcp

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"triad/internal/pki"
	"triad/internal/wire"
)

// Call sends one request to the process at addr, as a client with no listen
// address, and returns its reply. An error reply comes back as *wire.Error.
func Call(ctx context.Context, addr string, m wire.Msg) (wire.Msg, error) {
	return CallTLS(ctx, addr, m, nil)
}

// CallTLS is Call over mutual TLS with the bundle b (nil: plain TCP).
func CallTLS(ctx context.Context, addr string, m wire.Msg, b *pki.Bundle) (wire.Msg, error) {
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
		c.SetDeadline(time.Now().Add(30 * time.Second))
	}
	if b != nil {
		tc := tls.Client(c, b.ClientConfig(addr))
		if err := tc.HandshakeContext(ctx); err != nil {
			return nil, fmt.Errorf("TLS with %s: %w", addr, err)
		}
		c = tc
	}
	const reqID = 1
	if err := wire.WriteFrame(c, wire.Envelope{Kind: wire.Request, ReqID: reqID, Msg: m}); err != nil {
		return nil, err
	}
	frame, err := wire.ReadFrame(c, nil, wire.MaxFrameBytes)
	if err != nil {
		if b == nil && errors.Is(err, io.EOF) {
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
