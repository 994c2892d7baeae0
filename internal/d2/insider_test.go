package d2_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"triad/internal/d2/key"
	"triad/internal/fault"
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
	if s, ok := reply.(*wire.D2Stored); err != nil || !ok || s.Copies != 3 {
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
			if s, ok := reply.(*wire.D2Stored); !ok || !s.Conflict {
				t.Errorf("another writer's record over a taken name at %s: %v", c.hosts[h].Addr, reply)
			}
		}
	}
	c.s.RunFor(time.Minute)
	c.checkCopies(rk, rec)

	// The writer's signed delete, through a gateway, reaches every holder.
	if reply, err := c.send(gw[0], gw[1], &wire.D2Delete{Key: b.key, Auth: w.auth(key.OpDelete, b.key, nil, nil, soon())}); err != nil {
		t.Fatalf("the writer's delete: %v, %v", reply, err)
	} else if s, ok := reply.(*wire.D2Stored); !ok || s.Copies != 3 {
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
