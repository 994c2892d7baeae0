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
	}
	bw := bufio.NewWriterSize(c.nc, 64<<10)
	idle := time.NewTimer(d.cfg.IdleTimeout)
	defer idle.Stop()
	for {
		var frame []byte
		select {
		case frame = <-c.q:
		default:
			if bw.Buffered() > 0 {
				if err := c.flush(bw); err != nil {
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
			return
		}
		d.Stats.FramesOut.Add(1)
		idle.Reset(d.cfg.IdleTimeout)
	}
}

func (c *conn) flush(bw *bufio.Writer) error {
	c.nc.SetWriteDeadline(time.Now().Add(c.d.cfg.DialTimeout + 5*time.Second))
	return bw.Flush()
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
			c.flush(bw)
			return
		}
	}
}
