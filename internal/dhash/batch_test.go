package dhash

import (
	"strings"
	"testing"

	"triad/internal/id"
	"triad/internal/node"
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
