package nntpd

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"triad/internal/nntp"
	"triad/internal/usenet"
)

// Perm is what a connection may do.
type Perm uint8

// Permissions.
const (
	PermRead     Perm = 1 << iota // GROUP, ARTICLE, OVER, ...
	PermPost                      // POST
	PermFeed                      // IHAVE, CHECK, TAKETHIS
	PermAnnounce                  // TAKEDHT: a peer site of the same ring (never granted by address)
	PermAdmin                     // XNEWGROUP, XRMGROUP, XFEEDS, XPAUSE, XRESUME: the operator (triad news)
)

// Config configures a Server. Zero fields take the defaults noted.
type Config struct {
	Site *usenet.Site
	Log  *slog.Logger

	// Open is what a client gets without a password, by address. By
	// default loopback clients may read, post and feed, and nobody else
	// may do anything until they authenticate.
	Open func(addr netip.Addr) Perm
	// Users, if set, accept AUTHINFO USER/PASS (see LoadUsers).
	Users *Users
	// TLSPeer says who the client of a TLS connection is and what it may
	// do, from its verified certificate: Serve a tls.NewListener whose
	// configuration requires client certificates, and a peer site is known
	// by its certificate, never by a name it sends. An error, or no
	// permission, refuses the connection; nil refuses every TLS client.
	TLSPeer func(tls.ConnectionState) (name string, perm Perm, err error)

	MaxConns    int           // connections at once (5,000)
	MaxPerAddr  int           // connections at once from one address (2,000)
	IdleTimeout time.Duration // a client silent this long is dropped (10 min)
	// WriteTimeout drops a client that takes none of a reply for this
	// long, so a reader that stalls pins its buffers no longer (1 min).
	WriteTimeout time.Duration
	Streams      int // TAKETHIS in flight per connection (64)
	// ReadAhead, above zero, is how many articles past the one read a
	// connection reading a group in order has the site fetch into its
	// cache (usenet.Site.Prefetch), so that the DHT's round trip for the
	// next ones runs while this one is sent. Zero: none.
	ReadAhead int
	// Admin is what an operator's feed commands act on; nil: XFEEDS,
	// XPAUSE and XRESUME answer 503.
	Admin Admin
}

// Admin is a site's feeds as the operator's commands see them.
type Admin interface {
	// Peers are the sites this one feeds, each its name and address.
	Peers() []PeerAddr
	// Feeds are the feeds' states, a line each, as feeds.status has them.
	Feeds() []string
	// PauseFeeds holds (pause) or lets go the feeds to peer, or to every
	// peer when peer is "".
	PauseFeeds(peer string, pause bool) error
}

// PeerAddr is a peer site's name and the address its feed goes to.
type PeerAddr struct{ Name, Addr string }

func (c Config) withDefaults() Config {
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	if c.Open == nil {
		c.Open = LoopbackOnly
	}
	if c.MaxConns <= 0 {
		c.MaxConns = 5000
	}
	if c.MaxPerAddr <= 0 {
		c.MaxPerAddr = 2000
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = 10 * time.Minute
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = time.Minute
	}
	if c.Streams <= 0 {
		c.Streams = 64
	}
	return c
}

// LoopbackOnly lets loopback clients read, post and feed, and nobody else
// do anything without a password: a fresh INN on localhost behaves so.
func LoopbackOnly(a netip.Addr) Perm {
	if a.Unmap().IsLoopback() {
		return PermRead | PermPost | PermFeed
	}
	return 0
}

// Server serves NNTP (RFC 3977, RFC 4644 streaming, RFC 4643 AUTHINFO).
type Server struct {
	cfg Config

	// replies counts the replies sent, by status code (100-599).
	replies [600]atomic.Uint64
	// accepted counts connections taken, refused those closed on arrival
	// (past MaxConns or MaxPerAddr).
	accepted, refused atomic.Uint64
	// tlsRefused counts TLS connections whose handshake failed or whose
	// certificate names no peer.
	tlsRefused atomic.Uint64

	mu     sync.Mutex
	conns  map[*conn]bool
	byAddr map[netip.Addr]int
	ln     []net.Listener
	closed bool
	wg     sync.WaitGroup
}

// count counts a reply by the status code its first line starts with.
func (s *Server) count(reply []byte) {
	if len(reply) >= 3 && '1' <= reply[0] && reply[0] <= '5' && '0' <= reply[1] && reply[1] <= '9' && '0' <= reply[2] && reply[2] <= '9' {
		s.replies[int(reply[0]-'0')*100+int(reply[1]-'0')*10+int(reply[2]-'0')].Add(1)
	}
}

// Stats are a server's counters since it started.
type Stats struct {
	Replies           map[int]uint64 // by status code, those sent at least once
	Connections       int            // open now
	Accepted, Refused uint64         // connections taken and closed on arrival
	TLSRefused        uint64         // TLS clients refused: a failed handshake, or not a peer
}

// Stats returns the server's counters.
func (s *Server) Stats() Stats {
	st := Stats{Replies: map[int]uint64{}, Accepted: s.accepted.Load(), Refused: s.refused.Load(), TLSRefused: s.tlsRefused.Load()}
	for code := range s.replies {
		if n := s.replies[code].Load(); n > 0 {
			st.Replies[code] = n
		}
	}
	s.mu.Lock()
	st.Connections = len(s.conns)
	s.mu.Unlock()
	return st
}

// NewServer makes a server for cfg.Site.
func NewServer(cfg Config) *Server {
	return &Server{cfg: cfg.withDefaults(), conns: map[*conn]bool{}, byAddr: map[netip.Addr]int{}}
}

// Serve accepts connections until the listener is closed.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return net.ErrClosed
	}
	s.ln = append(s.ln, ln)
	s.mu.Unlock()
	for {
		nc, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			return err
		}
		s.wg.Add(1)
		go s.handle(nc)
	}
}

// handshakeTimeout bounds a TLS client's handshake.
const handshakeTimeout = 5 * time.Second

// Close stops accepting, closes every connection and waits for them.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	for _, ln := range s.ln {
		ln.Close()
	}
	for c := range s.conns {
		c.nc.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

// Conns is the number of open connections.
func (s *Server) Conns() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

func (s *Server) handle(nc net.Conn) {
	defer s.wg.Done()
	addr := remoteAddr(nc)
	c := newConn(s, nc, addr)
	s.mu.Lock()
	full := ""
	switch {
	case s.closed:
		full = "Server shutting down"
	case len(s.conns) >= s.cfg.MaxConns:
		full = "Too many connections, try later"
	case s.byAddr[addr] >= s.cfg.MaxPerAddr:
		full = "Too many connections from your address, try later"
	}
	if full == "" {
		s.conns[c] = true
		s.byAddr[addr]++
	}
	s.mu.Unlock()
	if full != "" {
		s.refused.Add(1)
		nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
		nc.Write(statusLine(nntp.CodeUnavailable, "%s", full))
		nc.Close()
		return
	}
	s.accepted.Add(1)
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		if s.byAddr[addr]--; s.byAddr[addr] <= 0 {
			delete(s.byAddr, addr)
		}
		s.mu.Unlock()
		nc.Close()
	}()
	c.serve()
}

func remoteAddr(nc net.Conn) netip.Addr {
	if ta, ok := nc.RemoteAddr().(*net.TCPAddr); ok {
		if a, ok := netip.AddrFromSlice(ta.IP); ok {
			return a.Unmap()
		}
	}
	return netip.Addr{}
}

// conn is one client connection. One goroutine reads and runs commands;
// TAKETHIS articles are stored on goroutines of their own, and every reply
// is written in command order through seq.
type conn struct {
	s    *Server
	site *usenet.Site
	list *usenet.List // the site's
	nc   net.Conn
	addr netip.Addr
	r    *bufio.Reader // small while the client only sends commands; see bigReader
	big  bool
	seq  sequencer

	perm    Perm
	user    string // after AUTHINFO USER, before PASS
	authed  bool
	group   string // selected group
	current uint64 // current article number, 0 for none
	// lastRead is the number of the last article read in readGroup, and
	// aheadTo the highest number read-ahead has asked for (readAhead).
	readGroup         string
	lastRead, aheadTo uint64
	jobs              chan func()    // to the stream workers
	anns              chan annJob    // to the announcer, once a TAKEDHT came
	workers           int            // stream workers started (by the reading goroutine)
	streamWG          sync.WaitGroup // the stream workers
}

func newConn(s *Server, nc net.Conn, addr netip.Addr) *conn {
	c := &conn{s: s, site: s.cfg.Site, list: s.cfg.Site.List(), nc: nc, addr: addr, r: bufio.NewReaderSize(nc, smallReader),
		perm: s.cfg.Open(addr), jobs: make(chan func())}
	c.seq.init(c)
	return c
}

func (c *conn) serve() {
	defer func() {
		close(c.jobs)
		if c.anns != nil {
			close(c.anns)
		}
		c.streamWG.Wait()
	}()
	if tc, ok := c.nc.(*tls.Conn); ok && !c.knowPeer(tc) {
		return
	}
	switch {
	case c.perm&PermPost != 0:
		c.reply(nntp.CodePostingAllowed, "%s triad NNTP server ready, posting allowed", c.site.PathHost())
	case c.perm != 0:
		c.reply(nntp.CodePostingProhibited, "%s triad NNTP server ready, no posting", c.site.PathHost())
	case c.s.cfg.Users != nil:
		c.reply(nntp.CodePostingProhibited, "%s triad NNTP server ready, authentication required", c.site.PathHost())
	default:
		c.reply(nntp.CodeAccessDenied, "You have no permission to talk to this server")
		return
	}
	for {
		if !c.pipelined() && !c.seq.flushReady() {
			return
		}
		c.nc.SetReadDeadline(time.Now().Add(c.s.cfg.IdleTimeout))
		line, err := nntp.ReadLine(c.r, nntp.MaxCommandLine)
		if err == nntp.ErrLineTooLong {
			c.reply(nntp.CodeSyntaxError, "Command line longer than %d octets", nntp.MaxCommandLine)
			continue
		}
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				c.reply(nntp.CodeUnavailable, "Idle timeout, closing connection")
			}
			return
		}
		if !c.command(string(line)) {
			return
		}
	}
}

// knowPeer finishes a TLS client's handshake and takes who it is from its
// certificate (Config.TLSPeer). It reports false, and has refused the
// client, if the handshake failed or the certificate names no peer.
func (c *conn) knowPeer(tc *tls.Conn) bool {
	tc.SetDeadline(time.Now().Add(handshakeTimeout))
	err := tc.Handshake()
	tc.SetDeadline(time.Time{})
	if err != nil {
		c.s.tlsRefused.Add(1)
		c.s.cfg.Log.Debug("TLS handshake failed", "addr", c.addr, "err", err)
		return false
	}
	name, perm, err := "", Perm(0), errors.New("no peers are known by certificate here")
	if c.s.cfg.TLSPeer != nil {
		name, perm, err = c.s.cfg.TLSPeer(tc.ConnectionState())
	}
	if err == nil && perm == 0 {
		err = errors.New("no permission")
	}
	if err != nil {
		c.s.tlsRefused.Add(1)
		c.s.cfg.Log.Warn("refused a TLS client", "addr", c.addr, "name", name, "err", err)
		c.reply(nntp.CodeAccessDenied, "%.80s: %.200v", name, err)
		return false
	}
	c.perm, c.user, c.authed = perm, name, true
	return true
}

// reply queues a one-line reply in command order.
func (c *conn) reply(code nntp.Code, format string, args ...any) bool {
	return c.send(statusLine(code, format, args...))
}

// replySoon is reply for a command a client pipelines in runs (CHECK):
// while another whole command waits in the read buffer, the reply waits
// to leave with the next one written.
func (c *conn) replySoon(code nntp.Code, format string, args ...any) bool {
	n := c.seq.take()
	if c.pipelined() {
		c.seq.queue(n, statusLine(code, format, args...))
		return true
	}
	return c.seq.write(n, statusLine(code, format, args...))
}

// pipelined reports whether a whole command line waits in the read
// buffer.
func (c *conn) pipelined() bool {
	n := c.r.Buffered()
	if n == 0 {
		return false
	}
	b, _ := c.r.Peek(n)
	return bytes.IndexByte(b, '\n') >= 0
}

// statusLine formats a status line: the code, a space, the text and CRLF.
// A line break inside the text (an error's, say: errors.Join writes one)
// becomes a space, since it would end the reply early and put the rest of
// the text where the client reads the next reply.
func statusLine(code nntp.Code, format string, args ...any) []byte {
	b := strconv.AppendInt(make([]byte, 0, 64), int64(code), 10)
	b = append(b, ' ')
	start := len(b)
	b = fmt.Appendf(b, format, args...)
	for i := start; i < len(b); i++ {
		if b[i] == '\r' || b[i] == '\n' {
			b[i] = ' '
		}
	}
	return append(b, "\r\n"...)
}

// send writes a whole reply, made of one or more pieces, with one system
// call (writev), in its turn.
func (c *conn) send(pieces ...[]byte) bool {
	n := c.seq.take()
	return c.seq.write(n, pieces...)
}

// sequencer writes replies in the order their commands came, although
// TAKETHIS replies are made on stream workers in any order. Replies that
// are ready in a row leave in one writev: a group commit finishes many
// TAKETHIS articles at once, and their replies share a system call.
type sequencer struct {
	c       *conn
	mu      sync.Mutex
	cond    *sync.Cond
	issued  uint64
	next    uint64              // the first reply not yet written
	ready   map[uint64][][]byte // replies waiting for their turn
	writing bool                // a writer is in the system call
	failed  bool
}

func (q *sequencer) init(c *conn) {
	q.c = c
	q.cond = sync.NewCond(&q.mu)
	q.ready = map[uint64][][]byte{}
}

func (q *sequencer) take() uint64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := q.issued
	q.issued++
	return n
}

// A connection reads commands through a small buffer, so that thousands
// of idle readers cost little; the first article it sends moves it to a
// big one (bigReader), which feeds keep.
const (
	smallReader = 4 << 10
	bigReader   = 64 << 10
)

// growReader gives the connection its big read buffer, keeping whatever
// the small one holds: the big reader reads through it, and reads of a
// buffer's size or more go straight to the socket.
func (c *conn) growReader() {
	if !c.big {
		c.r = bufio.NewReaderSize(c.r, bigReader)
		c.big = true
	}
}

// maxCoalesced bounds the replies one writev carries.
const maxCoalesced = 256

// write queues reply n and returns once it is written (the caller may then
// reuse its pieces), false if the connection has failed. Whoever finds the
// next reply ready writes it with every ready one after it.
func (q *sequencer) write(n uint64, pieces ...[]byte) bool {
	q.c.s.count(pieces[0])
	q.mu.Lock()
	defer q.mu.Unlock()
	q.ready[n] = pieces
	return q.flushThrough(n)
}

// writeEach queues the one-piece replies ns[i] = replies[i] and writes
// them as write does, so that a batch finished at once (announcements)
// leaves in one writev rather than one system call per reply.
func (q *sequencer) writeEach(ns []uint64, replies [][]byte) bool {
	if len(ns) == 0 {
		return true
	}
	for _, r := range replies {
		q.c.s.count(r)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	last := ns[0]
	for i, n := range ns {
		q.ready[n] = [][]byte{replies[i]}
		last = max(last, n)
	}
	return q.flushThrough(last)
}

// flushThrough writes ready replies in order until reply n is out, and
// then whatever is ready after it while no one else writes (replies
// queued to go with a later one, see queue). q.mu is held.
func (q *sequencer) flushThrough(n uint64) bool {
	for {
		_, ok := q.ready[q.next]
		if q.next > n && (!ok || q.writing) {
			break // another writer takes what is ready after ours
		}
		if q.writing || !ok {
			q.cond.Wait()
			continue
		}
		var bufs net.Buffers
		first, count := q.next, uint64(0)
		for p, ok := q.ready[first]; ok && count < maxCoalesced; p, ok = q.ready[first+count] {
			bufs = append(bufs, p...)
			delete(q.ready, first+count)
			count++
		}
		q.writing = true
		failed := q.failed
		q.mu.Unlock()
		if !failed {
			q.c.nc.SetWriteDeadline(time.Now().Add(q.c.s.cfg.WriteTimeout))
			if _, err := bufs.WriteTo(q.c.nc); err != nil {
				failed = true
				q.c.nc.Close() // the reader stops too
			}
		}
		q.mu.Lock()
		q.writing = false
		q.next += count
		q.failed = q.failed || failed
		q.cond.Broadcast()
	}
	return !q.failed
}

// queue makes reply n ready without writing it: it leaves with the next
// reply written, or at the latest when the reader has no command left to
// read (flushReady). For a pipelined run of CHECKs, whose replies would
// each take a system call. The reply must be the caller's to give away.
func (q *sequencer) queue(n uint64, reply []byte) {
	q.c.s.count(reply)
	q.mu.Lock()
	defer q.mu.Unlock()
	q.ready[n] = [][]byte{reply}
	q.cond.Broadcast() // a later reply's writer may wait for this one
}

// flushReady writes the replies ready in order, unless another writer is
// at it (it takes them).
func (q *sequencer) flushReady() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if _, ok := q.ready[q.next]; !ok {
		return !q.failed
	}
	return q.flushThrough(q.next)
}

// stream writes reply n as a run of chunks, for replies too long to hold
// whole (OVER of a large range): once every earlier reply is out, fn
// produces the chunks and calls put for each; put writes it at once and
// reports false once the connection has failed. Later replies wait.
func (q *sequencer) stream(n uint64, fn func(put func([]byte) bool)) bool {
	q.mu.Lock()
	for q.next < n || q.writing {
		q.cond.Wait()
	}
	q.writing = true
	failed := q.failed
	q.mu.Unlock()
	first := true
	fn(func(b []byte) bool {
		if first {
			q.c.s.count(b)
			first = false
		}
		if failed {
			return false
		}
		q.c.nc.SetWriteDeadline(time.Now().Add(q.c.s.cfg.WriteTimeout))
		if _, err := q.c.nc.Write(b); err != nil {
			failed = true
			q.c.nc.Close() // the reader stops too
		}
		return !failed
	})
	q.mu.Lock()
	q.writing = false
	q.next++
	q.failed = q.failed || failed
	q.cond.Broadcast()
	q.mu.Unlock()
	return !failed
}

// sendStream sends a reply of chunks in its turn (see sequencer.stream).
func (c *conn) sendStream(fn func(put func([]byte) bool)) bool {
	return c.seq.stream(c.seq.take(), fn)
}

// stream runs job on one of the connection's stream workers: an idle one,
// else a new one while fewer than Streams run, else the first to finish.
// Workers live as long as the connection and keep the stacks they grew;
// a goroutine per article grew its stack anew every time.
func (c *conn) stream(job func()) {
	select {
	case c.jobs <- job:
		return
	default:
	}
	if c.workers < c.s.cfg.Streams {
		c.workers++
		c.streamWG.Add(1)
		go func() {
			defer c.streamWG.Done()
			for job := range c.jobs {
				job()
			}
		}()
	}
	c.jobs <- job
}
