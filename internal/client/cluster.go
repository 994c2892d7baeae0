package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"triad/internal/fault"
	"triad/internal/id"
	"triad/internal/wire"
)

// Cluster sends each call straight to the node that holds the key's first
// copy, from a map of the ring it learns from the nodes. Any node could
// serve any call (it looks the key up itself); going to the holder saves
// the lookup's hops and a copy's transfer, as a DHash++ client colocated
// with a node would. If the map is stale the call still succeeds, one hop
// longer; a node that cannot be reached is skipped and the map refreshed,
// and a map older than MapAge is refreshed in the background by the next
// call (a cluster dialled while the ring was forming would otherwise send
// every call to the few nodes it knew then, for good). Puts and gets are
// the exception where the client shares a process with a node
// (Options.Local): they go to that node (localRoute).
type Cluster struct {
	seeds []string
	opt   Options

	pool *Pool

	mu         sync.Mutex
	ring       []wire.NodeRef // sorted by ID
	learned    time.Time      // when ring was last asked for
	refreshing bool           // a background refresh runs (at most one)
	closed     bool
	maxAge     time.Duration // MapAge unless a test sets it
	background sync.WaitGroup
	stopBG     context.CancelFunc // ends the background refresh's calls

	// What Get did (GetStats).
	localReads, nodeGets atomic.Uint64
	nodeGetNanos         atomic.Int64
}

// MapAge is how long a Cluster's map of the ring serves before it is
// relearned.
const MapAge = 10 * time.Second

// DialCluster connects to the seed nodes and learns the ring from them.
func DialCluster(ctx context.Context, seeds ...string) (*Cluster, error) {
	return DialClusterOptions(ctx, Options{}, seeds...)
}

// DialClusterOptions is DialCluster with options for every connection.
func DialClusterOptions(ctx context.Context, opt Options, seeds ...string) (*Cluster, error) {
	if len(seeds) == 0 {
		return nil, errors.New("client: no seed addresses")
	}
	c := &Cluster{seeds: seeds, opt: opt, pool: NewPool(opt), maxAge: MapAge}
	if err := c.Refresh(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// Close closes every connection, once a background refresh of the map
// has ended (what it dials then is closed too).
func (c *Cluster) Close() error {
	c.pool.Close()
	c.mu.Lock()
	c.closed = true
	if c.stopBG != nil {
		c.stopBG()
	}
	c.mu.Unlock()
	c.background.Wait()
	return nil
}

// conn returns a live connection to addr, dialling if needed (for at
// most two seconds).
func (c *Cluster) conn(ctx context.Context, addr string) (*Client, error) {
	dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return c.pool.Conn(dctx, addr)
}

// Refresh relearns the ring from the seeds and the nodes already known.
func (c *Cluster) Refresh(ctx context.Context) error {
	c.mu.Lock()
	c.learned = time.Now()
	addrs := slices.Clone(c.seeds)
	for _, n := range c.ring {
		if !slices.Contains(addrs, n.Addr) {
			addrs = append(addrs, n.Addr)
		}
	}
	c.mu.Unlock()
	var nodes []wire.NodeRef
	var lastErr error
	asked := 0
	for _, a := range addrs {
		if asked == 3 && len(nodes) > 0 {
			break
		}
		cl, err := c.conn(ctx, a)
		if err != nil {
			lastErr = err
			continue
		}
		m, err := cl.Call(ctx, &wire.GetRingInfo{})
		info, ok := m.(*wire.RingInfo)
		if err != nil || !ok {
			lastErr = fmt.Errorf("ring info from %s: %v", a, err)
			continue
		}
		asked++
		for _, v := range info.Vnodes {
			nodes = append(nodes, v.Self)
			nodes = append(nodes, v.Succs...)
			nodes = append(nodes, v.Preds...)
		}
	}
	if len(nodes) == 0 {
		return fmt.Errorf("client: no node answered: %v", lastErr)
	}
	slices.SortFunc(nodes, func(a, b wire.NodeRef) int { return a.ID.Cmp(b.ID) })
	nodes = slices.CompactFunc(nodes, func(a, b wire.NodeRef) bool { return a.ID == b.ID })
	c.mu.Lock()
	c.ring = nodes
	c.mu.Unlock()
	return nil
}

// refreshLocked relearns the map in the background, unless a refresh
// runs already or the cluster is closed: one goroutine at most, however
// many calls find the map old or a node gone, and Close waits for it.
// c.mu is held.
func (c *Cluster) refreshLocked() {
	if c.refreshing || c.closed {
		return
	}
	c.refreshing = true
	c.background.Add(1)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	c.stopBG = cancel
	go func() {
		defer c.background.Done()
		defer cancel()
		c.Refresh(ctx) // on failure the old map serves until the next try
		c.mu.Lock()
		c.refreshing = false
		c.mu.Unlock()
	}()
}

// route lists the nodes to try for key: the key's first successor in the
// map, then the others in ring order.
func (c *Cluster) route(key id.ID) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if time.Since(c.learned) > c.maxAge {
		c.refreshLocked()
	}
	i, _ := slices.BinarySearchFunc(c.ring, key, func(n wire.NodeRef, k id.ID) int { return n.ID.Cmp(k) })
	var out []string
	for j := range c.ring {
		a := c.ring[(i+j)%len(c.ring)].Addr
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// localRoute lists the nodes to try for a put or a get of key. A node in
// this process (Options.Local) comes first. A put hands it the block by a
// function call, and it sends each remote copy once, straight to its
// holder: sent to the key's first holder instead, a block whose second
// copy is this node's would cross the network twice, there and back, and
// be hashed again on its return (a site that had learnt the ring spent
// about a fifth more CPU a 240 KB article that way, docs/usenet.md). A
// get reads the node's own copy where it holds one, checked by its
// engine's CRCs, where the first holder would send a copy over the
// network to be hashed here.
func (c *Cluster) localRoute(key id.ID) []string {
	route := c.route(key)
	if c.opt.Local == nil {
		return route
	}
	local := c.opt.Local.Addr
	return append([]string{local}, slices.DeleteFunc(route, func(a string) bool { return a == local })...)
}

// getRoute lists the nodes to ask for a key the node in this process
// holds no copy of: the key's first two other holders in ring order, then
// that node, whose own get looks further (DHash's widened lookup), then
// the rest. Each of them runs a whole DHT get if it has no copy itself.
func (c *Cluster) getRoute(key id.ID) []string {
	local := c.opt.Local.Addr
	others := slices.DeleteFunc(c.route(key), func(a string) bool { return a == local })
	n := min(2, len(others))
	return slices.Concat(others[:n], []string{local}, others[n:])
}

// do runs call on the key's holder, moving on to the next node when one
// cannot be reached.
func (c *Cluster) do(ctx context.Context, key id.ID, call func(*Client) error) error {
	return c.try(ctx, c.route(key), call)
}

// try runs call on the first node of route that can be reached, at most
// tryLimit of them; a node that cannot be reached has the map relearned.
func (c *Cluster) try(ctx context.Context, route []string, call func(*Client) error) error {
	unreachable := func(err error) bool {
		if errors.Is(err, errDial) || errors.Is(err, ErrClosed) {
			c.mu.Lock()
			c.refreshLocked()
			c.mu.Unlock()
			return true
		}
		return errors.Is(err, errAskNext)
	}
	i, errs, err := Failover{Passes: 1, Limit: tryLimit, Retry: unreachable}.Run(ctx, len(route), 0, func(i int) error {
		cl, err := c.conn(ctx, route[i])
		if err != nil {
			return fmt.Errorf("%w: %w", errDial, err)
		}
		return call(cl)
	})
	switch {
	case err != nil:
		return err
	case i >= 0:
		return errs[i]
	case len(route) == 0:
		return fmt.Errorf("%w: no node known", fault.ErrUnavailable)
	}
	return fmt.Errorf("%w: %v", fault.ErrUnavailable, errs[min(len(route), tryLimit)-1])
}

// tryLimit is the most nodes try asks for one call.
const tryLimit = 3

// errDial marks a failure to reach a node, which try takes to the next.
var errDial = errors.New("client: cannot reach the node")

// errAskNext marks a node's failure that another node might not have: it
// did not answer a get in time, or answered bytes that are not the
// block. try takes it to the next node.
var errAskNext = errors.New("client: asking the next node")

// GetAttemptTimeout bounds how long Get waits for one node before it asks
// the next (4 s, a node's own call timeout). A variable for the tests.
var GetAttemptTimeout = 4 * time.Second

// Put stores data through the node that holds its first copy, or through
// the node in this process if there is one (localRoute).
func (c *Cluster) Put(ctx context.Context, data []byte, opt PutOptions) (key id.ID, holders []wire.NodeRef, err error) {
	err = c.try(ctx, c.localRoute(id.Key(data)), func(cl *Client) error {
		key, holders, err = cl.Put(ctx, data, opt)
		return err
	})
	return key, holders, err
}

// Get fetches key's block through the node that holds its first copy, or
// through the node in this process if there is one (localRoute). Where
// that node's engine can be read directly (Local.Read), a copy it holds
// is read there, and a key it holds no copy of is fetched from the
// holders the map names (getRoute): one round trip to a holder, as the
// first read of an article a site did not store should cost.
func (c *Cluster) Get(ctx context.Context, key id.ID) (data []byte, expiry time.Time, err error) {
	var route []string
	if l := c.opt.Local; l != nil && l.Read != nil {
		if data, expiry, err := l.Read(key); err == nil {
			c.localReads.Add(1)
			return data, expiry, nil
		}
		route = c.getRoute(key)
	} else {
		route = c.localRoute(key)
	}
	start := time.Now()
	err = c.try(ctx, route, func(cl *Client) error {
		data, expiry, err = getFrom(ctx, cl, key)
		return err
	})
	if err == nil {
		c.nodeGets.Add(1)
		c.nodeGetNanos.Add(int64(time.Since(start)))
	}
	return data, expiry, err
}

// getFrom asks one node for key's block. A node that stopped answering
// (hung, or cut off with its connection still open) gets its own
// deadline, and then the next node is asked, as DHash's own get moves on
// from a silent holder or a bad copy.
func getFrom(ctx context.Context, cl *Client, key id.ID) (data []byte, expiry time.Time, err error) {
	err = attempt(ctx, cl, "get", GetAttemptTimeout, func(actx context.Context) error {
		data, expiry, err = cl.Get(actx, key)
		return err
	})
	if errors.Is(err, fault.ErrCorrupt) {
		// A copy that fails its hash: the next holder's may not.
		return nil, time.Time{}, fmt.Errorf("%w: %w", errAskNext, err)
	}
	return data, expiry, err
}

// attempt runs one call (what: "get", "put") on cl with a deadline of its
// own, d: a node that does not answer within it, while ctx has time left,
// is errAskNext, for try to ask the next.
func attempt(ctx context.Context, cl *Client, what string, d time.Duration, call func(actx context.Context) error) error {
	actx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	err := call(actx)
	if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w: %s did not answer a %s within %v", errAskNext, cl.addr, what, d)
	}
	return err
}

// GetStats counts the blocks Get returned, by where it found them.
type GetStats struct {
	// LocalReads were read from the engine of the node in this process
	// (Local.Read): no message.
	LocalReads uint64
	// NodeGets were answered by a node: a key's holder, one round trip
	// when the map is right (or the node in this process, without
	// Local.Read). NodeGetSeconds is their time in all.
	NodeGets       uint64
	NodeGetSeconds float64
}

// GetStats returns what Get has done so far.
func (c *Cluster) GetStats() GetStats {
	return GetStats{LocalReads: c.localReads.Load(), NodeGets: c.nodeGets.Load(), NodeGetSeconds: time.Duration(c.nodeGetNanos.Load()).Seconds()}
}

// Stat lists key's successors and what each holds, asked of the node that
// holds its first copy.
func (c *Cluster) Stat(ctx context.Context, key id.ID) (holders []wire.Holder, err error) {
	err = c.do(ctx, key, func(cl *Client) error {
		holders, err = cl.Stat(ctx, key)
		return err
	})
	return holders, err
}

// Holding reports whether a node holds a whole copy of key, with the
// copy's size and expiry (Unix nanoseconds). It asks the key's first two
// holders in the map directly (one round trip each, no lookup), and only
// when neither has it the ring itself (Stat), so that a stale map never
// makes a stored key look missing.
func (c *Cluster) Holding(ctx context.Context, key id.ID) (size uint64, expiry int64, found bool, err error) {
	asked := 0
	for _, a := range c.route(key) {
		if asked == 2 {
			break
		}
		cl, err := c.conn(ctx, a)
		if err != nil {
			continue
		}
		asked++
		r, err := cl.Call(ctx, &wire.StatBlock{Key: key})
		if bi, ok := r.(*wire.BlockInfo); err == nil && ok && bi.Size > 0 && !bi.Fragment {
			return bi.Size, bi.Expiry, true, nil
		}
		if ctx.Err() != nil {
			return 0, 0, false, ctx.Err()
		}
	}
	holders, err := c.Stat(ctx, key)
	if err != nil {
		return 0, 0, false, err
	}
	for _, h := range holders {
		if h.Err == "" && h.Size > 0 && !h.Fragment {
			return h.Size, h.Expiry, true, nil
		}
	}
	return 0, 0, false, nil
}

// PutBatch stores blocks through the nodes that hold their first copies,
// or all through the node in this process if there is one (localRoute):
// one ClientPutBatch per node, sent at once. It returns each block's key
// or error, as Client.PutBatch does; a node that cannot be reached has
// its blocks tried at the next one, as Put does.
func (c *Cluster) PutBatch(ctx context.Context, items []wire.PutItem, r wire.Redundancy) ([]id.ID, []error) {
	return c.PutBatchWith(ctx, items, PutBatchOptions{Redundancy: r})
}

// PutBatchOptions modify a Cluster's PutBatch.
type PutBatchOptions struct {
	// Hashes[i], if not zero, is id.Key of items[i].Data as the caller
	// computed it, so the batch is not hashed again to be routed (the
	// nodes check it as they store the block; a wrong one fails that
	// block's put).
	Hashes     []id.ID
	Redundancy wire.Redundancy
	// Fresh says the caller believes no host stores any of the blocks
	// yet (wire.ClientPutBatch.Fresh): a news site's history has never
	// seen the articles.
	Fresh bool
}

// PutBatchWith is PutBatch as opt says.
func (c *Cluster) PutBatchWith(ctx context.Context, items []wire.PutItem, opt PutBatchOptions) ([]id.ID, []error) {
	hashes, r := opt.Hashes, opt.Redundancy
	keys := make([]id.ID, len(items))
	errs := make([]error, len(items))
	want := make([]id.ID, len(items))
	byNode := map[string][]int{}
	for i, it := range items {
		if i < len(hashes) && !hashes[i].IsZero() {
			want[i] = hashes[i]
		} else {
			want[i] = id.Key(it.Data)
		}
		first := ""
		if c.opt.Local != nil {
			first = c.opt.Local.Addr // localRoute's first, without the map
		} else if route := c.route(want[i]); len(route) > 0 {
			first = route[0]
		}
		if first == "" {
			errs[i] = fmt.Errorf("%w: no node known", fault.ErrUnavailable)
			continue
		}
		byNode[first] = append(byNode[first], i)
	}
	var wg sync.WaitGroup
	for _, idx := range byNode {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each block goes with its key: the node checks it, or takes
			// it from a front-end in its own process.
			batch := make([]wire.PutItem, len(idx))
			for j, i := range idx {
				batch[j] = wire.PutItem{Data: items[i].Data, Expiry: items[i].Expiry, Key: want[i]}
			}
			var ks []id.ID
			var es []error
			err := c.try(ctx, c.localRoute(batch[0].Key), func(cl *Client) error {
				var err error
				ks, es, err = cl.PutBatch(ctx, batch, r, opt.Fresh)
				return err
			})
			for j, i := range idx {
				if err != nil {
					errs[i] = err
				} else {
					keys[i], errs[i] = ks[j], es[j]
				}
			}
		}()
	}
	wg.Wait()
	return keys, errs
}

// A Held is what Holding found of one key.
type Held struct {
	Size   uint64
	Expiry int64 // Unix nanoseconds
	Found  bool
	Err    error
}

// HoldingBatch is Holding for many keys, with one StatBlocks per node in
// place of a StatBlock per key: the keys' first holders in the map are
// asked together, then their second holders for the keys the first did
// not have, and only the keys neither had go to the ring one by one (a
// stale map never makes a stored key look missing).
func (c *Cluster) HoldingBatch(ctx context.Context, keys []id.ID) []Held {
	held := make([]Held, len(keys))
	left := make([]int, len(keys))
	for i := range keys {
		left[i] = i
	}
	for rank := range 2 {
		left = c.askHolders(ctx, keys, rank, left, held)
		if len(left) == 0 || ctx.Err() != nil {
			break
		}
	}
	var wg sync.WaitGroup
	limit := make(chan struct{}, holdingFallbacks)
	for _, i := range left {
		wg.Add(1)
		limit <- struct{}{}
		go func() {
			defer func() { <-limit; wg.Done() }()
			h := &held[i]
			h.Size, h.Expiry, h.Found, h.Err = c.Holding(ctx, keys[i])
		}()
	}
	wg.Wait()
	return held
}

// holdingFallbacks bounds the keys HoldingBatch asks the ring about at once.
const holdingFallbacks = 16

// askHolders asks each key of left the node ranked rank among its holders
// in the map (0: the first), one StatBlocks per node and per
// wire.MaxStatBatch keys, all at once. It fills held for the keys found
// and returns the others.
func (c *Cluster) askHolders(ctx context.Context, keys []id.ID, rank int, left []int, held []Held) []int {
	byNode := map[string][]int{}
	var missed []int
	for _, i := range left {
		route := c.route(keys[i])
		if rank >= len(route) {
			missed = append(missed, i)
			continue
		}
		byNode[route[rank]] = append(byNode[route[rank]], i)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for addr, idx := range byNode {
		for chunk := range slices.Chunk(idx, wire.MaxStatBatch) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var infos []wire.BlockInfo
				cl, err := c.conn(ctx, addr)
				if err == nil {
					ask := make([]id.ID, len(chunk))
					for j, i := range chunk {
						ask[j] = keys[i]
					}
					infos, err = cl.StatBlocks(ctx, ask)
				}
				mu.Lock()
				defer mu.Unlock()
				for j, i := range chunk {
					if err == nil && infos[j].Size > 0 && !infos[j].Fragment {
						held[i] = Held{Size: infos[j].Size, Expiry: infos[j].Expiry, Found: true}
					} else {
						missed = append(missed, i)
					}
				}
			}()
		}
	}
	wg.Wait()
	slices.Sort(missed)
	return missed
}
