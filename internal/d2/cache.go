package d2

import (
	"slices"
	"time"

	"triad/internal/id"
	"triad/internal/node"
)

// cached is one lookup result kept (§5): the owner of the range (lo, hi]
// and its successors, until expires.
type cached struct {
	lo, hi  id.ID
	route   Route
	expires time.Time
}

// cache is the lookup cache: ranges that do not overlap, in order of
// their ends. Requests for keys in a cached range skip the lookup; a stale
// entry costs a "not mine" and a lookup, never a wrong answer.
type cache struct {
	entries []cached
	max     int
}

// find returns the live route whose range holds k.
func (c *cache) find(k id.ID, now time.Time) (Route, bool) {
	if len(c.entries) == 0 {
		return Route{}, false
	}
	i, _ := slices.BinarySearchFunc(c.entries, k, func(e cached, k id.ID) int { return e.hi.Cmp(k) })
	for _, j := range []int{i % len(c.entries), 0} { // the range ending at or after k, or one wrapping round
		e := c.entries[j]
		if k.In(e.lo, e.hi) {
			if now.After(e.expires) {
				c.entries = slices.Delete(c.entries, j, j+1)
				return Route{}, false
			}
			return e.route, true
		}
	}
	return Route{}, false
}

// add keeps r until now+ttl, in place of the entries it overlaps.
func (c *cache) add(r Route, now time.Time, ttl time.Duration) {
	if ttl <= 0 || r.Lo.IsZero() || r.Owner.IsZero() || r.Lo == r.Owner.Pos {
		return
	}
	e := cached{lo: r.Lo, hi: r.Owner.Pos, route: r, expires: now.Add(ttl)}
	c.entries = slices.DeleteFunc(c.entries, func(x cached) bool {
		return now.After(x.expires) || overlap(x.lo, x.hi, e.lo, e.hi)
	})
	if len(c.entries) >= c.max {
		oldest := 0
		for i, x := range c.entries {
			if x.expires.Before(c.entries[oldest].expires) {
				oldest = i
			}
		}
		c.entries = slices.Delete(c.entries, oldest, oldest+1)
	}
	i, _ := slices.BinarySearchFunc(c.entries, e.hi, func(x cached, k id.ID) int { return x.hi.Cmp(k) })
	c.entries = slices.Insert(c.entries, i, e)
}

// overlap reports whether the arcs (a, b] and (c, d] share a key.
func overlap(a, b, c, d id.ID) bool {
	return b.In(c, d) || d.In(a, b)
}

// drop forgets the entry whose range holds k.
func (c *cache) drop(k id.ID) {
	c.entries = slices.DeleteFunc(c.entries, func(x cached) bool { return k.In(x.lo, x.hi) })
}

// dropNode forgets the entries owned by the host at addr.
func (c *cache) dropNode(addr node.Addr) {
	c.entries = slices.DeleteFunc(c.entries, func(x cached) bool { return x.route.Owner.Node.Addr == addr })
}

// Len is the number of entries.
func (c *cache) Len() int { return len(c.entries) }

// resolve finds k's owner for a client request: from the cache (a hit) or
// by a lookup (a miss), whose result is cached.
func (n *Node) resolve(env node.Env, k id.ID, done Done) {
	if n.cfg.CacheTTL > 0 {
		if r, ok := n.cache.find(k, env.Now()); ok {
			n.Stats.CacheHits++
			done(env, r, nil)
			return
		}
	}
	n.Stats.CacheMisses++
	n.Lookup(env, k, func(env node.Env, r Route, err error) {
		if err == nil && n.cfg.CacheTTL > 0 && r.Owner.Node.Addr != n.self.Addr {
			n.cache.add(r, env.Now(), n.cfg.CacheTTL)
		}
		done(env, r, err)
	})
}

// wrong is a cached owner that said k was not its: the entry goes and
// the request looks the key up.
func (n *Node) wrong(k id.ID) {
	n.Stats.CacheWrong++
	n.cache.drop(k)
}
