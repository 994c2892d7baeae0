package e2e

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"triad/internal/client"
	"triad/internal/id"
	"triad/internal/testutil"
	"triad/internal/wire"
)

const (
	// GetTimeout bounds one get. A get right after a SIGKILL may wait
	// for a lookup hop or a fetch to the dead process to time out (RPC
	// timeouts of 0.5 to 2 s, recursive lookups falling back to iterative
	// after 4 s), so it gets several of those, but not minutes.
	GetTimeout = 30 * time.Second
	PutTimeout = 20 * time.Second
)

// DHash is a Cluster of one-vnode nodes with clients to them.
type DHash struct {
	*Cluster
	Nodes   []*Node // by index
	clients map[string]*client.Client
	Args    []string // extra node flags
}

// StartDHash starts n one-vnode nodes with the given extra flags, all
// joining through the first, and waits until every successor list is
// complete.
func StartDHash(t *testing.T, n int, extra ...string) *DHash {
	t.Helper()
	d := &DHash{Cluster: NewCluster(t), clients: map[string]*client.Client{}, Args: extra}
	t.Cleanup(func() {
		for _, cl := range d.clients {
			cl.Close()
		}
	})
	ports := FreePorts(t, n)
	for i := range n {
		addr := fmt.Sprintf("127.0.0.1:%d", ports[i])
		join := ""
		if i > 0 {
			join = d.Nodes[0].Addr
		}
		d.Nodes = append(d.Nodes, d.StartWith(fmt.Sprintf("node%d", i), addr, filepath.Join(d.Dir, fmt.Sprintf("data%d", i)), join, 1, extra...))
	}
	d.WaitLists("after start", 45*time.Second)
	return d
}

// listsSettle is how long successor lists must stay complete before the
// ring counts as healed: more than a stabilization round (1 s ± 25%). A
// restarted node answers its first rounds with the list it saved, which
// may be short; its predecessor adopts that list for a round, so lists
// that look complete just after a restart can still lose an entry.
const listsSettle = 1500 * time.Millisecond

// WaitLists polls until check has found nothing wrong for
// listsSettle, failing with the ring views and node logs if that takes
// longer than within.
func (d *DHash) WaitLists(what string, within time.Duration) {
	d.T.Helper()
	start := time.Now()
	var completeSince time.Time
	var problems []string
	if !testutil.Poll(within, func() bool {
		problems = d.Check()
		switch {
		case len(problems) > 0:
			completeSince = time.Time{}
		case completeSince.IsZero():
			completeSince = time.Now()
		}
		return !completeSince.IsZero() && time.Since(completeSince) >= listsSettle
	}) {
		d.T.Fatalf("%s: successor lists not complete after %v:\n  %s\n\nring views:\n%s\n%s",
			what, within, strings.Join(problems, "\n  "), d.PrintViews(), d.Logs())
	}
	d.T.Logf("%s: successor lists of %d nodes complete after %v (and since for %v)", what, len(d.Live()), completeSince.Sub(start).Round(time.Millisecond), listsSettle)
}

// Restart starts node i again with the same command and data directory and
// checks that it comes back at the same ring position.
func (d *DHash) Restart(i int) {
	d.T.Helper()
	p := d.Nodes[i]
	if p.Running() {
		d.T.Fatalf("restart of %s, which is running", p.Name)
	}
	old := p.IDs
	d.Cluster.Restart(p)
	if !slices.Equal(p.IDs, old) {
		d.T.Fatalf("%s restarted with vnode IDs %v, want %v", p.Name, p.IDs, old)
	}
	if cl := d.clients[p.Addr]; cl != nil {
		cl.Close()
		delete(d.clients, p.Addr)
	}
}

// Client returns a client of the node p, dialling it on first use.
func (d *DHash) Client(p *Node) *client.Client {
	d.T.Helper()
	if cl := d.clients[p.Addr]; cl != nil {
		return cl
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cl, err := client.Dial(ctx, p.Addr)
	if err != nil {
		d.T.Fatalf("dial %s: %v", p.Name, err)
	}
	d.clients[p.Addr] = cl
	return cl
}

// ByAddr is the node at addr and its index (-1 and nil: none).
func (d *DHash) ByAddr(addr string) (int, *Node) {
	for i, p := range d.Nodes {
		if p.Addr == addr {
			return i, p
		}
	}
	return -1, nil
}

// LiveNodes is the nodes running, by index.
func (d *DHash) LiveNodes() []*Node { return running(d.Nodes) }

// Block is a block put in a test.
type Block struct {
	Key     id.ID
	Data    []byte
	Via     string // node it was put through
	Holders []wire.NodeRef
}

// RandomBytes is n bytes from r.
func RandomBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// Put stores data through p and checks the answer.
func (d *DHash) Put(p *Node, data []byte, r wire.Redundancy) Block {
	d.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), PutTimeout)
	defer cancel()
	key, holders, err := d.Client(p).Put(ctx, data, client.PutOptions{Expire: time.Hour, Redundancy: r})
	if err != nil {
		d.T.Fatalf("put of %d bytes via %s: %v\n%s", len(data), p.Name, err, d.Logs())
	}
	// A whole copy is keyed by its content hash; a fragmented block by its
	// descriptor, which no content hash can equal (docs/dhash.md).
	fragmented := r == wire.RedundancyFragments || r == 0 && slices.Contains(d.Args, "fragments")
	if whole := key == id.Key(data); whole == fragmented {
		d.T.Fatalf("put via %s (fragmented %v): key %s, content hash %s", p.Name, fragmented, key.Short(), id.Key(data).Short())
	}
	return Block{Key: key, Data: data, Via: p.Name, Holders: holders}
}

// GetAll gets every block through every node in via, all at once, and
// returns what went wrong, the errors that tolerate accepted (nil: none),
// and the slowest get.
func (d *DHash) GetAll(via []*Node, blocks []Block, tolerate func(error) bool) (problems, tolerated []string, slowest time.Duration) {
	d.T.Helper()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, p := range via {
		cl := d.Client(p)
		for _, b := range blocks {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx, cancel := context.WithTimeout(context.Background(), GetTimeout)
				defer cancel()
				start := time.Now()
				data, _, err := cl.Get(ctx, b.Key)
				took := time.Since(start)
				mu.Lock()
				defer mu.Unlock()
				slowest = max(slowest, took)
				switch {
				case err != nil:
					msg := fmt.Sprintf("get %s (%d bytes) via %s after %v: %v", b.Key.Short(), len(b.Data), p.Name, took.Round(time.Millisecond), err)
					if tolerate != nil && tolerate(err) {
						tolerated = append(tolerated, msg)
					} else {
						problems = append(problems, msg)
					}
				case !bytes.Equal(data, b.Data):
					problems = append(problems, fmt.Sprintf("get %s via %s: %d bytes that differ from the %d put", b.Key.Short(), p.Name, len(data), len(b.Data)))
				}
			}()
		}
	}
	wg.Wait()
	slices.Sort(problems)
	slices.Sort(tolerated)
	return problems, tolerated, slowest
}

// MustGetAll is getAll that fails the test on any problem.
func (d *DHash) MustGetAll(what string, via []*Node, blocks []Block) {
	d.T.Helper()
	d.GetAllTolerating(what, via, blocks, nil)
}

// GetAllTolerating is getAll that fails the test on any error tolerate
// does not accept, and logs the ones it does.
func (d *DHash) GetAllTolerating(what string, via []*Node, blocks []Block, tolerate func(error) bool) {
	d.T.Helper()
	start := time.Now()
	problems, tolerated, slowest := d.GetAll(via, blocks, tolerate)
	if len(problems) > 0 {
		d.T.Fatalf("%s: %d of %d gets failed:\n  %s\n%s\n%s", what, len(problems), len(via)*len(blocks), strings.Join(problems, "\n  "), d.Explain(problems, via, blocks), d.Logs())
	}
	d.T.Logf("%s: %d gets (%d blocks via %d nodes) in %v, slowest %v", what, len(via)*len(blocks), len(blocks), len(via),
		time.Since(start).Round(time.Millisecond), slowest.Round(time.Millisecond))
	if len(tolerated) > 0 {
		d.T.Logf("%s: %d gets failed in a way this step tolerates:\n  %s", what, len(tolerated), strings.Join(tolerated, "\n  "))
	}
}

// Explain describes the blocks whose gets failed: where the put stored
// them and what the nodes that failed say about them now.
func (d *DHash) Explain(problems []string, via []*Node, blocks []Block) string {
	var b strings.Builder
	for _, blk := range blocks {
		if !slices.ContainsFunc(problems, func(s string) bool { return strings.Contains(s, blk.Key.Short()) }) {
			continue
		}
		fmt.Fprintf(&b, "block %s (%d bytes) put via %s, holders %v\n", blk.Key.Short(), len(blk.Data), blk.Via, blk.Holders)
		for _, p := range via {
			if !p.Running() {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			hs, err := d.Client(p).Stat(ctx, blk.Key)
			cancel()
			fmt.Fprintf(&b, "  stat via %s: err %v%s\n", p.Name, err, FormatHolders(hs))
		}
	}
	d.Check()
	b.WriteString("ring views:\n" + d.PrintViews())
	return b.String()
}

// Stat asks p which nodes hold key.
func (d *DHash) Stat(p *Node, key id.ID) []wire.Holder {
	d.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), GetTimeout)
	defer cancel()
	hs, err := d.Client(p).Stat(ctx, key)
	if err != nil {
		d.T.Fatalf("stat %s via %s: %v", key.Short(), p.Name, err)
	}
	return hs
}

// FormatHolders is hs for a failure message, a line each.
func FormatHolders(hs []wire.Holder) string {
	var b strings.Builder
	for _, h := range hs {
		fmt.Fprintf(&b, "\n    %s %s size %d fragment %v", h.Node.ID.Short(), h.Node.Addr, h.Size, h.Fragment)
		if h.Err != "" {
			fmt.Fprintf(&b, " err %q", h.Err)
		}
	}
	return b.String()
}

// Holding returns the holders in hs that report a copy.
func Holding(hs []wire.Holder) []wire.Holder {
	var out []wire.Holder
	for _, h := range hs {
		if h.Err == "" && h.Size > 0 {
			out = append(out, h)
		}
	}
	return out
}

// DistinctAddrs reports whether the nodes are on distinct hosts.
func DistinctAddrs(ns []wire.NodeRef) bool {
	seen := map[string]bool{}
	for _, n := range ns {
		if seen[n.Addr] {
			return false
		}
		seen[n.Addr] = true
	}
	return true
}

// NewRand is a random source seeded from the clock; the seed is logged.
func NewRand(t *testing.T) *rand.Rand {
	seed := uint64(time.Now().UnixNano())
	t.Logf("random seed %d", seed)
	return rand.New(rand.NewPCG(seed, seed>>7))
}
