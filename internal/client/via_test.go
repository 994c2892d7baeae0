package client

import (
	"bytes"
	"fmt"
	"net"
	"slices"
	"testing"
	"time"

	"triad/internal/id"
	"triad/internal/wire"
)

// largeDataHeldBy is dataHeldBy for a block of DirectMin bytes.
func largeDataHeldBy(t *testing.T, pred, holder *stubNode) []byte {
	t.Helper()
	data := make([]byte, DirectMin)
	for i := range 10000 {
		copy(data, fmt.Sprintf("large block for %s, try %d", holder.ref.ID.Short(), i))
		if id.Key(data).In(pred.ref.ID, holder.ref.ID) {
			return data
		}
	}
	t.Fatalf("no block found for the arc of %s", holder.ref.ID.Short())
	return nil
}

// A large block goes to its holder once the node asked has looked its key
// up, and comes back from its holder the same way: the node asked sees
// the lookup and never the block. A small one goes through that node.
func TestViaSendsALargeBlockToItsHolder(t *testing.T) {
	nodes, stores, cl := ring3(t)
	via, holder, reader := nodes[0], nodes[1], nodes[2]
	data := largeDataHeldBy(t, via, holder)

	key, holders, err := cl.PutVia(ctx(t), via.ref.Addr, data, PutOptions{})
	if err != nil || key != id.Key(data) || !slices.Equal(holders, []wire.NodeRef{holder.ref}) {
		t.Fatalf("put: key %s, holders %v, %v", key.Short(), holders, err)
	}
	if l, p, h := count(via, wire.TypeClientLookup), count(via, wire.TypeClientPut), count(holder, wire.TypeClientPut); l != 1 || p != 0 || h != 1 {
		t.Fatalf("the node asked got %d lookups and %d puts, the holder %d puts; want 1, 0 and 1", l, p, h)
	}
	got, _, err := cl.GetVia(ctx(t), reader.ref.Addr, key, true)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("get: %d bytes, %v", len(got), err)
	}
	if l, g, h := count(reader, wire.TypeClientLookup), count(reader, wire.TypeClientGet), count(holder, wire.TypeClientGet); l != 1 || g != 0 || h != 1 {
		t.Fatalf("the node asked got %d lookups and %d gets, the holder %d gets; want 1, 0 and 1", l, g, h)
	}

	small := dataHeldBy(t, via, holder)
	if _, _, err := cl.PutVia(ctx(t), via.ref.Addr, small, PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if l, p := count(via, wire.TypeClientLookup), count(via, wire.TypeClientPut); l != 1 || p != 1 {
		t.Fatalf("a small block: the node asked got %d lookups in all and %d puts; want 1 and 1", l, p)
	}
	if _, ok := stores[0].blocks[id.Key(small)]; !ok {
		t.Fatal("the small block is not at the node asked")
	}
}

// A lookup that fails leaves the block to the node asked, which looks
// again itself; a holder that cannot be reached is passed over for the
// next successor the lookup named.
func TestViaFallsBack(t *testing.T) {
	nodes, stores, cl := ring3(t)
	via, holder, next := nodes[0], nodes[1], nodes[2]

	stores[0].failLookups.Store(true)
	data := largeDataHeldBy(t, via, holder)
	if _, holders, err := cl.PutVia(ctx(t), via.ref.Addr, data, PutOptions{}); err != nil || !slices.Equal(holders, []wire.NodeRef{via.ref}) {
		t.Fatalf("with the lookup failing: holders %v, %v; want the node asked", holders, err)
	}
	stores[0].failLookups.Store(false)

	holder.kill()
	data = largeDataHeldBy(t, via, holder)
	data[len(data)-1] = 1 // not the block stored above
	for !id.Key(data).In(via.ref.ID, holder.ref.ID) {
		data[len(data)-2]++
	}
	if _, holders, err := cl.PutVia(ctx(t), via.ref.Addr, data, PutOptions{}); err != nil || !slices.Equal(holders, []wire.NodeRef{next.ref}) {
		t.Fatalf("with the holder down: holders %v, %v; want the next successor", holders, err)
	}
	got, _, err := cl.GetVia(ctx(t), via.ref.Addr, id.Key(data), true)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("get with the holder down: %d bytes, %v", len(got), err)
	}
}

// A node that names holders this client cannot reach (addresses behind a
// NAT, or an insider's inventions), as many as a lookup may name, still
// leaves the put and the get to the node asked: it is among the nodes
// tried (tryLimit), last.
func TestViaReachesTheNodeAskedPastUnreachableHolders(t *testing.T) {
	nodes, stores, cl := ring3(t)
	via := nodes[0]
	var named []wire.NodeRef
	for i := range 4 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ln.Close() // the address now refuses connections
		named = append(named, wire.NodeRef{ID: id.Key([]byte{byte(i)}), Addr: ln.Addr().String()})
	}
	stores[0].mu.Lock()
	stores[0].lookupSuccs = append(named, via.ref)
	stores[0].mu.Unlock()

	data := largeDataHeldBy(t, via, nodes[1])
	key, holders, err := cl.PutVia(ctx(t), via.ref.Addr, data, PutOptions{})
	if err != nil || !slices.Equal(holders, []wire.NodeRef{via.ref}) {
		t.Fatalf("put: holders %v, %v; want the node asked", holders, err)
	}
	got, _, err := cl.GetVia(ctx(t), via.ref.Addr, key, true)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("get: %d bytes, %v", len(got), err)
	}
}

// A holder that takes the put and never answers (hung, or cut off with
// its connection open) is given PutAttemptTimeout, then the next
// successor named is asked.
func TestViaPutMovesOnFromASilentHolder(t *testing.T) {
	defer func(d time.Duration) { PutAttemptTimeout = d }(PutAttemptTimeout)
	PutAttemptTimeout = 200 * time.Millisecond
	nodes, stores, cl := ring3(t)
	via, holder, next := nodes[0], nodes[1], nodes[2]
	stores[1].hangPuts.Store(true)
	data := largeDataHeldBy(t, via, holder)
	_, holders, err := cl.PutVia(ctx(t), via.ref.Addr, data, PutOptions{})
	if err != nil || !slices.Equal(holders, []wire.NodeRef{next.ref}) {
		t.Fatalf("put: holders %v, %v; want the next successor", holders, err)
	}
}
