package exp

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"time"

	"triad/internal/deploy"
	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/sim"
	"triad/internal/tapestry"
	"triad/internal/wire"
)

// TapestryExperiments are `triad sim tapestry --experiment`'s values, in
// the order "all" runs them.
var TapestryExperiments = []string{"rdp", "optim", "insert", "parallel", "massive", "churn"}

// TapestryConfig is one `triad sim tapestry` run: issue 29's experiments
// on the simulator's wide-area topology, with hosts that run Tapestry
// alone (no ring).
type TapestryConfig struct {
	Seed uint64
	// Experiment is one of TapestryExperiments, or "all".
	Experiment string
	// Nodes is the mesh of the rdp experiment and of massive and churn
	// (0: 400 for rdp and 830 for the others; 256 for all with Quick).
	Nodes int
	// Quick runs smaller meshes and fewer runs: all of them in under three
	// minutes of wall time.
	Quick bool
	// Log, if set, receives progress lines.
	Log io.Writer
}

// DefaultTapestryConfig runs every experiment at full size from seed 1.
func DefaultTapestryConfig() TapestryConfig {
	return TapestryConfig{Seed: 1, Experiment: "all"}
}

// Validate checks what the flags set, naming the flag of a bad value.
func (c TapestryConfig) Validate() error {
	if c.Experiment != "all" && !slices.Contains(TapestryExperiments, c.Experiment) {
		return fmt.Errorf("--experiment %q: want one of %v or all", c.Experiment, TapestryExperiments)
	}
	if c.Nodes != 0 && c.Nodes < 16 {
		return errors.New("--nodes: want at least 16 (0: each experiment's own)")
	}
	return nil
}

// nodes is the mesh size of an experiment whose full size is full.
func (c TapestryConfig) nodes(full int) int {
	switch {
	case c.Nodes > 0:
		return c.Nodes
	case c.Quick:
		return 256
	}
	return full
}

// pick is quick's value or full's.
func (c TapestryConfig) pick(quick, full int) int {
	if c.Quick {
		return quick
	}
	return full
}

// TapestryCheck is one threshold of issue 29 against this run.
type TapestryCheck struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Want  string  `json:"want"`
	Pass  bool    `json:"pass"`
}

// TapestryResult is what `triad sim tapestry` measured. The figures of an
// experiment that did not run are zero; Checks names those that ran.
type TapestryResult struct {
	Seed       uint64 `json:"seed"`
	Experiment string `json:"experiment"`
	Quick      bool   `json:"quick"`

	RDPNodes             int     `json:"rdp_nodes"`
	RDPNodePairs         int     `json:"rdp_node_pairs"`
	RDPNodeMedianFar     float64 `json:"rdp_node_median_far"`
	RDPNodeMedianNear    float64 `json:"rdp_node_median_near"`
	RDPNodeMedian        float64 `json:"rdp_node_median"`
	RDPObjectLocates     int     `json:"rdp_object_locates"`
	RDPObjectMedianWide  float64 `json:"rdp_object_median_wide"`
	RDPObjectMedianLocal float64 `json:"rdp_object_median_local"`
	RDPNodeFailed        int     `json:"rdp_node_failed"`
	RDPObjectFailed      int     `json:"rdp_object_failed"`

	OptNodes                int       `json:"opt_nodes"`
	RDPObjectMedianBase     float64   `json:"rdp_object_median_base"`
	RDPObjectMedianOpt      float64   `json:"rdp_object_median_opt"`
	RDPObjectP90LocalBase   float64   `json:"rdp_object_p90_local_base"`
	RDPObjectP90LocalOpt    float64   `json:"rdp_object_p90_local_opt"`
	OptPointersPerObject    float64   `json:"opt_pointers_per_object"`
	BasePointersPerObject   float64   `json:"base_pointers_per_object"`
	OptLocatesFailed        int       `json:"opt_locates_failed"`
	BloomFalsePositive      float64   `json:"bloom_false_positive"`
	BloomNegativeLookups    uint64    `json:"bloom_negative_lookups"`
	InsertN                 []int     `json:"insert_n,omitempty"`
	InsertBytes             []float64 `json:"insert_bytes,omitempty"`
	InsertSeconds           []float64 `json:"insert_seconds,omitempty"`
	InsertUnconverged       int       `json:"insert_unconverged"`
	ParallelFractions       []float64 `json:"parallel_fractions,omitempty"`
	ParallelMedianSeconds   []float64 `json:"parallel_median_seconds,omitempty"`
	ParallelP90Seconds      []float64 `json:"parallel_p90_seconds,omitempty"`
	ParallelRuns            int       `json:"parallel_runs"`
	ParallelUnconverged     int       `json:"parallel_unconverged"`
	MassiveNodes            int       `json:"massive_nodes"`
	MassiveRecoverSeconds   float64   `json:"massive_recover_seconds"`
	MassiveRecover          []float64 `json:"massive_recover,omitempty"` // fail node, fail object, join node, join object
	MassiveMinSuccess       float64   `json:"massive_min_success"`
	Churn1Success           float64   `json:"churn1_success"`
	Churn2Success           float64   `json:"churn2_success"`
	ChurnDetail             []float64 `json:"churn_detail,omitempty"` // churn1 node, object; churn2 node, object
	ChurnJoins, ChurnDeaths int       `json:"-"`

	Violations  int             `json:"violations"`
	Violated    []string        `json:"violated,omitempty"`
	Checks      []TapestryCheck `json:"checks"`
	WallSeconds float64         `json:"wall_seconds"`
}

// Failed is the thresholds this run missed.
func (r TapestryResult) Failed() []TapestryCheck {
	var out []TapestryCheck
	for _, c := range r.Checks {
		if !c.Pass {
			out = append(out, c)
		}
	}
	return out
}

func (r *TapestryResult) check(name string, v float64, want string, pass bool) {
	r.Checks = append(r.Checks, TapestryCheck{Name: name, Value: v, Want: want, Pass: pass})
}

func (r *TapestryResult) violated(where string, vs []string) {
	r.Violations += len(vs)
	for _, v := range vs {
		if len(r.Violated) < 20 {
			r.Violated = append(r.Violated, where+": "+v)
		}
	}
}

// RunTapestry runs the experiments cfg asks for.
func RunTapestry(cfg TapestryConfig) (TapestryResult, error) {
	if err := cfg.Validate(); err != nil {
		return TapestryResult{}, err
	}
	wall := time.Now()
	res := TapestryResult{Seed: cfg.Seed, Experiment: cfg.Experiment, Quick: cfg.Quick}
	runs := map[string]func(TapestryConfig, *TapestryResult) error{
		"rdp": runTapRDP, "optim": runTapOptim, "insert": runTapInsert, "parallel": runTapParallel,
		"massive": runTapMassive, "churn": runTapChurn,
	}
	for _, name := range TapestryExperiments {
		if cfg.Experiment != "all" && cfg.Experiment != name {
			continue
		}
		t0 := time.Now()
		if err := runs[name](cfg, &res); err != nil {
			return res, fmt.Errorf("sim tapestry %s: %w", name, err)
		}
		logf(cfg.Log, "sim tapestry: %s done in %.0fs of wall time", name, time.Since(t0).Seconds())
	}
	res.check("violations", float64(res.Violations), "= 0", res.Violations == 0)
	res.WallSeconds = time.Since(wall).Seconds()
	return res, nil
}

func logf(w io.Writer, format string, args ...any) {
	if w != nil {
		fmt.Fprintf(w, format+"\n", args...)
	}
}

// tapMesh is a simulated mesh of hosts that run Tapestry alone.
type tapMesh struct {
	s     *sim.Sim
	cfg   tapestry.Config
	hosts []*sim.Host
	r     *rand.Rand
	// objects are the objects published, with their server, for the
	// checker's rule that each has a pointer at its root.
	objects map[id.ID]*sim.Host
	keys    []id.ID
}

func tap(h *sim.Host) *tapestry.Node { return deploy.Of(h).Tap }

// newTapMesh boots n hosts spacing apart, each through a random joined
// one, and lets the mesh settle.
func newTapMesh(seed uint64, n int, cfg tapestry.Config, spacing time.Duration) (*tapMesh, error) {
	s := sim.New(sim.Config{Seed: seed}, sim.NewTopology(n, seed))
	m := &tapMesh{s: s, cfg: cfg, r: s.Rand(), objects: map[id.ID]*sim.Host{}}
	for i := 0; i < n; i++ {
		if _, err := m.add(); err != nil {
			return nil, err
		}
		s.RunFor(spacing)
	}
	if _, ok := m.settle(10*time.Minute, time.Second); !ok {
		return m, fmt.Errorf("a mesh of %d did not converge in 10 minutes: %v", n, m.violations(3))
	}
	return m, nil
}

func (m *tapMesh) options() deploy.Options {
	o := deploy.DefaultOptions()
	o.NoRing, o.Blocks = true, nil
	c := m.cfg
	o.Tapestry = &c
	return o
}

// add boots one more host, joining through a random joined one.
func (m *tapMesh) add() (*sim.Host, error) {
	var joined []*sim.Host
	for _, h := range m.hosts {
		if h.Up() && tap(h).Joined() {
			joined = append(joined, h)
		}
	}
	var boot node.Addr
	if len(joined) > 0 {
		boot = joined[m.r.IntN(len(joined))].Addr
	}
	h, err := m.s.AddHost(deploy.Factory(m.options(), func() node.Addr { return boot }))
	if err != nil {
		return nil, err
	}
	m.hosts = append(m.hosts, h)
	return h, nil
}

// live is the live nodes' references by address, their IDs, and the
// hosts by ID.
func (m *tapMesh) live() (map[string]wire.NodeRef, []id.ID, map[id.ID]*sim.Host) {
	refs := map[string]wire.NodeRef{}
	var ids []id.ID
	byID := map[id.ID]*sim.Host{}
	for _, h := range m.hosts {
		if h.Up() {
			r := tap(h).Self()
			refs[r.Addr] = r
			ids = append(ids, r.ID)
			byID[r.ID] = h
		}
	}
	return refs, ids, byID
}

// root is the oracle's root of key over the live set.
func (m *tapMesh) root(ids []id.ID, key id.ID) id.ID { return tapestry.Root(ids, key, m.cfg.DigitBits) }

// violations is the invariant checker over every live node (tapestry.
// Check) plus: every published object of a live server has a pointer to
// it at its oracle root. Up to max.
func (m *tapMesh) violations(max int) []string {
	live, ids, byID := m.live()
	var out []string
	for _, h := range m.hosts {
		if !h.Up() {
			continue
		}
		if !tap(h).Joined() {
			out = append(out, fmt.Sprintf("%s has not joined", h.Addr))
		}
		out = append(out, tapestry.Check(tap(h), live, max)...)
		if len(out) >= max {
			return out[:max]
		}
	}
	for _, k := range m.keys {
		server := m.objects[k]
		if !server.Up() {
			continue
		}
		rh := byID[m.root(ids, k)]
		servers, _ := tap(rh).Pointers(k)
		if !slices.ContainsFunc(servers, func(r wire.NodeRef) bool { return r.Addr == server.Addr }) {
			if out = append(out, fmt.Sprintf("object %s of %s: no pointer at its root %s", k.Short(), server.Addr, rh.Addr)); len(out) >= max {
				return out
			}
		}
	}
	return out
}

// settle runs until the checker finds nothing, polling every step, for
// at most limit; it returns the time taken and whether it converged.
func (m *tapMesh) settle(limit, step time.Duration) (time.Duration, bool) {
	t0 := m.s.Now()
	for {
		if len(m.violations(1)) == 0 {
			return m.s.Now() - t0, true
		}
		if m.s.Now()-t0 >= limit {
			return m.s.Now() - t0, false
		}
		m.s.RunFor(step)
	}
}

// publish publishes k random objects at server.
func (m *tapMesh) publish(server *sim.Host, k int) []id.ID {
	var keys []id.ID
	for i := 0; i < k; i++ {
		key := id.Random(m.r, id.Bytes)
		keys = append(keys, key)
		m.objects[key] = server
		m.keys = append(m.keys, key)
	}
	m.s.Do(server, func(env node.Env) {
		for _, key := range keys {
			tap(server).Publish(env, key, tapestry.AppDOLR, time.Time{})
		}
	})
	return keys
}

// rtt is the topology's round trip between two hosts.
func (m *tapMesh) rtt(a, b *sim.Host) time.Duration { return m.s.Topology().RTT(a.Index, b.Index) }

// locate is one route to an object and what it cost.
type locate struct {
	client, server *sim.Host
	ok             bool
	rdp, oneWayMs  float64
}

// locateRDP routes from client to the object key, served at server, and
// records the one-way RDP: the overlay's latency (the outcome's, less the
// direct reply from the server) over half the round trip to the server.
func (m *tapMesh) locateRDP(client *sim.Host, key id.ID, out *[]locate) {
	server := m.objects[key]
	m.s.Do(client, func(env node.Env) {
		tap(client).RouteToObject(env, key, tapestry.AppDOLR, nil, func(env node.Env, o tapestry.Outcome) {
			l := locate{client: client, server: server, oneWayMs: ms(m.rtt(client, server) / 2)}
			if o.Err == nil && o.Status == wire.TapDelivered && o.Node.Addr == server.Addr {
				l.ok = true
				l.rdp = ms(o.Latency-m.rtt(client, server)/2) / l.oneWayMs
			}
			*out = append(*out, l)
		})
	})
}

// percentile is the q-quantile of xs (sorted here), 0 when empty.
func percentile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	i := int(q * float64(len(xs)-1))
	return xs[i]
}

// objectRDPs splits the successful locates' RDPs into the wide area
// (one-way >= 25 ms) and the local area, and counts the failures.
func objectRDPs(ls []locate) (all, wide, local []float64, failed int) {
	for _, l := range ls {
		if !l.ok {
			failed++
			continue
		}
		all = append(all, l.rdp)
		if l.oneWayMs >= 25 {
			wide = append(wide, l.rdp)
		} else {
			local = append(local, l.rdp)
		}
	}
	return all, wide, local, failed
}

// runTapRDP measures route-to-node RDP over pairs of nodes (Fig. 13) and
// route-to-object RDP with every object on one server (Fig. 14).
func runTapRDP(cfg TapestryConfig, res *TapestryResult) error {
	n := cfg.nodes(400)
	m, err := newTapMesh(cfg.Seed, n, tapestry.DefaultConfig(), time.Second)
	if err != nil {
		return err
	}
	logf(cfg.Log, "sim tapestry rdp: %d nodes converged at %.0fs virtual", n, m.s.Now().Seconds())
	res.violated("rdp mesh", m.violations(20))
	res.RDPNodes = n
	m.nodeRDP(cfg, res)
	logf(cfg.Log, "sim tapestry rdp: %d pairs routed, median far %.2f, near %.2f", res.RDPNodePairs, res.RDPNodeMedianFar, res.RDPNodeMedianNear)

	server := m.hosts[m.r.IntN(n)]
	keys := m.publish(server, cfg.pick(1000, 10000))
	m.s.RunFor(30 * time.Second)
	res.violated("rdp objects", m.violations(20))
	var ls []locate
	per := cfg.pick(4, 25)
	for i, h := range m.hosts {
		if h == server {
			continue
		}
		for j := 0; j < per; j++ {
			m.locateRDP(h, keys[m.r.IntN(len(keys))], &ls)
		}
		if i%50 == 49 {
			m.s.RunFor(5 * time.Second)
		}
	}
	m.s.RunFor(20 * time.Second)
	_, wide, local, failed := objectRDPs(ls)
	res.RDPObjectLocates, res.RDPObjectFailed = len(ls), failed
	res.RDPObjectMedianWide, res.RDPObjectMedianLocal = percentile(wide, 0.5), percentile(local, 0.5)
	m.bloom(res)
	res.check("rdp_node_median_far", res.RDPNodeMedianFar, "<= 1.5", res.RDPNodeMedianFar > 0 && res.RDPNodeMedianFar <= 1.5)
	res.check("rdp_node_median_near", res.RDPNodeMedianNear, "<= 3", res.RDPNodeMedianNear > 0 && res.RDPNodeMedianNear <= 3)
	res.check("rdp_object_median_wide", res.RDPObjectMedianWide, "<= 2", res.RDPObjectMedianWide > 0 && res.RDPObjectMedianWide <= 2)
	res.check("rdp failed routes", float64(res.RDPNodeFailed+res.RDPObjectFailed), "= 0", res.RDPNodeFailed+res.RDPObjectFailed == 0)
	return nil
}

// bloom adds the mesh's Bloom filters' false-positive rate: false
// positives over the lookups of keys the table does not hold.
func (m *tapMesh) bloom(res *TapestryResult) {
	var neg, fp uint64
	for _, h := range m.hosts {
		if h.Up() {
			_, n, f := tap(h).BloomStats()
			neg, fp = neg+n, fp+f
		}
	}
	if neg+fp > 0 {
		res.BloomFalsePositive = float64(fp) / float64(neg+fp)
	}
	res.BloomNegativeLookups = neg + fp
}

// nodeRDP routes both ways between pairs of nodes (all pairs, or in quick
// a sample of each class of RTT) and takes the round trip through the
// overlay (A to B plus B to A, each outcome's latency less its direct
// reply) over the ping RTT.
func (m *tapMesh) nodeRDP(cfg TapestryConfig, res *TapestryResult) {
	type pair struct{ a, b int }
	var near, far, mid []pair
	for a := range m.hosts {
		for b := a + 1; b < len(m.hosts); b++ {
			switch rtt := m.rtt(m.hosts[a], m.hosts[b]); {
			case rtt < 20*time.Millisecond:
				near = append(near, pair{a, b})
			case rtt > 100*time.Millisecond:
				far = append(far, pair{a, b})
			default:
				mid = append(mid, pair{a, b})
			}
		}
	}
	if cfg.Quick {
		sample := func(l []pair, k int) []pair {
			m.r.Shuffle(len(l), func(i, j int) { l[i], l[j] = l[j], l[i] })
			return l[:min(k, len(l))]
		}
		near, far, mid = sample(near, 800), sample(far, 800), sample(mid, 400)
	}
	pairs := slices.Concat(near, far, mid)
	lat := make([][2]time.Duration, len(pairs))
	for i, p := range pairs {
		for dir := 0; dir < 2; dir++ {
			from, to := m.hosts[p.a], m.hosts[p.b]
			if dir == 1 {
				from, to = to, from
			}
			m.s.Do(from, func(env node.Env) {
				tap(from).RouteToNode(env, tap(to).Self().ID, tapestry.AppDOLR, true, nil, func(env node.Env, o tapestry.Outcome) {
					if o.Err != nil || o.Status != wire.TapDelivered || o.Node.Addr != to.Addr {
						lat[i][dir] = -1
						return
					}
					lat[i][dir] = o.Latency - m.rtt(from, to)/2
				})
			})
		}
		if i%len(m.hosts) == len(m.hosts)-1 {
			m.s.RunFor(2 * time.Second)
		}
	}
	m.s.RunFor(20 * time.Second)
	var farR, nearR, allR []float64
	for i, p := range pairs {
		if lat[i][0] <= 0 || lat[i][1] <= 0 {
			res.RDPNodeFailed++
			continue
		}
		rdp := float64(lat[i][0]+lat[i][1]) / float64(m.rtt(m.hosts[p.a], m.hosts[p.b]))
		allR = append(allR, rdp)
		if i < len(near) {
			nearR = append(nearR, rdp)
		} else if i < len(near)+len(far) {
			farR = append(farR, rdp)
		}
	}
	res.RDPNodePairs = len(pairs)
	res.RDPNodeMedianFar, res.RDPNodeMedianNear, res.RDPNodeMedian = percentile(farR, 0.5), percentile(nearR, 0.5), percentile(allR, 0.5)
}

func runTapOptim(cfg TapestryConfig, res *TapestryResult) error    { return nil }
func runTapInsert(cfg TapestryConfig, res *TapestryResult) error   { return nil }
func runTapParallel(cfg TapestryConfig, res *TapestryResult) error { return nil }
func runTapMassive(cfg TapestryConfig, res *TapestryResult) error  { return nil }
func runTapChurn(cfg TapestryConfig, res *TapestryResult) error    { return nil }
