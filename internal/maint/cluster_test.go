package maint_test

import (
	"math/big"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"triad/internal/deploy"
	"triad/internal/dhash/frag"
	"triad/internal/id"
	"triad/internal/maint"
	"triad/internal/node"
	"triad/internal/sim"
	"triad/internal/wire"
)

// cluster is a simulated ring of block-store hosts running maintenance.
type cluster struct {
	t    *testing.T
	s    *sim.Sim
	keys []id.ID
}

// testOptions describe the cluster a test runs on; each field's zero
// value is the default.
type testOptions struct {
	hosts     int           // joining one by one through h0
	seed      uint64        // the simulator's, and its topology's
	vnodes    int           // per host; 0: 1
	interval  time.Duration // between two rounds of a vnode; 0: a minute
	budget    int           // the repair budget, bytes/s; 0: none
	fragments bool          // blocks are 7-of-14 fragments by default, not 2 replicas
	noAudits  bool          // neighbours' trees are trusted (Config.Audits 0)
	liar      int           // the host whose storage lies, as lie says
	lie       sim.Lie       // 0: no host lies
}

// newCluster starts the hosts of o and runs until they have joined, their
// lists are full and a first round is done.
func newCluster(t *testing.T, o testOptions) *cluster {
	t.Helper()
	s := sim.New(sim.Config{Seed: o.seed, DecodeMessages: true}, sim.NewTopology(o.hosts, o.seed))
	opts := o.deployOptions()
	for i := 0; i < o.hosts; i++ {
		boot := ""
		if i > 0 {
			boot = "h0"
		}
		var lie sim.Lie
		if i == o.liar {
			lie = o.lie
		}
		if _, err := s.AddLiar(deploy.Factory(opts, func() node.Addr { return boot }), lie); err != nil {
			t.Fatal(err)
		}
		s.RunFor(50 * time.Millisecond)
	}
	s.RunFor(2 * time.Minute) // joined, lists full, a first round done
	return &cluster{t: t, s: s}
}

// deployOptions are what each host of o runs: the ring, the block store and
// maintenance.
func (o testOptions) deployOptions() deploy.Options {
	opts := deploy.DefaultOptions()
	if o.vnodes > 0 {
		opts.Vnodes = o.vnodes
	}
	if o.fragments {
		opts.Blocks.Redundancy = wire.RedundancyFragments
	}
	mc := maint.DefaultConfig()
	mc.Interval = time.Minute
	if o.interval > 0 {
		mc.Interval = o.interval
	}
	mc.Budget = o.budget
	if o.noAudits {
		mc.Audits = 0
	}
	opts.Maint = &mc
	return opts
}

// put stores blocks of random data through random hosts, for a day.
func (c *cluster) put(n int, r *rand.Rand) {
	c.t.Helper()
	c.putFor(n, r, func(int) time.Duration { return 24 * time.Hour })
}

// putFor is put with the i-th block's lifetime given by life.
func (c *cluster) putFor(n int, r *rand.Rand, life func(i int) time.Duration) {
	c.t.Helper()
	for i := 0; i < n; i++ {
		data := make([]byte, 200+r.IntN(2000))
		for j := range data {
			data[j] = byte(r.Uint32())
		}
		h := c.up()[r.IntN(len(c.up()))]
		done := false
		var err error
		c.s.Do(h, func(env node.Env) {
			deploy.Of(h).Blocks.Put(env, data, env.Now().Add(life(i)), wire.RedundancyReplicas,
				func(env node.Env, key id.ID, _ []wire.NodeRef, e error) {
					err, done = e, true
					c.keys = append(c.keys, key)
				})
		})
		for deadline := c.s.Now() + time.Minute; !done && c.s.Now() < deadline; {
			c.s.RunFor(100 * time.Millisecond)
		}
		if !done || err != nil {
			c.t.Fatalf("put %d: done %v, %v", i, done, err)
		}
	}
}

func (c *cluster) up() []*sim.Host {
	var out []*sim.Host
	for _, h := range c.s.Hosts() {
		if h.Up() {
			out = append(out, h)
		}
	}
	return out
}

// copies counts the running hosts whose engine holds key.
func (c *cluster) copies(key id.ID) int {
	n := 0
	for _, h := range c.up() {
		if _, err := h.Storage().Engine().Stat(key); err == nil {
			n++
		}
	}
	return n
}

// underReplicated lists the keys with fewer than k copies on running hosts.
func (c *cluster) underReplicated(k int) []id.ID {
	var out []id.ID
	for _, key := range c.keys {
		if c.copies(key) < k {
			out = append(out, key)
		}
	}
	return out
}

func stats(h *sim.Host) maint.Stats { return deploy.Of(h).Maint.Stats }

// successors returns the hosts whose vnodes follow key on the ring, nearest
// first, from the running hosts' IDs (each host runs one vnode).
func (c *cluster) successors(key id.ID) []*sim.Host {
	hs := c.up()
	slices.SortFunc(hs, func(a, b *sim.Host) int {
		da := ringDistance(key, deploy.Of(a).Ring.Vnodes()[0].Self().ID)
		db := ringDistance(key, deploy.Of(b).Ring.Vnodes()[0].Self().ID)
		return da.Cmp(db)
	})
	return hs
}

// ringDistance is how far clockwise from key x lies, as a big integer.
func ringDistance(key, x id.ID) *big.Int {
	k, v := new(big.Int).SetBytes(key.Bytes()), new(big.Int).SetBytes(x.Bytes())
	d := new(big.Int).Sub(v, k)
	if d.Sign() <= 0 {
		d.Add(d, new(big.Int).Lsh(big.NewInt(1), 8*id.Bytes))
	}
	return d
}

// putFragments stores n blocks of 3,000 random bytes as 7-of-14
// fragments through random hosts.
func (c *cluster) putFragments(n int, r *rand.Rand) []id.ID {
	c.t.Helper()
	var keys []id.ID
	for i := 0; i < n; i++ {
		data := make([]byte, 3000)
		for j := range data {
			data[j] = byte(r.Uint32())
		}
		h := c.up()[r.IntN(len(c.up()))]
		done := false
		var err error
		c.s.Do(h, func(env node.Env) {
			deploy.Of(h).Blocks.Put(env, data, env.Now().Add(24*time.Hour), wire.RedundancyFragments,
				func(_ node.Env, key id.ID, _ []wire.NodeRef, e error) {
					done, err = true, e
					keys = append(keys, key)
				})
		})
		for deadline := c.s.Now() + time.Minute; !done && c.s.Now() < deadline; {
			c.s.RunFor(100 * time.Millisecond)
		}
		if !done || err != nil {
			c.t.Fatalf("put %d: done %v, %v", i, done, err)
		}
	}
	return keys
}

// fragmentGaps lists, for each key, what is wrong with its fragments on
// its first 14 running successors: a successor without one, or an index
// held twice.
func (c *cluster) fragmentGaps(keys []id.ID) []string {
	var out []string
	for _, key := range keys {
		seen := map[int]bool{}
		for _, h := range c.successors(key)[:14] {
			data, meta, err := h.Storage().Engine().Get(key)
			f, ferr := frag.Check(key, data)
			switch {
			case err != nil:
				out = append(out, key.Short()+": no fragment on "+string(h.Addr))
			case !meta.Opaque:
				out = append(out, key.Short()+": a whole copy on "+string(h.Addr))
			case ferr != nil:
				out = append(out, key.Short()+": a bad fragment on "+string(h.Addr)+": "+ferr.Error())
			case seen[f.Index]:
				out = append(out, key.Short()+": index held twice")
			default:
				seen[f.Index] = true
			}
		}
	}
	return out
}
