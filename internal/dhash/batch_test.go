package dhash

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/store"
	"triad/internal/store/mem"
	"triad/internal/wire"
)

// Every StoreBlocks a gather makes fits in a frame, whatever the batch's
// blocks: a frame over the limit is refused by the driver, and the call's
// timeout would then mark a live host dead. Before, the gather counted
// data bytes only, and a legal ClientPutBatch of 1,020 blocks of 4,090
// bytes became a StoreBlocks 17,350 bytes too large.
func TestGatheredStoresFitAFrame(t *testing.T) {
	long := wire.NodeRef{ID: id.Key([]byte("from")), Addr: strings.Repeat("h", 200) + ":7000"}
	host := wire.NodeRef{ID: id.Key([]byte("host")), Addr: "10.0.0.2:7000"}
	for _, c := range []struct{ n, size int }{{256, 16 << 10}, {1020, 4090}, {wire.MaxPutBatch, 1}, {64, 1 << 20}} {
		g := &storeGather{}
		for i := range c.n {
			data := make([]byte, c.size)
			data[0] = byte(i)
			if c.size > 1 {
				data[1] = byte(i >> 8)
			}
			g.add(host, &wire.StoreBlock{Key: id.Key(data), Data: data, Expiry: -1 << 62, Fragment: true}, func(node.Env, error) {})
		}
		kept := 0
		for _, h := range g.hosts {
			kept += len(h.blocks)
			env := wire.Envelope{Kind: wire.Request, ReqID: 1 << 62, From: long, To: host.ID, Msg: &wire.StoreBlocks{Blocks: h.blocks},
				Coord: wire.Coord{X: 1, Y: 1, Height: 1, Error: 1}}
			if size := wire.Size(env); size > wire.MaxFrameBytes {
				t.Errorf("%d blocks of %d bytes: a StoreBlocks of %d is a frame of %d bytes, over the limit of %d", c.n, c.size, len(h.blocks), size, wire.MaxFrameBytes)
			}
		}
		if kept != c.n {
			t.Errorf("%d blocks of %d bytes: %d gathered", c.n, c.size, kept)
		}
	}
}

// failingStat is an engine whose Stat of one key fails as a dying disk's
// read would.
type failingStat struct {
	store.Engine
	bad id.ID
}

func (f failingStat) Stat(key id.ID) (store.Meta, error) {
	if key == f.bad {
		return store.Meta{}, errors.New("read index: input/output error")
	}
	return f.Engine.Stat(key)
}

type engineOnly struct {
	node.Disk
	e store.Engine
}

func (s engineOnly) Engine() store.Engine { return s.e }
func (s engineOnly) Store(name string, _ int) (store.Engine, error) {
	return nil, fmt.Errorf("no store %q", name)
}

// A StatBlocks answer says "not held" only of keys not held: an engine
// that fails to read one fails the answer, where it used to be reported as
// a copy missing (and a failing disk went unseen by the asker).
func TestStatManyReportsAFailingEngine(t *testing.T) {
	opt := store.Options{KeyWidth: id.Bytes, MaxObject: 1 << 20, Window: time.Hour, Now: func() time.Time { return time.Unix(1e9, 0) }}
	m := mem.New(opt)
	held := []byte("a block held here")
	if err := m.Put(id.Key(held), held, time.Unix(1e9, 0).Add(time.Hour), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	absent, bad := id.Key([]byte("absent")), id.Key([]byte("on a bad sector"))
	run := func(e store.Engine, keys ...id.ID) workResult {
		t.Helper()
		res, err := (&engineWork{op: opStatMany, keys: keys}).Run(engineOnly{e: e})
		if err != nil {
			t.Fatal(err)
		}
		return res.(workResult)
	}
	r := run(failingStat{m, bad}, id.Key(held), absent)
	infos, _ := r.val.([]wire.BlockInfo)
	if r.err != nil || len(infos) != 2 || infos[0].Size != uint64(len(held)) || infos[1].Size != 0 {
		t.Fatalf("held and absent keys: %+v %v; want the held one's size and 0", r.val, r.err)
	}
	if r := run(failingStat{m, bad}, id.Key(held), bad, absent); r.err == nil {
		t.Fatalf("a key the engine failed to read: answered %+v, want the engine's error", r.val)
	}
}
