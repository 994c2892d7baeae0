package net

import (
	"bufio"
	"crypto/tls"
	gonet "net"
	"sync"
	"time"

	"triad/internal/node"
	"triad/internal/wire"
)

// conn is one outbound stream: to a peer's listen address (dialled on
// first use) or back to a client over the connection it came in on. A
// single writer goroutine owns the socket.
type conn struct {
	d    *Driver
	addr string
	q    chan []byte
	nc   gonet.Conn // set for routes back on accepted connections; dialled for peers
	peer string     // for a route back to a peer: its proven address

	once   sync.Once
	closed chan struct{}
}

func newConn(d *Driver, addr string) *conn {
	return &conn{d: d, addr: addr, q: make(chan []byte, d.cfg.SendQueue), closed: make(chan struct{})}
}

// enqueue queues a frame without blocking; false means the queue is full
// or closed and the frame was dropped.
func (c *conn) enqueue(frame []byte) bool {
	select {
	case <-c.closed:
		return false
	default:
	}
	select {
	case c.q <- frame:
		return true
	default:
		return false
	}
}

// closeQueue asks the writer to flush what is queued and stop.
func (c *conn) closeQueue() { c.once.Do(func() { close(c.closed) }) }

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
		if c.nc != nil && c.addr[0] != '@' {
			c.nc.Close()
		}
	}()
	if c.nc == nil {
		nc, err := gonet.DialTimeout("tcp", c.addr, d.cfg.DialTimeout)
		if err != nil {
			d.Stats.DialFailures.Add(1)
			d.cfg.Log.Debug("dial failed", "peer", c.addr, "err", err)
			return
		}
		if tc, ok := nc.(*gonet.TCPConn); ok {
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
		var frame []byte
		select {
		case frame = <-c.q:
		default:
			if bw.Buffered() > 0 {
				if err := bw.Flush(); err != nil {
					failed = true
					return
				}
			}
			select {
			case frame = <-c.q:
			case <-idleC:
				return
			case <-c.closed:
				c.drain(bw)
				return
			}
		}
		if _, err := bw.Write(frame); err != nil {
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
		e, size, err := fr.next(time.Time{})
		if err != nil {
			d.readFailed(c.addr, err)
			return
		}
		if e.Kind != wire.Reply || e.From.Addr != c.addr {
			d.inflight.release(size)
			d.forged(c.nc, e, "not a reply from the address dialled")
			continue
		}
		d.postMsg(node.MsgIn{From: c.addr, Env: e}, size)
	}
}

// deadlineWriter gives every write to the socket its own deadline, so that
// a peer that stops reading cannot stall the writer, however long ago the
// last write was.
type deadlineWriter struct {
	nc gonet.Conn
	d  time.Duration
}

func (w deadlineWriter) Write(p []byte) (int, error) {
	w.nc.SetWriteDeadline(time.Now().Add(w.d))
	return w.nc.Write(p)
}

// drain writes whatever is still queued, then flushes.
func (c *conn) drain(bw *bufio.Writer) {
	for {
		select {
		case frame := <-c.q:
			if _, err := bw.Write(frame); err != nil {
				return
			}
			c.d.Stats.FramesOut.Add(1)
		default:
			bw.Flush()
			return
		}
	}
}
