package client

import (
	"context"
	"slices"
	"time"

	"triad/internal/id"
	"triad/internal/wire"
)

// DirectMin is the smallest block PutVia and GetVia move straight between
// the client and the key's holder, after a lookup at the node asked. A
// smaller block goes through that node: the lookup's round trip would
// cost more than the block's second crossing of the network.
//
// At 64 KB, 6 nodes and k = 2, a put sent through a node that holds no
// copy (4 times in 6) has that node receive the block and send it twice;
// sent to the holder it crosses once to each holder. The nodes' CPU per
// put then stays near what it is at 2 nodes, where every node holds
// every block (docs/dhash.md, "Routing a large block").
const DirectMin = 16 << 10

// PutVia stores data as a client that keeps no map of the ring and knows
// the node at via: the lookup is that node's, and is part of the cost. A
// block of DirectMin bytes or more is stored as a DHash client stores
// one: via answers the lookup, and the block goes to the key's first
// holder, which keeps a copy and sends the others. A smaller block, a
// block to be stored as fragments (its key is not its content hash), and
// a lookup that fails go to via, which looks the key up itself. (Under
// the deployment's default redundancy, a deployment that keeps fragments
// has the content hash's holder place them: still stored, one hop
// longer.) A holder that cannot be reached, or does not answer within
// PutAttemptTimeout, is passed over for the next, and via last
// (lookupRoute): a node that names holders this client cannot reach, or
// that do not answer, costs the put time but does not fail it.
func (c *Cluster) PutVia(ctx context.Context, via string, data []byte, opt PutOptions) (key id.ID, holders []wire.NodeRef, err error) {
	hash := id.Key(data)
	route := []string{via}
	if len(data) >= DirectMin && opt.Redundancy != wire.RedundancyFragments {
		route = c.lookupRoute(ctx, via, hash)
	}
	err = c.try(ctx, route, func(cl *Client) error {
		return attempt(ctx, cl, "put", PutAttemptTimeout, func(actx context.Context) error {
			key, holders, err = cl.put(actx, data, hash, opt)
			return err
		})
	})
	return key, holders, err
}

// PutAttemptTimeout bounds how long PutVia waits for one node before it
// asks the next (30 s: a put waits for every copy to be durable, each
// store allowed a node's call timeout and its block's time on a slow
// uplink). A variable for the tests.
var PutAttemptTimeout = 30 * time.Second

// GetVia fetches key's block as PutVia stores one: a block the client
// expects to be DirectMin bytes or more (large) is fetched from the
// key's holders that via's lookup names, and via last; otherwise via
// fetches it. A holder that answers bytes that are not the block, or
// does not answer in time, is passed over, as one that cannot be reached
// is (getFrom).
func (c *Cluster) GetVia(ctx context.Context, via string, key id.ID, large bool) (data []byte, expiry time.Time, err error) {
	route := []string{via}
	if large {
		route = c.lookupRoute(ctx, via, key)
	}
	err = c.try(ctx, route, func(cl *Client) error {
		data, expiry, err = getFrom(ctx, cl, key)
		return err
	})
	return data, expiry, err
}

// lookupRoute asks via to look key up and lists the hosts of the key's
// successors it names, nearest first, then via: via alone if the lookup
// failed (via's own put or get then looks again, with its retries). The
// list holds at most tryLimit nodes, via among them, so that try reaches
// via when the holders named fail: they may be addresses this client
// cannot reach, or an insider's inventions.
func (c *Cluster) lookupRoute(ctx context.Context, via string, key id.ID) []string {
	route := []string{via}
	cl, err := c.conn(ctx, via)
	if err != nil {
		return route
	}
	r, err := cl.Call(ctx, &wire.ClientLookup{Key: key, MinSuccs: 1})
	done, ok := r.(*wire.LookupDone)
	if err != nil || !ok || done.Failed != "" || len(done.Succs) == 0 {
		return route
	}
	var out []string
	for _, s := range done.Succs {
		if s.Addr != "" && !slices.Contains(out, s.Addr) {
			out = append(out, s.Addr)
		}
	}
	if i := slices.Index(out, via); i < 0 || i >= tryLimit {
		out = append(out[:min(len(out), tryLimit-1)], via)
	}
	return out[:min(len(out), tryLimit)]
}

// Reach connects to the node at addr ahead of a first PutVia or GetVia
// through it.
func (c *Cluster) Reach(ctx context.Context, addr string) error {
	_, err := c.conn(ctx, addr)
	return err
}
