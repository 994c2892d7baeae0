package d2_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"triad/internal/d2"
	"triad/internal/d2/key"
	"triad/internal/fault"
	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/rpc"
	"triad/internal/sim"
	"triad/internal/wire"
)

// putOutcome is what a put's callback reported.
type putOutcome struct {
	copies int
	err    error
	done   bool
}

// startPut starts a put at host from; its outcome fills o once the
// simulator has run.
func (c *cluster) startPut(from int, k id.ID, data []byte, mode wire.D2PutMode, prev []byte, o *putOutcome) {
	h := c.hosts[from]
	c.s.Do(h, func(env node.Env) {
		c.node(h).Put(env, k, data, mode, prev, func(env node.Env, n int, err error) { *o = putOutcome{n, err, true} })
	})
}

// putMode is a put with a mode, run to its end.
func (c *cluster) putMode(from int, k id.ID, data []byte, mode wire.D2PutMode, prev []byte) (int, error) {
	c.t.Helper()
	var o putOutcome
	c.startPut(from, k, data, mode, prev, &o)
	c.s.RunFor(10 * time.Second)
	if !o.done {
		c.t.Fatalf("put of %s from %s never ended", k.Short(), c.hosts[from].Addr)
	}
	return o.copies, o.err
}

// replicas are the oracle's r holders of k: its owner and the owner's
// successors, by address.
func (c *cluster) replicas(k id.ID) []string {
	ps, who := c.ring()
	i := 0
	for i < len(ps) && ps[i].Cmp(k) < 0 {
		i++
	}
	var out []string
	for j := 0; j < c.cfg.Replicas; j++ {
		out = append(out, who[ps[(i+j)%len(ps)]])
	}
	return out
}

// checkCopies fails unless each of k's r replicas holds want in its engine.
func (c *cluster) checkCopies(k id.ID, want []byte) {
	c.t.Helper()
	for _, a := range c.replicas(k) {
		got, _, err := c.engines[a].Get(k)
		if got = d2.BlockOf(got); err != nil || !bytes.Equal(got, want) {
			c.t.Errorf("%s holds %d bytes of %s (%v), want %d", a, len(got), k.Short(), err, len(want))
		}
	}
}

// gateways are n hosts that neither own k nor replicate it.
func (c *cluster) gateways(k id.ID, n int) []int {
	reps := c.replicas(k)
	var out []int
	for i, h := range c.hosts {
		if len(out) < n && h.Up() && !contains(reps, h.Addr) {
			out = append(out, i)
		}
	}
	return out
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// TestPutIfAbsentRace: four gateways put different bytes under one key
// at the same instant, IfAbsent: the owner takes them one at a time, so
// exactly one wins (three copies) and the others get ErrConflict, and the
// three replicas hold the winner's bytes.
func TestPutIfAbsentRace(t *testing.T) {
	c := newCluster(t, 21, 16, still(), skewed)
	r := rand.New(rand.NewPCG(21, 21))
	for round := 0; round < 5; round++ {
		k := skewed(r)
		gw := c.gateways(k, 4)
		// Warm the gateways' caches so that the puts reach the owner
		// together rather than one lookup apart.
		for _, g := range gw {
			if _, err := c.get(g, k, d2.Sum(nil)); err == nil {
				t.Fatal("a get of an absent key found it")
			}
		}
		c.race(r, k, gw, wire.D2PutIfAbsent, nil)
	}
	var queued, conflicts uint64
	for _, h := range c.hosts {
		queued += c.node(h).Stats.PutsQueued
		conflicts += c.node(h).Stats.Conflicts
	}
	t.Logf("%d puts queued behind another of their key, %d conflicts", queued, conflicts)
	if queued == 0 {
		t.Error("no put waited for another: the puts did not race")
	}
	if conflicts != 15 {
		t.Errorf("%d conflicts counted, want 15", conflicts)
	}
}

// race starts a put of other bytes under k from each of gws at the same
// instant, with mode and prev, and checks that exactly one wins, with
// three copies, that the others conflict, and that the replicas hold the
// winner's bytes; it returns them.
func (c *cluster) race(r *rand.Rand, k id.ID, gws []int, mode wire.D2PutMode, prev []byte) []byte {
	c.t.Helper()
	out := make([]putOutcome, len(gws))
	datas := make([][]byte, len(gws))
	for i, g := range gws {
		datas[i] = randomBlock(r, k).data
		c.startPut(g, k, datas[i], mode, prev, &out[i])
	}
	c.s.RunFor(10 * time.Second)
	winner := -1
	for i, o := range out {
		switch {
		case !o.done:
			c.t.Fatalf("put %d never ended", i)
		case o.err == nil && winner < 0 && o.copies == 3:
			winner = i
		case errors.Is(o.err, d2.ErrConflict):
		default:
			c.t.Errorf("put %d: %d copies, %v (winner %d)", i, o.copies, o.err, winner)
		}
	}
	if winner < 0 {
		c.t.Fatalf("no put won: %+v", out)
	}
	c.checkCopies(k, datas[winner])
	if data, err := c.get(gws[0], k, d2.Sum(datas[winner])); err != nil || !bytes.Equal(data, datas[winner]) {
		c.t.Errorf("the winner's block reads back: %v", err)
	}
	return datas[winner]
}

// TestPutIfHashRaceAtAPointer: a node joins in front of a block's owner
// and holds only a pointer to it, so the check of an IfHash put is a
// fetch from the old owner; four gateways race IfHash puts with the
// block's hash: exactly one replaces it, the others conflict.
func TestPutIfHashRaceAtAPointer(t *testing.T) {
	c := newCluster(t, 24, 12, still(), skewed)
	r := rand.New(rand.NewPCG(24, 24))
	b := randomBlock(r, skewed(r))
	if copies, err := c.putMode(0, b.key, b.data, wire.D2PutIfAbsent, nil); err != nil || copies != 3 {
		t.Fatalf("put: %d copies, %v", copies, err)
	}
	pos := b.key.Bytes()
	pos[len(pos)-1]++ // just after the key: unless a carry, before its owner
	at, _ := id.FromBytes(pos)
	joiner := c.add(at)
	c.s.RunFor(10 * time.Second)
	if _, pointer := c.node(joiner).Holds(b.key); !pointer || c.replicas(b.key)[0] != joiner.Addr {
		t.Skipf("the new node does not own the block through a pointer (joined %v)", c.node(joiner).Joined())
	}
	c.race(r, b.key, c.gateways(b.key, 4), wire.D2PutIfHash, d2.Sum(b.data))
	if q := c.node(joiner).Stats.PutsQueued; q != 3 {
		t.Errorf("%d puts queued at the owner, want 3", q)
	}
}

// TestPutModes: IfHash with the current block's SHA-256 replaces it on
// all three replicas; with another, or on an absent key, it conflicts and
// stores nothing; Keep conflicts with other bytes and takes the same
// ones again; Replace replaces whatever is there. A replaced block reads
// back only with its new hash.
func TestPutModes(t *testing.T) {
	c := newCluster(t, 22, 12, still(), skewed)
	r := rand.New(rand.NewPCG(22, 22))
	k := skewed(r)
	v1, v2, v3, v4 := randomBlock(r, k).data, randomBlock(r, k).data, randomBlock(r, k).data, randomBlock(r, k).data
	from := c.gateways(k, 1)[0]
	step := func(name string, data []byte, mode wire.D2PutMode, prev []byte, wantErr error, holds []byte) {
		t.Helper()
		copies, err := c.putMode(from, k, data, mode, prev)
		switch {
		case wantErr == nil && (err != nil || copies != 3):
			t.Errorf("%s: %d copies, %v", name, copies, err)
		case wantErr != nil && !errors.Is(err, wantErr):
			t.Errorf("%s: %v, want %v", name, err, wantErr)
		}
		c.checkCopies(k, holds)
	}
	if _, err := c.putMode(from, k, v1, wire.D2PutIfHash, d2.Sum(v1)); !errors.Is(err, d2.ErrConflict) {
		t.Errorf("IfHash on an absent key: %v", err)
	}
	if c.holders(k) != 0 {
		t.Fatal("a conflicting put stored the block")
	}
	step("IfAbsent", v1, wire.D2PutIfAbsent, nil, nil, v1)
	step("IfAbsent again", v2, wire.D2PutIfAbsent, nil, d2.ErrConflict, v1)
	step("IfHash, wrong", v2, wire.D2PutIfHash, d2.Sum(v2), d2.ErrConflict, v1)
	step("IfHash, right", v2, wire.D2PutIfHash, d2.Sum(v1), nil, v2)
	step("IfHash, the old hash", v3, wire.D2PutIfHash, d2.Sum(v1), d2.ErrConflict, v2)
	step("Keep, other bytes", v3, wire.D2PutKeep, nil, d2.ErrConflict, v2)
	step("Keep, same bytes", v2, wire.D2PutKeep, nil, nil, v2)
	step("Replace", v3, wire.D2PutReplace, nil, nil, v3)
	step("IfHash after Replace", v4, wire.D2PutIfHash, d2.Sum(v3), nil, v4)
	if data, err := c.get(from, k, d2.Sum(v4)); err != nil || !bytes.Equal(data, v4) {
		t.Errorf("the last version: %v", err)
	}
	if _, err := c.get(from, k, d2.Sum(v1)); err == nil {
		t.Error("a replaced version still reads")
	}
}

// version is the key of version v of a file: the prefix, then v.
func version(prefix []byte, v uint64) id.ID {
	b := make([]byte, d2.KeyBytes)
	copy(b, prefix)
	binary.BigEndian.PutUint64(b[d2.KeyBytes-8:], v)
	k, _ := id.FromBytes(b)
	return k
}

// TestLatestSeesEveryPut: after each acknowledged put of versions v1..v5
// of a file, Latest from any node returns that version's key and bytes;
// and so it does right after a node joins in front of the versions'
// owner, which then owns them. When that owner fails, a Latest fails or
// answers the newest version, never an older one, and once the ring has
// repaired, every node's answers the newest.
func TestLatestSeesEveryPut(t *testing.T) {
	c := newCluster(t, 23, 12, still(), skewed)
	r := rand.New(rand.NewPCG(23, 23))
	prefix := skewed(r).Bytes()[:d2.KeyBytes-8]
	var last block
	// check asks Latest from every node; mayFail lets it fail (not
	// answer an older version) while the ring repairs.
	check := func(when string, mayFail bool) (failed int) {
		t.Helper()
		for i, h := range c.hosts {
			if !h.Up() {
				continue
			}
			k, data, found, err := c.latest(i, prefix)
			if mayFail && (errors.Is(err, fault.ErrUnavailable) || errors.Is(err, fault.ErrNoRoute)) {
				failed++
				continue
			}
			if err != nil || !found || k != last.key || !bytes.Equal(data, last.data) {
				t.Fatalf("%s: latest from %s: %s, %d bytes, %v, %v; want %s", when, h.Addr, k.Short(), len(data), found, err, last.key.Short())
			}
		}
		return failed
	}
	for v := uint64(1); v <= 5; v++ {
		last = randomBlock(r, version(prefix, v))
		if copies, err := c.putMode(r.IntN(len(c.hosts)), last.key, last.data, wire.D2PutReplace, nil); err != nil || copies != 3 {
			t.Fatalf("put v%d: %d copies, %v", v, copies, err)
		}
		check("after v"+string(rune('0'+v)), false)
	}
	// A node joins between v5 and its owner: it owns the versions now.
	joiner := c.add(version(prefix, 1<<40))
	for i := 0; i < 60 && !c.node(joiner).Joined(); i++ {
		c.s.RunFor(100 * time.Millisecond)
	}
	if !c.node(joiner).Joined() {
		t.Fatal("the new node did not join")
	}
	if c.replicas(last.key)[0] != joiner.Addr {
		t.Fatalf("the new node does not own the versions")
	}
	check("right after a join in front of the owner", false)
	last = randomBlock(r, version(prefix, 6))
	if copies, err := c.putMode(len(c.hosts)-1, last.key, last.data, wire.D2PutReplace, nil); err != nil || copies != 3 {
		t.Fatalf("put v6: %d copies, %v", copies, err)
	}
	check("after v6", false)
	// The owner fails: until the ring drops it, a Latest fails rather
	// than answer an older version; then its successor answers.
	c.s.Crash(joiner)
	failed := check("right after the owner failed", true)
	c.s.RunFor(2 * time.Minute)
	check("once the ring repaired", false)
	t.Logf("%d of %d Latests failed while the owner's failure was not yet known", failed, len(c.hosts)-1)
}

// TestDeleteStaysDeleted: a replica is down while a block is deleted and
// comes back with its copy; the owner's sync tells it to drop the copy
// rather than fetch it back, and after several sync rounds no node holds
// the block or a pointer to it. A put of the key after the delete stores
// it again on all three.
func TestDeleteStaysDeleted(t *testing.T) {
	c := newCluster(t, 25, 12, still(), skewed)
	r := rand.New(rand.NewPCG(25, 25))
	b := randomBlock(r, skewed(r))
	if copies, err := c.putMode(0, b.key, b.data, wire.D2PutReplace, nil); err != nil || copies != 3 {
		t.Fatalf("put: %d copies, %v", copies, err)
	}
	reps := c.replicas(b.key)
	down := c.s.HostAt(reps[1])
	c.s.Crash(down)
	if copies, err := c.del(c.gateways(b.key, 1)[0], b.key); err != nil || copies != 2 {
		t.Fatalf("delete: %d copies, %v; want the two live", copies, err)
	}
	if err := c.s.Restart(down); err != nil {
		t.Fatal(err)
	}
	c.s.RunFor(time.Second)
	if block, _ := c.node(down).Holds(b.key); !block {
		t.Fatal("the restarted replica lost its copy: nothing to test")
	}
	c.s.RunFor(4 * c.cfg.Sync)
	held := 0
	var repeated uint64
	for _, h := range c.hosts {
		if block, pointer := c.node(h).Holds(b.key); block || pointer {
			held++
			t.Errorf("%s holds the deleted block (block %v, pointer %v)", h.Addr, block, pointer)
		}
		if _, err := c.engines[h.Addr].Stat(b.key); err == nil {
			t.Errorf("%s's engine holds the deleted block", h.Addr)
		}
		repeated += c.node(h).Stats.DeletesRepeated
	}
	if repeated == 0 {
		t.Error("no sync repeated the delete")
	}
	if _, err := c.get(0, b.key, d2.Sum(b.data)); !errors.Is(err, fault.ErrNotFound) {
		t.Errorf("get of the deleted block: %v", err)
	}
	if copies, err := c.putMode(0, b.key, b.data, wire.D2PutIfAbsent, nil); err != nil || copies != 3 {
		t.Fatalf("a put after the delete: %d copies, %v", copies, err)
	}
	c.s.RunFor(2 * c.cfg.Sync)
	c.checkCopies(b.key, b.data)
}

// TestClientPutModes: the put modes over the wire, as D2-FS's client
// sends them to a gateway: a conditional put that fails is answered
// D2StoreDone{Conflict}, one that holds with three copies, and D2Latest
// answers the block's bytes. A gateway relays a put to the key's owner as
// a D2Store marked Primary: a node that does not own the key answers "not
// mine".
func TestClientPutModes(t *testing.T) {
	c := newCluster(t, 26, 10, still(), skewed)
	r := rand.New(rand.NewPCG(26, 26))
	w := newWriter(r)
	b := randomBlock(r, w.in(skewed(r)))
	gw := c.gateways(b.key, 2)
	v2 := randomBlock(r, b.key).data
	stored := func(m wire.Msg) *wire.D2StoreDone {
		t.Helper()
		reply, err := c.send(gw[0], gw[1], m)
		s, ok := reply.(*wire.D2StoreDone)
		if err != nil || !ok {
			t.Fatalf("%+v: %v, %v", m, reply, err)
		}
		return s
	}
	soon := c.now().Add(5 * time.Minute)
	if s := stored(&wire.D2Put{Key: b.key, Data: b.data, Mode: wire.D2PutIfAbsent, Auth: w.auth(key.OpIfAbsent, b.key, b.data, nil, soon)}); s.Copies != 3 || s.Conflict {
		t.Errorf("IfAbsent on an absent key: %+v", s)
	}
	if s := stored(&wire.D2Put{Key: b.key, Data: v2, Mode: wire.D2PutIfAbsent, Auth: w.auth(key.OpIfAbsent, b.key, v2, nil, soon)}); !s.Conflict || s.Copies != 0 {
		t.Errorf("IfAbsent on a held key: %+v", s)
	}
	if s := stored(&wire.D2Put{Key: b.key, Data: v2, Mode: wire.D2PutIfHash, Prev: d2.Sum(v2), Auth: w.auth(key.OpIfHash, b.key, v2, d2.Sum(v2), soon)}); !s.Conflict {
		t.Errorf("IfHash with a wrong hash: %+v", s)
	}
	if s := stored(&wire.D2Put{Key: b.key, Data: v2, Mode: wire.D2PutIfHash, Prev: d2.Sum(b.data), Auth: w.auth(key.OpIfHash, b.key, v2, d2.Sum(b.data), soon)}); s.Copies != 3 || s.Conflict {
		t.Errorf("IfHash with the right hash: %+v", s)
	}
	reply, err := c.send(gw[0], gw[1], &wire.D2Latest{Prefix: b.key.Bytes()})
	if l, ok := reply.(*wire.D2Block); err != nil || !ok || !l.Found || l.Key != b.key || !bytes.Equal(l.Data, v2) {
		t.Errorf("latest: %+v, %v", reply, err)
	}
	c.checkCopies(b.key, v2)

	// A relay to a node that does not own the key.
	n := c.node(c.hosts[gw[0]])
	to := c.node(c.hosts[gw[1]]).Me().Node
	var relayed wire.Msg
	c.s.Do(c.hosts[gw[0]], func(env node.Env) {
		n.Host().Call(env, to.Addr, n.Me().Node, to.ID, &wire.D2Store{Key: b.key, Data: b.data, Primary: true, Mode: wire.D2PutIfAbsent}, 5*time.Second, func(env node.Env, m wire.Msg, err error) {
			relayed = m
		})
	})
	c.s.RunFor(6 * time.Second)
	if s, ok := relayed.(*wire.D2StoreDone); !ok || !s.NotMine {
		t.Errorf("a relay to a node that does not own the key: %+v", relayed)
	}
	c.checkCopies(b.key, v2)
}

// TestReplaceSurvivesOwnersRestart (issue 43): a key's owner goes down, the
// key is replaced (IfHash) through its successor, and the owner comes back
// with its old copy. Its old copy must not outvote the replace: Latest
// answers the new bytes, the next IfHash against them lands (before
// versions, the owner refused it as a conflict, which turned a D2-FS
// mount read-only when the lease block's owner restarted), and within
// the restarted node's first sync rounds every replica holds the newest
// bytes again.
func TestReplaceSurvivesOwnersRestart(t *testing.T) {
	for seed := uint64(41); seed < 44; seed++ {
		c := newCluster(t, seed, 8, still(), uniform)
		r := rand.New(rand.NewPCG(seed, 43))
		k := uniform(r)
		v1, v2, v3 := randomBlock(r, k).data, randomBlock(r, k).data, randomBlock(r, k).data
		from := c.gateways(k, 1)[0]
		if copies, err := c.putMode(from, k, v1, wire.D2PutIfAbsent, nil); err != nil || copies != 3 {
			t.Fatalf("seed %d: put v1: %d copies, %v", seed, copies, err)
		}
		var owner *sim.Host
		for _, h := range c.hosts {
			if h.Addr == c.replicas(k)[0] {
				owner = h
			}
		}
		c.s.Crash(owner)
		c.s.RunFor(3 * time.Minute) // the ring closes the gap
		copies, err := c.putMode(from, k, v2, wire.D2PutIfHash, d2.Sum(v1))
		if errors.Is(err, rpc.ErrTimeout) { // the gateway's cached owner is the crashed one
			copies, err = c.putMode(from, k, v2, wire.D2PutIfHash, d2.Sum(v1))
		}
		if err != nil || copies < 2 {
			t.Fatalf("seed %d: v2 with the owner down: %d copies, %v", seed, copies, err)
		}
		if err := c.s.Restart(owner); err != nil {
			t.Fatal(err)
		}
		c.s.RunFor(time.Minute)
		if c.replicas(k)[0] != owner.Addr || !c.node(owner).Joined() {
			t.Fatalf("seed %d: the restarted node does not own the key again", seed)
		}
		if got, data, found, err := c.latest(from, k.Bytes()); err != nil || !found || got != k || !bytes.Equal(data, v2) {
			t.Errorf("seed %d: latest after the restart: found %v, v2 %v, %v", seed, found, bytes.Equal(data, v2), err)
		}
		c.s.RunFor(3 * time.Minute) // the restarted node's first sync round
		c.checkCopies(k, v2)
		if copies, err := c.putMode(from, k, v3, wire.D2PutIfHash, d2.Sum(v2)); err != nil || copies != 3 {
			t.Errorf("seed %d: v3 after the restart: %d copies, %v", seed, copies, err)
		}
		c.checkCopies(k, v3)
		if p := c.node(owner).Stats.ReplicasPulled; p == 0 {
			t.Errorf("seed %d: the restarted owner pulled nothing at sync", seed)
		}
	}
}
