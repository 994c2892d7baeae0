package dhtspool_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"testing"
	"time"

	"triad/internal/client"
	"triad/internal/id"
	"triad/internal/noded"
	"triad/internal/usenet/dhtspool"
	"triad/internal/wire"
)

// startRing starts n real nodes on 127.0.0.1 in this process, each on a
// free port, and waits until each one's successor is another node.
func startRing(t *testing.T, n int) []*noded.Node {
	t.Helper()
	var nodes []*noded.Node
	for i := range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		o := noded.DefaultOptions()
		o.Listen, o.Data = addr, filepath.Join(t.TempDir(), fmt.Sprint("node", i))
		if i > 0 {
			o.Join = nodes[0].Addr
		}
		nd, err := noded.Start(context.Background(), o, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { nd.Close() })
		nodes = append(nodes, nd)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, nd := range nodes[1:] {
		if err := nd.WaitJoined(ctx, nodes[0].Addr, time.Minute, func(string) {}); err != nil {
			t.Fatal(err)
		}
	}
	return nodes
}

// ResolveBatch finds every stored key with its size and expiry through
// the nodes' StatBlocks (real nodes, over TCP), and says a key that was
// never stored is not found, without an error.
func TestResolveBatchOnARealRing(t *testing.T) {
	nodes := startRing(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := client.DialCluster(ctx, nodes[0].Addr)
	if err != nil {
		t.Fatal(err)
	}
	s := &dhtspool.Spool{Cluster: cl}
	defer s.Close()
	expiry := time.Now().Add(time.Hour).Truncate(time.Second)
	var items []wire.PutItem
	for i := range 40 {
		items = append(items, wire.PutItem{Data: []byte(fmt.Sprintf("article %d %s", i, make([]byte, i))), Expiry: expiry.UnixNano()})
	}
	keys, errs := cl.PutBatch(ctx, items, wire.RedundancyReplicas)
	for i, err := range errs {
		if err != nil {
			t.Fatalf("put %d: %v", i, err)
		}
	}
	missing := id.Key([]byte("never stored"))
	got := s.ResolveBatch(ctx, append(keys, missing))
	for i := range items {
		r := got[i]
		if r.Err != nil || !r.Found || r.Stored.Size != len(items[i].Data) || !r.Stored.Expires.Equal(expiry) {
			t.Errorf("key %d: %+v, want found with %d bytes until %v", i, r, len(items[i].Data), expiry)
		}
	}
	if r := got[len(items)]; r.Err != nil || r.Found {
		t.Errorf("a key never stored: %+v, want not found", r)
	}
	// Each node answers for its own copies, all in one StatBlocks: k = 2
	// of 3 nodes hold every key.
	copies := make([]int, len(keys))
	for _, nd := range nodes {
		c, err := client.Dial(ctx, nd.Addr)
		if err != nil {
			t.Fatal(err)
		}
		infos, err := c.StatBlocks(ctx, keys)
		c.Close()
		if err != nil {
			t.Fatalf("StatBlocks at %s: %v", nd.Addr, err)
		}
		for i, bi := range infos {
			switch {
			case bi.Size == uint64(len(items[i].Data)):
				copies[i]++
			case bi.Size != 0:
				t.Errorf("%s says key %d holds %d bytes, want %d", nd.Addr, i, bi.Size, len(items[i].Data))
			}
		}
	}
	for i, n := range copies {
		if n != 2 {
			t.Errorf("key %d: %d nodes answered holding it, want 2", i, n)
		}
	}
}
