package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"triad/internal/dhash/frag"
	"triad/internal/fault"
	"triad/internal/id"
	"triad/internal/testutil"
	"triad/internal/wire"
)

// The client is tested against stub nodes: real TCP listeners on
// 127.0.0.1 that speak the wire format and answer as a test says, so a
// test can answer out of order, wrongly, late, never, or drop the
// connection mid-call.

// callTimeout bounds every call a test makes. Calls to a stub on loopback
// take microseconds; the bound only turns a hang into a failure.
const callTimeout = 10 * time.Second

// stubNode is a fake triad node. handle gets each request with a function
// that sends its reply; it may reply at once, later, from any goroutine,
// or never.
type stubNode struct {
	t      *testing.T
	ln     net.Listener
	ref    wire.NodeRef
	handle func(req wire.Envelope, reply func(wire.Msg))

	mu    sync.Mutex
	conns []net.Conn
	got   []wire.Msg // requests received, in order
	wg    sync.WaitGroup
}

// startStub listens on a free port of 127.0.0.1 as the vnode at ring
// position pos (hex, padded to 160 bits).
func startStub(t *testing.T, pos string, handle func(req wire.Envelope, reply func(wire.Msg))) *stubNode {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	x, err := id.Parse(pos+strings.Repeat("0", 2*id.Bytes-len(pos)), id.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	s := &stubNode{t: t, ln: ln, ref: wire.NodeRef{ID: x, Addr: ln.Addr().String()}, handle: handle}
	s.wg.Add(1)
	go s.accept()
	t.Cleanup(s.kill)
	return s
}

func (s *stubNode) accept() {
	defer s.wg.Done()
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns = append(s.conns, nc)
		s.mu.Unlock()
		s.wg.Add(1)
		go s.serve(nc)
	}
}

func (s *stubNode) serve(nc net.Conn) {
	defer s.wg.Done()
	var wmu sync.Mutex
	for {
		frame, err := wire.ReadFrame(nc, nil, wire.MaxFrameBytes)
		if err != nil {
			return
		}
		e, err := wire.DecodeOwned(frame)
		if err != nil {
			s.t.Errorf("stub %s: bad frame from the client: %v", s.ref.Addr, err)
			return
		}
		s.mu.Lock()
		s.got = append(s.got, e.Msg)
		s.mu.Unlock()
		s.handle(e, func(m wire.Msg) {
			wmu.Lock()
			defer wmu.Unlock()
			// A write to a connection the test dropped fails; that is
			// the test's point, not an error.
			nc.Write(wire.AppendFrame(nil, wire.Envelope{Kind: wire.Reply, ReqID: e.ReqID, From: s.ref, Msg: m}))
		})
	}
}

// kill closes the listener and every connection, as a SIGKILL would, and
// waits for the stub's goroutines.
func (s *stubNode) kill() {
	s.ln.Close()
	s.mu.Lock()
	for _, c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// received lists the types of the requests the stub got, in order.
func (s *stubNode) received() []wire.Type {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []wire.Type
	for _, m := range s.got {
		out = append(out, m.Type())
	}
	return out
}

// blockStore is a stub's handler that keeps blocks in memory, as a node
// (with its DHT behind it) would: ClientPut, ClientGet, ClientStat, and
// GetRingInfo answered with ring.
type blockStore struct {
	self     *stubNode
	ring     func() []wire.NodeRef
	dieOnPut atomic.Bool // then a put kills the stub, unanswered
	hangGets atomic.Bool // then gets are never answered, the connection kept
	// failLookups makes a ClientLookup answer that it failed.
	failLookups atomic.Bool
	// hangPuts leaves puts unanswered, the connection kept.
	hangPuts atomic.Bool

	// lookupSuccs, if set, is every ClientLookup's answer (under mu).
	lookupSuccs []wire.NodeRef

	mu     sync.Mutex
	blocks map[id.ID][]byte
}

func newBlockStore() *blockStore { return &blockStore{blocks: map[id.ID][]byte{}} }

func (b *blockStore) handle(req wire.Envelope, reply func(wire.Msg)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch m := req.Msg.(type) {
	case *wire.ClientPut:
		if b.dieOnPut.Load() {
			go b.self.kill()
			return
		}
		if b.hangPuts.Load() {
			return
		}
		k := id.Key(m.Data)
		b.blocks[k] = m.Data
		reply(&wire.PutDone{Key: k, Holders: []wire.NodeRef{b.self.ref}})
	case *wire.ClientPutBatch:
		res := make([]wire.PutResult, len(m.Items))
		for i, it := range m.Items {
			res[i].Key = id.Key(it.Data)
			b.blocks[res[i].Key] = it.Data
		}
		reply(&wire.PutBatchDone{Results: res})
	case *wire.ClientGet:
		if b.hangGets.Load() {
			return
		}
		data, ok := b.blocks[m.Key]
		if !ok {
			reply(&wire.Error{Code: fault.CodeNotFound, Text: "no block " + m.Key.Short()})
			return
		}
		reply(&wire.Block{Key: m.Key, Data: data, Expiry: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()})
	case *wire.ClientStat:
		var hs []wire.Holder
		if data, ok := b.blocks[m.Key]; ok {
			hs = append(hs, wire.Holder{Node: b.self.ref, Size: uint64(len(data))})
		}
		reply(&wire.StatDone{Key: m.Key, Holders: hs})
	case *wire.StatBlocks:
		infos := make([]wire.BlockInfo, len(m.Keys))
		for i, k := range m.Keys {
			infos[i].Key = k
			if data, ok := b.blocks[k]; ok {
				infos[i].Size = uint64(len(data))
			}
		}
		reply(&wire.BlockInfos{Infos: infos})
	case *wire.ClientLookup:
		if b.failLookups.Load() || b.ring == nil {
			reply(&wire.LookupDone{Key: m.Key, Failed: "stub: no route"})
			return
		}
		if b.lookupSuccs != nil {
			reply(&wire.LookupDone{Key: m.Key, Succs: b.lookupSuccs})
			return
		}
		// The ring is sorted: the key's successor first, then the rest.
		r := b.ring()
		i := slices.IndexFunc(r, func(n wire.NodeRef) bool { return n.ID.Cmp(m.Key) >= 0 })
		i = max(i, 0) // past the last node: the first is the successor
		reply(&wire.LookupDone{Key: m.Key, Succs: append(slices.Clone(r[i:]), r[:i]...)})
	case *wire.GetRingInfo:
		var vs []wire.VnodeInfo
		if b.ring != nil {
			r := b.ring()
			for i, n := range r {
				if n.Addr == b.self.ref.Addr {
					vs = append(vs, wire.VnodeInfo{Self: n, Succs: []wire.NodeRef{r[(i+1)%len(r)]}, Preds: []wire.NodeRef{r[(i+len(r)-1)%len(r)]}})
				}
			}
		}
		reply(&wire.RingInfo{Vnodes: vs})
	default:
		reply(&wire.Error{Code: fault.CodeBadRequest, Text: fmt.Sprintf("stub: no %T", m)})
	}
}

// startStore starts a stub node that keeps blocks.
func startStore(t *testing.T, pos string) (*stubNode, *blockStore) {
	b := newBlockStore()
	s := startStub(t, pos, b.handle)
	b.self = s
	return s, b
}

func dial(t *testing.T, addr string) *Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	c, err := Dial(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), callTimeout)
	t.Cleanup(cancel)
	return c
}

func TestPutGetStat(t *testing.T) {
	node, _ := startStore(t, "80")
	c := dial(t, node.ref.Addr)
	data := []byte("an article, stored as one block")
	key, holders, err := c.Put(ctx(t), data, PutOptions{Expire: time.Hour})
	if err != nil || key != id.Key(data) || !slices.Equal(holders, []wire.NodeRef{node.ref}) {
		t.Fatalf("Put: key %s, holders %v, %v; want %s held by %v", key.Short(), holders, err, id.Key(data).Short(), node.ref)
	}
	got, expiry, err := c.Get(ctx(t), key)
	if err != nil || !bytes.Equal(got, data) || expiry.Year() != 2030 {
		t.Fatalf("Get: %q, expiry %v, %v", got, expiry, err)
	}
	hs, err := c.Stat(ctx(t), key)
	if err != nil || len(hs) != 1 || hs[0].Node != node.ref || hs[0].Size != uint64(len(data)) {
		t.Fatalf("Stat: %+v, %v", hs, err)
	}
	missing := id.Key([]byte("never put"))
	if _, _, err := c.Get(ctx(t), missing); !errors.Is(err, fault.ErrNotFound) {
		t.Fatalf("Get of a key never put: %v, want fault.ErrNotFound", err)
	}
	// A call that cannot be right is refused before it is sent.
	short := id.Key(data)
	short, _ = id.FromBytes(short.Bytes()[:8])
	if _, _, err := c.Get(ctx(t), short); err == nil {
		t.Fatal("Get of a 64-bit key was sent")
	}
	if _, err := c.Stat(ctx(t), short); err == nil {
		t.Fatal("Stat of a 64-bit key was sent")
	}
	want := []wire.Type{wire.TypeClientPut, wire.TypeClientGet, wire.TypeClientStat, wire.TypeClientGet}
	if got := node.received(); !slices.Equal(got, want) {
		t.Fatalf("the node received %v, want %v", got, want)
	}
}

// descriptorOf is a descriptor of data coded 2 of 3, with made-up shard
// hashes: the client checks only the descriptor's key and the block's
// size and hash.
func descriptorOf(data []byte) frag.Descriptor {
	return frag.Descriptor{M: 2, L: 3, Size: len(data), Block: id.Key(data),
		Shards: []id.ID{id.Key([]byte("0")), id.Key([]byte("1")), id.Key([]byte("2"))}}
}

// fragmented is a node's answer to a get of a block stored as fragments.
func fragmented(d frag.Descriptor, data []byte) *wire.Block {
	return &wire.Block{Key: d.Key(), Data: append(d.Append(nil), data...), Fragment: true}
}

// A block stored as fragments has its descriptor's key: the client takes
// it from a put, and checks the block a get returns against the
// descriptor the node sends before it.
func TestFragmentedBlockIsChecked(t *testing.T) {
	data := []byte("a block stored as fragments")
	d := descriptorOf(data)
	node := startStub(t, "80", func(env wire.Envelope, reply func(wire.Msg)) {
		if _, ok := env.Msg.(*wire.ClientPut); ok {
			reply(&wire.PutDone{Key: d.Key()})
			return
		}
		reply(fragmented(d, data))
	})
	c := dial(t, node.ref.Addr)
	key, _, err := c.Put(ctx(t), data, PutOptions{Redundancy: wire.RedundancyFragments})
	if err != nil || key != d.Key() {
		t.Fatalf("put: key %s, %v; want %s", key.Short(), err, d.Key().Short())
	}
	got, _, err := c.Get(ctx(t), key)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("get: %q, %v; want the block", got, err)
	}
}

// The client checks what a node answers: a block is only ever returned
// under the key it hashes to (a fragmented block's: its descriptor's), and
// an answer of the wrong kind is an error.
func TestWrongAnswersAreRefused(t *testing.T) {
	data := []byte("the block that was asked for")
	desc := descriptorOf(data)
	otherDesc := descriptorOf([]byte("another block"))
	for _, tc := range []struct {
		name   string
		answer wire.Msg
		call   func(ctx context.Context, c *Client) error
		want   error // nil: any error
	}{
		{"put stored under another key", &wire.PutDone{Key: id.Key([]byte("other"))}, func(ctx context.Context, c *Client) error {
			_, _, err := c.Put(ctx, data, PutOptions{Redundancy: wire.RedundancyReplicas})
			return err
		}, nil},
		{"get of a fragmented block under another descriptor's key", fragmented(otherDesc, data), func(ctx context.Context, c *Client) error {
			_, _, err := c.Get(ctx, desc.Key())
			return err
		}, fault.ErrCorrupt},
		{"get of other bytes under a fragmented block's key", fragmented(desc, []byte("forged bytes of the same length!")[:len(data)]), func(ctx context.Context, c *Client) error {
			_, _, err := c.Get(ctx, desc.Key())
			return err
		}, fault.ErrCorrupt},
		{"get of a whole block under a fragmented block's key", &wire.Block{Key: desc.Key(), Data: data}, func(ctx context.Context, c *Client) error {
			_, _, err := c.Get(ctx, desc.Key())
			return err
		}, fault.ErrCorrupt},
		{"put answered with a block", &wire.Block{Key: id.Key(data), Data: data}, func(ctx context.Context, c *Client) error {
			_, _, err := c.Put(ctx, data, PutOptions{})
			return err
		}, nil},
		{"get of other bytes", &wire.Block{Key: id.Key(data), Data: []byte("forged")}, func(ctx context.Context, c *Client) error {
			_, _, err := c.Get(ctx, id.Key(data))
			return err
		}, fault.ErrCorrupt},
		{"get answered with a put's answer", &wire.PutDone{Key: id.Key(data)}, func(ctx context.Context, c *Client) error {
			_, _, err := c.Get(ctx, id.Key(data))
			return err
		}, nil},
		{"stat answered with a block", &wire.Block{Key: id.Key(data), Data: data}, func(ctx context.Context, c *Client) error {
			_, err := c.Stat(ctx, id.Key(data))
			return err
		}, nil},
		{"busy", &wire.Error{Code: fault.CodeBusy, Text: "write window full"}, func(ctx context.Context, c *Client) error {
			_, _, err := c.Put(ctx, data, PutOptions{})
			return err
		}, fault.ErrBusy},
	} {
		t.Run(tc.name, func(t *testing.T) {
			node := startStub(t, "80", func(_ wire.Envelope, reply func(wire.Msg)) { reply(tc.answer) })
			c := dial(t, node.ref.Addr)
			err := tc.call(ctx(t), c)
			if err == nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("error %v, want %v", err, cmpOr(tc.want, "one"))
			}
			// The connection stays usable.
			if err := tc.call(ctx(t), c); err == nil || errors.Is(err, ErrClosed) {
				t.Fatalf("a second call: %v", err)
			}
		})
	}
}

func cmpOr(err error, s string) any {
	if err == nil {
		return s
	}
	return err
}

// Concurrent calls share one connection, and each gets its own reply
// however the node orders them: here it holds every request until all
// have come, then answers them last first.
func TestConcurrentCallsGetTheirOwnReplies(t *testing.T) {
	const n = 64
	var mu sync.Mutex
	var held []func()
	node := startStub(t, "80", func(req wire.Envelope, reply func(wire.Msg)) {
		g := req.Msg.(*wire.ClientGet)
		mu.Lock()
		defer mu.Unlock()
		held = append(held, func() { reply(&wire.Block{Key: g.Key, Data: blockOf(g.Key)}) })
		if len(held) == n {
			for i := n - 1; i >= 0; i-- {
				held[i]()
			}
		}
	})
	c := dial(t, node.ref.Addr)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		key := keyOf(i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			data, _, err := c.Get(ctx(t), key)
			if err == nil && !bytes.Equal(data, blockOf(key)) {
				err = fmt.Errorf("get %s: another call's block", key.Short())
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// blocks is a fixed set of blocks, so a stub can answer a get by key
// without keeping anything.
var blocks = func() map[id.ID][]byte {
	m := map[id.ID][]byte{}
	for i := range 64 {
		data := []byte(fmt.Sprintf("block %d", i))
		m[id.Key(data)] = data
	}
	return m
}()

func keyOf(i int) id.ID                   { return id.Key([]byte(fmt.Sprintf("block %d", i))) }
func blockOf(key id.ID) []byte            { return blocks[key] }
func never(wire.Envelope, func(wire.Msg)) {}

// A call gives up at its context's end and leaves the connection usable:
// the reply that comes after is dropped. Close fails the calls in flight
// and every call after it with ErrClosed.
func TestContextEndAndClose(t *testing.T) {
	var mu sync.Mutex
	var late []func()
	node := startStub(t, "80", func(req wire.Envelope, reply func(wire.Msg)) {
		g := req.Msg.(*wire.ClientGet)
		if g.Key == keyOf(0) {
			mu.Lock()
			late = append(late, func() { reply(&wire.Block{Key: g.Key, Data: blockOf(g.Key)}) })
			mu.Unlock()
			return
		}
		if g.Key == keyOf(1) {
			reply(&wire.Block{Key: g.Key, Data: blockOf(g.Key)})
		}
		// keyOf(2): never answered.
	})
	c := dial(t, node.ref.Addr)
	short, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, _, err := c.Get(short, keyOf(0)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a get its node does not answer in time: %v, want the deadline", err)
	}
	mu.Lock()
	late[0]() // the answer nobody waits for any more
	mu.Unlock()
	if data, _, err := c.Get(ctx(t), keyOf(1)); err != nil || !bytes.Equal(data, blockOf(keyOf(1))) {
		t.Fatalf("a get after a late reply: %q, %v", data, err)
	}

	inFlight := make(chan error, 1)
	go func() {
		_, _, err := c.Get(ctx(t), keyOf(2))
		inFlight <- err
	}()
	testutil.WaitFor(t, callTimeout, "the node to get the third request", func() bool { return len(node.received()) == 3 })
	c.Close()
	if err := <-inFlight; !errors.Is(err, ErrClosed) {
		t.Fatalf("a call in flight at Close: %v, want ErrClosed", err)
	}
	if _, _, err := c.Get(ctx(t), keyOf(1)); !errors.Is(err, ErrClosed) {
		t.Fatalf("a call after Close: %v, want ErrClosed", err)
	}
}

// A node that goes away (its process killed) fails the calls in flight
// with ErrClosed, and so does a node that sends a frame the client cannot
// decode.
func TestBrokenConnectionFailsCalls(t *testing.T) {
	t.Run("killed", func(t *testing.T) {
		node := startStub(t, "80", never)
		c := dial(t, node.ref.Addr)
		inFlight := make(chan error, 1)
		go func() {
			_, err := c.Stat(ctx(t), keyOf(0))
			inFlight <- err
		}()
		testutil.WaitFor(t, callTimeout, "the node to get the request", func() bool { return len(node.received()) == 1 })
		node.kill()
		if err := <-inFlight; !errors.Is(err, ErrClosed) {
			t.Fatalf("a call in flight when its node died: %v, want ErrClosed", err)
		}
		if _, err := c.Stat(ctx(t), keyOf(0)); !errors.Is(err, ErrClosed) {
			t.Fatalf("a call after its node died: %v, want ErrClosed", err)
		}
	})
	t.Run("garbage", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		go func() {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			defer nc.Close()
			if _, err := wire.ReadFrame(nc, nil, wire.MaxFrameBytes); err != nil {
				return
			}
			nc.Write([]byte{0, 0, 0, 3, 0xff, 0xff, 0xff}) // a frame that is no envelope
			wire.ReadFrame(nc, nil, wire.MaxFrameBytes)    // until the client hangs up
		}()
		c := dial(t, ln.Addr().String())
		if _, err := c.Stat(ctx(t), keyOf(0)); err == nil || !strings.Contains(err.Error(), "bad frame") {
			t.Fatalf("a call answered with garbage: %v, want a bad frame", err)
		}
		if _, err := c.Stat(ctx(t), keyOf(0)); err == nil {
			t.Fatal("a call after garbage succeeded")
		}
	})
}
