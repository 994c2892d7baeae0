package tcp

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"triad/internal/node"
	"triad/internal/wire"
)

// Local is a client of the node inside the node's own process: a news
// site's front-end that embeds its node, as a site on a machine of its
// own would run it. Its requests enter the event loop with no socket and
// no encoding, and its replies come back through a function, so the copy
// a site keeps itself costs a call rather than two system calls and a
// codec each way.
//
// It is a client like any other to the node, but for its trust: it may
// send a client's and an operator's messages (it is the node's own
// process), never a node's (wire.RoleOf); its replies are answered to a
// route of its own ("@local/N"; a peer that claims such a name is refused
// at its handshake); and what it sends holds the driver's inbound budget
// until the loop has handled it. Messages cross
// as copies (wire.Clone), as the codec would make them, so neither side
// shares a buffer with the other, but for the blocks a put carries: their
// bytes are handed over (wire.Hand), so the sender must neither change
// nor reuse them once sent, and the node only reads them.
type Local struct {
	d       *Driver
	route   node.Addr
	deliver func(wire.Envelope)
}

// ErrStopped is returned by a Local whose driver has stopped.
var ErrStopped = errors.New("tcp: the node has stopped")

// localRoute starts the name of a Local's route.
const localRoute = "@local/"

// Attach makes a Local whose replies go to deliver. deliver is called
// from the event loop, once per reply, and must not block.
func (d *Driver) Attach(deliver func(wire.Envelope)) *Local {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.nextCli++
	l := &Local{d: d, route: localRoute + strconv.FormatUint(d.nextCli, 10), deliver: deliver}
	d.locals[l.route] = l
	return l
}

// Send hands the node a request (or a one-way message), waiting for
// room in the inbound budget until ctx ends. It fails with ErrStopped
// once the node has stopped; the Local is of no more use then.
func (l *Local) Send(ctx context.Context, e wire.Envelope) error {
	if err := checkLocal(e); err != nil {
		return err
	}
	select {
	case <-l.d.done:
		return ErrStopped
	default:
	}
	// The budget first, then the copy it pays for: a sender waiting for
	// room holds no copy the budget does not count.
	size := wire.Size(e)
	if size > l.d.cfg.MaxFrameBytes {
		return fmt.Errorf("tcp: a %v of %d bytes is over the frame limit (%d)", e.Msg.Type(), size, l.d.cfg.MaxFrameBytes)
	}
	by, _ := ctx.Deadline()
	ch := charge{bytes: size}
	switch err := l.d.inflight.acquireOr(size, size > smallFrame, by, ctx.Done()); {
	case errors.Is(err, errStopping):
		return ErrStopped
	case err != nil && ctx.Err() != nil:
		return ctx.Err()
	case err != nil:
		return err
	}
	e.Msg = wire.Hand(e.Msg)
	select {
	case l.d.msgs <- inboundMsg{node.MsgIn{From: l.route, Env: e, Local: true}, ch}:
		return nil
	case <-ctx.Done():
		l.d.release(ch)
		return ctx.Err()
	case <-l.d.done:
		l.d.release(ch)
		return ErrStopped
	}
}

// ownProcess is how a Local's messages are judged: a client's
// connection from the node's own machine, without a certificate.
var ownProcess = handshake{loopback: true}

// checkLocal refuses what an accepted connection's handshake refuses a
// client: a reply, a sender's address, and what its role may not send
// (refuseClient). The host validates each message as it does a decoded
// one.
func checkLocal(e wire.Envelope) error {
	switch {
	case e.Kind != wire.Request && e.Kind != wire.OneWay:
		return fmt.Errorf("tcp: a client sends requests and one-way messages, not kind %d", e.Kind)
	case !e.From.IsZero():
		return errors.New("tcp: a client's message names no sender")
	}
	if why := ownProcess.refuseClient(e.Msg.Type()); why != "" {
		return fmt.Errorf("tcp: %v refused: %s", e.Msg.Type(), why)
	}
	return nil
}

// Done is closed once the node's event loop has stopped.
func (l *Local) Done() <-chan struct{} { return l.d.done }

// Close forgets the Local: replies to it are dropped.
func (l *Local) Close() {
	l.d.mu.Lock()
	delete(l.d.locals, l.route)
	l.d.mu.Unlock()
}

// sendLocal hands a reply to the Local it is for, if it is still
// attached; to names a Local's route.
func (d *Driver) sendLocal(to node.Addr, e wire.Envelope) {
	if e.Kind != wire.Reply {
		return // only a reply is for a Local (the handshake refuses peers that claim its route)
	}
	d.mu.Lock()
	l := d.locals[to]
	d.mu.Unlock()
	if l == nil {
		return // it has gone
	}
	e.Msg = wire.Clone(e.Msg)
	l.deliver(e)
}

// isLocal says whether to names a Local's route.
func isLocal(to node.Addr) bool { return strings.HasPrefix(to, localRoute) }
