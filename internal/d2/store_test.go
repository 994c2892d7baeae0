package d2_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"triad/internal/d2"
	"triad/internal/d2/key"
	"triad/internal/fault"
	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/store"
	"triad/internal/wire"
)

// corrupting is an engine that returns damaged bytes for the keys in bad.
type corrupting struct {
	store.Engine
	bad map[id.ID]bool
}

func (e *corrupting) Get(k id.ID) ([]byte, store.Meta, error) {
	data, m, err := e.Engine.Get(k)
	if err == nil && e.bad[k] {
		data = append(bytes.Clone(data), 'x')
	}
	return data, m, err
}

// block is a test block: its key and bytes.
type block struct {
	key  id.ID
	data []byte
}

func (c *cluster) put(from int, b block) (copies int, err error) {
	c.t.Helper()
	h := c.hosts[from]
	done := false
	c.s.Do(h, func(env node.Env) {
		c.node(h).Put(env, b.key, b.data, wire.D2PutReplace, nil, func(env node.Env, n int, e error) { copies, err, done = n, e, true })
	})
	c.s.RunFor(10 * time.Second)
	if !done {
		c.t.Fatalf("put of %s from %s never ended", b.key.Short(), h.Addr)
	}
	return copies, err
}

func (c *cluster) get(from int, k id.ID, hash []byte) (data []byte, err error) {
	c.t.Helper()
	h := c.hosts[from]
	done := false
	c.s.Do(h, func(env node.Env) {
		c.node(h).Get(env, k, hash, func(env node.Env, d []byte, e error) { data, err, done = d, e, true })
	})
	c.s.RunFor(30 * time.Second) // time for a dead cached owner's timeout
	if !done {
		c.t.Fatalf("get of %s from %s never ended", k.Short(), h.Addr)
	}
	return data, err
}

func (c *cluster) latest(from int, prefix []byte) (id.ID, []byte, bool, error) {
	c.t.Helper()
	h := c.hosts[from]
	var (
		k     id.ID
		data  []byte
		found bool
		err   error
		done  bool
	)
	c.s.Do(h, func(env node.Env) {
		c.node(h).Latest(env, prefix, func(env node.Env, x id.ID, d []byte, f bool, e error) { k, data, found, err, done = x, d, f, e, true })
	})
	c.s.RunFor(10 * time.Second)
	if !done {
		c.t.Fatalf("latest of %x never ended", prefix)
	}
	return k, data, found, err
}

func (c *cluster) del(from int, k id.ID) (int, error) {
	c.t.Helper()
	h := c.hosts[from]
	var (
		copies int
		err    error
		done   bool
	)
	c.s.Do(h, func(env node.Env) {
		c.node(h).Delete(env, k, func(env node.Env, n int, e error) { copies, err, done = n, e, true })
	})
	c.s.RunFor(10 * time.Second)
	if !done {
		c.t.Fatalf("delete of %s never ended", k.Short())
	}
	return copies, err
}

// holders are the live nodes that hold k's bytes.
func (c *cluster) holders(k id.ID) int {
	n := 0
	for _, h := range c.hosts {
		if block, _ := c.node(h).Holds(k); h.Up() && block {
			n++
		}
	}
	return n
}

// still is the default configuration without load balancing: nodes stay
// where they joined.
func still() d2.Config {
	cfg := d2.DefaultConfig()
	cfg.Threshold = 0
	return cfg
}

func randomBlock(r *rand.Rand, k id.ID) block {
	data := make([]byte, 100+r.IntN(8000))
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	return block{key: k, data: data}
}

// TestStorePutGet: blocks put from any node land on their key's three
// successors and read back, from any node, only with their content hash.
func TestStorePutGet(t *testing.T) {
	c := newCluster(t, 2, 24, still(), skewed)
	r := rand.New(rand.NewPCG(2, 2))
	var blocks []block
	for i := 0; i < 60; i++ {
		b := randomBlock(r, skewed(r))
		blocks = append(blocks, b)
		copies, err := c.put(r.IntN(len(c.hosts)), b)
		if err != nil || copies != 3 {
			t.Fatalf("put %d: %d copies, %v", i, copies, err)
		}
		if n := c.holders(b.key); n != 3 {
			t.Errorf("block %d held by %d nodes, want 3", i, n)
		}
	}
	for i, b := range blocks {
		data, err := c.get(r.IntN(len(c.hosts)), b.key, d2.Sum(b.data))
		if err != nil || !bytes.Equal(data, b.data) {
			t.Fatalf("get %d: %d bytes, %v", i, len(data), err)
		}
		if _, err := c.get(r.IntN(len(c.hosts)), b.key, d2.Sum([]byte("other"))); !errors.Is(err, fault.ErrNotFound) {
			t.Errorf("get %d with another hash: %v, want not found", i, err)
		}
	}
	var hits, misses uint64
	for _, h := range c.hosts {
		hits += c.node(h).Stats.CacheHits
		misses += c.node(h).Stats.CacheMisses
	}
	t.Logf("cache: %d hits, %d misses", hits, misses)
	if hits == 0 {
		t.Error("no request hit the lookup cache")
	}
}

// TestStoreSkipsMismatch: an owner whose copy is damaged is skipped; the
// next replica answers, and the mismatch is counted.
func TestStoreSkipsMismatch(t *testing.T) {
	bad := map[id.ID]bool{}
	c := newCluster(t, 3, 16, still(), skewed)
	for a, e := range c.engines {
		c.engines[a] = &corrupting{Engine: e, bad: bad}
	}
	// The engines are handed to nodes at boot: restart every host so
	// they run on the corrupting ones, and let the ring settle.
	for _, h := range c.hosts {
		c.s.Crash(h)
		if err := c.s.Restart(h); err != nil {
			t.Fatal(err)
		}
	}
	c.settle()
	r := rand.New(rand.NewPCG(3, 3))
	b := randomBlock(r, skewed(r))
	if copies, err := c.put(0, b); err != nil || copies != 3 {
		t.Fatalf("put: %d copies, %v", copies, err)
	}
	bad[b.key] = true // every engine's copy reads damaged ...
	if _, err := c.get(1, b.key, d2.Sum(b.data)); !errors.Is(err, fault.ErrNotFound) {
		t.Fatalf("a block damaged everywhere: %v, want not found", err)
	}
	var mism uint64
	for _, h := range c.hosts {
		mism += c.node(h).Stats.Mismatches
	}
	if mism < 3 {
		t.Errorf("%d mismatches counted, want 3 (one per replica)", mism)
	}
	delete(bad, b.key) // ... and when only the owner's is, a replica answers
	ps, who := c.ring()
	ownerAddr := who[owner(ps, b.key)]
	c.engines[ownerAddr].(*corrupting).bad = map[id.ID]bool{b.key: true}
	data, err := c.get(1, b.key, d2.Sum(b.data))
	if err != nil || !bytes.Equal(data, b.data) {
		t.Fatalf("owner damaged: %d bytes, %v", len(data), err)
	}
}

// TestStoreDeleteAndLatest: Latest finds the greatest key of a prefix when
// the prefix's keys span two nodes, and walks back past a node that holds
// none; a deleted block is gone.
func TestStoreDeleteAndLatest(t *testing.T) {
	c := newCluster(t, 4, 16, still(), skewed)
	ps, _ := c.ring()
	boundary := ps[5].Bytes() // keys of the prefix fall on both sides of node 5
	prefix := boundary[:KeyPrefix]
	r := rand.New(rand.NewPCG(4, 4))
	var keys []id.ID
	for _, delta := range []int{-3, -2, -1, 1, 2} {
		k := make([]byte, d2.KeyBytes)
		copy(k, boundary)
		k[d2.KeyBytes-1] = byte(int(k[d2.KeyBytes-1]) + delta) // a boundary away from a carry: checked below
		x, _ := id.FromBytes(k)
		keys = append(keys, x)
		if _, err := c.put(r.IntN(len(c.hosts)), randomBlock(r, x)); err != nil {
			t.Fatal(err)
		}
	}
	if !keys[2].In(ps[4], ps[5]) || !keys[3].In(ps[5], ps[6]) {
		t.Skip("the keys do not straddle node 5 (a carry in the last byte)")
	}
	k, _, found, err := c.latest(0, prefix)
	if err != nil || !found || k != keys[4] {
		t.Fatalf("latest: %v %v %v, want %s", k.Short(), found, err, keys[4].Short())
	}
	for _, x := range keys[3:] {
		if n, err := c.del(1, x); err != nil || n != 3 {
			t.Fatalf("delete %s: %d copies, %v", x.Short(), n, err)
		}
	}
	k, _, found, err = c.latest(2, prefix)
	if err != nil || !found || k != keys[2] {
		t.Fatalf("latest after the deletes: %v %v %v, want %s (on the node before)", k.Short(), found, err, keys[2].Short())
	}
	if _, err := c.get(3, keys[4], d2.Sum([]byte("x"))); !errors.Is(err, fault.ErrNotFound) {
		t.Errorf("a deleted block: %v", err)
	}
	for a, e := range c.engines {
		if _, err := e.Stat(keys[4]); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("a deleted block is still in %s's engine: %v", a, err)
		}
	}
	if _, _, found, _ := c.latest(0, []byte(fmt.Sprintf("%x", "nothing here"))[:8]); found {
		t.Error("latest found a key under an empty prefix")
	}
}

// KeyPrefix is the prefix length TestStoreDeleteAndLatest uses: all but
// the last byte.
const KeyPrefix = d2.KeyBytes - 1

// TestClientMessages: the client API's messages, sent by another node as a
// client would, are served.
func TestClientMessages(t *testing.T) {
	c := newCluster(t, 5, 8, still(), skewed)
	r := rand.New(rand.NewPCG(5, 5))
	w := newWriter(rand.New(rand.NewPCG(5, 6)))
	b := randomBlock(r, w.in(skewed(r)))
	client, server := c.node(c.hosts[1]), c.hosts[6]
	var replies []wire.Msg
	call := func(m wire.Msg) {
		c.s.Do(c.hosts[1], func(env node.Env) {
			client.Host().Call(env, server.Addr, client.Me().Node, id.ID{}, m, 5*time.Second, func(env node.Env, reply wire.Msg, err error) {
				var e *wire.Error
				if err != nil && !errors.As(err, &e) {
					e = &wire.Error{Text: err.Error()}
				}
				if e != nil {
					reply = e
				}
				replies = append(replies, reply)
			})
		})
		c.s.RunFor(10 * time.Second)
	}
	call(&wire.D2Put{Key: b.key, Data: b.data, Auth: w.auth(key.OpKeep, b.key, b.data, nil, c.now().Add(time.Minute))})
	call(&wire.D2Get{Key: b.key, Hash: d2.Sum(b.data)})
	call(&wire.D2Latest{Prefix: b.key.Bytes()[:4]})
	call(&wire.D2Get{Key: id.Random(r, 20), Hash: d2.Sum(b.data)}) // a 20-byte key: bad request
	if len(replies) != 4 {
		t.Fatalf("%d replies", len(replies))
	}
	if s, ok := replies[0].(*wire.D2StoreDone); !ok || s.Copies != 3 {
		t.Errorf("put: %+v", replies[0])
	}
	if g, ok := replies[1].(*wire.D2Block); !ok || !bytes.Equal(g.Data, b.data) {
		t.Errorf("get: %T", replies[1])
	}
	if l, ok := replies[2].(*wire.D2Block); !ok || !l.Found || l.Key != b.key || !bytes.Equal(l.Data, b.data) {
		t.Errorf("latest: %+v", replies[2])
	}
	if e, ok := replies[3].(*wire.Error); !ok || e.Code != fault.CodeBadRequest {
		t.Errorf("a 20-byte key: %+v", replies[3])
	}
	if c.node(server).Stats.BadRequests != 1 {
		t.Errorf("%d bad requests counted", c.node(server).Stats.BadRequests)
	}
}

// TestFailuresKeepBlocks: two nodes crash for good and a third restarts;
// the ring closes the gaps, every block stays readable, and within a few
// sync rounds each is back on three live nodes. The restarted node finds
// its blocks in its engine again.
func TestFailuresKeepBlocks(t *testing.T) {
	c := newCluster(t, 14, 24, still(), skewed)
	r := rand.New(rand.NewPCG(14, 14))
	var blocks []block
	for i := 0; i < 150; i++ {
		blocks = append(blocks, randomBlock(r, skewed(r)))
	}
	c.putMany(r, blocks)
	ps, who := c.ring()
	victim := c.hosts[0]
	for _, h := range c.hosts {
		if h.Addr == who[owner(ps, blocks[0].key)] {
			victim = h // the owner of a block, for sure
		}
	}
	c.s.Crash(victim)
	c.s.Crash(c.hosts[7])
	restarted := c.hosts[11]
	held := c.node(restarted).Held()
	c.s.Crash(restarted)
	if err := c.s.Restart(restarted); err != nil {
		t.Fatal(err)
	}
	c.s.RunFor(time.Second)
	if got := c.node(restarted).Held(); got != held {
		t.Errorf("the restarted node holds %d keys, %d before", got, held)
	}
	c.s.RunFor(20 * time.Minute)
	c.checkRing()
	for i, b := range blocks {
		if n := c.holders(b.key); n < 3 {
			t.Errorf("block %d on %d live nodes", i, n)
		}
		from := 1 + r.IntN(len(c.hosts)-1)
		for !c.hosts[from].Up() {
			from = 1 + r.IntN(len(c.hosts)-1)
		}
		data, err := c.get(from, b.key, d2.Sum(b.data))
		if err != nil || !bytes.Equal(data, b.data) {
			t.Fatalf("get %d after the failures: %v", i, err)
		}
	}
}
