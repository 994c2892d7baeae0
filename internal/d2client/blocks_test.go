package d2client

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"triad/internal/d2/key"
	"triad/internal/d2fs"
	"triad/internal/fault"
	"triad/internal/id"
	"triad/internal/wire"
)

// fakeNode is a TCP server that answers D2's client messages with
// handle, as a gateway would, so that failover and the checks of this
// package are tested without a ring. Real nodes: cmd/triad's TestFS.
type fakeNode struct {
	ln     net.Listener
	handle func(m wire.Msg) (wire.Msg, error)

	mu    sync.Mutex
	calls int
	conns []net.Conn
}

func startFake(t *testing.T, handle func(m wire.Msg) (wire.Msg, error)) *fakeNode {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeNode{ln: ln, handle: handle}
	t.Cleanup(f.stop)
	go f.serve()
	return f
}

func (f *fakeNode) addr() string { return f.ln.Addr().String() }

func (f *fakeNode) stop() {
	f.ln.Close()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.conns {
		c.Close()
	}
}

func (f *fakeNode) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

func (f *fakeNode) serve() {
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		f.mu.Lock()
		f.conns = append(f.conns, c)
		f.mu.Unlock()
		go f.conn(c)
	}
}

func (f *fakeNode) conn(c net.Conn) {
	defer c.Close()
	var wmu sync.Mutex
	for {
		frame, err := wire.ReadFrame(c, nil, wire.MaxFrameBytes)
		if err != nil {
			return
		}
		e, err := wire.Decode(frame)
		if err != nil {
			return
		}
		f.mu.Lock()
		f.calls++
		f.mu.Unlock()
		go func() {
			reply, err := f.handle(e.Msg)
			if err != nil {
				reply = &wire.Error{Code: fault.CodeOf(err), Text: err.Error()}
			}
			if reply == nil {
				return // silent: the caller times out
			}
			wmu.Lock()
			defer wmu.Unlock()
			wire.WriteFrame(c, wire.Envelope{Kind: wire.Reply, ReqID: e.ReqID, Msg: reply})
		}()
	}
}

// memNode answers like a whole D2 ring over a MemBlocks, put modes
// included, and refuses puts and deletes without the volume writer's
// valid signature (a registry key: any write but an unsigned put if
// absent), as a gateway does.
type memNode struct {
	mu sync.Mutex
	m  map[key.Key][]byte
}

func newMemNode() *memNode { return &memNode{m: map[key.Key][]byte{}} }

func (s *memNode) handle(m wire.Msg) (wire.Msg, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch m := m.(type) {
	case *wire.D2Put:
		k, _ := key.FromID(m.Key)
		if err := s.check(m); err != nil {
			return nil, err
		}
		old, ok := s.m[k]
		sum := sha256.Sum256(old)
		switch {
		case m.Mode == wire.D2PutIfAbsent && ok,
			m.Mode == wire.D2PutIfHash && (!ok || !bytes.Equal(sum[:], m.Prev)):
			return &wire.D2StoreDone{Conflict: true}, nil
		}
		s.m[k] = bytes.Clone(m.Data)
		return &wire.D2StoreDone{Copies: 3}, nil
	case *wire.D2Get:
		k, _ := key.FromID(m.Key)
		d, ok := s.m[k]
		if !ok {
			return nil, fault.ErrNotFound
		}
		return &wire.D2Block{Key: m.Key, Data: d, Found: true}, nil
	case *wire.D2Delete:
		k, _ := key.FromID(m.Key)
		if err := s.check(m); err != nil {
			return nil, err
		}
		delete(s.m, k)
		return &wire.D2StoreDone{Copies: 3}, nil
	case *wire.D2Latest:
		var best *key.Key
		for k := range s.m {
			if bytes.HasPrefix(k[:], m.Prefix) && (best == nil || bytes.Compare(k[:], best[:]) > 0) {
				k := k
				best = &k
			}
		}
		if best == nil {
			return &wire.D2Block{}, nil
		}
		return &wire.D2Block{Key: best.ID(), Data: s.m[*best], Found: true}, nil
	case *wire.D2List:
		// Pages of two keys, as owners' ranges would cut them.
		var ks []id.ID
		for k := range s.m {
			if bytes.HasPrefix(k[:], m.Prefix) && (m.After.IsZero() || k.ID().Cmp(m.After) > 0) {
				ks = append(ks, k.ID())
			}
		}
		slices.SortFunc(ks, id.ID.Cmp)
		if len(ks) <= 2 {
			return &wire.D2Listing{Keys: ks}, nil
		}
		return &wire.D2Listing{Keys: ks[:2], Next: ks[1]}, nil
	case *wire.D2Stat:
		k, _ := key.FromID(m.Key)
		d, ok := s.m[k]
		sum := sha256.Sum256(d)
		state := wire.D2HolderMissing
		if ok && bytes.Equal(sum[:], m.Hash) {
			state = wire.D2HolderOK
		}
		var hs []wire.D2Holder
		for _, a := range []string{"10.0.0.1:4001", "10.0.0.2:4001", "10.0.0.3:4001"} {
			hs = append(hs, wire.D2Holder{Node: wire.D2Ref{Node: wire.NodeRef{ID: id.Key([]byte(a)), Addr: a}, Pos: m.Key}, State: state})
		}
		return &wire.D2Holders{Key: m.Key, Holders: hs}, nil
	}
	return nil, fault.ErrBadRequest
}

// errForbidden is memNode's refusal of an unsigned destructive request.
var errForbidden = fmt.Errorf("%w: permission denied", fault.ErrBadRequest)

// check refuses a delete or replacing put without a valid, unexpired
// signature of its key's volume.
func (s *memNode) check(m wire.Msg) error {
	var g key.Grant
	var a wire.D2Auth
	switch m := m.(type) {
	case *wire.D2Put:
		g.Key, _ = key.FromID(m.Key)
		g.Sum, a = sha256.Sum256(m.Data), m.Auth
		switch m.Mode {
		case wire.D2PutKeep:
			g.Op = key.OpKeep
		case wire.D2PutReplace:
			g.Op = key.OpReplace
		case wire.D2PutIfAbsent:
			g.Op = key.OpIfAbsent
		case wire.D2PutIfHash:
			g.Op = key.OpIfHash
			copy(g.Prev[:], m.Prev)
		}
	case *wire.D2Delete:
		g.Op, a = key.OpDelete, m.Auth
		g.Key, _ = key.FromID(m.Key)
	}
	if len(a.Signed) > 0 {
		signed, err := key.Parse(a.Signed)
		if err != nil || key.PlaceBlock(signed) != g.Key {
			return fmt.Errorf("%w: not the signed key's placement", errForbidden)
		}
		g.Key = signed
	}
	if g.Key.Volume() == key.Registry() {
		if g.Op != key.OpIfAbsent {
			return fmt.Errorf("%w: registry records are put if absent only", errForbidden)
		}
		return nil
	}
	g.Expires = int64(a.Expires)
	if time.Now().UnixNano() > g.Expires {
		return fmt.Errorf("%w: expired", errForbidden)
	}
	if err := g.Verify(a.Pub, a.Sig); err != nil {
		return fmt.Errorf("%w: %v", errForbidden, err)
	}
	return nil
}

// writerKey is the private key of test volume name's writer.
func writerKey(name string) ed25519.PrivateKey {
	seed := sha256.Sum256([]byte(name))
	return ed25519.NewKeyFromSeed(seed[:])
}

// testVolumes are the volumes whose keys newBlocks holds.
var testVolumes = []string{"v", "w", "f", "n", "p", "c", "h"}

func testVolume(name string) key.Volume {
	return key.VolumeOfKey(writerKey(name).Public().(ed25519.PublicKey))
}

func testKey(vol string, blk, ver uint32) key.Key {
	return key.Root(testVolume(vol)).WithBlock(blk, ver)
}

func newBlocks(t *testing.T, addrs ...string) *Blocks {
	t.Helper()
	cfg := DefaultConfig(addrs...)
	cfg.CallTimeout = 300 * time.Millisecond
	cfg.Backoff = 10 * time.Millisecond
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	for _, v := range testVolumes {
		b.AddKey(writerKey(v))
	}
	return b
}

// TestBlocksRoundTrip: put, get, put-if, latest and delete through a
// node behave as d2fs.Blocks says.
func TestBlocksRoundTrip(t *testing.T) {
	mem := newMemNode()
	n := startFake(t, mem.handle)
	b := newBlocks(t, n.addr())
	ctx := context.Background()
	k := testKey("v", 0, 1)
	data := []byte("superblock 1")
	if err := b.PutIf(ctx, k, [32]byte{}, data); err != nil {
		t.Fatal(err)
	}
	if err := b.PutIf(ctx, k, [32]byte{}, []byte("another")); !errors.Is(err, d2fs.ErrConflict) {
		t.Fatalf("second if-absent put: %v, want ErrConflict", err)
	}
	if err := b.PutIf(ctx, k, sha256.Sum256(data), []byte("next")); err != nil {
		t.Fatalf("if-hash put with the right hash: %v", err)
	}
	if err := b.PutIf(ctx, k, sha256.Sum256(data), []byte("stale")); !errors.Is(err, d2fs.ErrConflict) {
		t.Fatalf("if-hash put with a stale hash: %v, want ErrConflict", err)
	}
	got, err := b.Get(ctx, k, sha256.Sum256([]byte("next")))
	if err != nil || string(got) != "next" {
		t.Fatalf("get: %q, %v", got, err)
	}
	if _, err := b.Get(ctx, k, sha256.Sum256(data)); !errors.Is(err, d2fs.ErrCorrupt) {
		t.Fatalf("get with another hash: %v, want ErrCorrupt (the fake returns any bytes)", err)
	}
	if _, err := b.Get(ctx, testKey("v", 5, 1), sha256.Sum256(data)); !errors.Is(err, d2fs.ErrNotFound) {
		t.Fatalf("get of a missing key: %v, want ErrNotFound", err)
	}
	for ver := uint32(2); ver <= 4; ver++ {
		if err := b.Put(ctx, testKey("v", 0, ver), []byte{byte(ver)}); err != nil {
			t.Fatal(err)
		}
	}
	lo, hi := testKey("v", 0, 1), testKey("v", 0, ^uint32(0))
	lk, ld, err := b.Latest(ctx, lo, hi)
	if err != nil || lk != testKey("v", 0, 4) || !bytes.Equal(ld, []byte{4}) {
		t.Fatalf("latest: %v %v %v", lk, ld, err)
	}
	if err := b.Delete(ctx, testKey("v", 0, 4)); err != nil {
		t.Fatal(err)
	}
	if lk, _, err := b.Latest(ctx, lo, hi); err != nil || lk != testKey("v", 0, 3) {
		t.Fatalf("latest after delete: %v %v", lk, err)
	}
	// Only version 0 under the prefix: below lo, so none in [lo, hi].
	if _, _, err := b.Latest(ctx, testKey("w", 0, 1), testKey("w", 0, ^uint32(0))); !errors.Is(err, d2fs.ErrNotFound) {
		t.Fatalf("latest of an empty range: %v", err)
	}
}

// TestLatestRanges: prefix ranges are served, others refused.
func TestLatestRanges(t *testing.T) {
	k := testKey("v", 0, 7)
	for _, tc := range []struct {
		name   string
		lo, hi key.Key
		prefix int // bytes; -1: refused
	}{
		{"one key", k, k, key.Size},
		{"versions", testKey("v", 0, 1), testKey("v", 0, ^uint32(0)), key.Size - 4},
		{"a file's blocks", testKey("v", 0, 0), testKey("v", ^uint32(0), ^uint32(0)), key.Size - 8},
		{"ends early", testKey("v", 0, 1), testKey("v", 0, 9), -1},
		{"empty", testKey("v", 0, 9), testKey("v", 0, 1), -1},
	} {
		p, err := prefixOf(tc.lo, tc.hi)
		switch {
		case tc.prefix < 0 && !errors.Is(err, ErrRange):
			t.Errorf("%s: %v, want ErrRange", tc.name, err)
		case tc.prefix >= 0 && (err != nil || len(p) != tc.prefix):
			t.Errorf("%s: prefix of %d bytes, %v; want %d", tc.name, len(p), err, tc.prefix)
		}
	}
	b := newBlocks(t, "127.0.0.1:1")
	if _, _, err := b.Latest(context.Background(), testKey("v", 0, 1), testKey("v", 0, 9)); !errors.Is(err, ErrRange) {
		t.Fatalf("Latest over a range that is not a prefix's: %v", err)
	}
}

// TestFailover: a dead address, a silent node, a busy node and a node
// without D2 are passed over; the node that answered is asked first next
// time; a node's answer about the block is not.
func TestFailover(t *testing.T) {
	mem := newMemNode()
	dead := startFake(t, mem.handle)
	deadAddr := dead.addr()
	dead.stop()
	silent := startFake(t, func(wire.Msg) (wire.Msg, error) { return nil, nil })
	busy := startFake(t, func(wire.Msg) (wire.Msg, error) { return nil, fault.ErrBusy })
	noD2 := startFake(t, func(m wire.Msg) (wire.Msg, error) {
		return nil, &wire.Error{Code: fault.CodeNoProtocol, Text: "no protocol for " + m.Type().String() + " at x"}
	})
	good := startFake(t, mem.handle)
	b := newBlocks(t, deadAddr, silent.addr(), busy.addr(), noD2.addr(), good.addr())
	ctx := context.Background()
	k := testKey("f", 1, 1)
	if err := b.Put(ctx, k, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if b.Good() != good.addr() {
		t.Fatalf("last good node %s, want %s", b.Good(), good.addr())
	}
	before := silent.count() + busy.count() + noD2.count()
	if _, err := b.Get(ctx, k, sha256.Sum256([]byte("x"))); err != nil {
		t.Fatal(err)
	}
	if after := silent.count() + busy.count() + noD2.count(); after != before {
		t.Fatalf("the next call went to failed nodes again (%d calls, was %d)", after, before)
	}
	// Not found is an answer: the other nodes are not asked.
	calls := good.count()
	if _, err := b.Get(ctx, testKey("f", 9, 1), sha256.Sum256(nil)); !errors.Is(err, d2fs.ErrNotFound) {
		t.Fatalf("get of a missing key: %v", err)
	}
	if good.count() != calls+1 || silent.count()+busy.count()+noD2.count() != before {
		t.Fatal("a not-found answer was asked of other nodes")
	}
}

// TestNoD2: nodes that all lack D2 give ErrNoD2; nodes that all fail
// give ErrNoNode naming each, after Passes passes.
func TestNoD2(t *testing.T) {
	noD2 := func(m wire.Msg) (wire.Msg, error) {
		return nil, &wire.Error{Code: fault.CodeNoProtocol, Text: "no protocol for " + m.Type().String() + " at x"}
	}
	a, c := startFake(t, noD2), startFake(t, noD2)
	b := newBlocks(t, a.addr(), c.addr())
	_, _, err := b.Latest(context.Background(), testKey("n", 0, 0), testKey("n", 0, 0))
	if !errors.Is(err, ErrNoD2) {
		t.Fatalf("%v, want ErrNoD2", err)
	}
	busy := startFake(t, func(wire.Msg) (wire.Msg, error) { return nil, fault.ErrUnavailable })
	b = newBlocks(t, busy.addr())
	if err := b.Put(context.Background(), testKey("n", 0, 0), nil); !errors.Is(err, ErrNoNode) || !errors.Is(err, ErrSettling) {
		t.Fatalf("%v, want ErrNoNode and ErrSettling (every node answered unavailable)", err)
	}
	if busy.count() != DefaultConfig().Passes {
		t.Fatalf("%d tries, want %d passes", busy.count(), DefaultConfig().Passes)
	}
}

// TestRetriesOutlastRingRepair: a gateway that answers "unavailable" for
// 3 s (a key's owner was just killed, and D2's ring drops it within a few
// stabilization rounds) is answered within the default passes. With 3
// passes (1.5 s of pauses) 'triad fs status' failed a second after a node
// was killed (TestFS, issue 45).
func TestRetriesOutlastRingRepair(t *testing.T) {
	mem := newMemNode()
	var mu sync.Mutex
	var first time.Time
	settling := startFake(t, func(m wire.Msg) (wire.Msg, error) {
		mu.Lock()
		if first.IsZero() {
			first = time.Now()
		}
		since := time.Since(first)
		mu.Unlock()
		if since < 3*time.Second {
			return nil, fmt.Errorf("%w: the owner of the key did not answer", fault.ErrUnavailable)
		}
		return mem.handle(m)
	})
	cfg := DefaultConfig(settling.addr())
	cfg.CallTimeout = time.Second
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := b.Get(context.Background(), testKey("r", 0, 1), sha256.Sum256(nil)); !errors.Is(err, d2fs.ErrNotFound) {
		t.Fatalf("a get while the ring settles for 3 s: %v, want the answer (not found) once it has", err)
	}
}

// TestPutIfRetried: an if-absent put that landed but whose answer was
// lost (the node times out) is retried elsewhere, meets a conflict, and
// is found to have landed: success, not ErrConflict. A put short of
// copies is retried.
func TestPutIfRetried(t *testing.T) {
	mem := newMemNode()
	lost := startFake(t, func(m wire.Msg) (wire.Msg, error) {
		mem.handle(m) // stores, and answers nothing
		return nil, nil
	})
	good := startFake(t, mem.handle)
	b := newBlocks(t, lost.addr(), good.addr())
	k := testKey("p", 0, 1)
	if err := b.PutIf(context.Background(), k, [32]byte{}, []byte("lease")); err != nil {
		t.Fatalf("a put that landed on its first try: %v", err)
	}
	if err := b.PutIf(context.Background(), k, [32]byte{}, []byte("other")); !errors.Is(err, d2fs.ErrConflict) {
		t.Fatalf("a real conflict: %v", err)
	}
	few := startFake(t, func(m wire.Msg) (wire.Msg, error) { return &wire.D2StoreDone{Copies: 1}, nil })
	b = newBlocks(t, few.addr(), good.addr())
	if err := b.Put(context.Background(), testKey("p", 1, 1), []byte("x")); err != nil {
		t.Fatal(err)
	}
	if few.count() != 1 || b.Good() != good.addr() {
		t.Fatalf("a put on 1 copy was not retried elsewhere (%d calls, good %s)", few.count(), b.Good())
	}
}

// TestConcurrent: many goroutines share the pool (run with -race).
func TestConcurrent(t *testing.T) {
	mem := newMemNode()
	n := startFake(t, mem.handle)
	b := newBlocks(t, n.addr())
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k := testKey("c", uint32(i), 1)
			d := []byte{byte(i)}
			if err := b.Put(context.Background(), k, d); err != nil {
				errs <- err
				return
			}
			if got, err := b.Get(context.Background(), k, sha256.Sum256(d)); err != nil || !bytes.Equal(got, d) {
				errs <- errors.Join(err, errors.New("wrong bytes"))
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestHolders: a stat names the holders the gateway reports, each ok or
// missing by the hash asked; an answer with a state past the last is not
// believed.
func TestHolders(t *testing.T) {
	mem := newMemNode()
	n := startFake(t, mem.handle)
	b := newBlocks(t, n.addr())
	ctx := context.Background()
	k := testKey("h", 1, 1)
	if err := b.Put(ctx, k, []byte("held")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		sum  [32]byte
		want wire.D2HolderState
	}{
		{sha256.Sum256([]byte("held")), wire.D2HolderOK},
		{sha256.Sum256([]byte("other")), wire.D2HolderMissing},
	} {
		hs, err := b.Holders(ctx, k, tc.sum)
		if err != nil || len(hs) != 3 {
			t.Fatalf("holders: %+v, %v", hs, err)
		}
		for _, h := range hs {
			if h.State != tc.want || h.Node.Node.Addr == "" {
				t.Errorf("holder %s is %v, want %v", h.Node.Node.Addr, h.State, tc.want)
			}
		}
	}
	bad := startFake(t, func(m wire.Msg) (wire.Msg, error) {
		return &wire.D2Holders{Key: m.(*wire.D2Stat).Key, Holders: []wire.D2Holder{{Node: wire.D2Ref{Node: wire.NodeRef{ID: id.Key([]byte("x:1")), Addr: "x:1"}}, State: wire.D2HolderStates}}}, nil
	})
	if hs, err := newBlocks(t, bad.addr()).Holders(ctx, k, sha256.Sum256([]byte("held"))); err == nil {
		t.Errorf("a state past the last: %+v, no error", hs)
	}
}

// TestWriterKey: without the volume's key, a Blocks sends no put of any
// mode and no delete (ErrNoKey) and the block stays; a registry key takes
// a put if absent without a key, and no other write even with one; a node refuses a
// delete signed by another volume's key; a volume made and written
// through a Blocks holding its key works end to end, and one holding no
// key reads it.
func TestWriterKey(t *testing.T) {
	mem := newMemNode()
	n := startFake(t, mem.handle)
	ctx := context.Background()
	writer := newBlocks(t, n.addr())
	priv := writerKey("home")
	vol := writer.AddKey(priv)
	if vol != testVolume("home") || !writer.HasKey(vol) {
		t.Fatalf("AddKey gave volume %v", vol)
	}
	if got, err := d2fs.Mkvol(ctx, writer, priv, time.Now()); err != nil || got != vol {
		t.Fatalf("mkvol: %v, %v; want volume %v", got, err, vol)
	}
	cfg := d2fs.DefaultConfig()
	cfg.Writer = priv
	f, err := d2fs.Open(ctx, writer, vol, false, cfg)
	if err != nil {
		t.Fatal(err)
	}
	file, err := f.Create(ctx, f.Root(), "a", 0o644, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("signed "), 3000)
	if _, err := f.WriteAt(ctx, file, data, 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(ctx); err != nil {
		t.Fatalf("commit through the writer's key: %v", err)
	}

	reader, err := New(DefaultConfig(n.addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	ro, err := d2fs.Open(ctx, reader, vol, true, d2fs.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	got, err := ro.Walk(ctx, "/a")
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, len(data)+1)
	if k, err := ro.ReadAt(ctx, got, buf, 0); err != nil || !bytes.Equal(buf[:k], data) {
		t.Fatalf("read back without a key: %d bytes, %v", k, err)
	}
	refs, err := ro.BlockRefs(ctx, got)
	if err != nil || len(refs) < 2 {
		t.Fatalf("block refs: %v, %v", refs, err)
	}
	k := refs[len(refs)-1].Key
	calls := n.count()
	rk := key.RegistryKey("home")
	for name, err := range map[string]error{
		"delete":             reader.Delete(ctx, k),
		"put":                reader.Put(ctx, k, []byte("x")),
		"if-hash":            reader.PutIf(ctx, k, refs[len(refs)-1].Sum, []byte("x")),
		"if-absent, new key": reader.PutIf(ctx, k.WithBlock(7, 7), [32]byte{}, []byte("x")),
		"registry put":       writer.Put(ctx, rk, []byte("x")),
		"registry delete":    writer.Delete(ctx, rk),
		"registry if-hash":   writer.PutIf(ctx, rk, sha256.Sum256([]byte("x")), []byte("y")),
	} {
		if !errors.Is(err, ErrNoKey) {
			t.Errorf("%s without the key: %v, want ErrNoKey", name, err)
		}
	}
	if n.count() != calls {
		t.Errorf("%d requests sent without the key", n.count()-calls)
	}
	if err := reader.PutIf(ctx, rk, [32]byte{}, []byte("home's record")); err != nil || n.count() != calls+1 {
		t.Errorf("a registry put if absent without a key: %v, %d requests", err, n.count()-calls)
	}
	// Another volume's writer signs for its own volume only.
	other := newBlocks(t, n.addr())
	wrong := other.AddKey(writerKey("mallory"))
	other.mu.Lock()
	other.keys[vol] = other.keys[wrong]
	other.mu.Unlock()
	if err := other.Delete(ctx, k); !errors.Is(err, fault.ErrBadRequest) {
		t.Errorf("a delete signed by another volume's key: %v, want a bad request", err)
	}
	if _, err := reader.Get(ctx, k, refs[len(refs)-1].Sum); err != nil {
		t.Errorf("the block after the refused deletes: %v", err)
	}
}

// TestBlockPlacement: a Blocks under block placement stores each block at
// key.PlaceBlock of its key, signed for the key itself, and reads,
// Latest (over one block's versions) and deletes find them there; the
// registry's records stay at their keys.
func TestBlockPlacement(t *testing.T) {
	mem := newMemNode()
	n := startFake(t, mem.handle)
	b := newBlocks(t, n.addr())
	b.cfg.Placement = PlaceBlock
	ctx := context.Background()
	for ver := uint32(1); ver <= 3; ver++ {
		if err := b.Put(ctx, testKey("v", 0, ver), []byte{byte(ver)}); err != nil {
			t.Fatal(err)
		}
	}
	data := []byte("data block")
	k := testKey("v", 7, 1)
	if err := b.PutIf(ctx, k, [32]byte{}, data); err != nil {
		t.Fatal(err)
	}
	rk := key.RegistryKey("home")
	if err := b.PutIf(ctx, rk, [32]byte{}, []byte("record")); err != nil {
		t.Fatal(err)
	}
	mem.mu.Lock()
	_, atKey := mem.m[k]
	_, atPlace := mem.m[key.PlaceBlock(k)]
	_, record := mem.m[rk]
	mem.mu.Unlock()
	if atKey || !atPlace || !record {
		t.Fatalf("stored at its key %v, at its placement %v; the registry record at its key %v", atKey, atPlace, record)
	}
	if got, err := b.Get(ctx, k, sha256.Sum256(data)); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("get: %q, %v", got, err)
	}
	lk, ld, err := b.Latest(ctx, testKey("v", 0, 1), testKey("v", 0, ^uint32(0)))
	if err != nil || lk != testKey("v", 0, 3) || !bytes.Equal(ld, []byte{3}) {
		t.Fatalf("latest: %v %v %v", lk, ld, err)
	}
	if _, _, err := b.Latest(ctx, testKey("v", 0, 0), testKey("v", 1, ^uint32(0))); !errors.Is(err, ErrRange) {
		t.Fatalf("latest over two blocks: %v, want ErrRange", err)
	}
	if err := b.Delete(ctx, k); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Get(ctx, k, sha256.Sum256(data)); !errors.Is(err, d2fs.ErrNotFound) {
		t.Fatalf("get after delete: %v", err)
	}
	if p, err := ParsePlacement("block"); err != nil || p != PlaceBlock || p.String() != "block" {
		t.Fatalf("ParsePlacement(block): %v, %v", p, err)
	}
	if _, err := ParsePlacement("file"); err == nil {
		t.Fatal("ParsePlacement(file) took it")
	}
}

// TestList: List gives every key of a prefix once, in order, page after
// page; a gateway whose listing does not move forward is an error, not a
// loop.
func TestList(t *testing.T) {
	mem := newMemNode()
	n := startFake(t, mem.handle)
	b := newBlocks(t, n.addr())
	ctx := context.Background()
	var want []key.Key
	for blk := range uint32(5) {
		k := testKey("v", blk, 1)
		if err := b.Put(ctx, k, []byte{byte(blk)}); err != nil {
			t.Fatal(err)
		}
		want = append(want, k)
	}
	if err := b.Put(ctx, testKey("w", 0, 1), []byte("another volume")); err != nil {
		t.Fatal(err)
	}
	vol := testVolume("v")
	var got []key.Key
	if err := b.List(ctx, vol[:], func(k key.Key) error { got = append(got, k); return nil }); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("listed %v, want %v", got, want)
	}
	stuck := startFake(t, func(m wire.Msg) (wire.Msg, error) {
		l := m.(*wire.D2List)
		next := l.After
		if next.IsZero() {
			next = want[0].ID()
		}
		return &wire.D2Listing{Next: next}, nil
	})
	if err := newBlocks(t, stuck.addr()).List(ctx, vol[:], func(key.Key) error { return nil }); err == nil {
		t.Fatal("a listing that stays in place ended without an error")
	}
}
