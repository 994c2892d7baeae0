package client

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Pool keeps one connection per node address, dialled on first use and
// dialled again once it breaks. A Cluster and D2's client
// (d2client.Blocks) each hold theirs in one.
type Pool struct {
	opt Options

	mu     sync.Mutex
	conns  map[string]*Client
	closed bool
}

// NewPool returns an empty pool whose connections use opt.
func NewPool(opt Options) *Pool { return &Pool{opt: opt, conns: map[string]*Client{}} }

// Conn returns the live connection to addr, dialling one within ctx if
// there is none.
func (p *Pool) Conn(ctx context.Context, addr string) (*Client, error) {
	p.mu.Lock()
	cl, closed := p.conns[addr], p.closed
	p.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("%w: the pool is closed", ErrClosed)
	}
	if cl != nil && cl.closedErr() == nil {
		return cl, nil
	}
	cl, err := DialOptions(ctx, addr, p.opt)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		cl.Close()
		return nil, fmt.Errorf("%w: the pool is closed", ErrClosed)
	}
	if old := p.conns[addr]; old != nil && old.closedErr() == nil {
		cl.Close() // another call dialled first
		return old, nil
	}
	p.conns[addr] = cl
	return cl, nil
}

// Drop forgets and closes cl, the connection to addr: a call on it broke
// or outlived its deadline, and a reply that comes late must not be read
// as another call's.
func (p *Pool) Drop(addr string, cl *Client) {
	p.mu.Lock()
	if p.conns[addr] == cl {
		delete(p.conns, addr)
	}
	p.mu.Unlock()
	cl.Close()
}

// Close closes every connection; Conn fails with ErrClosed after it.
func (p *Pool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for a, cl := range p.conns {
		cl.Close()
		delete(p.conns, a)
	}
}

// Failover is how a client moves through a list of nodes: from a given
// one, on to the next when one fails in a way another node might not,
// for a bounded number of passes with a pause between them. A Cluster
// makes one pass over three nodes of a key's route; D2's client makes
// several over its gateways, from the one that last answered.
type Failover struct {
	Passes  int              // passes over the list; at least one
	Backoff time.Duration    // the pause before the second pass, doubled before each next one
	Limit   int              // nodes asked per pass; 0 for all
	Retry   func(error) bool // whether a node's error is worth asking the next node
}

// Run calls call(i) for the nodes of a list of n, in order from start. It
// returns the index of the node whose answer ends the run (success, or an
// error Retry declines), with every node's last error so far; -1 if every
// pass failed; and ctx's error, with -1, once ctx ends.
func (f Failover) Run(ctx context.Context, n, start int, call func(i int) error) (int, []error, error) {
	errs := make([]error, n)
	per := n
	if f.Limit > 0 {
		per = min(n, f.Limit)
	}
	backoff := f.Backoff
	for pass := range max(f.Passes, 1) {
		if pass > 0 {
			select {
			case <-time.After(backoff):
			case <-ctx.Done():
				return -1, errs, ctx.Err()
			}
			backoff *= 2
		}
		for j := range per {
			i := (start + j) % n
			errs[i] = call(i)
			if errs[i] == nil || !f.Retry(errs[i]) {
				return i, errs, nil
			}
			if ctx.Err() != nil {
				return -1, errs, ctx.Err()
			}
		}
	}
	return -1, errs, nil
}
