package tcp

import (
	"bufio"
	"crypto/tls"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

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
// an accepted connection reads a request only while its reply has room
// (see waitRoom), so a client that asks and never reads is held by TCP,
// not by our memory, and one that asks fast gets every reply.
type conn struct {
	d    *Driver
	addr string
	nc   net.Conn // set for routes back on accepted connections; dialled for peers
	peer string   // for a route back to a peer: its proven address
	// answered is set once a reply has been queued on a client's route:
	// the client has completed a request, and is known (see Driver).
	answered atomic.Bool

	mu     sync.Mutex
	q      [][]byte
	queued int  // bytes in q and in the writer's hands
	shut   bool // closeQueue was called: no more frames
	wake   chan struct{}
	// raw is the socket of a plain TCP connection once it is connected,
	// for writes the loop makes itself (writeInline); nil with TLS.
	raw syscall.RawConn
	// owner is who writes to the socket now: nobody, the writer (from
	// the frame it takes until it has flushed and found the queue
	// empty), or the loop's writeInline.
	owner owner
	// inlineFrames counts frames writeInline wrote whole: activity the
	// writer's idle timer must see.
	inlineFrames atomic.Uint64
	// inService holds, oldest first, each request read on this accepted
	// connection and not yet answered, with the room it holds for its
	// reply (Driver.roomFor; see waitRoom). expiry gives back the room of
	// those unanswered after serviceTimeout.
	inService []service
	reserved  int // the room the requests in service hold
	expiry    *time.Timer

	once   sync.Once
	closed chan struct{}
}

// owner is who holds a connection's socket for writing.
type owner uint8

const (
	ownerNone owner = iota
	ownerWriter
	ownerInline
)

func newConn(d *Driver, addr string) *conn {
	return &conn{d: d, addr: addr, wake: make(chan struct{}, 1), closed: make(chan struct{})}
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

// pop takes the oldest queued frame, or nil; the writer owns the socket
// from then on, until letGo. It takes none while writeInline writes.
func (c *conn) pop() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.q) == 0 || c.owner == ownerInline {
		return nil
	}
	c.owner = ownerWriter
	f := c.q[0]
	c.q[0] = nil
	c.q = c.q[1:]
	if len(c.q) == 0 {
		c.q = nil // let the backing array go
	}
	return f
}

// letGo gives up the writer's hold on the socket once it has flushed
// everything, unless frames wait (then it reports true: go on writing).
func (c *conn) letGo() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.owner == ownerInline {
		return false // writeInline wakes the writer if it leaves frames
	}
	if len(c.q) > 0 {
		return true
	}
	c.owner = ownerNone
	return false
}

// inlineBusy reports whether writeInline holds the socket with frames
// queued behind it.
func (c *conn) inlineBusy() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.owner == ownerInline && len(c.q) > 0
}

// inlineMax is the largest frame writeInline writes.
const inlineMax = 16 << 10

// writeInline writes frame to the socket from the caller's goroutine (the
// event loop), when the connection is plain TCP, connected, with nothing
// queued and nobody writing: one non-blocking write(2), no hand-off to
// the writer goroutine and no wake-up of it. What the socket does not
// take at once (its buffer is full, or the write failed) is queued ahead
// of anything else for the writer, which waits for room, or meets the
// error and closes the connection. It reports false, having done
// nothing, when the frame must be queued instead, and for a frame over
// inlineMax: copying a block into the socket is the writer's work, beside
// the loop's, not in its way.
func (c *conn) writeInline(frame []byte) bool {
	if len(frame) > inlineMax {
		return false
	}
	c.mu.Lock()
	raw := c.raw
	if raw == nil || c.shut || c.owner != ownerNone || len(c.q) > 0 {
		c.mu.Unlock()
		return false
	}
	c.owner = ownerInline
	c.mu.Unlock()
	n := 0
	raw.Write(func(fd uintptr) bool {
		if k, err := unix.Write(int(fd), frame); err == nil {
			n = k
		}
		return true // never wait for room: the writer does
	})
	c.mu.Lock()
	defer c.mu.Unlock()
	c.owner = ownerNone
	switch rest := frame[n:]; {
	case len(rest) == 0:
		c.inlineFrames.Add(1)
		c.d.Stats.FramesOut.Add(1)
		c.d.Stats.InlineFrames.Add(1)
	case c.shut:
		c.d.Stats.QueueDrops.Add(1) // the writer has stopped: nothing writes it
	default:
		c.q = append([][]byte{rest}, c.q...)
		c.queued += len(rest)
		c.d.queuedTotal.Add(int64(len(rest)))
	}
	if len(c.q) > 0 {
		// The rest of frame, or frames another goroutine queued while
		// this one wrote (the writer found the socket taken).
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
	return true
}

// sent gives back the bytes of a frame the writer has written (or given
// up on), and wakes readers waiting for room.
func (c *conn) sent(n int) {
	c.mu.Lock()
	c.queued -= n
	c.d.queuedTotal.Add(-int64(n))
	c.mu.Unlock()
	c.d.replyRoom.notify()
}

// pauseAt is the bytes, queued and reserved for replies, past which the
// connection's reader stops.
func (c *conn) pauseAt() int { return c.d.cfg.MaxQueuedBytes / 2 }

// waitRoom waits until a request read now would have room for its reply:
// until the bytes queued on this route, with the room each request in
// service holds and a block's room for one more, are within pauseAt, and
// the same across the node within half of MaxQueuedBytesTotal. A reply of
// up to twice its room then never finds its queue full: the replies of
// the requests read fit in the half left. Nothing queued and nothing in
// service always leaves room here, so the wait ends as writers drain,
// requests are answered or expire, and routes close (a client that reads
// nothing fails the writer's deadline).
func (c *conn) waitRoom() {
	paused := false
	for {
		changed := c.d.replyRoom.watch()
		if c.hasRoom() {
			return
		}
		if !paused {
			c.d.Stats.ReadPauses.Add(1)
			paused = true
		}
		select {
		case <-changed:
		case <-c.closed:
			return
		}
	}
}

// hasRoom reports whether one more request in service fits (see
// waitRoom): its type is not known before it is read, so it counts as one
// whose reply may carry a block.
func (c *conn) hasRoom() bool {
	d := c.d
	est := d.roomFor(true)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.shut {
		return true
	}
	mine := c.queued + c.reserved + est
	all := d.queuedTotal.Load() + d.reservedTotal.Load() + int64(est)
	return mine <= c.pauseAt() && all <= int64(d.cfg.MaxQueuedBytesTotal/2)
}

// service is a request in service on an accepted connection: the room it
// holds for its reply, until when, and its request id (its reply's).
type service struct {
	until time.Time
	id    uint64
	room  int
}

// serviceTimeout is how long a request in service holds room for its
// reply: past it, its caller has given up (a peer's call waits 4 s at
// most), and a request never answered, or answered on another route,
// must not hold the connection for good.
const serviceTimeout = 10 * time.Second

// serve notes a request read on this accepted connection and handed to
// the loop: it holds room bytes for its reply until settle or
// serviceTimeout.
func (c *conn) serve(id uint64, room int) {
	d := c.d
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.shut {
		return // the writer has stopped, or will: no reply goes out
	}
	c.inService = append(c.inService, service{time.Now().Add(serviceTimeout), id, room})
	c.reserved += room
	d.reservedTotal.Add(int64(room))
	if c.expiry == nil {
		c.expiry = time.AfterFunc(serviceTimeout, c.expire)
	}
}

// settle gives back the room of the request in service that id answers,
// once its reply has been queued (or dropped) on this route.
func (c *conn) settle(id uint64) {
	c.mu.Lock()
	i := slices.IndexFunc(c.inService, func(s service) bool { return s.id == id })
	if i >= 0 {
		c.release(c.inService[i])
		c.inService = slices.Delete(c.inService, i, i+1)
	}
	c.mu.Unlock()
	if i >= 0 {
		c.d.replyRoom.notify()
	}
}

// expire gives back the room of the requests in service past
// serviceTimeout, and waits for the next.
func (c *conn) expire() {
	now := time.Now()
	c.mu.Lock()
	n := 0
	for n < len(c.inService) && !c.inService[n].until.After(now) {
		c.release(c.inService[n])
		n++
	}
	c.inService = slices.Delete(c.inService, 0, n)
	c.expiry = nil
	if len(c.inService) > 0 && !c.shut {
		c.expiry = time.AfterFunc(c.inService[0].until.Sub(now), c.expire)
	}
	c.mu.Unlock()
	if n > 0 {
		c.d.replyRoom.notify()
	}
}

// release gives back the room s holds; c.mu is held.
func (c *conn) release(s service) {
	c.reserved -= s.room
	c.d.reservedTotal.Add(-int64(s.room))
}

// closeQueue asks the writer to flush what is queued and stop.
func (c *conn) closeQueue() {
	c.once.Do(func() {
		c.mu.Lock()
		c.shut = true
		c.mu.Unlock()
		close(c.closed)
	})
}

// discard drops what is still queued, and the room held for replies,
// once the writer has stopped.
func (c *conn) discard() {
	c.mu.Lock()
	c.d.queuedTotal.Add(-int64(c.queued))
	c.q, c.queued = nil, 0
	for _, s := range c.inService {
		c.release(s)
	}
	c.inService = nil
	if c.expiry != nil {
		c.expiry.Stop()
		c.expiry = nil
	}
	c.mu.Unlock()
	c.d.replyRoom.notify()
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
		c.setRaw(nc)
		go c.readReplies()
	}
	failed := false
	defer func() {
		if failed && c.addr[0] == '@' {
			c.nc.Close() // the client's reads fail too, rather than hang
		}
	}()
	bw := bufio.NewWriterSize(deadlineWriter{c.nc, d.cfg.WriteTimeout}, 64<<10)
	// A dialled connection closes when idle; a route back on an accepted
	// connection lives as long as its reader, which has its own idle limit.
	idle := time.NewTimer(d.cfg.IdleTimeout)
	defer idle.Stop()
	idleC := idle.C
	if c.addr[0] == '@' {
		idleC = nil
	}
	seen := c.inlineFrames.Load()
	for {
		frame := c.pop()
		if frame == nil {
			if bw.Buffered() > 0 {
				if err := bw.Flush(); err != nil {
					failed = true
					return
				}
			}
			if c.letGo() {
				continue
			}
			// The last write's deadline would pass while the writer
			// waits, and a socket past its write deadline refuses
			// writeInline's write too: clear it (each write sets its own).
			c.nc.SetWriteDeadline(time.Time{})
			select {
			case <-c.wake:
				continue
			case <-idleC:
				if n := c.inlineFrames.Load(); n != seen {
					seen = n // the loop wrote frames itself meanwhile: not idle
					idle.Reset(d.cfg.IdleTimeout)
					continue
				}
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

// setRaw lets the loop write to nc itself (writeInline) if it is a plain
// TCP connection.
func (c *conn) setRaw(nc net.Conn) {
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return
	}
	c.mu.Lock()
	c.raw = raw
	c.mu.Unlock()
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
		if frame == nil && c.inlineBusy() {
			// writeInline holds the socket; it wakes the writer when it
			// is done if it left frames behind it.
			select {
			case <-c.wake:
			case <-time.After(time.Second):
			}
			continue
		}
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

// signal wakes goroutines that wait for a change: watch gives a channel
// that the next notify closes. Nothing is closed while nobody watches.
type signal struct {
	mu      sync.Mutex
	ch      chan struct{}
	watched bool
}

func (s *signal) watch() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	s.watched = true
	return s.ch
}

func (s *signal) notify() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.watched {
		close(s.ch)
		s.ch, s.watched = make(chan struct{}), false
	}
}
