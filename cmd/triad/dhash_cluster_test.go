package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"triad/internal/client"
	"triad/internal/dhash/frag"
	"triad/internal/fault"
	"triad/internal/files"
	"triad/internal/id"
	"triad/internal/testutil"
	"triad/internal/wire"
)

// End-to-end tests of the block store (internal/dhash through
// internal/client) on real `triad node` processes, killed with SIGKILL.
// They reuse cluster_test.go's cluster, nodeProc and consistency check.

const (
	// dhashGetTimeout bounds one get. A get right after a SIGKILL may wait
	// for a lookup hop or a fetch to the dead process to time out (RPC
	// timeouts of 0.5 to 2 s, recursive lookups falling back to iterative
	// after 4 s), so it gets several of those, but not minutes.
	dhashGetTimeout = 30 * time.Second
	dhashPutTimeout = 20 * time.Second
)

// dhashCluster is a cluster of one-vnode nodes with clients to them.
type dhashCluster struct {
	*cluster
	nodes   []*nodeProc // by index
	clients map[string]*client.Client
	args    []string // extra node flags
}

// startDHash starts n one-vnode nodes with the given extra flags, all
// joining through the first, and waits until every successor list is
// complete.
func startDHash(t *testing.T, n int, extra ...string) *dhashCluster {
	t.Helper()
	d := &dhashCluster{cluster: newCluster(t), clients: map[string]*client.Client{}, args: extra}
	t.Cleanup(func() {
		for _, cl := range d.clients {
			cl.Close()
		}
	})
	ports := freePorts(t, n)
	for i := range n {
		addr := fmt.Sprintf("127.0.0.1:%d", ports[i])
		join := ""
		if i > 0 {
			join = d.nodes[0].addr
		}
		d.nodes = append(d.nodes, d.startWith(fmt.Sprintf("node%d", i), addr, filepath.Join(d.dir, fmt.Sprintf("data%d", i)), join, 1, extra...))
	}
	d.waitLists("after start", 45*time.Second)
	return d
}

// listsSettle is how long successor lists must stay complete before the
// ring counts as healed: more than a stabilization round (1 s ± 25%). A
// restarted node answers its first rounds with the list it saved, which
// may be short; its predecessor adopts that list for a round, so lists
// that look complete just after a restart can still lose an entry.
const listsSettle = 1500 * time.Millisecond

// waitLists polls until check has found nothing wrong for
// listsSettle, failing with the ring views and node logs if that takes
// longer than within.
func (d *dhashCluster) waitLists(what string, within time.Duration) {
	d.t.Helper()
	start := time.Now()
	var completeSince time.Time
	var problems []string
	if !testutil.Poll(within, func() bool {
		problems = d.check()
		switch {
		case len(problems) > 0:
			completeSince = time.Time{}
		case completeSince.IsZero():
			completeSince = time.Now()
		}
		return !completeSince.IsZero() && time.Since(completeSince) >= listsSettle
	}) {
		d.t.Fatalf("%s: successor lists not complete after %v:\n  %s\n\nring views:\n%s\n%s",
			what, within, strings.Join(problems, "\n  "), d.printViews(), d.logs())
	}
	d.t.Logf("%s: successor lists of %d nodes complete after %v (and since for %v)", what, len(d.live()), completeSince.Sub(start).Round(time.Millisecond), listsSettle)
}

// restart starts node i again with the same command and data directory and
// checks that it comes back at the same ring position.
func (d *dhashCluster) restart(i int) {
	d.t.Helper()
	p := d.nodes[i]
	if p.alive() {
		d.t.Fatalf("restart of %s, which is running", p.name)
	}
	old := p.ids
	d.cluster.restart(p)
	if !slices.Equal(p.ids, old) {
		d.t.Fatalf("%s restarted with vnode IDs %v, want %v", p.name, p.ids, old)
	}
	if cl := d.clients[p.addr]; cl != nil {
		cl.Close()
		delete(d.clients, p.addr)
	}
}

// client returns a client of the node p, dialling it on first use.
func (d *dhashCluster) client(p *nodeProc) *client.Client {
	d.t.Helper()
	if cl := d.clients[p.addr]; cl != nil {
		return cl
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cl, err := client.Dial(ctx, p.addr)
	if err != nil {
		d.t.Fatalf("dial %s: %v", p.name, err)
	}
	d.clients[p.addr] = cl
	return cl
}

func (d *dhashCluster) byAddr(addr string) (int, *nodeProc) {
	for i, p := range d.nodes {
		if p.addr == addr {
			return i, p
		}
	}
	return -1, nil
}

func (d *dhashCluster) liveNodes() []*nodeProc {
	var out []*nodeProc
	for _, p := range d.nodes {
		if p.alive() {
			out = append(out, p)
		}
	}
	return out
}

// testBlock is a block put in a test.
type testBlock struct {
	key     id.ID
	data    []byte
	via     string // node it was put through
	holders []wire.NodeRef
}

func randomBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// put stores data through p and checks the answer.
func (d *dhashCluster) put(p *nodeProc, data []byte, r wire.Redundancy) testBlock {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), dhashPutTimeout)
	defer cancel()
	key, holders, err := d.client(p).Put(ctx, data, client.PutOptions{Expire: time.Hour, Redundancy: r})
	if err != nil {
		d.t.Fatalf("put of %d bytes via %s: %v\n%s", len(data), p.name, err, d.logs())
	}
	// A whole copy is keyed by its content hash; a fragmented block by its
	// descriptor, which no content hash can equal (docs/dhash.md).
	fragmented := r == wire.RedundancyFragments || r == 0 && slices.Contains(d.args, "fragments")
	if whole := key == id.Key(data); whole == fragmented {
		d.t.Fatalf("put via %s (fragmented %v): key %s, content hash %s", p.name, fragmented, key.Short(), id.Key(data).Short())
	}
	return testBlock{key: key, data: data, via: p.name, holders: holders}
}

// getAll gets every block through every node in via, all at once, and
// returns what went wrong, the errors that tolerate accepted (nil: none),
// and the slowest get.
func (d *dhashCluster) getAll(via []*nodeProc, blocks []testBlock, tolerate func(error) bool) (problems, tolerated []string, slowest time.Duration) {
	d.t.Helper()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, p := range via {
		cl := d.client(p)
		for _, b := range blocks {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx, cancel := context.WithTimeout(context.Background(), dhashGetTimeout)
				defer cancel()
				start := time.Now()
				data, _, err := cl.Get(ctx, b.key)
				took := time.Since(start)
				mu.Lock()
				defer mu.Unlock()
				slowest = max(slowest, took)
				switch {
				case err != nil:
					msg := fmt.Sprintf("get %s (%d bytes) via %s after %v: %v", b.key.Short(), len(b.data), p.name, took.Round(time.Millisecond), err)
					if tolerate != nil && tolerate(err) {
						tolerated = append(tolerated, msg)
					} else {
						problems = append(problems, msg)
					}
				case !bytes.Equal(data, b.data):
					problems = append(problems, fmt.Sprintf("get %s via %s: %d bytes that differ from the %d put", b.key.Short(), p.name, len(data), len(b.data)))
				}
			}()
		}
	}
	wg.Wait()
	slices.Sort(problems)
	slices.Sort(tolerated)
	return problems, tolerated, slowest
}

// mustGetAll is getAll that fails the test on any problem.
func (d *dhashCluster) mustGetAll(what string, via []*nodeProc, blocks []testBlock) {
	d.t.Helper()
	d.getAllTolerating(what, via, blocks, nil)
}

// getAllTolerating is getAll that fails the test on any error tolerate
// does not accept, and logs the ones it does.
func (d *dhashCluster) getAllTolerating(what string, via []*nodeProc, blocks []testBlock, tolerate func(error) bool) {
	d.t.Helper()
	start := time.Now()
	problems, tolerated, slowest := d.getAll(via, blocks, tolerate)
	if len(problems) > 0 {
		d.t.Fatalf("%s: %d of %d gets failed:\n  %s\n%s\n%s", what, len(problems), len(via)*len(blocks), strings.Join(problems, "\n  "), d.explain(problems, via, blocks), d.logs())
	}
	d.t.Logf("%s: %d gets (%d blocks via %d nodes) in %v, slowest %v", what, len(via)*len(blocks), len(blocks), len(via),
		time.Since(start).Round(time.Millisecond), slowest.Round(time.Millisecond))
	if len(tolerated) > 0 {
		d.t.Logf("%s: %d gets failed in a way this step tolerates:\n  %s", what, len(tolerated), strings.Join(tolerated, "\n  "))
	}
}

// explain describes the blocks whose gets failed: where the put stored
// them and what the nodes that failed say about them now.
func (d *dhashCluster) explain(problems []string, via []*nodeProc, blocks []testBlock) string {
	var b strings.Builder
	for _, blk := range blocks {
		if !slices.ContainsFunc(problems, func(s string) bool { return strings.Contains(s, blk.key.Short()) }) {
			continue
		}
		fmt.Fprintf(&b, "block %s (%d bytes) put via %s, holders %v\n", blk.key.Short(), len(blk.data), blk.via, blk.holders)
		for _, p := range via {
			if !p.alive() {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			hs, err := d.client(p).Stat(ctx, blk.key)
			cancel()
			fmt.Fprintf(&b, "  stat via %s: err %v%s\n", p.name, err, formatHolders(hs))
		}
	}
	d.check()
	b.WriteString("ring views:\n" + d.printViews())
	return b.String()
}

// stat asks p which nodes hold key.
func (d *dhashCluster) stat(p *nodeProc, key id.ID) []wire.Holder {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), dhashGetTimeout)
	defer cancel()
	hs, err := d.client(p).Stat(ctx, key)
	if err != nil {
		d.t.Fatalf("stat %s via %s: %v", key.Short(), p.name, err)
	}
	return hs
}

func formatHolders(hs []wire.Holder) string {
	var b strings.Builder
	for _, h := range hs {
		fmt.Fprintf(&b, "\n    %s %s size %d fragment %v", h.Node.ID.Short(), h.Node.Addr, h.Size, h.Fragment)
		if h.Err != "" {
			fmt.Fprintf(&b, " err %q", h.Err)
		}
	}
	return b.String()
}

// holding returns the holders in hs that report a copy.
func holding(hs []wire.Holder) []wire.Holder {
	var out []wire.Holder
	for _, h := range hs {
		if h.Err == "" && h.Size > 0 {
			out = append(out, h)
		}
	}
	return out
}

// distinctAddrs reports whether the nodes are on distinct hosts.
func distinctAddrs(ns []wire.NodeRef) bool {
	seen := map[string]bool{}
	for _, n := range ns {
		if seen[n.Addr] {
			return false
		}
		seen[n.Addr] = true
	}
	return true
}

func newRand(t *testing.T) *rand.Rand {
	seed := uint64(time.Now().UnixNano())
	t.Logf("random seed %d", seed)
	return rand.New(rand.NewPCG(seed, seed>>7))
}

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
	d := startDHash(t, nodes, "--redundancy", "replicas", "--replicas", "2", "--max-block", fmt.Sprint(maxBlock))
	r := newRand(t)

	// Puts from every node at once, sizes log-uniform in 100 B .. 200 KB
	// (the first node's first block is exactly 100 B, its second 200 KB).
	blocks := make([]testBlock, nodes*perNode)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failures []string
	for i, p := range d.nodes {
		cl := d.client(p)
		for j := range perNode {
			size := int(100 * math.Pow(2048, r.Float64()))
			switch {
			case i == 0 && j == 0:
				size = 100
			case i == 0 && j == 1:
				size = 200 << 10
			}
			data := randomBytes(r, size)
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx, cancel := context.WithTimeout(context.Background(), dhashPutTimeout)
				defer cancel()
				key, holders, err := cl.Put(ctx, data, client.PutOptions{Expire: time.Hour})
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					failures = append(failures, fmt.Sprintf("put of %d bytes via %s: %v", len(data), p.name, err))
				}
				blocks[i*perNode+j] = testBlock{key: key, data: data, via: p.name, holders: holders}
			}()
		}
	}
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("puts failed:\n  %s\n%s", strings.Join(failures, "\n  "), d.logs())
	}
	for _, b := range blocks {
		if len(b.holders) != 2 || !distinctAddrs(b.holders) {
			t.Errorf("put of %s via %s: holders %v, want 2 on distinct hosts", b.key.Short(), b.via, b.holders)
		}
	}
	t.Logf("%d blocks put, %d nodes each, after %v", len(blocks), 2, time.Since(start).Round(time.Millisecond))
	d.mustGetAll("all nodes live", d.nodes, blocks)

	// Refusals.
	ctx, cancel := context.WithTimeout(context.Background(), dhashPutTimeout)
	defer cancel()
	if _, _, err := d.client(d.nodes[1]).Put(ctx, randomBytes(r, maxBlock+1), client.PutOptions{Expire: time.Hour}); !errors.Is(err, fault.ErrTooLarge) {
		t.Errorf("put of %d bytes with --max-block %d: error %v, want fault.ErrTooLarge", maxBlock+1, maxBlock, err)
	}
	d.waitLists("before a miss", 30*time.Second)
	missing := id.Key(randomBytes(r, 64))
	miss := d.nodes[2]
	if _, _, err := d.client(miss).Get(ctx, missing); !errors.Is(err, fault.ErrNotFound) {
		t.Errorf("get of a key never put: error %v, want fault.ErrNotFound", err)
	}
	// The nodes that answered "not found" are alive and well: the node that
	// asked them must not take them for dead. A stat through it right away
	// asks every live host it still believes in (its lookup returns the
	// whole successor list here, 7 or 8 hosts).
	if hs := d.stat(miss, missing); len(hs) < nodes-1 {
		t.Errorf("after a get of a missing key through %s, a stat through it lists %d hosts, want at least %d:%s", miss.name, len(hs), nodes-1, formatHolders(hs))
	}
	d.mustGetAll("after a miss", d.nodes, blocks)

	// SIGKILL one replica holder of a block, never node0 (the others joined
	// through it; not that it matters once they have).
	b := blocks[1]
	hs := holding(d.stat(d.nodes[3], b.key))
	if len(hs) != 2 {
		t.Fatalf("stat of %s: %d holders report a copy, want 2:%s", b.key.Short(), len(hs), formatHolders(hs))
	}
	for _, h := range hs {
		if h.Size != uint64(len(b.data)) || h.Fragment {
			t.Errorf("stat of %s: holder %s reports size %d fragment %v, want %d and a whole copy", b.key.Short(), h.Node.Addr, h.Size, h.Fragment, len(b.data))
		}
		if !slices.ContainsFunc(b.holders, func(n wire.NodeRef) bool { return n.Addr == h.Node.Addr }) {
			t.Errorf("stat of %s lists holder %s, which the put did not name (%v)", b.key.Short(), h.Node.Addr, b.holders)
		}
	}
	victim := -1
	for _, h := range hs {
		if i, _ := d.byAddr(h.Node.Addr); i > 0 {
			victim = i
			break
		}
	}
	d.nodes[victim].kill(t)
	t.Logf("killed %s, a holder of %s", d.nodes[victim].name, b.key.Short())
	// At once: the gets must get past the dead process by themselves.
	d.mustGetAll("right after the SIGKILL", d.liveNodes(), blocks)
	d.waitLists("after the SIGKILL", 30*time.Second)
	d.mustGetAll("ring healed", d.liveNodes(), blocks)
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
	d := startDHash(t, 8, "--redundancy", "replicas", "--replicas", "2")
	r := newRand(t)
	data := randomBytes(r, 64<<10)
	var before []time.Time // index times of the nodes before the put
	for _, p := range d.nodes {
		before = append(before, indexModTime(t, p.data))
	}
	b := d.put(d.nodes[0], data, wire.RedundancyReplicas)
	if len(b.holders) != 2 || !distinctAddrs(b.holders) {
		t.Fatalf("put of %s: holders %v, want 2 on distinct hosts", b.key.Short(), b.holders)
	}
	bad, _ := d.byAddr(b.holders[0].Addr)
	good, _ := d.byAddr(b.holders[1].Addr)
	if bad < 0 || good < 0 {
		t.Fatalf("put of %s: holders %v are not nodes of the cluster", b.key.Short(), b.holders)
	}
	d.mustGetAll("both copies intact", d.nodes, []testBlock{b})

	// Let the damaged holder's engine checkpoint the record into its index
	// (at most a second; the index changes only when there is something to
	// checkpoint, and this block is the only thing the node ever stored),
	// so that after the restart the index points at the damaged bytes and
	// only a read can find the damage. Without the checkpoint, recovery
	// would replay the record, fail its checksum and drop it, and the copy
	// would simply be missing.
	testutil.WaitFor(t, 10*time.Second, d.nodes[bad].name+"'s block index to change after the put", func() bool {
		return !indexModTime(t, d.nodes[bad].data).Equal(before[bad])
	})
	d.nodes[bad].kill(t)
	file, off := flipInSegments(t, d.nodes[bad].data, data[len(data)/2:len(data)/2+32])
	t.Logf("killed %s and flipped the byte at %s:%d", d.nodes[bad].name, filepath.Base(file), off)
	d.restart(bad)
	d.waitLists("after restarting "+d.nodes[bad].name, 30*time.Second)

	// A stat does not read the data: the damaged holder still claims its
	// copy until a read finds the damage. The index file can also change for
	// a checkpoint that came just before the record; then recovery replays
	// the damaged record, finds it torn and drops it, and the holder has no
	// copy at all. Either way it must never serve the damaged bytes.
	hs := d.stat(d.nodes[bad], b.key)
	dropped := false
	switch h, ok := holderAt(hs, d.nodes[bad].addr); {
	case ok && h.Err == "" && h.Size == uint64(len(data)):
	case ok && h.Err == "no copy":
		dropped = true
	default:
		t.Errorf("stat via %s before any read: want %s listed with a copy of %d bytes, or no copy:%s", d.nodes[bad].name, d.nodes[bad].addr, len(data), formatHolders(hs))
	}
	d.mustGetAll("one copy damaged", d.nodes, []testBlock{b})
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
	d.nodes[good].kill(t)
	var err error
	if !testutil.Poll(10*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), dhashGetTimeout)
		defer cancel()
		var got []byte
		got, _, err = d.client(d.nodes[bad]).Get(ctx, b.key)
		if err == nil && !bytes.Equal(got, data) {
			t.Fatalf("get via %s with only the repaired copy live returned %d bytes that are not the block", d.nodes[bad].name, len(got))
		}
		return err == nil
	}) {
		t.Fatalf("get via %s with only the repaired copy live: %v; the damaged copy was not replaced within 10s", d.nodes[bad].name, err)
	}
	hs = d.stat(d.nodes[bad], b.key)
	if h, ok := holderAt(hs, d.nodes[bad].addr); !ok || h.Err != "" || h.Size != uint64(len(data)) {
		t.Errorf("stat via %s after the repair: want %s listed with a copy of %d bytes:%s", d.nodes[bad].name, d.nodes[bad].addr, len(data), formatHolders(hs))
	}

	// The good copy comes back with its node.
	d.restart(good)
	d.waitLists("after restarting "+d.nodes[good].name, 30*time.Second)
	d.mustGetAll("good copy back", d.nodes, []testBlock{b})
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
	d := startDHash(t, nodes, "--redundancy", "fragments")
	r := newRand(t)
	var blocks []testBlock
	for i, size := range []int{8 << 10, 64<<10 + 3, 300 << 10} {
		// Redundancy 0: the nodes' default, fragments.
		b := d.put(d.nodes[(5*i+1)%nodes], randomBytes(r, size), 0)
		if len(b.holders) < 10 || !distinctAddrs(b.holders) {
			t.Errorf("put of %s (%d bytes): %d holders %v, want at least the write quorum of 10 on distinct hosts", b.key.Short(), size, len(b.holders), b.holders)
		}
		blocks = append(blocks, b)
	}

	// The put returns once 10 fragments are durable; the other 4 are still
	// being written then, so wait (bounded) for all 14.
	var statOf [][]wire.Holder
	for _, b := range blocks {
		var hs []wire.Holder
		testutil.Poll(10*time.Second, func() bool { // checked below
			hs = holding(d.stat(d.nodes[0], b.key))
			return len(hs) >= allFrags
		})
		var refs []wire.NodeRef
		for _, h := range hs {
			refs = append(refs, h.Node)
			want := uint64(frag.HeaderBytes(allFrags) + frag.ShardBytes(len(b.data), dataFrags)) // descriptor, index, shard (docs/dhash.md)
			if !h.Fragment || h.Size != want {
				t.Errorf("stat of %s: %s holds %d bytes fragment %v, want a fragment of %d", b.key.Short(), h.Node.Addr, h.Size, h.Fragment, want)
			}
		}
		if len(hs) != allFrags || !distinctAddrs(refs) {
			t.Fatalf("stat of %s (%d bytes): %d holders, want %d on distinct hosts:%s", b.key.Short(), len(b.data), len(hs), allFrags, formatHolders(hs))
		}
		statOf = append(statOf, hs)
	}
	t.Logf("%d blocks stored as %d fragments each after %v", len(blocks), allFrags, time.Since(start).Round(time.Millisecond))
	d.mustGetAll("all nodes live", d.nodes, blocks)

	// SIGKILL one fragment holder of every block for good: maintenance on
	// the node that becomes each block's 14th successor rebuilds the
	// missing fragment from 7 others (the range change starts its round
	// at once, though rounds are 10 minutes apart), so every block is back
	// at 14 fragments on distinct live hosts.
	var gone *nodeProc
	for _, h := range statOf[0] {
		i, p := d.byAddr(h.Node.Addr)
		if i > 0 && slices.ContainsFunc(statOf[1], func(x wire.Holder) bool { return x.Node.Addr == p.addr }) &&
			slices.ContainsFunc(statOf[2], func(x wire.Holder) bool { return x.Node.Addr == p.addr }) {
			gone = p
			break
		}
	}
	if gone == nil {
		t.Fatalf("no node but node0 holds a fragment of every block")
	}
	gone.kill(t)
	killed := time.Now()
	d.waitLists("after killing "+gone.name, 30*time.Second)
	for _, b := range blocks {
		var refs []wire.NodeRef
		var hs []wire.Holder
		if !testutil.Poll(time.Until(killed.Add(90*time.Second)), func() bool {
			refs, hs = nil, holding(d.stat(d.nodes[0], b.key))
			for _, h := range hs {
				if h.Fragment && h.Node.Addr != gone.addr {
					refs = append(refs, h.Node)
				}
			}
			return len(refs) == allFrags && distinctAddrs(refs)
		}) {
			t.Fatalf("%s: %d fragments on live hosts 90 s after %s was killed, want %d on distinct hosts:%s", b.key.Short(), len(refs), gone.name, allFrags, formatHolders(hs))
		}
	}
	t.Logf("every block back at %d fragments %v after %s, a holder of each, was killed", allFrags, time.Since(killed).Round(100*time.Millisecond), gone.name)
	d.mustGetAll("a holder gone, fragments rebuilt", d.liveNodes(), blocks)
	statOf = statOf[:0]
	for _, b := range blocks {
		statOf = append(statOf, holding(d.stat(d.nodes[0], b.key)))
	}

	// SIGKILL 7 fragment holders of the largest block (never node0). Every
	// other block loses at most 7 of its 14 fragments too.
	var victims []string
	for _, h := range statOf[len(statOf)-1] {
		if i, p := d.byAddr(h.Node.Addr); i > 0 && len(victims) < allFrags-dataFrags {
			p.kill(t)
			victims = append(victims, p.name)
		}
	}
	t.Logf("killed %v", victims)
	// Right after the SIGKILLs, before the survivors have noticed, a get's
	// lookup may fail fast: the key's live predecessor still names the dead
	// nodes as its successors. The block store retries a failed lookup
	// (twice, a second apart), so every get must still succeed.
	d.mustGetAll("right after the SIGKILLs", d.liveNodes(), blocks)
	d.waitLists("after the SIGKILLs", 30*time.Second)
	d.mustGetAll("ring healed", d.liveNodes(), blocks)
	t.Logf("whole test took %v", time.Since(start).Round(time.Millisecond))
}

// TestDHashClusterIdleClient reads a large block over a client connection
// that has been idle for longer than a node's write deadline (DialTimeout +
// 5 s = 8 s in internal/tcp). The 9 s pause is the subject of the test, not
// a wait for something to happen.
func TestDHashClusterIdleClient(t *testing.T) {
	if testing.Short() {
		t.Skip("idles for 9s; skipped in -short mode")
	}
	start := time.Now()
	d := startDHash(t, 3, "--redundancy", "replicas")
	r := newRand(t)
	small := d.put(d.nodes[1], randomBytes(r, 1000), 0)
	big := d.put(d.nodes[1], randomBytes(r, 300<<10), 0)
	cl := d.client(d.nodes[0])
	get := func(what string, b testBlock) {
		t.Helper()
		// On a healthy ring of three a get takes milliseconds.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		got, _, err := cl.Get(ctx, b.key)
		if err != nil || !bytes.Equal(got, b.data) {
			t.Fatalf("%s: get of %d bytes via %s: %d bytes, %v", what, len(b.data), d.nodes[0].name, len(got), err)
		}
	}
	get("before the pause", small)
	get("before the pause", big)
	time.Sleep(9 * time.Second)
	// Larger than the node's 64 KiB write buffer, so the reply is written
	// to the socket directly rather than buffered and flushed.
	get("after 9s idle", big)
	get("after 9s idle, again", small)
	t.Logf("whole test took %v", time.Since(start).Round(time.Millisecond))
}

// TestPutGetCommandsChunkLargeFiles runs `triad put` and `triad get` (the
// commands' own code, against real node processes) on a file of 2.5
// chunks: it is stored as three chunks and a manifest, read back whole,
// and --raw shows the manifest.
func TestPutGetCommandsChunkLargeFiles(t *testing.T) {
	d := startDHash(t, 3, "--redundancy", "replicas")
	dir := t.TempDir()
	data := randomBytes(newRand(t), 2*1024*1024+512*1024)
	in := filepath.Join(dir, "in")
	if err := os.WriteFile(in, data, 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if err := runPut([]string{in, "--addr", d.nodes[0].addr, "--chunk", "1048576"}, &out, &errOut); err != nil {
		t.Fatalf("triad put: %v (%s)", err, errOut.String())
	}
	key := strings.TrimSpace(out.String())
	got := filepath.Join(dir, "out")
	if err := runGet([]string{key, "--addr", d.nodes[2].addr, "-o", got}, &out, &errOut); err != nil {
		t.Fatalf("triad get: %v (%s)", err, errOut.String())
	}
	if b, err := os.ReadFile(got); err != nil || !bytes.Equal(b, data) {
		t.Fatalf("triad get wrote %d bytes (%v), want the %d put", len(b), err, len(data))
	}
	out.Reset()
	if err := runGet([]string{key, "--addr", d.nodes[1].addr, "--raw"}, &out, &errOut); err != nil {
		t.Fatalf("triad get --raw: %v", err)
	}
	m, err := files.ParseManifest(out.Bytes())
	if err != nil || len(m.Chunks) != 3 || m.Size != len(data) {
		t.Fatalf("--raw printed %q: %v; want a manifest of 3 chunks", out.String(), err)
	}
}
