package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"triad/internal/fault"
	"triad/internal/id"
	"triad/internal/testutil"
	"triad/internal/wire"
)

// ring3 starts three block-keeping stub nodes at 0x40.., 0x80.. and
// 0xc0.., each answering GetRingInfo with the whole ring, and dials a
// Cluster through the first.
func ring3(t *testing.T) ([]*stubNode, []*blockStore, *Cluster) {
	t.Helper()
	var nodes []*stubNode
	var stores []*blockStore
	ring := func() []wire.NodeRef {
		var r []wire.NodeRef
		for _, n := range nodes {
			r = append(r, n.ref)
		}
		return r
	}
	for _, pos := range []string{"40", "80", "c0"} {
		s, b := startStore(t, pos)
		b.ring = ring
		nodes, stores = append(nodes, s), append(stores, b)
	}
	cl, err := DialCluster(ctx(t), nodes[0].ref.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return nodes, stores, cl
}

// dataHeldBy returns a block whose key lies in (pred, holder]: the block
// holder is the first successor of.
func dataHeldBy(t *testing.T, pred, holder *stubNode) []byte {
	t.Helper()
	return taggedDataHeldBy(t, pred, holder, "")
}

// taggedDataHeldBy is dataHeldBy for a block that tag makes differ from
// the others of the arc.
func taggedDataHeldBy(t *testing.T, pred, holder *stubNode, tag string) []byte {
	t.Helper()
	for i := range 10000 {
		data := []byte(fmt.Sprintf("block%s for %s, try %d", tag, holder.ref.ID.Short(), i))
		if id.Key(data).In(pred.ref.ID, holder.ref.ID) {
			return data
		}
	}
	t.Fatalf("no block found for the arc of %s", holder.ref.ID.Short())
	return nil
}

// count returns how many requests of type typ a stub received.
func count(s *stubNode, typ wire.Type) int {
	n := 0
	for _, x := range s.received() {
		if x == typ {
			n++
		}
	}
	return n
}

// Each put and get goes to the node that holds the key's first copy, the
// key's successor in the ring the cluster learnt, the wrap-around arc
// included.
func TestClusterGoesToTheHolder(t *testing.T) {
	nodes, _, cl := ring3(t)
	for i, holder := range nodes {
		pred := nodes[(i+len(nodes)-1)%len(nodes)]
		data := dataHeldBy(t, pred, holder)
		key, holders, err := cl.Put(ctx(t), data, PutOptions{})
		if err != nil || key != id.Key(data) || !slices.Equal(holders, []wire.NodeRef{holder.ref}) {
			t.Fatalf("put of a block of %s's arc: key %s, holders %v, %v", holder.ref.ID.Short(), key.Short(), holders, err)
		}
		got, _, err := cl.Get(ctx(t), key)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("get of a block of %s's arc: %q, %v", holder.ref.ID.Short(), got, err)
		}
	}
	for _, n := range nodes {
		if p, g := count(n, wire.TypeClientPut), count(n, wire.TypeClientGet); p != 1 || g != 1 {
			t.Errorf("%s got %d puts and %d gets, want one of each", n.ref.ID.Short(), p, g)
		}
	}
}

// stubLink carries a client's calls to a stub as if the stub were a node
// in the client's own process (Options.Local): no socket.
type stubLink struct {
	s       *stubNode
	handle  func(req wire.Envelope, reply func(wire.Msg))
	deliver func(wire.Envelope)
	done    chan struct{}
}

func (l *stubLink) Send(_ context.Context, e wire.Envelope) error {
	select {
	case <-l.done:
		return errors.New("stub link: stopped")
	default:
	}
	l.s.mu.Lock()
	l.s.got = append(l.s.got, e.Msg)
	l.s.mu.Unlock()
	l.handle(e, func(m wire.Msg) {
		l.deliver(wire.Envelope{Kind: wire.Reply, ReqID: e.ReqID, From: l.s.ref, Msg: m})
	})
	return nil
}

func (l *stubLink) Done() <-chan struct{} { return l.done }
func (l *stubLink) Close()                {}

// A cluster with a node in its own process puts every block through that
// node, which sends each remote copy straight to its holder, rather than
// to the key's first holder, which would send this host's copy back to it
// when this host holds the second; gets go through it too, and a whole
// block it answers is not hashed again. Once the node in the process has
// stopped, puts go to the holders.
func TestClusterPutsThroughItsOwnNode(t *testing.T) {
	nodes, stores, remote := ring3(t)
	// Keys held by nodes[1] then nodes[2]; by nodes[2] then this host
	// (nodes[0]); by this host then nodes[1].
	notHere, second, first := dataHeldBy(t, nodes[0], nodes[1]), dataHeldBy(t, nodes[1], nodes[2]), dataHeldBy(t, nodes[2], nodes[0])
	batch := []wire.PutItem{{Data: notHere}, {Data: second}, {Data: first}}
	putsAt := func() []int {
		var out []int
		for _, n := range nodes {
			out = append(out, count(n, wire.TypeClientPutBatch)+count(n, wire.TypeClientPut))
		}
		return out
	}
	put := func(c *Cluster, items []wire.PutItem, want []int, why string) {
		t.Helper()
		before := putsAt()
		if len(items) == 1 {
			if _, _, err := c.Put(ctx(t), items[0].Data, PutOptions{}); err != nil {
				t.Fatal(err)
			}
		} else if _, errs := c.PutBatch(ctx(t), items, wire.RedundancyDefault); slices.ContainsFunc(errs, func(err error) bool { return err != nil }) {
			t.Fatalf("batch put: %v", errs)
		}
		after := putsAt()
		for i := range after {
			after[i] -= before[i]
		}
		if !slices.Equal(after, want) {
			t.Errorf("%s: requests at the three nodes %v, want %v", why, after, want)
		}
	}
	done := make(chan struct{})
	local := &Local{Addr: nodes[0].ref.Addr, Attach: func(deliver func(wire.Envelope)) Link {
		return &stubLink{s: nodes[0], handle: stores[0].handle, deliver: deliver, done: done}
	}}
	cl, err := DialClusterOptions(ctx(t), Options{Local: local}, nodes[0].ref.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if n := len(cl.route(nodes[0].ref.ID)); n != 3 {
		t.Fatalf("the cluster learnt %d nodes through its own, want 3", n)
	}

	put(cl, batch, []int{1, 0, 0}, "a batch")
	put(cl, batch[:1], []int{1, 0, 0}, "a put of a key this host holds no copy of")
	put(cl, batch[1:2], []int{1, 0, 0}, "a put of this host's second copy")
	if got, _, err := cl.Get(ctx(t), id.Key(second)); err != nil || !bytes.Equal(got, second) {
		t.Fatalf("get through the node in the process: %q, %v", got, err)
	}
	if g := []int{count(nodes[0], wire.TypeClientGet), count(nodes[1], wire.TypeClientGet), count(nodes[2], wire.TypeClientGet)}; !slices.Equal(g, []int{1, 0, 0}) {
		t.Errorf("gets at the three nodes %v, want [1 0 0]", g)
	}
	// The node in the process checked what it answers: its block is not
	// hashed again here (a network client's would be; TestWrongAnswersAreRefused).
	stores[0].mu.Lock()
	stores[0].blocks[id.Key(first)] = []byte("not the block: the node's own check is trusted")
	stores[0].mu.Unlock()
	if got, _, err := cl.Get(ctx(t), id.Key(first)); err != nil || !bytes.HasPrefix(got, []byte("not the block")) {
		t.Fatalf("get of the node's answer: %q, %v; want it as answered", got, err)
	}

	put(remote, batch, []int{1, 1, 1}, "a network client's batch") // to the first holders, as before

	close(done)
	put(cl, batch[1:2], []int{0, 0, 1}, "a put once the node in the process stopped")
}

// A holder that is down is skipped: the call goes to the next node in ring
// order, which coordinates it (its DHT places the copies). So is one that
// dies with the call in flight, as a SIGKILLed node does.
func TestClusterSkipsADeadHolder(t *testing.T) {
	t.Run("down", func(t *testing.T) {
		nodes, _, cl := ring3(t)
		data := dataHeldBy(t, nodes[0], nodes[1])
		nodes[1].kill()
		if _, _, err := cl.Put(ctx(t), data, PutOptions{}); err != nil {
			t.Fatalf("put with its holder down: %v", err)
		}
		if count(nodes[2], wire.TypeClientPut) != 1 {
			t.Fatalf("the next node got %v, want the put", nodes[2].received())
		}
		if got, _, err := cl.Get(ctx(t), id.Key(data)); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("get with its holder down: %q, %v", got, err)
		}
	})
	t.Run("dies mid-call", func(t *testing.T) {
		nodes, stores, cl := ring3(t)
		data := dataHeldBy(t, nodes[2], nodes[0])
		// The holder takes the put and dies without answering.
		dying := nodes[0]
		stores[0].dieOnPut.Store(true)
		if _, _, err := cl.Put(ctx(t), data, PutOptions{}); err != nil {
			t.Fatalf("put whose holder died mid-call: %v", err)
		}
		if count(dying, wire.TypeClientPut) != 1 || count(nodes[1], wire.TypeClientPut) != 1 {
			t.Fatalf("the dying holder got %v and the next node %v, want the put at both", dying.received(), nodes[1].received())
		}
	})
}

// A call fails, rather than hangs, when no node can take it, and a
// node's own refusal is not taken for a dead node.
func TestClusterFailures(t *testing.T) {
	if _, err := DialCluster(ctx(t)); err == nil {
		t.Fatal("DialCluster with no seeds succeeded")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := ln.Addr().String()
	ln.Close()
	if _, err := DialCluster(ctx(t), refused); err == nil {
		t.Fatal("DialCluster with no node up succeeded")
	}

	nodes, _, cl := ring3(t)
	missing := dataHeldBy(t, nodes[0], nodes[1])
	if _, _, err := cl.Get(ctx(t), id.Key(missing)); !errors.Is(err, fault.ErrNotFound) {
		t.Fatalf("get of a block never put: %v, want fault.ErrNotFound", err)
	}
	if n := count(nodes[2], wire.TypeClientGet) + count(nodes[0], wire.TypeClientGet); n != 0 {
		t.Fatalf("a not-found answer was retried at %d other nodes", n)
	}
	for _, n := range nodes {
		n.kill()
	}
	if _, _, err := cl.Put(ctx(t), missing, PutOptions{}); !errors.Is(err, fault.ErrUnavailable) {
		t.Fatalf("put with every node down: %v, want fault.ErrUnavailable", err)
	}
}

// A cluster dialled while the ring was forming (its seed knew only
// itself) relearns its map once the map is old, and then sends each put to
// the key's holder. Before, it sent every put to the seed for as long as
// every node answered: at a news site started with its node, one node
// coordinated every article of the site's feed.
func TestClusterRelearnsAnOldMap(t *testing.T) {
	var formed atomic.Bool
	var nodes []*stubNode
	for _, pos := range []string{"40", "80", "c0"} {
		s, b := startStore(t, pos)
		b.ring = func() []wire.NodeRef {
			if !formed.Load() {
				return []wire.NodeRef{b.self.ref}
			}
			return []wire.NodeRef{nodes[0].ref, nodes[1].ref, nodes[2].ref}
		}
		nodes = append(nodes, s)
	}
	cl, err := DialCluster(ctx(t), nodes[0].ref.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	data := dataHeldBy(t, nodes[0], nodes[1])
	if _, _, err := cl.Put(ctx(t), data, PutOptions{}); err != nil || count(nodes[0], wire.TypeClientPut) != 1 {
		t.Fatalf("put with the seed's map of itself: %v, seed got %v", err, nodes[0].received())
	}
	formed.Store(true)
	cl.mu.Lock()
	cl.maxAge = 0
	cl.mu.Unlock()
	if !testutil.Poll(5*time.Second, func() bool {
		cl.Put(ctx(t), data, PutOptions{})
		return count(nodes[1], wire.TypeClientPut) > 0
	}) {
		t.Fatalf("the holder got no put once the ring formed: %v", nodes[1].received())
	}
}

// HoldingBatch asks each node once for all the keys it holds first; a key
// its first holder lacks is asked of its second holder (again one request
// per node), and only a key neither has goes to the ring on its own.
func TestHoldingBatchAsksEachHolderOnce(t *testing.T) {
	nodes, stores, cl := ring3(t)
	var keys []id.ID
	size := map[id.ID]int{}
	keep := func(at int, data []byte) {
		k := id.Key(data)
		stores[at].blocks[k] = data
		keys = append(keys, k)
		size[k] = len(data)
	}
	for i, holder := range nodes {
		pred := nodes[(i+len(nodes)-1)%len(nodes)]
		for j := range 3 {
			keep(i, taggedDataHeldBy(t, pred, holder, fmt.Sprint(j)))
		}
	}
	// Held by its arc's second node only, as after a missed copy.
	keep(1, taggedDataHeldBy(t, nodes[2], nodes[0], "second"))
	missing := id.Key(dataHeldBy(t, nodes[0], nodes[1]))
	keys = append(keys, missing)
	held := cl.HoldingBatch(ctx(t), keys)
	for i, k := range keys {
		h := held[i]
		want := size[k]
		if h.Err != nil || h.Found != (want > 0) || int(h.Size) != want {
			t.Errorf("key %d (%s): %+v, want found %v with %d bytes", i, k.Short(), h, want > 0, want)
		}
	}
	stats := 0
	for _, n := range nodes {
		stats += count(n, wire.TypeStatBlocks)
	}
	// Three first-holder batches, then the second holders of the two
	// keys the first did not have: nodes 1 and 2.
	if stats != 5 {
		t.Errorf("%d StatBlocks sent, want 5", stats)
	}
	single := 0
	for _, n := range nodes {
		single += count(n, wire.TypeStatBlock) + count(n, wire.TypeClientStat)
	}
	if single != 3 {
		t.Errorf("%d single-key requests, want 3 (the missing key's two holders, then the ring)", single)
	}
}

// A background refresh of the map is one goroutine, which Close ends and
// waits for: a refresh started just before Close (here, one whose node
// never answers) no longer outlives the cluster, and calls that find a
// node gone start no more of them.
func TestCloseEndsTheBackgroundRefresh(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	var asked atomic.Int32
	var self *stubNode
	self = startStub(t, "40", func(req wire.Envelope, reply func(wire.Msg)) {
		if _, ok := req.Msg.(*wire.GetRingInfo); ok && asked.Add(1) > 1 {
			<-release // the refresh's question is never answered
			return
		}
		reply(&wire.RingInfo{Vnodes: []wire.VnodeInfo{{Self: self.ref}}})
	})
	cl, err := DialCluster(ctx(t), self.ref.Addr)
	if err != nil {
		t.Fatal(err)
	}
	cl.mu.Lock()
	cl.maxAge = 0
	cl.mu.Unlock()
	for range 50 {
		cl.route(id.Key([]byte("any")))
	}
	if !testutil.Poll(5*time.Second, func() bool { return asked.Load() == 2 }) {
		t.Fatalf("%d GetRingInfo asked, want the dial's and one refresh's", asked.Load())
	}
	cl.Close()
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if cl.refreshing || asked.Load() != 2 {
		t.Fatalf("after Close: a refresh still running %v, %d GetRingInfo asked (want 2)", cl.refreshing, asked.Load())
	}
}

// With a node in its process whose engine it can read (Local.Read), a
// cluster reads a block that node holds without a message, and fetches a
// block it holds no copy of from the key's first holder in the map,
// straight: one round trip, not one to its own node and one more from
// there.
func TestClusterReadsItsOwnCopyDirectly(t *testing.T) {
	nodes, stores, _ := ring3(t)
	mine, notHere := dataHeldBy(t, nodes[2], nodes[0]), dataHeldBy(t, nodes[0], nodes[1])
	stores[0].mu.Lock()
	stores[0].blocks[id.Key(mine)] = mine
	stores[0].mu.Unlock()
	stores[1].mu.Lock()
	stores[1].blocks[id.Key(notHere)] = notHere
	stores[1].mu.Unlock()
	reads := 0
	local := &Local{
		Addr: nodes[0].ref.Addr,
		Attach: func(deliver func(wire.Envelope)) Link {
			return &stubLink{s: nodes[0], handle: stores[0].handle, deliver: deliver, done: make(chan struct{})}
		},
		Read: func(key id.ID) ([]byte, time.Time, error) {
			reads++
			stores[0].mu.Lock()
			defer stores[0].mu.Unlock()
			if b, ok := stores[0].blocks[key]; ok {
				return b, time.Time{}, nil
			}
			return nil, time.Time{}, fault.ErrNotFound
		},
	}
	cl, err := DialClusterOptions(ctx(t), Options{Local: local}, nodes[0].ref.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	gets := func() []int {
		return []int{count(nodes[0], wire.TypeClientGet), count(nodes[1], wire.TypeClientGet), count(nodes[2], wire.TypeClientGet)}
	}
	if got, _, err := cl.Get(ctx(t), id.Key(mine)); err != nil || !bytes.Equal(got, mine) {
		t.Fatalf("get of this host's copy: %q, %v", got, err)
	}
	if g := gets(); reads != 1 || !slices.Equal(g, []int{0, 0, 0}) {
		t.Errorf("a get of this host's copy: %d engine reads and gets at the nodes %v, want 1 and none", reads, g)
	}
	if got, _, err := cl.Get(ctx(t), id.Key(notHere)); err != nil || !bytes.Equal(got, notHere) {
		t.Fatalf("get of a block held elsewhere: %q, %v", got, err)
	}
	if g := gets(); !slices.Equal(g, []int{0, 1, 0}) {
		t.Errorf("a get of a block held elsewhere: gets at the nodes %v, want [0 1 0] (its first holder alone)", g)
	}
	if st := cl.GetStats(); st.LocalReads != 1 || st.NodeGets != 1 || st.NodeGetSeconds <= 0 {
		t.Errorf("GetStats %+v, want one local read and one node's get, timed", st)
	}
}

// A holder that stops answering with its connection still open (hung, or
// cut off without a reset) holds a get only for GetAttemptTimeout: the
// next holder is asked. Before, a site's get waited out its whole deadline.
func TestClusterGetMovesOnFromASilentHolder(t *testing.T) {
	old := GetAttemptTimeout
	GetAttemptTimeout = 200 * time.Millisecond
	defer func() { GetAttemptTimeout = old }()
	nodes, stores, _ := ring3(t)
	data := dataHeldBy(t, nodes[0], nodes[1]) // held by nodes[1], then nodes[2]
	for _, i := range []int{1, 2} {
		stores[i].mu.Lock()
		stores[i].blocks[id.Key(data)] = data
		stores[i].mu.Unlock()
	}
	cl := siteHoldingNothing(t, nodes, stores)
	stores[1].hangGets.Store(true)
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	got, _, err := cl.Get(c, id.Key(data))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("get with its first holder silent: %q, %v", got, err)
	}
	if took := time.Since(start); took > 10*GetAttemptTimeout {
		t.Errorf("the get took %v, want about one attempt's timeout (%v)", took, GetAttemptTimeout)
	}
	if count(nodes[1], wire.TypeClientGet) != 1 || count(nodes[2], wire.TypeClientGet) != 1 {
		t.Errorf("gets at the holders %d and %d, want one each (the silent one, then the next)", count(nodes[1], wire.TypeClientGet), count(nodes[2], wire.TypeClientGet))
	}
}

// A holder that answers a get with bytes that are not the block (an
// insider with a valid certificate, or a damaged disk) does not end the
// get: the next holder is asked, as DHash's own get moves on from a copy
// that fails its hash.
func TestClusterGetMovesOnFromAForgedCopy(t *testing.T) {
	nodes, stores, _ := ring3(t)
	data := dataHeldBy(t, nodes[0], nodes[1]) // held by nodes[1], then nodes[2]
	stores[1].mu.Lock()
	stores[1].blocks[id.Key(data)] = []byte("forged bytes under the block's key")
	stores[1].mu.Unlock()
	stores[2].mu.Lock()
	stores[2].blocks[id.Key(data)] = data
	stores[2].mu.Unlock()
	cl := siteHoldingNothing(t, nodes, stores)
	got, _, err := cl.Get(ctx(t), id.Key(data))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("get with its first holder forging: %q, %v; want the block from the next", got, err)
	}
}

// siteHoldingNothing dials a Cluster as a site's front-end that shares its
// process with nodes[0] (Options.Local), whose engine holds no copy of
// any key: every get goes to the holders.
func siteHoldingNothing(t *testing.T, nodes []*stubNode, stores []*blockStore) *Cluster {
	t.Helper()
	local := &Local{
		Addr: nodes[0].ref.Addr,
		Attach: func(deliver func(wire.Envelope)) Link {
			return &stubLink{s: nodes[0], handle: stores[0].handle, deliver: deliver, done: make(chan struct{})}
		},
		Read: func(id.ID) ([]byte, time.Time, error) { return nil, time.Time{}, fault.ErrNotFound },
	}
	cl, err := DialClusterOptions(ctx(t), Options{Local: local}, nodes[0].ref.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}
