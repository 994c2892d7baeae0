package dhash_test

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"triad/internal/dhash"
	"triad/internal/fault"
	"triad/internal/id"
	"triad/internal/sim"
	"triad/internal/store"
	"triad/internal/wire"
)

// fragmentedBlock is a block put as 7-of-14 fragments, one fragment of it
// and where that fragment's shard starts.
type fragmentedBlock struct {
	data  []byte
	key   id.ID
	frag  []byte
	shard int
}

func (c *cluster) putFragmented(r *rand.Rand, size int) fragmentedBlock {
	c.t.Helper()
	data := randomBlock(r, size)
	key, holders, err := c.put(0, data, wire.RedundancyFragments)
	if err != nil {
		c.t.Fatal(err)
	}
	c.s.RunFor(10 * time.Second) // the fragments past the quorum land too
	f, _, err := c.hostOf(holders[0]).Storage().Engine().Get(key)
	if err != nil {
		c.t.Fatal(err)
	}
	return fragmentedBlock{data: data, key: key, frag: f, shard: len(f) - (size+6)/7}
}

// nonHolder is a host holding nothing under key.
func (c *cluster) nonHolder(key id.ID) *sim.Host {
	c.t.Helper()
	for _, h := range c.s.Hosts() {
		if _, err := h.Storage().Engine().Stat(key); errors.Is(err, store.ErrNotFound) {
			return h
		}
	}
	c.t.Fatal("every host holds a copy")
	return nil
}

// Issue 27, finding 1: a host checked only a fragment's header, which
// anyone can write, so it stored made-up bytes under any key as a
// fragment. Now a fragment carries its block's descriptor, whose hash is
// the key, and the hash of every shard: a host refuses a shard that is
// not the one the descriptor lists, and a fragment of another block
// (valid under its own key), whole or spliced onto this block's header.
// The fragmented block still round-trips.
func TestForgedFragmentsAreRefused(t *testing.T) {
	cfg := dhash.DefaultConfig()
	c := newCluster(t, 16, cfg)
	r := rand.New(rand.NewPCG(27, 27))
	a := c.putFragmented(r, 7000)
	b := c.putFragmented(r, 7000)
	target := c.nonHolder(a.key)
	to := c.node(target).Ring().Vnodes()[0].Self()

	made := bytes.Clone(a.frag)
	for i := a.shard; i < len(made); i++ {
		made[i] = byte(r.Uint32())
	}
	for _, tc := range []struct {
		what string
		data []byte
	}{
		{"a's header with made-up bytes as its shard", made},
		{"a's header with b's shard", append(bytes.Clone(a.frag[:a.shard]), b.frag[b.shard:]...)},
		{"b's fragment", b.frag},
	} {
		err := c.store(0, to, &wire.StoreBlock{Key: a.key, Data: tc.data, Expiry: c.s.Epoch().Add(c.s.Now() + time.Hour).UnixNano(), Fragment: true})
		if !errors.Is(err, fault.ErrBadRequest) {
			t.Errorf("storing %s under a's key: %v, want a bad request", tc.what, err)
		}
		if _, err := target.Storage().Engine().Stat(a.key); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("after storing %s under a's key, %s holds a copy (%v)", tc.what, target.Addr, err)
		}
	}
	if err := c.store(0, to, &wire.StoreBlock{Key: a.key, Data: a.frag, Expiry: c.s.Epoch().Add(c.s.Now() + time.Hour).UnixNano(), Fragment: true}); err != nil {
		t.Errorf("storing a's own fragment: %v", err)
	}
	for _, blk := range []fragmentedBlock{a, b} {
		if blk.key == id.Key(blk.data) {
			t.Errorf("a fragmented block keyed by its content hash")
		}
		if got, err := c.get(1, blk.key); err != nil || !bytes.Equal(got, blk.data) {
			t.Fatalf("get %s: %v", blk.key.Short(), err)
		}
	}
}

// A StoreBlocks from a peer is checked copy by copy, as lone StoreBlocks
// are: a whole block whose data is not its key's, a made-up fragment and
// an empty copy are each refused in their own result and stored nowhere,
// while the honest copy beside them is kept.
func TestStoreBlocksRefusesCopiesNotTheirKeys(t *testing.T) {
	c := newCluster(t, 8, dhash.DefaultConfig())
	r := rand.New(rand.NewPCG(31, 31))
	target := c.s.Hosts()[3]
	to := c.node(target).Ring().Vnodes()[0].Self()
	expiry := c.s.Epoch().Add(c.s.Now() + time.Hour).UnixNano()
	honest := randomBlock(r, 3000)
	other := randomBlock(r, 3000)
	copies := []struct {
		what string
		b    wire.StoreBlock
		ok   bool
	}{
		{"an honest copy", wire.StoreBlock{Key: id.Key(honest), Data: honest, Expiry: expiry}, true},
		{"a block under another block's key", wire.StoreBlock{Key: id.Key(other), Data: honest, Expiry: expiry}, false},
		{"made-up bytes as a fragment", wire.StoreBlock{Key: id.Key([]byte("no such block")), Data: randomBlock(r, 500), Expiry: expiry, Fragment: true}, false},
		{"an empty copy", wire.StoreBlock{Key: id.Key(nil), Expiry: expiry}, false},
	}
	var m wire.StoreBlocks
	for _, cp := range copies {
		m.Blocks = append(m.Blocks, cp.b)
	}
	reply, err := c.call(0, to, &m)
	if err != nil {
		t.Fatal(err)
	}
	done, ok := reply.(*wire.StoresDone)
	if !ok || len(done.Results) != len(copies) {
		t.Fatalf("StoreBlocks of %d copies answered %#v", len(copies), reply)
	}
	engine := target.Storage().Engine()
	for i, cp := range copies {
		res := done.Results[i]
		_, statErr := engine.Stat(cp.b.Key)
		switch {
		case cp.ok && (res.Code != 0 || statErr != nil):
			t.Errorf("%s: result %+v, stat %v; want it kept", cp.what, res, statErr)
		case !cp.ok && res.Code == 0:
			t.Errorf("%s: accepted", cp.what)
		case !cp.ok && !errors.Is(statErr, store.ErrNotFound):
			t.Errorf("%s: refused (%s) but the key is held: stat %v", cp.what, res.Err, statErr)
		}
	}
}

// TestPutBatchChecksTheKeysItIsSent sends a node, over the network, a
// batch whose items name their keys: one right, one the hash of other
// bytes, one with none. The
// node hashes each block itself: the item under another's key fails as a
// bad request and is stored nowhere, under either key, while the two
// beside it are stored under their own hashes. Only a sender in the
// node's own process is taken at its word (node.MsgIn.Local, which the
// network cannot set).
func TestPutBatchChecksTheKeysItIsSent(t *testing.T) {
	c := newCluster(t, 8, dhash.DefaultConfig())
	r := rand.New(rand.NewPCG(32, 32))
	expiry := c.s.Epoch().Add(c.s.Now() + time.Hour).UnixNano()
	honest, forged, bare := randomBlock(r, 3000), randomBlock(r, 10000), randomBlock(r, 500)
	claimed := id.Key([]byte("some other block"))
	m := &wire.ClientPutBatch{Items: []wire.PutItem{
		{Data: honest, Expiry: expiry, Key: id.Key(honest)},
		{Data: forged, Expiry: expiry, Key: claimed},
		{Data: bare, Expiry: expiry},
	}, Redundancy: wire.RedundancyReplicas}
	done := c.putBatchAt(5, m)
	for i, data := range [][]byte{honest, bare} {
		if res := done.Results[2*i]; res.Code != 0 || res.Key != id.Key(data) {
			t.Errorf("item %d: result %+v, want it stored under %s", 2*i, res, id.Key(data).Short())
		}
	}
	if res := done.Results[1]; res.Code != fault.CodeBadRequest {
		t.Errorf("a block under another's key: result %+v, want a bad request", res)
	}
	c.s.RunFor(10 * time.Second)
	for _, h := range c.s.Hosts() {
		for _, key := range []id.ID{claimed, id.Key(forged)} {
			if _, err := h.Storage().Engine().Stat(key); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("%s holds %s of the refused item: stat %v", h.Addr, key.Short(), err)
			}
		}
	}
}

// TestFreshBatchOfStoredBlocks sends a node a batch marked Fresh (its
// sender believes no host has the blocks) that holds a block the DHT
// stores already, beside a new one. The belief is wrong for the first, and
// costs nothing but a look-up skipped: both puts succeed, and both blocks
// read back whole from every host that holds them.
func TestFreshBatchOfStoredBlocks(t *testing.T) {
	c := newCluster(t, 8, dhash.DefaultConfig())
	r := rand.New(rand.NewPCG(33, 33))
	old, fresh := randomBlock(r, 3000), randomBlock(r, 3000)
	if _, _, err := c.put(2, old, wire.RedundancyReplicas); err != nil {
		t.Fatal(err)
	}
	expiry := c.s.Epoch().Add(c.s.Now() + 2*time.Hour).UnixNano()
	m := &wire.ClientPutBatch{Items: []wire.PutItem{
		{Data: old, Expiry: expiry, Key: id.Key(old)},
		{Data: fresh, Expiry: expiry, Key: id.Key(fresh)},
	}, Redundancy: wire.RedundancyReplicas, Fresh: true}
	done := c.putBatchAt(5, m)
	for i, data := range [][]byte{old, fresh} {
		key := id.Key(data)
		if res := done.Results[i]; res.Code != 0 || res.Key != key {
			t.Fatalf("item %d: result %+v", i, res)
		}
		held := 0
		for _, h := range c.s.Hosts() {
			got, _, err := h.Storage().Engine().Get(key)
			if errors.Is(err, store.ErrNotFound) {
				continue
			}
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("%s: %s reads back %d bytes, err %v", h.Addr, key.Short(), len(got), err)
			}
			held++
		}
		if held < 2 {
			t.Errorf("%s is held by %d hosts, want 2", key.Short(), held)
		}
	}
}

// putBatchAt sends m from host 0 to host i's node, over the network, and
// returns its answer, one result per item.
func (c *cluster) putBatchAt(i int, m *wire.ClientPutBatch) *wire.PutBatchDone {
	c.t.Helper()
	reply, err := c.call(0, c.node(c.s.Hosts()[i]).Ring().Vnodes()[0].Self(), m)
	if err != nil {
		c.t.Fatal(err)
	}
	done, ok := reply.(*wire.PutBatchDone)
	if !ok || len(done.Results) != len(m.Items) {
		c.t.Fatalf("a batch of %d answered %#v", len(m.Items), reply)
	}
	return done
}

// A node checks every whole copy it fetches from another holder before it
// answers a get: a copy that does not hash to its key is refused and the
// next holder asked, and with no honest copy left the get fails rather
// than answer forged bytes. A news site's front-end takes its own node's
// answers without hashing them again, so this check is the only one.
func TestGetRefusesForgedCopies(t *testing.T) {
	c := newCluster(t, 16, dhash.DefaultConfig())
	r := rand.New(rand.NewPCG(31, 31))
	data := randomBlock(r, 20000)
	key, holders, err := c.put(0, data, wire.RedundancyReplicas)
	if err != nil || len(holders) != 2 {
		t.Fatalf("put: %v holders, %v", holders, err)
	}
	getter := -1
	for i, h := range c.s.Hosts() {
		if h.Addr != holders[0].Addr && h.Addr != holders[1].Addr {
			getter = i
			break
		}
	}
	forge := func(h *sim.Host, b []byte) {
		t.Helper()
		e := h.Storage().Engine()
		if err := e.Delete(key); err != nil {
			t.Fatal(err)
		}
		// Written as its holder's own engine would keep it: the CRCs are
		// sound, only the hash says the bytes are not the key's.
		if err := e.Put(key, b, c.s.Epoch().Add(c.s.Now()+time.Hour), store.PutOptions{KeyChecked: true}); err != nil {
			t.Fatal(err)
		}
	}
	forged := randomBlock(r, len(data))
	for _, n := range holders {
		forge(c.hostOf(n), forged)
	}
	got, err := c.get(getter, key)
	if err == nil || bytes.Equal(got, forged) {
		t.Fatalf("get with every copy forged: %d bytes, %v; want an error", len(got), err)
	}
	bad := c.node(c.s.Hosts()[getter]).Stats.BadCopies
	if bad == 0 {
		t.Error("no copy counted as bad")
	}
	forge(c.hostOf(holders[1]), data)
	if got, err := c.get(getter, key); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("get with one honest copy: %d bytes, %v; want the block", len(got), err)
	}
}
