package d2_test

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"time"

	"triad/internal/d2"
	"triad/internal/d2/key"
	"triad/internal/fault"
	"triad/internal/id"
	"triad/internal/wire"
)

// TestInsiderRelaysAreChecked (issue 44, rows 1-3): a node of the ring,
// which a client's check at the gateway does not stop, sends the
// node-to-node messages straight to a block's holders: drops without the
// writer's signed delete, an owner's decision (D2Store Primary) of a
// replace without the writer's consent or with the consent for other
// bytes, and another writer's record over a taken name, as a decision and
// as a replica's copy. Each is refused and the holders keep their bytes
// (before, 24 of 24 drops took effect, the replace landed on all three
// holders, and the name record was replaced). The writer's own signed
// delete still removes every copy.
func TestInsiderRelaysAreChecked(t *testing.T) {
	c := newCheckedCluster(t, 41, 10, still(), skewed)
	r := rand.New(rand.NewPCG(41, 41))
	w, mallory := newWriter(r), newWriter(r)
	b := randomBlock(r, w.in(skewed(r)))
	gw := c.gateways(b.key, 2)
	soon := func() time.Time { return c.now().Add(5 * time.Minute) }
	reply, err := c.send(gw[0], gw[1], &wire.D2Put{Key: b.key, Data: b.data, Mode: wire.D2PutIfAbsent, Auth: w.auth(key.OpIfAbsent, b.key, b.data, nil, soon())})
	if s, ok := reply.(*wire.D2StoreDone); err != nil || !ok || s.Copies != 3 {
		t.Fatalf("the writer's put through a gateway: %v, %v", reply, err)
	}
	holders := c.hostsOf(c.replicas(b.key))
	insider := gw[0] // on the ring, holding none of the copies
	evil := randomBlock(r, b.key).data

	refused := func(what string, to int, m wire.Msg) {
		t.Helper()
		if reply, err := c.send(insider, to, m); code(err) != fault.CodeBadRequest {
			t.Errorf("%s to %s: %v, %v; want refused", what, c.hosts[to].Addr, reply, err)
		}
	}
	for _, h := range holders {
		refused("an unsigned drop", h, &wire.D2Drop{Key: b.key})
		refused("a drop signed by another volume's key", h, &wire.D2Drop{Key: b.key, Auth: mallory.auth(key.OpDelete, b.key, nil, nil, soon())})
		refused("a drop signed as a put", h, &wire.D2Drop{Key: b.key, Auth: w.auth(key.OpReplace, b.key, nil, nil, soon())})
	}
	owner := holders[0]
	refused("an unsigned replace decision", owner, &wire.D2Store{Key: b.key, Data: evil, Primary: true, Mode: wire.D2PutReplace})
	refused("a replace decision signed for other bytes", owner, &wire.D2Store{Key: b.key, Data: evil, Primary: true, Mode: wire.D2PutReplace, Auth: w.auth(key.OpReplace, b.key, b.data, nil, soon())})
	c.s.RunFor(time.Minute)
	c.checkCopies(b.key, b.data)

	// A name, claimed first by w; mallory's record for it, as an owner's
	// decision and as a replica's copy.
	rk := key.RegistryKey("work").ID()
	rec, err := key.SignName("work", w.priv)
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := key.SignName("work", mallory.priv)
	if err != nil {
		t.Fatal(err)
	}
	rgw := c.gateways(rk, 2)
	if reply, err := c.send(rgw[0], rgw[1], &wire.D2Put{Key: rk, Data: rec, Mode: wire.D2PutIfAbsent}); err != nil {
		t.Fatalf("claiming the name: %v, %v", reply, err)
	}
	regHolders := c.hostsOf(c.replicas(rk))
	from := rgw[0]
	if reply, err := c.send(from, regHolders[0], &wire.D2Store{Key: rk, Data: theirs, Primary: true, Mode: wire.D2PutReplace}); code(err) != fault.CodeBadRequest {
		t.Errorf("a replace decision of a name record: %v, %v; want refused", reply, err)
	}
	for _, h := range regHolders {
		if reply, err := c.send(from, h, &wire.D2Store{Key: rk, Data: theirs, Replace: true}); err == nil {
			if s, ok := reply.(*wire.D2StoreDone); !ok || !s.Conflict {
				t.Errorf("another writer's record over a taken name at %s: %v", c.hosts[h].Addr, reply)
			}
		}
	}
	c.s.RunFor(time.Minute)
	c.checkCopies(rk, rec)

	// The writer's signed delete, through a gateway, reaches every holder.
	if reply, err := c.send(gw[0], gw[1], &wire.D2Delete{Key: b.key, Auth: w.auth(key.OpDelete, b.key, nil, nil, soon())}); err != nil {
		t.Fatalf("the writer's delete: %v, %v", reply, err)
	} else if s, ok := reply.(*wire.D2StoreDone); !ok || s.Copies != 3 {
		t.Errorf("the writer's delete removed %v copies, want 3", reply)
	}
	for _, h := range holders {
		if data, _, err := c.engines[c.hosts[h].Addr].Get(b.key); err == nil {
			t.Errorf("%s still holds %d bytes the writer deleted", c.hosts[h].Addr, len(data))
		}
	}
}

// hostsOf is the index of each host named.
func (c *cluster) hostsOf(addrs []string) []int {
	var out []int
	for _, a := range addrs {
		for i, h := range c.hosts {
			if h.Addr == a {
				out = append(out, i)
			}
		}
	}
	return out
}

// TestCopiesCarryTheirProof (issue 44, row 3): every copy a node takes
// from another carries the writer's signed consent it was put with. A
// replica down while a superblock-like key was replaced twice catches up
// by sync, and nodes that join take their keys' blocks by pointer
// fetches and pushes, all checked, with nothing refused. An insider's
// copies are refused at every holder: other bytes unsigned, other bytes
// with the block's real proof, and the writer's own earlier version of
// the replaced key at a version its grant allows (a replay to roll it
// back); the holders keep the writer's newest bytes.
func TestCopiesCarryTheirProof(t *testing.T) {
	c := newCheckedCluster(t, 43, 10, still(), skewed)
	r := rand.New(rand.NewPCG(43, 43))
	w := newWriter(r)
	soon := func() time.Time { return c.now().Add(5 * time.Minute) }
	put := func(k id.ID, data []byte, mode wire.D2PutMode, prev []byte) {
		t.Helper()
		op := map[wire.D2PutMode]key.Op{wire.D2PutIfAbsent: key.OpIfAbsent, wire.D2PutIfHash: key.OpIfHash}[mode]
		m := &wire.D2Put{Key: k, Data: data, Mode: mode, Prev: prev, Auth: w.auth(op, k, data, prev, soon())}
		gw := c.gateways(k, 2)
		reply, err := c.send(gw[0], gw[1], m)
		if s, ok := reply.(*wire.D2StoreDone); err != nil || !ok || s.Copies < 2 {
			t.Fatalf("the writer's put of %s: %v, %v", k.Short(), reply, err)
		}
	}
	blocks := make([]block, 12)
	for i := range blocks {
		blocks[i] = randomBlock(r, w.in(skewed(r)))
		put(blocks[i].key, blocks[i].data, wire.D2PutIfAbsent, nil)
	}

	// The superblock: v1, then v2 and v3 while its last replica is down.
	sb := w.in(skewed(r))
	v1, v2, v3 := []byte("superblock v1"), []byte("superblock v2"), []byte("superblock v3")
	put(sb, v1, wire.D2PutIfAbsent, nil)
	v1Auth := w.auth(key.OpIfAbsent, sb, v1, nil, soon())
	holders := c.hostsOf(c.replicas(sb))
	down := c.hosts[holders[2]]
	c.s.Crash(down)
	c.s.RunFor(2 * time.Minute) // v1's grant expires more than GrantSkew before v2's
	put(sb, v2, wire.D2PutIfHash, d2.Sum(v1))
	v2Auth := w.auth(key.OpIfHash, sb, v2, d2.Sum(v1), soon())
	put(sb, v3, wire.D2PutIfHash, d2.Sum(v2))
	if err := c.s.Restart(down); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		c.add(skewed(r))
	}
	c.s.RunFor(10 * time.Minute)
	c.checkCopies(sb, v3)
	for _, b := range blocks {
		c.checkCopies(b.key, b.data)
	}
	for a, n := range c.nodes {
		if n.Stats.Unauthorized != 0 {
			t.Errorf("%s refused %d honest copies", a, n.Stats.Unauthorized)
		}
	}

	insider := c.gateways(sb, 1)[0]
	b := blocks[0]
	evil := []byte("an insider's bytes")
	version := uint64(c.now().Add(d2.DefaultConfig().Retention).UnixNano())
	within := func(a wire.D2Auth) uint64 { return a.Expires + uint64(d2.DefaultConfig().Retention+d2.GrantSkew) }
	refused := func(what string, to int, m wire.Msg) {
		t.Helper()
		reply, err := c.send(insider, to, m)
		if s, ok := reply.(*wire.D2StoreDone); err == nil && ok && s.Copies > 0 {
			t.Errorf("%s to %s: stored", what, c.hosts[to].Addr)
		}
	}
	for _, h := range c.hostsOf(c.replicas(b.key)) {
		refused("other bytes, unsigned", h, &wire.D2Store{Key: b.key, Data: evil, Replace: true, Version: version})
		refused("other bytes with the block's proof", h, &wire.D2Store{Key: b.key, Data: evil, Replace: true, Version: version,
			Mode: wire.D2PutIfAbsent, Auth: w.auth(key.OpIfAbsent, b.key, b.data, nil, soon())})
	}
	for _, h := range c.hostsOf(c.replicas(sb)) {
		// At the greatest version each grant allows, past v3's: v2 is
		// the predecessor v3's proof names, v1's grant is older than v3's.
		refused("the superblock's v2 again", h, &wire.D2Store{Key: sb, Data: v2, Replace: true, Version: within(v2Auth),
			Mode: wire.D2PutIfHash, Prev: d2.Sum(v1), Auth: v2Auth})
		refused("the superblock's v1 again", h, &wire.D2Store{Key: sb, Data: v1, Replace: true, Version: within(v1Auth),
			Mode: wire.D2PutIfAbsent, Auth: v1Auth})
		refused("v2 at a version past its grant", h, &wire.D2Store{Key: sb, Data: v2, Replace: true, Version: within(v2Auth) + uint64(time.Hour),
			Mode: wire.D2PutIfHash, Prev: d2.Sum(v1), Auth: v2Auth})
	}
	c.s.RunFor(5 * time.Minute)
	c.checkCopies(b.key, b.data)
	c.checkCopies(sb, v3)
}

// TestOwnerCannotAckWhatItDropped (issue 44, row 4): a node that owns a
// key (as one that aimed its position at a volume would) answers the
// writer's put through a gateway with three copies on itself and its
// successors, and keeps nothing it is given. The gateway asks each holder
// for the block and finds none, gives it to the holders of its own route
// itself, and acknowledges the two copies the honest successors then
// confirm (before: Copies 3 and no copy anywhere; without the gateway's
// copies: the put failed, and the volume could not be written while the
// rogue owned its keys). A get through another gateway reads it past the
// rogue. With the owner honest again the same put lands on three
// confirmed copies.
func TestOwnerCannotAckWhatItDropped(t *testing.T) {
	c := newCheckedCluster(t, 44, 10, still(), skewed)
	r := rand.New(rand.NewPCG(44, 44))
	w := newWriter(r)
	b := randomBlock(r, w.in(skewed(r)))
	owner := c.hostsOf(c.replicas(b.key))[0]
	rogue := c.hosts[owner]
	c.s.Crash(rogue)
	c.rogues[rogue.Addr] = true
	if err := c.s.Restart(rogue); err != nil {
		t.Fatal(err)
	}
	c.s.RunFor(time.Minute)
	if got := c.hostsOf(c.replicas(b.key))[0]; got != owner {
		t.Fatalf("the key's owner is %s after the restart, want the rogue %s", c.hosts[got].Addr, rogue.Addr)
	}
	gw := c.gateways(b.key, 2)
	put := func() *wire.D2StoreDone {
		t.Helper()
		m := &wire.D2Put{Key: b.key, Data: b.data, Mode: wire.D2PutKeep, Auth: w.auth(key.OpKeep, b.key, b.data, nil, c.now().Add(5*time.Minute))}
		reply, err := c.send(gw[0], gw[1], m)
		s, ok := reply.(*wire.D2StoreDone)
		if err != nil || !ok {
			t.Fatalf("the put: %v, %v", reply, err)
		}
		return s
	}
	if s := put(); s.Copies != 2 {
		t.Errorf("the rogue owner's put was acknowledged with %d copies, want the 2 honest successors'", s.Copies)
	}
	st := c.node(c.hosts[gw[1]]).Stats
	if st.CopiesConfirmed != 0 {
		t.Errorf("the rogue's put was taken on its replicas' word (%d), which they never gave", st.CopiesConfirmed)
	}
	if st.CopiesUnverified != 3 || st.GatewayCopies != 3 {
		t.Errorf("the gateway counted %d unverified copies and placed %d (the rogue acknowledges its own), want 3 and 3", st.CopiesUnverified, st.GatewayCopies)
	}
	if got, _, err := c.engines[rogue.Addr].Get(b.key); err == nil {
		t.Errorf("the rogue holds %d bytes of the block; it was to keep none", len(got))
	}
	if n := c.holders(b.key); n != 2 {
		t.Errorf("%d nodes hold the block, want the rogue's 2 successors", n)
	}
	if got, err := c.get(gw[0], b.key, d2.Sum(b.data)); err != nil || !bytes.Equal(got, b.data) {
		t.Errorf("a get past the rogue owner: %d bytes, %v", len(got), err)
	}
	c.s.Crash(rogue)
	c.rogues[rogue.Addr] = false
	if err := c.s.Restart(rogue); err != nil {
		t.Fatal(err)
	}
	// Its successor takes it for its predecessor again before the put,
	// else that successor decides the put and the rogue holds a pointer.
	succ := c.node(c.hosts[c.hostsOf(c.replicas(b.key))[1]])
	for i := 0; i < 300 && (!c.node(rogue).Joined() || succ.Pred().Node.Addr != rogue.Addr); i++ {
		c.s.RunFor(time.Second)
	}
	if s := put(); s.Copies != 3 {
		t.Errorf("the honest owner's put: %d copies confirmed, want 3", s.Copies)
	}
	if got := c.node(c.hosts[gw[1]]).Stats.CopiesConfirmed; got != 1 {
		t.Errorf("the honest owner's put: %d puts taken on the replicas' own word, want 1 (no holder asked)", got)
	}
	c.checkCopies(b.key, b.data)
}
