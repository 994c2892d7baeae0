package dhash_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"triad/internal/e2e"

	"triad/internal/client"
	"triad/internal/dhash/frag"
	"triad/internal/fault"
	"triad/internal/id"
	"triad/internal/testutil"
	"triad/internal/wire"
)

// TestDHashClusterReplicas puts blocks as 2 replicas on 8 nodes, reads
// every block through every node, SIGKILLs one replica holder and reads
// everything again; it also checks the too-large and not-found answers.
func TestDHashClusterReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 8 processes; skipped in -short mode")
	}
	const (
		nodes    = 8
		perNode  = 3
		maxBlock = 256 << 10
	)
	start := time.Now()
	d := e2e.StartDHash(t, nodes, "--redundancy", "replicas", "--replicas", "2", "--max-block", fmt.Sprint(maxBlock))
	r := e2e.NewRand(t)

	// Puts from every node at once, sizes log-uniform in 100 B .. 200 KB
	// (the first node's first block is exactly 100 B, its second 200 KB).
	blocks := make([]e2e.Block, nodes*perNode)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failures []string
	for i, p := range d.Nodes {
		cl := d.Client(p)
		for j := range perNode {
			size := int(100 * math.Pow(2048, r.Float64()))
			switch {
			case i == 0 && j == 0:
				size = 100
			case i == 0 && j == 1:
				size = 200 << 10
			}
			data := e2e.RandomBytes(r, size)
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx, cancel := context.WithTimeout(context.Background(), e2e.PutTimeout)
				defer cancel()
				key, holders, err := cl.Put(ctx, data, client.PutOptions{Expire: time.Hour})
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					failures = append(failures, fmt.Sprintf("put of %d bytes via %s: %v", len(data), p.Name, err))
				}
				blocks[i*perNode+j] = e2e.Block{Key: key, Data: data, Via: p.Name, Holders: holders}
			}()
		}
	}
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("puts failed:\n  %s\n%s", strings.Join(failures, "\n  "), d.Logs())
	}
	for _, b := range blocks {
		if len(b.Holders) != 2 || !e2e.DistinctAddrs(b.Holders) {
			t.Errorf("put of %s via %s: holders %v, want 2 on distinct hosts", b.Key.Short(), b.Via, b.Holders)
		}
	}
	t.Logf("%d blocks put, %d nodes each, after %v", len(blocks), 2, time.Since(start).Round(time.Millisecond))
	d.MustGetAll("all nodes live", d.Nodes, blocks)

	// Refusals.
	ctx, cancel := context.WithTimeout(context.Background(), e2e.PutTimeout)
	defer cancel()
	if _, _, err := d.Client(d.Nodes[1]).Put(ctx, e2e.RandomBytes(r, maxBlock+1), client.PutOptions{Expire: time.Hour}); !errors.Is(err, fault.ErrTooLarge) {
		t.Errorf("put of %d bytes with --max-block %d: error %v, want fault.ErrTooLarge", maxBlock+1, maxBlock, err)
	}
	d.WaitLists("before a miss", 30*time.Second)
	missing := id.Key(e2e.RandomBytes(r, 64))
	miss := d.Nodes[2]
	if _, _, err := d.Client(miss).Get(ctx, missing); !errors.Is(err, fault.ErrNotFound) {
		t.Errorf("get of a key never put: error %v, want fault.ErrNotFound", err)
	}
	// The nodes that answered "not found" are alive and well: the node that
	// asked them must not take them for dead. A stat through it right away
	// asks every live host it still believes in (its lookup returns the
	// whole successor list here, 7 or 8 hosts).
	if hs := d.Stat(miss, missing); len(hs) < nodes-1 {
		t.Errorf("after a get of a missing key through %s, a stat through it lists %d hosts, want at least %d:%s", miss.Name, len(hs), nodes-1, e2e.FormatHolders(hs))
	}
	d.MustGetAll("after a miss", d.Nodes, blocks)

	// SIGKILL one replica holder of a block, never node0 (the others joined
	// through it; not that it matters once they have).
	b := blocks[1]
	hs := e2e.Holding(d.Stat(d.Nodes[3], b.Key))
	if len(hs) != 2 {
		t.Fatalf("stat of %s: %d holders report a copy, want 2:%s", b.Key.Short(), len(hs), e2e.FormatHolders(hs))
	}
	for _, h := range hs {
		if h.Size != uint64(len(b.Data)) || h.Fragment {
			t.Errorf("stat of %s: holder %s reports size %d fragment %v, want %d and a whole copy", b.Key.Short(), h.Node.Addr, h.Size, h.Fragment, len(b.Data))
		}
		if !slices.ContainsFunc(b.Holders, func(n wire.NodeRef) bool { return n.Addr == h.Node.Addr }) {
			t.Errorf("stat of %s lists holder %s, which the put did not name (%v)", b.Key.Short(), h.Node.Addr, b.Holders)
		}
	}
	victim := -1
	for _, h := range hs {
		if i, _ := d.ByAddr(h.Node.Addr); i > 0 {
			victim = i
			break
		}
	}
	d.Nodes[victim].Crash(t)
	t.Logf("killed %s, a holder of %s", d.Nodes[victim].Name, b.Key.Short())
	// At once: the gets must get past the dead process by themselves.
	d.MustGetAll("right after the SIGKILL", d.LiveNodes(), blocks)
	d.WaitLists("after the SIGKILL", 30*time.Second)
	d.MustGetAll("ring healed", d.LiveNodes(), blocks)
	t.Logf("whole test took %v", time.Since(start).Round(time.Millisecond))
}

// flipInSegments finds the one place in the segment files under
// dataDir/store holding needle and flips every bit of the byte in its
// middle. It fails the test unless needle occurs exactly once.
func flipInSegments(t *testing.T, dataDir string, needle []byte) (file string, off int64) {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dataDir, "store", "*.seg"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no segment files in %s/store (%v)", dataDir, err)
	}
	found := 0
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; ; {
			j := bytes.Index(b[i:], needle)
			if j < 0 {
				break
			}
			found++
			file, off = name, int64(i+j+len(needle)/2)
			i += j + 1
		}
	}
	if found != 1 {
		t.Fatalf("the %d-byte run occurs %d times in %v, want once", len(needle), found, names)
	}
	f, err := os.OpenFile(file, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var c [1]byte
	if _, err := f.ReadAt(c[:], off); err != nil {
		t.Fatal(err)
	}
	c[0] ^= 0xff
	if _, err := f.WriteAt(c[:], off); err != nil {
		t.Fatal(err)
	}
	return file, off
}

// holderAt returns the entry for the node at addr in hs.
func holderAt(hs []wire.Holder, addr string) (wire.Holder, bool) {
	for _, h := range hs {
		if h.Node.Addr == addr {
			return h, true
		}
	}
	return wire.Holder{}, false
}

// indexModTime is the modification time of a node's block index.
func indexModTime(t *testing.T, dataDir string) time.Time {
	t.Helper()
	st, err := os.Stat(filepath.Join(dataDir, "store", "index.db"))
	if err != nil {
		t.Fatal(err)
	}
	return st.ModTime()
}

// TestDHashClusterFlippedReplica damages one of a block's two replicas on
// disk while its node is down, restarts the node, and checks that the
// damaged copy is never served and is replaced: gets through every node
// (the damaged one included) return the right bytes, and the get through
// the damaged holder, which reads its own copy first, quarantines it and
// stores the good copy back; with the good copy's node killed, the
// repaired copy serves the block; with it back, gets succeed again.
func TestDHashClusterFlippedReplica(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 8 processes; skipped in -short mode")
	}
	start := time.Now()
	d := e2e.StartDHash(t, 8, "--redundancy", "replicas", "--replicas", "2")
	r := e2e.NewRand(t)
	data := e2e.RandomBytes(r, 64<<10)
	var before []time.Time // index times of the nodes before the put
	for _, p := range d.Nodes {
		before = append(before, indexModTime(t, p.Data))
	}
	b := d.Put(d.Nodes[0], data, wire.RedundancyReplicas)
	if len(b.Holders) != 2 || !e2e.DistinctAddrs(b.Holders) {
		t.Fatalf("put of %s: holders %v, want 2 on distinct hosts", b.Key.Short(), b.Holders)
	}
	bad, _ := d.ByAddr(b.Holders[0].Addr)
	good, _ := d.ByAddr(b.Holders[1].Addr)
	if bad < 0 || good < 0 {
		t.Fatalf("put of %s: holders %v are not nodes of the cluster", b.Key.Short(), b.Holders)
	}
	d.MustGetAll("both copies intact", d.Nodes, []e2e.Block{b})

	// Let the damaged holder's engine checkpoint the record into its index
	// (at most a second; the index changes only when there is something to
	// checkpoint, and this block is the only thing the node ever stored),
	// so that after the restart the index points at the damaged bytes and
	// only a read can find the damage. Without the checkpoint, recovery
	// would replay the record, fail its checksum and drop it, and the copy
	// would simply be missing.
	testutil.WaitFor(t, 10*time.Second, d.Nodes[bad].Name+"'s block index to change after the put", func() bool {
		return !indexModTime(t, d.Nodes[bad].Data).Equal(before[bad])
	})
	d.Nodes[bad].Crash(t)
	file, off := flipInSegments(t, d.Nodes[bad].Data, data[len(data)/2:len(data)/2+32])
	t.Logf("killed %s and flipped the byte at %s:%d", d.Nodes[bad].Name, filepath.Base(file), off)
	d.Restart(bad)
	d.WaitLists("after restarting "+d.Nodes[bad].Name, 30*time.Second)

	// A stat does not read the data: the damaged holder still claims its
	// copy until a read finds the damage. The index file can also change for
	// a checkpoint that came just before the record; then recovery replays
	// the damaged record, finds it torn and drops it, and the holder has no
	// copy at all. Either way it must never serve the damaged bytes.
	hs := d.Stat(d.Nodes[bad], b.Key)
	dropped := false
	switch h, ok := holderAt(hs, d.Nodes[bad].Addr); {
	case ok && h.Err == "" && h.Size == uint64(len(data)):
	case ok && h.Err == "no copy":
		dropped = true
	default:
		t.Errorf("stat via %s before any read: want %s listed with a copy of %d bytes, or no copy:%s", d.Nodes[bad].Name, d.Nodes[bad].Addr, len(data), e2e.FormatHolders(hs))
	}
	d.MustGetAll("one copy damaged", d.Nodes, []e2e.Block{b})
	if dropped {
		// No read finds damage, so no read repairs it: a missing copy is
		// for maintenance (Passing Tone) to make again, not for a get.
		t.Logf("recovery dropped the damaged record before any read (it was past the last checkpoint); the rest needs a read that finds the damage")
		return
	}

	// The get through the damaged holder read its own copy first, found
	// the damage and, with the block from the good holder, stored it back
	// (as may an earlier get that asked the damaged holder first). With the
	// good copy's node gone, the repaired copy serves the block. The repair
	// runs after the get has answered, so wait for it, with a deadline.
	d.Nodes[good].Crash(t)
	var err error
	if !testutil.Poll(10*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), e2e.GetTimeout)
		defer cancel()
		var got []byte
		got, _, err = d.Client(d.Nodes[bad]).Get(ctx, b.Key)
		if err == nil && !bytes.Equal(got, data) {
			t.Fatalf("get via %s with only the repaired copy live returned %d bytes that are not the block", d.Nodes[bad].Name, len(got))
		}
		return err == nil
	}) {
		t.Fatalf("get via %s with only the repaired copy live: %v; the damaged copy was not replaced within 10s", d.Nodes[bad].Name, err)
	}
	hs = d.Stat(d.Nodes[bad], b.Key)
	if h, ok := holderAt(hs, d.Nodes[bad].Addr); !ok || h.Err != "" || h.Size != uint64(len(data)) {
		t.Errorf("stat via %s after the repair: want %s listed with a copy of %d bytes:%s", d.Nodes[bad].Name, d.Nodes[bad].Addr, len(data), e2e.FormatHolders(hs))
	}

	// The good copy comes back with its node.
	d.Restart(good)
	d.WaitLists("after restarting "+d.Nodes[good].Name, 30*time.Second)
	d.MustGetAll("good copy back", d.Nodes, []e2e.Block{b})
	t.Logf("whole test took %v", time.Since(start).Round(time.Millisecond))
}

// TestDHashClusterFragments stores blocks as 7-of-14 fragments on 16
// nodes, checks that 14 distinct hosts hold one fragment each, SIGKILLs a
// holder of every block for good and waits for maintenance to rebuild the
// missing fragments, then SIGKILLs 7 of a block's fragment holders and
// reads every block through every live node.
func TestDHashClusterFragments(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 16 processes; skipped in -short mode")
	}
	const (
		nodes     = 16
		dataFrags = 7
		allFrags  = 14
	)
	start := time.Now()
	d := e2e.StartDHash(t, nodes, "--redundancy", "fragments")
	r := e2e.NewRand(t)
	var blocks []e2e.Block
	for i, size := range []int{8 << 10, 64<<10 + 3, 300 << 10} {
		// Redundancy 0: the nodes' default, fragments.
		b := d.Put(d.Nodes[(5*i+1)%nodes], e2e.RandomBytes(r, size), 0)
		if len(b.Holders) < 10 || !e2e.DistinctAddrs(b.Holders) {
			t.Errorf("put of %s (%d bytes): %d holders %v, want at least the write quorum of 10 on distinct hosts", b.Key.Short(), size, len(b.Holders), b.Holders)
		}
		blocks = append(blocks, b)
	}

	// The put returns once 10 fragments are durable; the other 4 are still
	// being written then, so wait (bounded) for all 14.
	var statOf [][]wire.Holder
	for _, b := range blocks {
		var hs []wire.Holder
		testutil.Poll(10*time.Second, func() bool { // checked below
			hs = e2e.Holding(d.Stat(d.Nodes[0], b.Key))
			return len(hs) >= allFrags
		})
		var refs []wire.NodeRef
		for _, h := range hs {
			refs = append(refs, h.Node)
			want := uint64(frag.HeaderBytes(allFrags) + frag.ShardBytes(len(b.Data), dataFrags)) // descriptor, index, shard (docs/dhash.md)
			if !h.Fragment || h.Size != want {
				t.Errorf("stat of %s: %s holds %d bytes fragment %v, want a fragment of %d", b.Key.Short(), h.Node.Addr, h.Size, h.Fragment, want)
			}
		}
		if len(hs) != allFrags || !e2e.DistinctAddrs(refs) {
			t.Fatalf("stat of %s (%d bytes): %d holders, want %d on distinct hosts:%s", b.Key.Short(), len(b.Data), len(hs), allFrags, e2e.FormatHolders(hs))
		}
		statOf = append(statOf, hs)
	}
	t.Logf("%d blocks stored as %d fragments each after %v", len(blocks), allFrags, time.Since(start).Round(time.Millisecond))
	d.MustGetAll("all nodes live", d.Nodes, blocks)

	// SIGKILL one fragment holder of every block for good: maintenance on
	// the node that becomes each block's 14th successor rebuilds the
	// missing fragment from 7 others (the range change starts its round
	// at once, though rounds are 10 minutes apart), so every block is back
	// at 14 fragments on distinct live hosts.
	var gone *e2e.Node
	for _, h := range statOf[0] {
		i, p := d.ByAddr(h.Node.Addr)
		if i > 0 && slices.ContainsFunc(statOf[1], func(x wire.Holder) bool { return x.Node.Addr == p.Addr }) &&
			slices.ContainsFunc(statOf[2], func(x wire.Holder) bool { return x.Node.Addr == p.Addr }) {
			gone = p
			break
		}
	}
	if gone == nil {
		t.Fatalf("no node but node0 holds a fragment of every block")
	}
	gone.Crash(t)
	killed := time.Now()
	d.WaitLists("after killing "+gone.Name, 30*time.Second)
	for _, b := range blocks {
		var refs []wire.NodeRef
		var hs []wire.Holder
		if !testutil.Poll(time.Until(killed.Add(90*time.Second)), func() bool {
			refs, hs = nil, e2e.Holding(d.Stat(d.Nodes[0], b.Key))
			for _, h := range hs {
				if h.Fragment && h.Node.Addr != gone.Addr {
					refs = append(refs, h.Node)
				}
			}
			return len(refs) == allFrags && e2e.DistinctAddrs(refs)
		}) {
			t.Fatalf("%s: %d fragments on live hosts 90 s after %s was killed, want %d on distinct hosts:%s", b.Key.Short(), len(refs), gone.Name, allFrags, e2e.FormatHolders(hs))
		}
	}
	t.Logf("every block back at %d fragments %v after %s, a holder of each, was killed", allFrags, time.Since(killed).Round(100*time.Millisecond), gone.Name)
	d.MustGetAll("a holder gone, fragments rebuilt", d.LiveNodes(), blocks)
	statOf = statOf[:0]
	for _, b := range blocks {
		statOf = append(statOf, e2e.Holding(d.Stat(d.Nodes[0], b.Key)))
	}

	// SIGKILL 7 fragment holders of the largest block (never node0). Every
	// other block loses at most 7 of its 14 fragments too.
	var victims []string
	for _, h := range statOf[len(statOf)-1] {
		if i, p := d.ByAddr(h.Node.Addr); i > 0 && len(victims) < allFrags-dataFrags {
			p.Crash(t)
			victims = append(victims, p.Name)
		}
	}
	t.Logf("killed %v", victims)
	// Right after the SIGKILLs, before the survivors have noticed, a get's
	// lookup may fail fast: the key's live predecessor still names the dead
	// nodes as its successors. The block store retries a failed lookup
	// (twice, a second apart), so every get must still succeed.
	d.MustGetAll("right after the SIGKILLs", d.LiveNodes(), blocks)
	d.WaitLists("after the SIGKILLs", 30*time.Second)
	d.MustGetAll("ring healed", d.LiveNodes(), blocks)
	t.Logf("whole test took %v", time.Since(start).Round(time.Millisecond))
}

// TestDHashClusterIdleClient reads a large block over a client connection
// that has been idle for longer than a node's write deadline (the nodes run
// with --write-timeout 2s). The 3 s pause is the subject of the test, not
// a wait for something to happen.
func TestDHashClusterIdleClient(t *testing.T) {
	start := time.Now()
	d := e2e.StartDHash(t, 3, "--redundancy", "replicas", "--write-timeout", "2s")
	r := e2e.NewRand(t)
	small := d.Put(d.Nodes[1], e2e.RandomBytes(r, 1000), 0)
	big := d.Put(d.Nodes[1], e2e.RandomBytes(r, 300<<10), 0)
	cl := d.Client(d.Nodes[0])
	get := func(what string, b e2e.Block) {
		t.Helper()
		// On a healthy ring of three a get takes milliseconds.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		got, _, err := cl.Get(ctx, b.Key)
		if err != nil || !bytes.Equal(got, b.Data) {
			t.Fatalf("%s: get of %d bytes via %s: %d bytes, %v", what, len(b.Data), d.Nodes[0].Name, len(got), err)
		}
	}
	get("before the pause", small)
	get("before the pause", big)
	time.Sleep(3 * time.Second)
	// Larger than the node's 64 KiB write buffer, so the reply is written
	// to the socket directly rather than buffered and flushed.
	get("after 3s idle", big)
	get("after 3s idle, again", small)
	t.Logf("whole test took %v", time.Since(start).Round(time.Millisecond))
}
