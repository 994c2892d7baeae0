package d2_test

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"triad/internal/d2"
	"triad/internal/host"
	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/sim"
	"triad/internal/store"
	"triad/internal/store/mem"
	"triad/internal/wire"
)

// cluster is a simulated D2 ring of hosts that run it alone, each with a
// 64-byte mem engine kept across restarts.
type cluster struct {
	t       *testing.T
	s       *sim.Sim
	cfg     d2.Config
	hosts   []*sim.Host
	nodes   map[string]*d2.Node
	engines map[string]store.Engine
	pos     map[string]id.ID
	// rogues run with Config.AckAndDrop from their next start.
	rogues map[string]bool
}

// newCluster boots n hosts one after another, at the positions place
// gives, each joining through the first, and lets the ring settle.
//
// The tests write through the hosts' own API, unsigned, so the owners do
// not check the relayed puts' consent (Config.CheckPeers), unless a test
// sets checkPeers first (newCheckedCluster).
func newCluster(t *testing.T, seed uint64, n int, cfg d2.Config, place func(r *rand.Rand) id.ID) *cluster {
	t.Helper()
	cfg.CheckPeers = false
	return bootCluster(t, seed, n, cfg, place)
}

// newCheckedCluster is newCluster with the owners checking every relayed
// write's consent, as real nodes do.
func newCheckedCluster(t *testing.T, seed uint64, n int, cfg d2.Config, place func(r *rand.Rand) id.ID) *cluster {
	t.Helper()
	cfg.CheckPeers = true
	return bootCluster(t, seed, n, cfg, place)
}

func bootCluster(t *testing.T, seed uint64, n int, cfg d2.Config, place func(r *rand.Rand) id.ID) *cluster {
	t.Helper()
	c := &cluster{t: t, s: sim.New(sim.Config{Seed: seed, DecodeMessages: true}, sim.NewTopology(n, seed)), cfg: cfg,
		nodes: map[string]*d2.Node{}, engines: map[string]store.Engine{}, pos: map[string]id.ID{}, rogues: map[string]bool{}}
	r := rand.New(rand.NewPCG(seed, 99))
	for i := 0; i < n; i++ {
		c.add(place(r))
		c.s.RunFor(time.Second)
	}
	c.settle()
	return c
}

// settle runs until every live node has joined (an hour at most), then
// ten stabilization rounds more.
func (c *cluster) settle() {
	c.t.Helper()
	for i := 0; i < 120; i++ {
		if ps, _ := c.ring(); len(ps) == c.live() {
			break
		}
		c.s.RunFor(30 * time.Second)
	}
	c.s.RunFor(10 * c.cfg.Stabilize)
}

// live is the number of hosts up.
func (c *cluster) live() int {
	n := 0
	for _, h := range c.hosts {
		if h.Up() {
			n++
		}
	}
	return n
}

func (c *cluster) add(pos id.ID) *sim.Host {
	c.t.Helper()
	var boot []node.Addr // the first three hosts, as a deployment's saved peers
	for _, h := range c.hosts[:min(3, len(c.hosts))] {
		boot = append(boot, h.Addr)
	}
	clock := func() time.Time { return c.s.Epoch().Add(c.s.Now()) }
	f := func(addr node.Addr, _ node.Storage, _ *rand.Rand) (node.Handler, error) {
		h, err := host.New(host.DefaultConfig(), addr)
		if err != nil {
			return nil, err
		}
		e := c.engines[addr]
		if e == nil {
			e = mem.New(store.Options{Now: clock, KeyWidth: d2.KeyBytes})
			c.engines[addr] = e
		}
		if _, ok := c.pos[addr]; !ok {
			c.pos[addr] = pos
		} else {
			// A restart: the peers a deployment saved, which the first
			// host, booted alone, did not have.
			boot = nil
			if c.cfg.Seed != "" && c.cfg.Seed != addr {
				boot = append(boot, c.cfg.Seed) // a deployment's --join comes first
			}
			for _, h := range c.hosts {
				if h.Addr != addr && h.Addr != c.cfg.Seed && len(boot) < 3 {
					boot = append(boot, h.Addr)
				}
			}
		}
		self := wire.NodeRef{ID: id.Key([]byte(addr)), Addr: addr}
		cfg := c.cfg
		cfg.AckAndDrop = c.rogues[addr]
		d, err := d2.New(cfg, h, self, c.pos[addr], e, boot)
		if err != nil {
			return nil, err
		}
		c.nodes[addr] = d
		return h, nil
	}
	h, err := c.s.AddHost(f)
	if err != nil {
		c.t.Fatal(err)
	}
	c.hosts = append(c.hosts, h)
	return h
}

func (c *cluster) node(h *sim.Host) *d2.Node { return c.nodes[h.Addr] }

// ring is the positions of the live joined nodes, sorted, with their
// addresses: the oracle.
func (c *cluster) ring() ([]id.ID, map[id.ID]string) {
	var ps []id.ID
	who := map[id.ID]string{}
	for _, h := range c.hosts {
		if n := c.node(h); h.Up() && n.Joined() {
			ps = append(ps, n.Me().Pos)
			who[n.Me().Pos] = h.Addr
		}
	}
	slices.SortFunc(ps, func(a, b id.ID) int { return a.Cmp(b) })
	return ps, who
}

// owner is the oracle's owner of k: the first position at or after it.
func owner(ps []id.ID, k id.ID) id.ID {
	i, _ := slices.BinarySearchFunc(ps, k, func(p, k id.ID) int { return p.Cmp(k) })
	return ps[i%len(ps)]
}

// at makes a 64-byte ID whose first 8 bytes are f of the ring, the rest
// random.
func at(r *rand.Rand, f float64) id.ID {
	b := make([]byte, d2.KeyBytes)
	binary.BigEndian.PutUint64(b, uint64(f*math.Exp2(64)))
	for i := 8; i < len(b); i++ {
		b[i] = byte(r.Uint32())
	}
	x, _ := id.FromBytes(b)
	return x
}

// skewed places nodes in 5 tight clusters, all inside 1% of the ring.
func skewed(r *rand.Rand) id.ID {
	return at(r, 0.3+0.002*float64(r.IntN(5))+0.0001*r.Float64())
}

// checkRing fails unless every node's successor is the oracle's.
func (c *cluster) checkRing() {
	c.t.Helper()
	ps, who := c.ring()
	bad := 0
	for i, p := range ps {
		n := c.nodes[who[p]]
		want := ps[(i+1)%len(ps)]
		if s := n.Succs(); len(s) == 0 || s[0].Pos != want {
			if bad++; bad <= 5 {
				c.t.Errorf("%s: successor %v, want %s", who[p], s, want.Short())
			}
		}
		if pred := ps[(i+len(ps)-1)%len(ps)]; n.Pred().Pos != pred {
			if bad++; bad <= 5 {
				c.t.Errorf("%s at %s: predecessor %s, want %s", who[p], p.Short(), n.Pred().Pos.Short(), pred.Short())
			}
		}
	}
	if bad > 0 {
		c.t.Errorf("%d of %d successors and predecessors wrong", bad, len(ps))
	}
}

// lookups runs count lookups of keys from place, from random nodes, and
// returns the mean steps; a lookup that fails or ends at another node than
// the oracle's owner fails the test.
func (c *cluster) lookups(seed uint64, count int, place func(r *rand.Rand) id.ID) float64 {
	c.t.Helper()
	ps, _ := c.ring()
	r := rand.New(rand.NewPCG(seed, seed))
	done, wrong, hops := 0, 0, 0
	for i := 0; i < count; i++ {
		k := place(r)
		if i%4 == 0 {
			k = id.Random(r, d2.KeyBytes) // some keys anywhere on the ring
		}
		from := c.hosts[r.IntN(len(c.hosts))]
		want := owner(ps, k)
		c.s.Do(from, func(env node.Env) {
			c.node(from).Lookup(env, k, func(env node.Env, rt d2.Route, err error) {
				done++
				hops += rt.Hops
				if err != nil || rt.Owner.Pos != want {
					if wrong++; wrong <= 5 {
						c.t.Errorf("lookup of %s from %s: %v, %v; want %s", k.Short(), from.Addr, rt.Owner.Pos.Short(), err, want.Short())
					}
				}
			})
		})
	}
	c.s.RunFor(time.Minute)
	if done != count || wrong != 0 {
		c.t.Errorf("%d of %d lookups ended, %d wrong", done, count, wrong)
	}
	return float64(hops) / float64(done)
}

// TestSkewedRingLookups: 300 nodes crowded into 1% of the ring, in five
// clusters, form a ring whose lookups all end at the oracle's owner, in at
// most log2 N steps on average and at most 1.5 times as many as on a ring
// of uniform positions (2^i fingers in key space would take tens).
func TestSkewedRingLookups(t *testing.T) {
	const n = 300
	c := newCluster(t, 1, n, d2.DefaultConfig(), skewed)
	if ps, _ := c.ring(); len(ps) != n {
		t.Fatalf("%d of %d nodes joined", len(ps), n)
	}
	c.checkRing()
	skewedHops := c.lookups(5, 600, skewed)
	var links int
	for _, h := range c.hosts {
		links += len(c.node(h).Links())
	}
	u := newCluster(t, 1, n, d2.DefaultConfig(), uniform)
	uniformHops := u.lookups(5, 600, uniform)
	t.Logf("mean hops %.2f on the skewed ring, %.2f on a uniform one (log2 N = %.2f); mean links %.1f, estimate at h7 %d",
		skewedHops, uniformHops, math.Log2(n), float64(links)/n, c.node(c.hosts[7]).Estimate())
	if skewedHops > math.Log2(n) || skewedHops > 1.5*uniformHops {
		t.Errorf("mean hops %.2f: past log2 N = %.2f or 1.5 times %.2f", skewedHops, math.Log2(n), uniformHops)
	}
}

// TestSameSeedSameRun: a seed gives the same run, event for event.
func TestSameSeedSameRun(t *testing.T) {
	run := func() uint64 {
		c := newCluster(t, 13, 24, d2.DefaultConfig(), skewed)
		r := rand.New(rand.NewPCG(13, 13))
		var blocks []block
		for i := 0; i < 100; i++ {
			blocks = append(blocks, block{key: skewed(r), data: []byte{byte(i)}})
		}
		c.putMany(r, blocks)
		c.s.RunFor(30 * time.Minute)
		return c.s.TraceHash()
	}
	if a, b := run(), run(); a != b {
		t.Errorf("trace hashes %x and %x", a, b)
	}
}
