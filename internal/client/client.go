package client

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"triad/internal/dhash/frag"
	"triad/internal/fault"
	"triad/internal/id"
	"triad/internal/pki"
	"triad/internal/wire"
)

// ErrClosed is returned by calls on a closed or broken client.
var ErrClosed = errors.New("client: connection closed")

// Client is a connection to one node. It is safe for concurrent use.
type Client struct {
	addr  string
	nc    net.Conn    // nil for a Link
	q     chan []byte // frames for nc
	local Link        // the node in this process, or nil

	mu      sync.Mutex
	pending map[uint64]chan reply
	next    uint64
	err     error // set once the connection is gone
	done    chan struct{}
}

type reply struct {
	m   wire.Msg
	err error
}

// handshakeTimeout bounds a TLS handshake with a node.
const handshakeTimeout = 10 * time.Second

// Options configure a client's connections.
type Options struct {
	// TLS, if set, makes the connection mutual TLS 1.3 with the bundle's
	// certificate; the node must present its own, from the same CA,
	// naming the address dialled.
	TLS *pki.Bundle
	// Local, if set, is a node in this process: calls to its address go
	// through the Link it makes, not a socket. A put through it hands
	// the node its blocks' bytes rather than a copy (tcp.Local): the
	// caller must not change them once the put is sent, even if the call
	// fails or times out (the node may still be using them).
	Local *Local
	// From is the vnode a node's own call speaks for, made before its
	// driver runs (Call only): with TLS and a node's certificate, the
	// other node takes only frames that claim the certificate's address
	// and one of its vnodes. Zero for a client.
	From wire.NodeRef
}

// Local is a node in the client's own process (a news site's front-end
// that embeds its node): Attach links a new client to it, given the
// function that client's replies must go to.
type Local struct {
	Addr   string
	Attach func(deliver func(wire.Envelope)) Link
	// Read, if set, reads the node's own whole copy of a key from its
	// storage engine in the caller's goroutine, checked by the engine's
	// CRCs: a get of a key this host holds then costs one read, with no
	// message to the node's loop and no lookup (Cluster.Get). It fails
	// when the node holds no whole copy.
	Read func(key id.ID) (data []byte, expiry time.Time, err error)
}

// A Link carries a client's requests to a node in its own process
// (tcp.Local): no socket and no codec; replies come back through the
// function the link was made with.
type Link interface {
	// Send hands the node e, waiting for room until ctx ends; an error
	// fails this message only, unless the node has stopped (Done).
	Send(ctx context.Context, e wire.Envelope) error
	// Done is closed when the node has stopped: it answers no more.
	Done() <-chan struct{}
	Close()
}

// newClient makes a client of the node at addr; its caller connects it.
func newClient(addr string) *Client {
	return &Client{addr: addr, pending: make(map[uint64]chan reply), done: make(chan struct{})}
}

// attach makes a client of the node in this process.
func attach(l *Local) *Client {
	c := newClient(l.Addr)
	c.local = l.Attach(c.deliver)
	go func() {
		select {
		case <-c.local.Done():
			c.fail(fmt.Errorf("%w: the node in this process has stopped", ErrClosed))
		case <-c.done:
		}
	}()
	return c
}

// Dial connects to the node at addr.
func Dial(ctx context.Context, addr string) (*Client, error) {
	return DialOptions(ctx, addr, Options{})
}

// DialOptions connects to the node at addr with opt.
func DialOptions(ctx context.Context, addr string, opt Options) (*Client, error) {
	if opt.Local != nil && addr == opt.Local.Addr {
		return attach(opt.Local), nil
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	if opt.TLS != nil {
		// Bounded even when ctx is not: a stalled node cannot hold the dial.
		nc.SetDeadline(time.Now().Add(handshakeTimeout))
		tc := tls.Client(nc, opt.TLS.ClientConfig(addr))
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			return nil, fmt.Errorf("client: TLS with %s: %w", addr, err)
		}
		nc.SetDeadline(time.Time{})
		nc = tc
	}
	c := newClient(addr)
	c.nc, c.q = nc, make(chan []byte, 256)
	go c.write()
	go c.read()
	return c, nil
}

// Addr is the node's address.
func (c *Client) Addr() string { return c.addr }

// Close ends the connection; calls in flight fail with ErrClosed.
func (c *Client) Close() error {
	c.fail(ErrClosed)
	return nil
}

func (c *Client) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return
	}
	c.err = err
	close(c.done)
	if c.local != nil {
		c.local.Close()
	} else {
		c.nc.Close()
	}
	for id, ch := range c.pending {
		ch <- reply{err: err}
		delete(c.pending, id)
	}
}

// write sends queued frames, flushing when the queue runs dry, so that
// concurrent calls share system calls.
func (c *Client) write() {
	bw := bufio.NewWriterSize(c.nc, 64<<10)
	for {
		var frame []byte
		select {
		case frame = <-c.q:
		default:
			if bw.Buffered() > 0 {
				if err := bw.Flush(); err != nil {
					c.fail(fmt.Errorf("%w: %v", ErrClosed, err))
					return
				}
			}
			select {
			case frame = <-c.q:
			case <-c.done:
				return
			}
		}
		if _, err := bw.Write(frame); err != nil {
			c.fail(fmt.Errorf("%w: %v", ErrClosed, err))
			return
		}
	}
}

func (c *Client) read() {
	br := bufio.NewReaderSize(c.nc, 64<<10)
	for {
		// Each frame is read into its own buffer, which the decoded reply
		// keeps: a block is copied once, from the socket, not twice.
		frame, err := wire.ReadFrame(br, nil, wire.MaxFrameBytes)
		if err != nil {
			c.fail(fmt.Errorf("%w: %v", ErrClosed, err))
			return
		}
		e, err := wire.DecodeOwned(frame)
		if err != nil {
			c.fail(fmt.Errorf("client: bad frame from %s: %w", c.addr, err))
			return
		}
		c.deliver(e)
	}
}

// deliver hands a reply to the call waiting for it; it never blocks.
func (c *Client) deliver(e wire.Envelope) {
	if e.Kind != wire.Reply {
		return
	}
	c.mu.Lock()
	ch := c.pending[e.ReqID]
	delete(c.pending, e.ReqID)
	c.mu.Unlock()
	if ch == nil {
		return // the caller gave up
	}
	if we, ok := e.Msg.(*wire.Error); ok {
		ch <- reply{err: we}
	} else {
		ch <- reply{m: e.Msg}
	}
}

// Call sends one request and waits for its reply or for ctx. An error
// reply comes back as a *wire.Error, which errors.Is matches against the
// sentinel of its code (fault.ErrNotFound, fault.ErrBusy, ...).
func (c *Client) Call(ctx context.Context, m wire.Msg) (wire.Msg, error) {
	ch := make(chan reply, 1)
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return nil, c.err
	}
	c.next++
	reqID := c.next
	c.pending[reqID] = ch
	c.mu.Unlock()
	e := wire.Envelope{Kind: wire.Request, ReqID: reqID, Msg: m}
	if c.local != nil {
		if err := c.local.Send(ctx, e); err != nil {
			c.forget(reqID)
			select {
			case <-c.local.Done():
				c.fail(fmt.Errorf("%w: the node in this process has stopped", ErrClosed))
				return nil, c.closedErr()
			default:
				return nil, err // this call's alone
			}
		}
		return c.wait(ctx, reqID, ch)
	}
	// Sized first: a batch of blocks is copied into the frame once, not
	// again at each doubling of a growing buffer.
	frame := wire.AppendFrame(make([]byte, 0, wire.Size(e)+4), e)
	select {
	case c.q <- frame:
	case <-ctx.Done():
		c.forget(reqID)
		return nil, ctx.Err()
	case <-c.done:
		return nil, c.closedErr()
	}
	return c.wait(ctx, reqID, ch)
}

// wait waits for the reply to request reqID, or for ctx.
func (c *Client) wait(ctx context.Context, reqID uint64, ch chan reply) (wire.Msg, error) {
	select {
	case r := <-ch:
		return r.m, r.err
	case <-ctx.Done():
		c.forget(reqID)
		return nil, ctx.Err()
	}
}

func (c *Client) forget(reqID uint64) {
	c.mu.Lock()
	delete(c.pending, reqID)
	c.mu.Unlock()
}

func (c *Client) closedErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// PutOptions modify a put.
type PutOptions struct {
	// Expire is how long the block must be kept; zero takes the node's
	// default (30 days).
	Expire time.Duration
	// Redundancy overrides the deployment's choice of replicas or
	// fragments.
	Redundancy wire.Redundancy
}

// Put stores data and returns its key and the nodes holding durable
// copies. A full write window answers fault.ErrBusy: try later. The key of
// whole copies is the content hash, which Put checks; a block stored as
// fragments is keyed by its fragments' descriptor (package frag), which
// the client cannot compute without the node's coding, so that key is
// checked when the block is read (Get).

func (c *Client) Put(ctx context.Context, data []byte, opt PutOptions) (id.ID, []wire.NodeRef, error) {
	return c.put(ctx, data, id.Key(data), opt)
}

// put is Put of a block whose content hash is known.
func (c *Client) put(ctx context.Context, data []byte, hash id.ID, opt PutOptions) (id.ID, []wire.NodeRef, error) {
	m := &wire.ClientPut{Data: data, Redundancy: opt.Redundancy}
	if opt.Expire > 0 {
		m.Expiry = time.Now().Add(opt.Expire).UnixNano()
	}
	r, err := c.Call(ctx, m)
	if err != nil {
		return id.ID{}, nil, err
	}
	done, ok := r.(*wire.PutDone)
	if !ok {
		return id.ID{}, nil, fmt.Errorf("client: %s answered a put with %T", c.addr, r)
	}
	if err := checkPutKey(done.Key, hash, opt.Redundancy); err != nil {
		return id.ID{}, nil, fmt.Errorf("client: %s %w", c.addr, err)
	}
	return done.Key, done.Holders, nil
}

// checkPutKey checks the key a node answered a put with: the content hash
// for replicas; for a put that may have been stored as fragments, any
// key but the zero one.
func checkPutKey(key, hash id.ID, r wire.Redundancy) error {
	if key == hash || r != wire.RedundancyReplicas && key.Width() == id.Bytes {
		return nil
	}
	return fmt.Errorf("stored the block under %s, not its hash %s", key, hash)
}

// Get fetches the block stored under key and checks it against the key:
// a whole block by its content hash, a block stored as fragments by the
// descriptor the node sends before it (frag.Descriptor.CheckBlock). A
// whole block from the node in this process (Options.Local) is not hashed
// again: that node checked it before answering (its own copy by its
// engine's CRCs, another holder's by this same hash: dhash's gotWhole),
// and trusting it is trusting this process.
func (c *Client) Get(ctx context.Context, key id.ID) ([]byte, time.Time, error) {
	if key.Width() != id.Bytes {
		return nil, time.Time{}, fmt.Errorf("client: key must be %d bits", id.Bits)
	}
	r, err := c.Call(ctx, &wire.ClientGet{Key: key})
	if err != nil {
		return nil, time.Time{}, err
	}
	b, ok := r.(*wire.Block)
	if !ok {
		return nil, time.Time{}, fmt.Errorf("client: %s answered a get with %T", c.addr, r)
	}
	data := b.Data
	if b.Fragment {
		d, rest, err := frag.ParseDescriptor(b.Data)
		if err == nil {
			err = d.CheckBlock(key, rest)
		}
		if err != nil {
			return nil, time.Time{}, fmt.Errorf("%w: %s returned a fragmented block that does not match key %s: %v", fault.ErrCorrupt, c.addr, key, err)
		}
		data = rest
	} else if c.local == nil && id.Key(data) != key {
		return nil, time.Time{}, fmt.Errorf("%w: %s returned data that does not match key %s", fault.ErrCorrupt, c.addr, key)
	}
	return data, time.Unix(0, b.Expiry), nil
}

// Stat lists the key's successors and what each holds.
func (c *Client) Stat(ctx context.Context, key id.ID) ([]wire.Holder, error) {
	if key.Width() != id.Bytes {
		return nil, fmt.Errorf("client: key must be %d bits", id.Bits)
	}
	r, err := c.Call(ctx, &wire.ClientStat{Key: key})
	if err != nil {
		return nil, err
	}
	s, ok := r.(*wire.StatDone)
	if !ok {
		return nil, fmt.Errorf("client: %s answered a stat with %T", c.addr, r)
	}
	return s.Holders, nil
}

// PutBatch stores many blocks through one node in one round trip (see
// wire.ClientPutBatch). Each item's Key is its content hash, which the
// caller has computed and which goes with the block: the node checks it,
// or takes it as it is from its own process (a news front-end embedding
// it), and must answer with the same, but for blocks stored as fragments
// (see Put). It returns each block's key, or its error (a *wire.Error:
// fault.ErrBusy when the node's write window was full), and an error for
// the call as a whole. With fresh, the caller believes no host has any of
// the blocks yet (wire.ClientPutBatch.Fresh).
func (c *Client) PutBatch(ctx context.Context, items []wire.PutItem, r wire.Redundancy, fresh bool) ([]id.ID, []error, error) {
	if len(items) > wire.MaxPutBatch {
		return nil, nil, fmt.Errorf("client: %d blocks in one batch, at most %d", len(items), wire.MaxPutBatch)
	}
	reply, err := c.Call(ctx, &wire.ClientPutBatch{Items: items, Redundancy: r, Fresh: fresh})
	if err != nil {
		return nil, nil, err
	}
	done, ok := reply.(*wire.PutBatchDone)
	if !ok || len(done.Results) != len(items) {
		return nil, nil, fmt.Errorf("client: %s answered a batch of %d puts with %T", c.addr, len(items), reply)
	}
	got := make([]id.ID, len(items))
	errs := make([]error, len(items))
	for i, res := range done.Results {
		switch {
		case res.Code != 0:
			errs[i] = &wire.Error{Code: res.Code, Text: res.Err}
		default:
			if err := checkPutKey(res.Key, items[i].Key, r); err != nil {
				errs[i] = fmt.Errorf("client: %s %w", c.addr, err)
				continue
			}
			got[i] = res.Key
		}
	}
	return got, errs, nil
}

// StatBlocks asks the node what it holds under each key (at most
// wire.MaxStatBatch), in one round trip: one BlockInfo per key, in order,
// with Size 0 where the node holds no readable copy.
func (c *Client) StatBlocks(ctx context.Context, keys []id.ID) ([]wire.BlockInfo, error) {
	if len(keys) > wire.MaxStatBatch {
		return nil, fmt.Errorf("client: %d keys in one stat batch, at most %d", len(keys), wire.MaxStatBatch)
	}
	reply, err := c.Call(ctx, &wire.StatBlocks{Keys: keys})
	if err != nil {
		return nil, err
	}
	infos, ok := reply.(*wire.BlockInfos)
	if !ok || len(infos.Infos) != len(keys) {
		return nil, fmt.Errorf("client: %s answered a stat of %d keys with %T", c.addr, len(keys), reply)
	}
	for i := range infos.Infos {
		if infos.Infos[i].Key != keys[i] {
			return nil, fmt.Errorf("client: %s answered a stat of %s about %s", c.addr, keys[i].Short(), infos.Infos[i].Key.Short())
		}
	}
	return infos.Infos, nil
}
