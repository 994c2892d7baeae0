package tcp

import (
	"bufio"
	"crypto/tls"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"triad/internal/node"
	"triad/internal/wire"
)

// conn is one outbound stream: to a peer's listen address (dialled on
// first use) or back to a client over the connection it came in on. A
// single writer goroutine owns the socket.
//
// Its queue is bounded in bytes, not only frames: MaxQueuedBytes for the
// connection and MaxQueuedBytesTotal across all of them; a frame past
// either is dropped and counted, as a lossy network would. The reader of
// an accepted connection stops reading while the replies queued on its
// route pass half of MaxQueuedBytes (see waitRoom), so a client that asks
// and never reads is held by TCP, not by our memory.
type conn struct {
	d    *Driver
	addr string
	nc   net.Conn // set for routes back on accepted connections; dialled for peers
	peer string   // for a route back to a peer: its proven address
	// answered is set once a reply has been queued on a client's route:
	// the client has completed a request, and is known (see Driver).
	answered atomic.Bool

	mu     sync.Mutex
	room   sync.Cond // signalled when the queue drains below half, or closes
	q      [][]byte
	queued int  // bytes in q and in the writer's hands
	shut   bool // closeQueue was called: no more frames
	wake   chan struct{}

	once   sync.Once
	closed chan struct{}
}

func newConn(d *Driver, addr string) *conn {
	c := &conn{d: d, addr: addr, wake: make(chan struct{}, 1), closed: make(chan struct{})}
	c.room.L = &c.mu
	return c
}

// enqueue queues a frame without blocking; false means the queue is full
// (for this connection or in total) or closed, and the frame was dropped.
func (c *conn) enqueue(frame []byte) bool {
	d := c.d
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.shut || len(c.q) >= d.cfg.SendQueue || c.queued+len(frame) > d.cfg.MaxQueuedBytes {
		return false
	}
	if d.queuedTotal.Add(int64(len(frame))) > int64(d.cfg.MaxQueuedBytesTotal) {
		d.queuedTotal.Add(-int64(len(frame)))
		return false
	}
	c.q = append(c.q, frame)
	c.queued += len(frame)
	if int64(c.queued) > d.queuedPeak.Load() {
		d.notePeak(int64(c.queued))
	}
	select {
	case c.wake <- struct{}{}:
	default:
	}
	return true
}

// fits reports whether a frame of n bytes would be queued now.
func (c *conn) fits(n int) bool {
	d := c.d
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.shut && len(c.q) < d.cfg.SendQueue && c.queued+n <= d.cfg.MaxQueuedBytes &&
		d.queuedTotal.Load()+int64(n) <= int64(d.cfg.MaxQueuedBytesTotal)
}

// pop takes the oldest queued frame, or nil.
func (c *conn) pop() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.q) == 0 {
		return nil
	}
	f := c.q[0]
	c.q[0] = nil
	c.q = c.q[1:]
	if len(c.q) == 0 {
		c.q = nil // let the backing array go
	}
	return f
}

// sent gives back the bytes of a frame the writer has written (or given
// up on), and wakes a reader waiting for room.
func (c *conn) sent(n int) {
	c.mu.Lock()
	c.queued -= n
	c.d.queuedTotal.Add(-int64(n))
	if c.queued < c.pauseAt() {
		c.room.Broadcast()
	}
	c.mu.Unlock()
}

// pauseAt is the queued bytes at which the connection's reader stops.
func (c *conn) pauseAt() int { return c.d.cfg.MaxQueuedBytes / 2 }

// waitRoom waits while the replies queued on this route pass pauseAt, so
// that the connection is not read while they wait. The writer's deadline
// bounds the wait: a client that reads nothing fails it, and the route
// closes.
func (c *conn) waitRoom() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.queued >= c.pauseAt() && !c.shut {
		c.d.Stats.ReadPauses.Add(1)
	}
	for c.queued >= c.pauseAt() && !c.shut {
		c.room.Wait()
	}
}

// closeQueue asks the writer to flush what is queued and stop.
func (c *conn) closeQueue() {
	c.once.Do(func() {
		c.mu.Lock()
		c.shut = true
		c.room.Broadcast()
		c.mu.Unlock()
		close(c.closed)
	})
}

// discard drops what is still queued, once the writer has stopped.
func (c *conn) discard() {
	c.mu.Lock()
	c.d.queuedTotal.Add(-int64(c.queued))
	c.q, c.queued = nil, 0
	c.room.Broadcast()
	c.mu.Unlock()
}

// kill closes the socket at once.
func (c *conn) kill() {
	c.closeQueue()
	if c.nc != nil {
		c.nc.Close()
	}
}

// write dials if needed and writes queued frames, flushing whenever the
// queue runs dry. It ends on an error, on idleness or when closed, and
// removes the conn so the next send starts afresh.
func (c *conn) write() {
	d := c.d
	defer d.wg.Done()
	defer func() {
		d.mu.Lock()
		if d.conns[c.addr] == c {
			delete(d.conns, c.addr)
		}
		d.mu.Unlock()
		c.closeQueue()
		c.discard()
		if c.nc != nil && c.addr[0] != '@' {
			c.nc.Close()
		}
	}()
	if c.nc == nil {
		nc, err := net.DialTimeout("tcp", c.addr, d.cfg.DialTimeout)
		if err != nil {
			d.Stats.DialFailures.Add(1)
			d.cfg.Log.Debug("dial failed", "peer", c.addr, "err", err)
			return
		}
		if tc, ok := nc.(*net.TCPConn); ok {
			tc.SetNoDelay(true)
		}
		if d.cfg.TLS != nil {
			tc := tls.Client(nc, d.cfg.TLS.ClientConfig(c.addr))
			tc.SetDeadline(time.Now().Add(d.cfg.DialTimeout))
			if err := tc.Handshake(); err != nil {
				nc.Close()
				d.Stats.DialFailures.Add(1)
				d.tlsRefused(nc, err)
				return
			}
			tc.SetDeadline(time.Time{})
			nc = tc
		}
		d.mu.Lock() // RecheckCertificates reads it
		c.nc = nc
		d.mu.Unlock()
		go c.readReplies()
	}
	failed := false
	defer func() {
		if failed && c.addr[0] == '@' {
			c.nc.Close() // the client's reads fail too, rather than hang
		}
	}()
	bw := bufio.NewWriterSize(deadlineWriter{c.nc, d.cfg.DialTimeout + 5*time.Second}, 64<<10)
	// A dialled connection closes when idle; a route back on an accepted
	// connection lives as long as its reader, which has its own idle limit.
	idle := time.NewTimer(d.cfg.IdleTimeout)
	defer idle.Stop()
	idleC := idle.C
	if c.addr[0] == '@' {
		idleC = nil
	}
	for {
		frame := c.pop()
		if frame == nil {
			if bw.Buffered() > 0 {
				if err := bw.Flush(); err != nil {
					failed = true
					return
				}
			}
			select {
			case <-c.wake:
				continue
			case <-idleC:
				return
			case <-c.closed:
				c.drain(bw)
				return
			}
		}
		_, err := bw.Write(frame)
		c.sent(len(frame))
		if err != nil {
			failed = true
			return
		}
		d.Stats.FramesOut.Add(1)
		idle.Reset(d.cfg.IdleTimeout)
	}
}

// readReplies reads the replies that come back on a connection we
// dialled, until it fails; then the connection is dropped at once (the
// peer may have restarted on the same address), before frames vanish
// into it. Everything read here is from the address we dialled, and
// anything but a reply is dropped as forged.
func (c *conn) readReplies() {
	d := c.d
	defer c.kill()
	fr := newFrameReader(d, c.nc)
	for {
		// No idle limit here: the writer closes the connection when idle.
		e, ch, err := fr.next(time.Time{}, true)
		if err != nil {
			d.readFailed(c.addr, err)
			return
		}
		if e.Kind != wire.Reply || e.From.Addr != c.addr {
			d.release(ch)
			d.forged(c.nc, e, "not a reply from the address dialled")
			continue
		}
		d.postMsg(node.MsgIn{From: c.addr, Env: e}, ch)
	}
}

// deadlineWriter gives every write to the socket its own deadline, so that
// a peer that stops reading cannot stall the writer, however long ago the
// last write was.
type deadlineWriter struct {
	nc net.Conn
	d  time.Duration
}

func (w deadlineWriter) Write(p []byte) (int, error) {
	w.nc.SetWriteDeadline(time.Now().Add(w.d))
	return w.nc.Write(p)
}

// drain writes whatever is still queued, then flushes.
func (c *conn) drain(bw *bufio.Writer) {
	for {
		frame := c.pop()
		if frame == nil {
			bw.Flush()
			return
		}
		_, err := bw.Write(frame)
		c.sent(len(frame))
		if err != nil {
			return
		}
		c.d.Stats.FramesOut.Add(1)
	}
}
