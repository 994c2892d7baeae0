package tcp

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"triad/internal/fault"
	"triad/internal/node"
	"triad/internal/wire"
)

// byteBudget bounds bytes held across connections: inbound frames read and
// not yet handled (all of them, or a stranger's). A reader takes bytes as a
// frame's body arrives, before it grows the frame's buffer, and gives them
// back once the loop has handled the message, so a flood of large frames
// waits on the socket (TCP pushes back on the sender) instead of in memory,
// and a header alone holds nothing.
//
// Large frames may not take the last reserve bytes: those stay for small
// frames (requests, lookups, an operator's command), so that large frames
// filling the budget delay a small one no longer than the loop takes to
// handle what is in flight.
type byteBudget struct {
	mu      sync.Mutex
	free    int
	reserve int
	size    int
	// changed is closed, and replaced, when bytes come back to a waiter
	// (watched is set) or the budget closes; waiters select on it.
	changed chan struct{}
	watched bool
	closed  bool
}

func newByteBudget(n, reserve int) *byteBudget {
	return &byteBudget{free: n, size: n, reserve: reserve, changed: make(chan struct{})}
}

// acquire takes n bytes, waiting until they are free or until by (zero: no
// limit). It fails with errStopping once the budget is closed and with
// os.ErrDeadlineExceeded at by.
func (b *byteBudget) acquire(n int, large bool, by time.Time) error {
	return b.acquireOr(n, large, by, nil)
}

// acquireOr is acquire that also gives up, with errGaveUp, once quit is
// closed.
func (b *byteBudget) acquireOr(n int, large bool, by time.Time, quit <-chan struct{}) error {
	var timeout <-chan time.Time
	for {
		b.mu.Lock()
		if b.closed {
			b.mu.Unlock()
			return errStopping
		}
		keep := 0
		if large {
			keep = b.reserve
		}
		if b.free-n >= keep {
			b.free -= n
			b.mu.Unlock()
			return nil
		}
		changed := b.changed
		b.watched = true
		b.mu.Unlock()
		if timeout == nil && !by.IsZero() {
			t := time.NewTimer(time.Until(by))
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-changed:
		case <-timeout:
			return fmt.Errorf("waiting for %d bytes of frame budget: %w", n, os.ErrDeadlineExceeded)
		case <-quit:
			return errGaveUp
		}
	}
}

func (b *byteBudget) release(n int) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	b.free += n
	if b.watched && !b.closed {
		close(b.changed)
		b.changed, b.watched = make(chan struct{}), false
	}
	b.mu.Unlock()
}

// used is how many bytes are taken now.
func (b *byteBudget) used() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.size - b.free
}

// close wakes every waiter for good (the driver is stopping).
func (b *byteBudget) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.closed {
		b.closed = true
		close(b.changed)
	}
}

// reserveFor is the part of a budget of n bytes kept for small frames:
// an eighth, or less if a frame of maxFrame bytes would not fit beside it.
func reserveFor(n, maxFrame int) int { return max(0, min(n/8, n-maxFrame)) }

// charge is what a frame holds of the budgets until the loop has handled
// it: its bytes, and as many of the strangers' bytes if it came from a
// connection that was not known yet (see Driver).
type charge struct{ bytes, stranger int }

// release gives a frame's bytes back to the budgets.
func (d *Driver) release(c charge) {
	d.inflight.release(c.bytes)
	d.strangers.release(c.stranger)
}

// take adds n bytes to c, from the strangers' budget first if the frame
// is a stranger's.
func (d *Driver) take(c *charge, n int, large, known bool, by time.Time) error {
	if !known {
		if err := d.strangers.acquire(n, large, by); err != nil {
			return err
		}
		c.stranger += n
	}
	if err := d.inflight.acquire(n, large, by); err != nil {
		return err
	}
	c.bytes += n
	return nil
}

// inboundMsg is a message read from a connection, with the budget bytes it
// holds until the loop has handled it.
type inboundMsg struct {
	in node.MsgIn
	ch charge
}

// postMsg hands a message to the loop; its bytes return to the budgets
// once the loop has handled it (or at once, when the loop has stopped).
func (d *Driver) postMsg(in node.MsgIn, ch charge) {
	select {
	case d.msgs <- inboundMsg{in, ch}:
	case <-d.done:
		d.release(ch)
	}
}

const (
	// keepBuffer is the largest frame buffer a connection keeps between
	// frames: an idle connection pins no more than its read buffer and
	// this.
	keepBuffer = 16 << 10
	// readBuffer is a connection's read buffer. Bodies larger than it are
	// read straight into the frame.
	readBuffer = 4 << 10
	// smallFrame is the largest frame that may use a budget's reserve.
	smallFrame = 64 << 10
	// firstChunk is how much of a known connection's frame is charged
	// when its first bytes arrive; each later charge doubles what the
	// frame holds, so a frame never holds more than twice what has
	// arrived, plus this. A stranger's frame is charged without it.
	firstChunk = 64 << 10
)

var (
	// errStopping ends a reader when the driver stops.
	errStopping = errors.New("tcp: driver stopping")
	// errGaveUp: the waiter stopped waiting (acquireOr's quit).
	errGaveUp = errors.New("tcp: gave up waiting for budget")
	// errBadFrame wraps a frame that does not decode.
	errBadFrame = errors.New("tcp: bad frame")
)

// frameReader reads frames from one connection under the driver's limits.
type frameReader struct {
	d   *Driver
	nc  net.Conn
	br  *bufio.Reader
	buf []byte
}

func newFrameReader(d *Driver, nc net.Conn) *frameReader {
	return &frameReader{d: d, nc: nc, br: bufio.NewReaderSize(nc, readBuffer)}
}

// next waits until idleBy for a frame to start, then gives its body
// FrameTimeout to arrive, and decodes it. Bytes are charged to the budgets
// (the strangers' too, unless known) as the body arrives, before the
// buffer grows to hold them; the caller must release the charge.
func (f *frameReader) next(idleBy time.Time, known bool) (wire.Envelope, charge, error) {
	d := f.d
	f.nc.SetReadDeadline(idleBy)
	var hdr [4]byte
	if _, err := io.ReadFull(f.br, hdr[:]); err != nil {
		return wire.Envelope{}, charge{}, err
	}
	n := int(binary.BigEndian.Uint32(hdr[:]))
	if n > d.cfg.MaxFrameBytes {
		return wire.Envelope{}, charge{}, fmt.Errorf("%w: %d bytes", fault.ErrTooLarge, n)
	}
	by := time.Now().Add(d.cfg.FrameTimeout)
	f.nc.SetReadDeadline(by)
	large := n > smallFrame
	var ch charge
	body := f.buf[:0]
	var err error
	for len(body) < n && err == nil {
		// Nothing is charged until the body's next bytes have come.
		if _, err = f.br.Peek(1); err != nil {
			break
		}
		// A known connection's frame is charged ahead, a chunk at a
		// time; a stranger's only for what has come (and what it held
		// doubled), so that a header and one byte hold one byte of the
		// strangers' budget, not the frame's length.
		step := firstChunk
		if !known {
			step = f.br.Buffered()
		}
		want := min(n, max(2*ch.bytes, len(body)+step))
		if err = d.take(&ch, want-ch.bytes, large, known, by); err != nil {
			break
		}
		if cap(body) < want {
			body = append(make([]byte, 0, want), body...)
		}
		_, err = io.ReadFull(f.br, body[len(body):want])
		body = body[:want]
	}
	var e wire.Envelope
	if err == nil {
		// A buffer kept for the next frame is reused: Decode copies what
		// the message keeps. One too large to keep is the message's: the
		// copies a holder is sent to store are not copied again
		// (DecodeBulk).
		decode := wire.Decode
		if cap(body) > keepBuffer {
			decode = wire.DecodeBulk
		}
		if e, err = decode(body); err != nil {
			err = fmt.Errorf("%w: %w", errBadFrame, err)
		}
	} else {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			d.Stats.StalledFrames.Add(1)
		}
	}
	if cap(body) <= keepBuffer {
		f.buf = body[:0]
	} else {
		f.buf = nil
	}
	if err != nil {
		d.release(ch)
		return wire.Envelope{}, charge{}, err
	}
	d.Stats.FramesIn.Add(1)
	return e, ch, nil
}

// readFailed counts and logs why a connection's reader stopped, for the
// failures worth an operator's attention.
func (d *Driver) readFailed(peer string, err error) {
	var ne net.Error
	switch {
	case errors.Is(err, fault.ErrTooLarge):
		d.Stats.BadFrames.Add(1)
		d.warn(&d.logBad, "oversized frame; closing connection", "peer", peer, "err", err)
	case errors.Is(err, errBadFrame):
		d.Stats.BadFrames.Add(1)
		d.warn(&d.logBad, "bad frame; closing connection", "peer", peer, "err", err)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.As(err, &ne) && ne.Timeout():
		d.cfg.Log.Debug("connection stalled or cut; closing it", "peer", peer, "err", err)
	}
}

// logEvery is how often one kind of refusal (a forged frame, a bad frame,
// a refused connection or handshake) is logged at most: a flood of them
// writes a line per interval with the count of those not logged, and the
// counters in Stats have every one.
const logEvery = 10 * time.Second

// logLimit lets one line of its kind through per logEvery.
type logLimit struct {
	mu      sync.Mutex
	next    time.Time
	skipped int
}

// allow reports whether a line may be written now, and how many were held
// back since the last one.
func (l *logLimit) allow(now time.Time) (bool, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Before(l.next) {
		l.skipped++
		return false, 0
	}
	skipped := l.skipped
	l.next, l.skipped = now.Add(logEvery), 0
	return true, skipped
}

// warn logs a refusal at Warn level through its limit; those held back
// are logged at Debug level.
func (d *Driver) warn(l *logLimit, msg string, args ...any) {
	ok, skipped := l.allow(time.Now())
	if !ok {
		d.cfg.Log.Debug(msg, args...)
		return
	}
	if skipped > 0 {
		args = append(args, "not_logged_since_last", skipped)
	}
	d.cfg.Log.Warn(msg, args...)
}

// logLimits are the driver's, one per kind of refusal.
type logLimits struct {
	logBad, logForged, logRefused, logTLS, logUnproven logLimit
}
