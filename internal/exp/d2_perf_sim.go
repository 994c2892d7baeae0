package exp

import (
	"fmt"
	"math/rand/v2"
	"time"

	"triad/internal/d2"
	"triad/internal/host"
	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/sim"
	"triad/internal/wire"
)

// A perf ring: internal/d2's node code on every host of the simulator's
// wide-area topology, each host's access link set to the scenario's
// class.

const (
	perfReplicas    = 4 // §9: "All systems have 4 replicas per object"
	perfTimeout     = 10 * time.Second
	perfMaxInFlight = 15 // §9: transfers a client has in flight at once
	// perfLoadBps is the access links while the volumes are stored: the
	// stores are not measured, so they go fast.
	perfLoadBps = 100e6
	// perfDownBps is every downlink: the paper limits the nodes' uploads,
	// not the clients' downloads (§9).
	perfDownBps = 100e6
	// perfQueueDelay bounds an uplink's backlog. The paper's transfers
	// are TCP, which queues rather than drops; the 10 s timeout decides.
	perfQueueDelay = 30 * time.Second
	perfJoinGap    = time.Second // between two hosts' joins
	perfPutBatch   = 200         // puts issued per second of virtual time
	perfMinGroup   = time.Millisecond
)

// perfConfig is D2's node configuration in the perf runs: 4 replicas,
// balancing off (the positions are where balancing would leave them), the
// paper's lookup cache.
func perfConfig() d2.Config {
	c := d2.DefaultConfig()
	c.CheckPeers = false // the users' puts are the hosts' own, unsigned
	c.Replicas = perfReplicas
	c.Threshold = 0
	return c
}

// perfPut is the one place the experiment stores a block: a plain put of
// D2-Store's client API (each key is stored once, so keep).
func perfPut(n *d2.Node, env node.Env, k id.ID, data []byte, done func(env node.Env, copies int, err error)) {
	n.Put(env, k, data, wire.D2PutKeep, nil, done)
}

// perfRing is one simulated D2 ring.
type perfRing struct {
	s     *sim.Sim
	hosts []*sim.Host
	nodes []*d2.Node
}

// newPerfRing boots a host per position, each a D2 node of configuration
// cfg, in a seeded order, and runs until every node has joined and the ring
// has stabilized.
func newPerfRing(seed uint64, pos []id.ID, cfg d2.Config) (*perfRing, error) {
	n := len(pos)
	topo := sim.NewTopology(n, seed)
	r := &perfRing{s: sim.New(sim.Config{Seed: seed, MaxQueueDelay: perfQueueDelay}, topo), nodes: make([]*d2.Node, n)}
	r.setAccess(perfLoadBps)
	order := rand.New(rand.NewPCG(seed, 0x0de4)).Perm(n)
	for i := range n {
		var boot []node.Addr
		for _, h := range r.hosts[:min(3, len(r.hosts))] {
			boot = append(boot, h.Addr)
		}
		h, err := r.s.AddHost(func(addr node.Addr, st node.Storage, _ *rand.Rand) (node.Handler, error) {
			h, err := host.New(host.DefaultConfig(), addr)
			if err != nil {
				return nil, err
			}
			self := wire.NodeRef{ID: id.Key([]byte(addr)), Addr: addr}
			d, err := d2.New(cfg, h, self, pos[order[i]], d2.EngineOf(st), boot)
			if err != nil {
				return nil, err
			}
			r.nodes[i] = d
			return h, nil
		})
		if err != nil {
			return nil, err
		}
		r.hosts = append(r.hosts, h)
		r.s.RunFor(perfJoinGap)
	}
	for range 240 {
		if r.joined() == n {
			break
		}
		r.s.RunFor(30 * time.Second)
	}
	if j := r.joined(); j < n {
		return nil, fmt.Errorf("sim d2: %d of %d nodes joined in two hours", j, n)
	}
	r.s.RunFor(10 * cfg.Stabilize)
	return r, nil
}

func (r *perfRing) joined() int {
	j := 0
	for _, d := range r.nodes {
		if d.Joined() {
			j++
		}
	}
	return j
}

// setAccess gives every host an uplink of bps.
func (r *perfRing) setAccess(bps float64) {
	t := r.s.Topology()
	for i := range t.Len() {
		t.SetAccess(i, bps, perfDownBps)
	}
}

// perfBlock is a stored block: what a read asks for.
type perfBlock struct {
	data []byte
	hash []byte
}

// perfBlocks makes the content of a block of each size the reads need
// (zeros: the content is not what is measured, its size is).
func perfBlocks(w perfWorkload) map[int32]perfBlock {
	out := map[int32]perfBlock{}
	for _, u := range w.Users {
		for _, g := range u.Groups {
			for _, rd := range g.Reads {
				size := max(rd.Bytes, 1)
				if _, ok := out[size]; !ok {
					data := make([]byte, size)
					out[size] = perfBlock{data: data, hash: d2.Sum(data)}
				}
			}
		}
	}
	return out
}

// store puts every block the users read, under placement p, from the
// hosts in loaders, perfPutBatch a second, and waits for them: it returns
// how many stored fewer than r copies or failed.
func (r *perfRing) store(p d2Placement, w perfWorkload, blocks map[int32]perfBlock, loaders []*sim.Host) int {
	seen := map[id.ID]bool{}
	short, issued, ended := 0, 0, 0
	for _, u := range w.Users {
		for _, g := range u.Groups {
			for _, rd := range g.Reads {
				k := keyOf(p, rd)
				if seen[k] {
					continue
				}
				seen[k] = true
				b := blocks[max(rd.Bytes, 1)]
				h := loaders[issued%len(loaders)]
				d := r.nodes[h.Index]
				r.s.Do(h, func(env node.Env) {
					perfPut(d, env, k, b.data, func(env node.Env, copies int, err error) {
						ended++
						if err != nil || copies < perfReplicas {
							short++
						}
					})
				})
				if issued++; issued%perfPutBatch == 0 {
					r.s.RunFor(time.Second)
				}
			}
		}
	}
	for i := 0; i < 600 && ended < issued; i++ {
		r.s.RunFor(time.Second)
	}
	return short + issued - ended
}

// perfHopLookups is how many lookups measure a ring's mean hops.
const perfHopLookups = 1000

// hops is the mean steps of lookups of the keys of reads under placement
// p, from random loaders: the ring's routing alone, caches untouched.
// Lookups that fail or do not end are counted apart.
func (r *perfRing) hops(p d2Placement, w perfWorkload, loaders []*sim.Host, seed uint64) (mean float64, failed int) {
	var keys []id.ID
	for _, u := range w.Users {
		for _, g := range u.Groups {
			for _, rd := range g.Reads {
				keys = append(keys, keyOf(p, rd))
			}
		}
	}
	rng := rand.New(rand.NewPCG(seed, 0x4095))
	done, hops := 0, 0
	for range perfHopLookups {
		k := keys[rng.IntN(len(keys))]
		h := loaders[rng.IntN(len(loaders))]
		d := r.nodes[h.Index]
		r.s.Do(h, func(env node.Env) {
			d.Lookup(env, k, func(env node.Env, rt d2.Route, err error) {
				if err != nil {
					return
				}
				done++
				hops += rt.Hops
			})
		})
	}
	r.s.RunFor(time.Minute)
	return float64(hops) / float64(max(done, 1)), perfHopLookups - done
}
