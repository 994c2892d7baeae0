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
// It is a client like any other to the node: it may send what a client
// on the node's own machine may (wire.RoleOf), its replies are answered
// to a route of its own ("@local/N"), and what it sends holds the
// driver's inbound budget until the loop has handled it. Messages cross
// as copies (wire.Clone), as the codec would make them, so neither side
// shares a buffer with the other.
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

// Addr is the node's address.
func (l *Local) Addr() string { return l.d.addr }

// Send hands the node a request (or a one-way message), waiting for
// room in the inbound budget until ctx ends.
func (l *Local) Send(ctx context.Context, e wire.Envelope) error {
	if wire.RoleOf(e.Msg.Type()) == wire.RoleNode {
		return fmt.Errorf("tcp: %v is a node's message, not a client's", e.Msg.Type())
	}
	select {
	case <-l.d.done:
		return ErrStopped
	default:
	}
	e.Msg = wire.Clone(e.Msg)
	size := wire.Size(e)
	if size > l.d.cfg.MaxFrameBytes {
		return fmt.Errorf("tcp: a %v of %d bytes is over the frame limit (%d)", e.Msg.Type(), size, l.d.cfg.MaxFrameBytes)
	}
	by, _ := ctx.Deadline()
	var ch charge
	if err := l.d.take(&ch, size, size > smallFrame, true, by); err != nil {
		if errors.Is(err, errStopping) {
			return ErrStopped
		}
		return err
	}
	select {
	case l.d.msgs <- inboundMsg{node.MsgIn{From: l.route, Env: e}, ch}:
		return nil
	case <-ctx.Done():
		l.d.release(ch)
		return ctx.Err()
	case <-l.d.done:
		l.d.release(ch)
		return ErrStopped
	}
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
