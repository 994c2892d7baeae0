package net

import (
	"bufio"
	gonet "net"
	"sync"
	"time"
)

// conn is one outbound stream: to a peer's listen address (dialled on
// first use) or back to a client over the connection it came in on. A
// single writer goroutine owns the socket.
type conn struct {
	d    *Driver
	addr string
	q    chan []byte
	nc   gonet.Conn // set for client routes; dialled for peers

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
		c.nc = nc
		// Peers never send on a connection we dialled, so a read that
		// returns means the peer is gone (it may have restarted on the same
		// address): drop the connection now, before frames vanish into it.
		go func() {
			var b [1]byte
			nc.Read(b[:])
			c.kill()
		}()
	}
	failed := false
	defer func() {
		if failed && c.addr[0] == '@' {
			c.nc.Close() // the client's reads fail too, rather than hang
		}
	}()
	bw := bufio.NewWriterSize(deadlineWriter{c.nc, d.cfg.DialTimeout + 5*time.Second}, 64<<10)
	idle := time.NewTimer(d.cfg.IdleTimeout)
	defer idle.Stop()
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
			case <-idle.C:
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
