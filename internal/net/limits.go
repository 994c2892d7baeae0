package net

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	gonet "net"
	"sync"
	"time"

	"triad/internal/node"
	"triad/internal/wire"
)

// byteBudget bounds the bytes of inbound frames that have been read but
// not yet handled by the event loop, across every connection. A reader
// takes a frame's size before it allocates the frame and gives it back
// once the loop has handled the message, so a flood of large frames waits
// on the socket (TCP pushes back on the sender) instead of in memory.
type byteBudget struct {
	mu     sync.Mutex
	cond   sync.Cond
	free   int
	closed bool
}

func newByteBudget(n int) *byteBudget {
	b := &byteBudget{free: n}
	b.cond.L = &b.mu
	return b
}

// acquire takes n bytes, waiting until they are free; false once closed.
func (b *byteBudget) acquire(n int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for b.free < n && !b.closed {
		b.cond.Wait()
	}
	if b.closed {
		return false
	}
	b.free -= n
	return true
}

func (b *byteBudget) release(n int) {
	b.mu.Lock()
	b.free += n
	b.mu.Unlock()
	b.cond.Broadcast()
}

// close wakes every waiter for good (the driver is stopping).
func (b *byteBudget) close() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	b.cond.Broadcast()
}

// inboundMsg is a message read from a connection, with the budget bytes it
// holds until the loop has handled it.
type inboundMsg struct {
	in   node.MsgIn
	size int
}

// postMsg hands a message to the loop; its bytes return to the budget once
// the loop has handled it (or at once, when the loop has stopped).
func (d *Driver) postMsg(in node.MsgIn, size int) {
	select {
	case d.msgs <- inboundMsg{in, size}:
	case <-d.done:
		d.inflight.release(size)
	}
}

// keepBuffer is the largest frame buffer a connection keeps between
// frames: an idle connection pins no more than its read buffer and this.
const keepBuffer = 64 << 10

var (
	// errStopping ends a reader when the driver stops.
	errStopping = errors.New("net: driver stopping")
	// errBadFrame wraps a frame that does not decode.
	errBadFrame = errors.New("net: bad frame")
)

// frameReader reads frames from one connection under the driver's limits.
type frameReader struct {
	d   *Driver
	nc  gonet.Conn
	br  *bufio.Reader
	buf []byte
}

func newFrameReader(d *Driver, nc gonet.Conn) *frameReader {
	return &frameReader{d: d, nc: nc, br: bufio.NewReaderSize(nc, 16<<10)}
}

// next waits until idleBy for a frame to start, then gives its body
// FrameTimeout to arrive, and decodes it. The frame's size is taken from
// the budget before its buffer is allocated; the caller must release it.
func (f *frameReader) next(idleBy time.Time) (wire.Envelope, int, error) {
	d := f.d
	f.nc.SetReadDeadline(idleBy)
	var hdr [4]byte
	if _, err := io.ReadFull(f.br, hdr[:]); err != nil {
		return wire.Envelope{}, 0, err
	}
	n := int(binary.BigEndian.Uint32(hdr[:]))
	if n > d.cfg.MaxFrameBytes {
		return wire.Envelope{}, 0, fmt.Errorf("%w: %d bytes", wire.ErrTooLarge, n)
	}
	if !d.inflight.acquire(n) {
		return wire.Envelope{}, 0, errStopping
	}
	f.nc.SetReadDeadline(time.Now().Add(d.cfg.FrameTimeout))
	if cap(f.buf) < n {
		f.buf = make([]byte, n)
	}
	body := f.buf[:n]
	_, err := io.ReadFull(f.br, body)
	var e wire.Envelope
	if err == nil {
		if e, err = wire.Decode(body); err != nil { // Decode copies what it keeps
			err = fmt.Errorf("%w: %w", errBadFrame, err)
		}
	} else if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	if cap(f.buf) > keepBuffer {
		f.buf = nil
	}
	if err != nil {
		d.inflight.release(n)
		return wire.Envelope{}, 0, err
	}
	d.Stats.FramesIn.Add(1)
	return e, n, nil
}

// readFailed counts and logs why a connection's reader stopped, for the
// failures worth an operator's attention.
func (d *Driver) readFailed(peer string, err error) {
	var ne gonet.Error
	switch {
	case errors.Is(err, wire.ErrTooLarge):
		d.Stats.BadFrames.Add(1)
		d.cfg.Log.Warn("oversized frame; closing connection", "peer", peer, "err", err)
	case errors.Is(err, errBadFrame):
		d.Stats.BadFrames.Add(1)
		d.cfg.Log.Warn("bad frame; closing connection", "peer", peer, "err", err)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.As(err, &ne) && ne.Timeout():
		d.cfg.Log.Debug("connection stalled or cut; closing it", "peer", peer, "err", err)
	}
}
