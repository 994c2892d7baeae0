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

// tapestryRuns runs each of TapestryExperiments; an experiment in a file
// of its own adds itself to both in an init.
var tapestryRuns = map[string]func(TapestryConfig, *TapestryResult) error{
	"rdp": runTapRDP, "optim": runTapOptim, "insert": runTapInsert, "parallel": runTapParallel,
	"massive": runTapMassive, "churn": runTapChurn,
}

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
	TapestryVsChord
	TapestryRogue

	Violations  int             `json:"violations"`
	Violated    []string        `json:"violated,omitempty"`
	Checks      []TapestryCheck `json:"checks"`
	WallSeconds float64         `json:"wall_seconds"`

	// Series is the data the figures are drawn from (--plot); never nil
	// after RunTapestry.
	Series *TapestrySeries `json:"-"`
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
	res := TapestryResult{Seed: cfg.Seed, Experiment: cfg.Experiment, Quick: cfg.Quick, Series: &TapestrySeries{}}
	for _, name := range TapestryExperiments {
		if cfg.Experiment != "all" && cfg.Experiment != name {
			continue
		}
		t0 := time.Now()
		if err := tapestryRuns[name](cfg, &res); err != nil {
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
	// pace spaces the measured requests: each starts gap after the one
	// before (at the earliest now), so that the measurement's own bursts
	// do not queue on the access links and count as stretch.
	pace struct {
		gap time.Duration
		at  time.Duration
	}
	// observer, if set, is told of every message sent (sim.Config.Observe).
	observer func(from, to *sim.Host, e wire.Envelope, size int)
}

// observed passes a message sent to the mesh's observer, if any.
func (m *tapMesh) observed(from, to *sim.Host, e wire.Envelope, size int) {
	if m.observer != nil {
		m.observer(from, to, e, size)
	}
}

// paced is when the next measured request starts.
func (m *tapMesh) paced() time.Duration {
	m.pace.at = max(m.pace.at, m.s.Now()) + m.pace.gap
	return m.pace.at
}

// drain runs until the last paced request has had 20 s to end.
func (m *tapMesh) drain() { m.s.RunUntil(max(m.pace.at, m.s.Now()) + 20*time.Second) }

func tap(h *sim.Host) *tapestry.Node { return deploy.Of(h).Tap }

// newTapMesh boots n hosts spacing apart, each through a random joined
// one, and lets the mesh settle.
func newTapMesh(seed uint64, n int, cfg tapestry.Config, spacing time.Duration) (*tapMesh, error) {
	m := &tapMesh{cfg: cfg, objects: map[id.ID]*sim.Host{}}
	s := sim.New(sim.Config{Seed: seed, Observe: m.observed}, sim.NewTopology(n, seed))
	m.s, m.r = s, s.Rand()
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
	m.s.DoAt(client, m.paced(), func(env node.Env) {
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
	m.pace.gap = time.Second / time.Duration(n) // n pairs, both ways, every 2 s
	m.nodeRDP(cfg, res)
	logf(cfg.Log, "sim tapestry rdp: %d pairs routed, median far %.2f, near %.2f", res.RDPNodePairs, res.RDPNodeMedianFar, res.RDPNodeMedianNear)

	server := m.hosts[m.r.IntN(n)]
	keys := m.publish(server, cfg.pick(1000, 10000))
	m.pace.gap = 25 * time.Millisecond // 200 locates every 5 s
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
	m.drain()
	_, wide, local, failed := objectRDPs(ls)
	res.RDPObjectLocates, res.RDPObjectFailed = len(ls), failed
	res.Series.ObjectRDP = tapRDPs(ls)
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
// reply) over the ping RTT. The pairs go in a shuffled order: in the
// order of the loops, one node would start hundreds of routes a second
// and measure its own queue.
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
	order := m.r.Perm(len(pairs))
	lat := make([][2]time.Duration, len(pairs))
	for k, i := range order {
		p := pairs[i]
		for dir := 0; dir < 2; dir++ {
			from, to := m.hosts[p.a], m.hosts[p.b]
			if dir == 1 {
				from, to = to, from
			}
			m.s.DoAt(from, m.paced(), func(env node.Env) {
				tap(from).RouteToNode(env, tap(to).Self().ID, tapestry.AppDOLR, true, nil, func(env node.Env, o tapestry.Outcome) {
					if o.Err != nil || o.Status != wire.TapDelivered || o.Node.Addr != to.Addr {
						lat[i][dir] = -1
						return
					}
					lat[i][dir] = o.Latency - m.rtt(from, to)/2
				})
			})
		}
		if k%len(m.hosts) == len(m.hosts)-1 {
			m.s.RunFor(2 * time.Second)
		}
	}
	m.drain()
	var farR, nearR, allR []float64
	for i, p := range pairs {
		if lat[i][0] <= 0 || lat[i][1] <= 0 {
			res.RDPNodeFailed++
			continue
		}
		rtt := m.rtt(m.hosts[p.a], m.hosts[p.b])
		rdp := float64(lat[i][0]+lat[i][1]) / float64(rtt)
		allR = append(allR, rdp)
		res.Series.NodeRDP = append(res.Series.NodeRDP, TapRDP{Ms: ms(rtt), RDP: rdp})
		if i < len(near) {
			nearR = append(nearR, rdp)
		} else if i < len(near)+len(far) {
			farR = append(farR, rdp)
		}
	}
	res.RDPNodePairs = len(pairs)
	res.RDPNodeMedianFar, res.RDPNodeMedianNear, res.RDPNodeMedian = percentile(farR, 0.5), percentile(nearR, 0.5), percentile(allR, 0.5)
}

// runTapOptim compares object RDP with the extra pointers (k, l, m) =
// (1, 1, 1) against none, objects spread over nearly every node (Fig. 15).
func runTapOptim(cfg TapestryConfig, res *TapestryResult) error {
	n := cfg.pick(256, 1092)
	res.OptNodes = n
	for _, opt := range []bool{false, true} {
		c := tapestry.DefaultConfig()
		if opt {
			c.ExtraBackups, c.ExtraNearest, c.ExtraHops = 1, 1, 1
		}
		m, err := newTapMesh(cfg.Seed, n, c, time.Second)
		if err != nil {
			return err
		}
		for _, h := range m.hosts[:n-2] {
			m.publish(h, cfg.pick(10, 25))
		}
		m.s.RunFor(time.Minute)
		res.violated(fmt.Sprintf("optim %v", opt), m.violations(20))
		m.pace.gap = 2 * time.Second / time.Duration(20*cfg.pick(20, 100)) // 20 nodes' locates every 2 s
		var ls []locate
		for i, h := range m.hosts {
			for j := 0; j < cfg.pick(20, 100); j++ {
				k := m.keys[m.r.IntN(len(m.keys))]
				if m.objects[k] != h {
					m.locateRDP(h, k, &ls)
				}
			}
			if i%20 == 19 {
				m.s.RunFor(2 * time.Second)
			}
		}
		m.drain()
		all, _, local, failed := objectRDPs(ls)
		held := 0
		for _, h := range m.hosts {
			held += tap(h).PointersHeld()
		}
		perObject := float64(held) / float64(len(m.keys))
		res.OptLocatesFailed += failed
		if opt {
			res.RDPObjectMedianOpt, res.RDPObjectP90LocalOpt, res.OptPointersPerObject = percentile(all, 0.5), percentile(local, 0.9), perObject
			res.Series.Opt = tapRDPs(ls)
		} else {
			res.RDPObjectMedianBase, res.RDPObjectP90LocalBase, res.BasePointersPerObject = percentile(all, 0.5), percentile(local, 0.9), perObject
			res.Series.OptBase = tapRDPs(ls)
		}
		logf(cfg.Log, "sim tapestry optim: extra pointers %v: %d locates, median RDP %.2f, local p90 %.2f", opt, len(ls), percentile(all, 0.5), percentile(local, 0.9))
	}
	res.check("rdp_object_median_opt", res.RDPObjectMedianOpt, "<= 2", res.RDPObjectMedianOpt > 0 && res.RDPObjectMedianOpt <= 2)
	res.check("p90_local_opt / p90_local_base", res.RDPObjectP90LocalOpt/res.RDPObjectP90LocalBase, "<= 0.7", res.RDPObjectP90LocalOpt <= 0.7*res.RDPObjectP90LocalBase)
	res.check("optim failed locates", float64(res.OptLocatesFailed), "= 0", res.OptLocatesFailed == 0)
	return nil
}

// runTapInsert measures what one insertion costs in base 4 (Figs. 16-17):
// Tapestry's bytes (the simulator's, less the mesh's background rate
// measured just before) and the seconds until the joiner has joined and
// the checker finds nothing; the joiner then leaves.
func runTapInsert(cfg TapestryConfig, res *TapestryResult) error {
	sizes := []int{16, 64, 256, 1024}
	if cfg.Quick {
		sizes = sizes[:3]
	}
	c := tapestry.DefaultConfig()
	c.DigitBits = 2
	for _, n := range sizes {
		m, err := newTapMesh(cfg.Seed, n, c, time.Second)
		if err != nil {
			return err
		}
		var bytes, secs float64
		cycles := cfg.pick(5, 20)
		for i := 0; i < cycles; i++ {
			b, t, ok, err := m.insertOnce()
			if err != nil {
				return err
			}
			if !ok {
				res.InsertUnconverged++
				res.violated(fmt.Sprintf("insert N=%d", n), m.violations(5))
			}
			bytes, secs = bytes+b, secs+t
		}
		res.InsertN = append(res.InsertN, n)
		res.InsertBytes = append(res.InsertBytes, bytes/float64(cycles))
		res.InsertSeconds = append(res.InsertSeconds, secs/float64(cycles))
		logf(cfg.Log, "sim tapestry insert: N = %d: %.0f bytes, %.2f s", n, bytes/float64(cycles), secs/float64(cycles))
	}
	from, to := 1, len(sizes)-1 // 64 to the largest
	gb, gs := res.InsertBytes[to]/res.InsertBytes[from], res.InsertSeconds[to]/res.InsertSeconds[from]
	res.check(fmt.Sprintf("insert_bytes %d->%d growth", sizes[from], sizes[to]), gb, "<= 2.5", gb <= 2.5)
	res.check(fmt.Sprintf("insert_seconds %d->%d growth", sizes[from], sizes[to]), gs, "<= 2.5", gs <= 2.5)
	res.check("insert unconverged", float64(res.InsertUnconverged), "= 0", res.InsertUnconverged == 0)
	return nil
}

// insertOnce adds one node, measures its insertion and makes it leave.
// Its bytes are those of the messages the insertion sends until the mesh
// is whole again: every message to or from the joiner (its join route,
// the measurements, the nearest-neighbour queries, the root pointers
// handed to it, the notices of its links), the join's route between
// others, and the acknowledged multicast with its answers; not the
// others' background (beacons, repair, republish), which subtracting a
// rate measured beforehand left as noise ten times the insertion's size
// at 1,024 nodes.
func (m *tapMesh) insertOnce() (bytes, secs float64, ok bool, err error) {
	m.s.RunFor(20 * time.Second)
	old := map[*sim.Host]bool{}
	for _, h := range m.hosts {
		old[h] = true
	}
	calls := map[uint64]bool{} // request IDs of the join's route and multicast
	m.observer = func(from, to *sim.Host, e wire.Envelope, size int) {
		r, isRoute := e.Msg.(*wire.TapRoute)
		_, isMulticast := e.Msg.(*wire.TapMulticast)
		switch {
		case !old[from] || !old[to]:
		case e.Kind == wire.Request && (isMulticast || isRoute && r.Op == wire.TapJoin):
			calls[e.ReqID] = true
		case e.Kind == wire.Reply && calls[e.ReqID]:
		default:
			return
		}
		bytes += float64(size)
	}
	defer func() { m.observer = nil }()
	t0 := m.s.Now()
	h, err := m.add()
	if err != nil {
		return 0, 0, false, err
	}
	for !tap(h).Joined() && m.s.Now()-t0 < 2*time.Minute {
		m.s.RunFor(100 * time.Millisecond)
	}
	_, ok = m.settle(2*time.Minute, 250*time.Millisecond)
	dt := m.s.Now() - t0
	m.observer = nil
	m.s.Leave(h)
	m.settle(2*time.Minute, time.Second)
	return bytes, dt.Seconds(), ok, nil
}

// runTapParallel lets 5, 10, 25 and 50% of a 200-node mesh join at once,
// and times each run until the checker finds nothing (Fig. 18); the
// joiners then leave.
func runTapParallel(cfg TapestryConfig, res *TapestryResult) error {
	const n = 200
	m, err := newTapMesh(cfg.Seed, n, tapestry.DefaultConfig(), time.Second)
	if err != nil {
		return err
	}
	for _, f := range []float64{0.05, 0.10, 0.25, 0.50} {
		var times []float64
		for run := 0; run < cfg.pick(2, 20); run++ {
			var joiners []*sim.Host
			for i := 0; i < int(f*n); i++ {
				h, err := m.add()
				if err != nil {
					return err
				}
				joiners = append(joiners, h)
			}
			t, ok := m.settle(2*time.Minute, time.Second)
			res.ParallelRuns++
			if !ok {
				res.ParallelUnconverged++
				res.violated(fmt.Sprintf("parallel %.0f%%", 100*f), m.violations(5))
			}
			times = append(times, t.Seconds())
			for _, h := range joiners {
				m.s.Leave(h)
			}
			if _, ok := m.settle(5*time.Minute, 5*time.Second); !ok {
				res.violated(fmt.Sprintf("parallel %.0f%% after the joiners left", 100*f), m.violations(5))
			}
		}
		res.ParallelFractions = append(res.ParallelFractions, f)
		res.ParallelMedianSeconds = append(res.ParallelMedianSeconds, percentile(times, 0.5))
		res.ParallelP90Seconds = append(res.ParallelP90Seconds, percentile(times, 0.9))
		logf(cfg.Log, "sim tapestry parallel: %.0f%%: median %.1f s, p90 %.1f s", 100*f, percentile(times, 0.5), percentile(times, 0.9))
	}
	res.check("parallel_unconverged", float64(res.ParallelUnconverged), "= 0", res.ParallelUnconverged == 0)
	return nil
}

// probe sends routes from stable nodes to random keys and to objects on
// stable servers, and counts their success per bucket of start time.
type probe struct {
	m       *tapMesh
	stable  []*sim.Host
	bucket  time.Duration
	node    map[int64]*[2]int // bucket: correct, sent
	obj     map[int64]*[2]int
	idsGen  uint64
	ids     []id.ID
	perTick int
}

func newProbe(m *tapMesh, stable []*sim.Host, perSecond int) *probe {
	return &probe{m: m, stable: stable, bucket: 10 * time.Second, node: map[int64]*[2]int{}, obj: map[int64]*[2]int{}, idsGen: ^uint64(0), perTick: perSecond}
}

// liveIDs are the live nodes' IDs, cached per membership change.
func (p *probe) liveIDs() []id.ID {
	if g := p.m.s.Membership(); g != p.idsGen {
		_, p.ids, _ = p.m.live()
		p.idsGen = g
	}
	return p.ids
}

func count(m map[int64]*[2]int, b int64, ok bool) {
	c := m[b]
	if c == nil {
		c = &[2]int{}
		m[b] = c
	}
	c[1]++
	if ok {
		c[0]++
	}
}

// run probes for d, perTick routes of each kind a second. A route to a
// key is correct when it ends at the oracle's root over the live set as
// it was when the route started or when it ended.
func (p *probe) run(d time.Duration) {
	m := p.m
	end := m.s.Now() + d
	for m.s.Now() < end {
		b := int64(m.s.Now() / p.bucket)
		for i := 0; i < p.perTick; i++ {
			from := p.stable[m.r.IntN(len(p.stable))]
			key := id.Random(m.r, id.Bytes)
			want := m.root(p.liveIDs(), key)
			m.s.Do(from, func(env node.Env) {
				tap(from).RouteToNode(env, key, tapestry.AppDOLR, false, nil, func(env node.Env, o tapestry.Outcome) {
					ok := o.Err == nil && o.Status == wire.TapDelivered && (o.Node.ID == want || o.Node.ID == m.root(p.liveIDs(), key))
					count(p.node, b, ok)
				})
			})
			obj := m.keys[m.r.IntN(len(m.keys))]
			server := m.objects[obj]
			m.s.Do(from, func(env node.Env) {
				tap(from).RouteToObject(env, obj, tapestry.AppDOLR, nil, func(env node.Env, o tapestry.Outcome) {
					count(p.obj, b, o.Err == nil && o.Status == wire.TapDelivered && o.Node.Addr == server.Addr)
				})
			})
		}
		m.s.RunFor(time.Second)
	}
}

// success is the fraction correct over the buckets of [from, to).
func success(c map[int64]*[2]int, from, to int64) float64 {
	ok, all := 0, 0
	for b := from; b < to; b++ {
		if x := c[b]; x != nil {
			ok, all = ok+x[0], all+x[1]
		}
	}
	if all == 0 {
		return 0
	}
	return float64(ok) / float64(all)
}

// recovery is how long after the bucket at from the success stays under
// 0.99 for the last time before to (0: it never dipped), and the lowest
// bucket's success.
func recovery(c map[int64]*[2]int, from, to int64, bucket time.Duration) (secs, lowest float64) {
	lowest = 1
	for b := from; b < to; b++ {
		s := success(c, b, b+1)
		lowest = min(lowest, s)
		if s < 0.99 {
			secs = (time.Duration(b+1-from) * bucket).Seconds()
		}
	}
	return secs, lowest
}

// stableMesh builds a mesh of n for massive and churn, and publishes
// objects on servers among the first stable hosts.
func stableMesh(cfg TapestryConfig, n, stable int) (*tapMesh, error) {
	m, err := newTapMesh(cfg.Seed, n, tapestry.DefaultConfig(), time.Second)
	if err != nil {
		return nil, err
	}
	for _, h := range m.hosts[:min(stable, 100)] {
		m.publish(h, 2)
	}
	m.s.RunFor(time.Minute)
	return m, nil
}

// runTapMassive fails 20% of the nodes at once and, later, lets 40% more
// join at once, routing from stable nodes throughout (Figs. 19-20).
func runTapMassive(cfg TapestryConfig, res *TapestryResult) error {
	n := cfg.nodes(830)
	fail := n / 5
	m, err := stableMesh(cfg, n, n-fail)
	if err != nil {
		return err
	}
	res.MassiveNodes = n
	p := newProbe(m, m.hosts[:n-fail], 10)
	gap := time.Duration(cfg.pick(5, 15)) * time.Minute
	t0 := int64(m.s.Now() / p.bucket)
	p.run(time.Minute)
	t1 := int64(m.s.Now() / p.bucket)
	failAt := m.s.Now()
	for _, h := range m.hosts[n-fail:] {
		m.s.Crash(h)
	}
	p.run(gap)
	t2 := int64(m.s.Now() / p.bucket)
	joinAt := m.s.Now()
	for i := 0; i < n*2/5; i++ {
		if _, err := m.add(); err != nil {
			return err
		}
	}
	p.run(time.Duration(cfg.pick(3, 5)) * time.Minute)
	t3 := int64(m.s.Now() / p.bucket)
	res.Series.Massive = p.success(t0, t3, []TapEvent{{failAt, fmt.Sprintf("%d fail", fail)}, {joinAt, fmt.Sprintf("%d join", n*2/5)}})
	res.MassiveMinSuccess = 1
	for _, ev := range [][2]int64{{t1, t2}, {t2, t3}} {
		for _, c := range []map[int64]*[2]int{p.node, p.obj} {
			secs, low := recovery(c, ev[0], ev[1], p.bucket)
			res.MassiveRecover = append(res.MassiveRecover, secs)
			res.MassiveRecoverSeconds = max(res.MassiveRecoverSeconds, secs)
			res.MassiveMinSuccess = min(res.MassiveMinSuccess, low)
		}
	}
	if _, ok := m.settle(5*time.Minute, 5*time.Second); !ok {
		res.violated("massive", m.violations(20))
	}
	logf(cfg.Log, "sim tapestry massive: recovered in %v s", res.MassiveRecover)
	res.check("massive_recover_seconds", res.MassiveRecoverSeconds, "<= 60", res.MassiveRecoverSeconds <= 60)
	return nil
}

// runTapChurn adds Poisson joins to a stable mesh, each joiner failing
// after an exponential lifetime: every 20 s with 4-minute lifetimes
// (churn 1), then every 10 s with 2 minutes (churn 2) (Figs. 21-22).
func runTapChurn(cfg TapestryConfig, res *TapestryResult) error {
	n := cfg.nodes(830)
	m, err := stableMesh(cfg, n, n)
	if err != nil {
		return err
	}
	p := newProbe(m, m.hosts[:n], 10)
	phase := time.Duration(cfg.pick(5, 15)) * time.Minute
	t0 := int64(m.s.Now() / p.bucket)
	var events []TapEvent
	for i, ch := range []struct{ every, life time.Duration }{{20 * time.Second, 4 * time.Minute}, {10 * time.Second, 2 * time.Minute}} {
		start, end := m.s.Now(), m.s.Now()+phase
		events = append(events, TapEvent{start, fmt.Sprintf("churn %d", i+1)})
		var joinErr error
		var next func()
		next = func() {
			h, err := m.add()
			if err != nil {
				joinErr = err
				return
			}
			res.ChurnJoins++
			m.s.At(m.s.Now()+time.Duration(m.r.ExpFloat64()*float64(ch.life)), func() { res.ChurnDeaths++; m.s.Crash(h) })
			if t := m.s.Now() + time.Duration(m.r.ExpFloat64()*float64(ch.every)); t < end {
				m.s.At(t, next)
			}
		}
		m.s.At(start+time.Duration(m.r.ExpFloat64()*float64(ch.every)), next)
		p.run(phase)
		if joinErr != nil {
			return joinErr
		}
		from, to := int64(start/p.bucket), int64(end/p.bucket)
		nodeOK, objOK := success(p.node, from, to), success(p.obj, from, to)
		res.ChurnDetail = append(res.ChurnDetail, nodeOK, objOK)
		if i == 0 {
			res.Churn1Success = min(nodeOK, objOK)
		} else {
			res.Churn2Success = min(nodeOK, objOK)
		}
		logf(cfg.Log, "sim tapestry churn %d: node %.4f, object %.4f", i+1, nodeOK, objOK)
	}
	res.Series.Churn = p.success(t0, int64(m.s.Now()/p.bucket), events)
	res.check("churn1_success", res.Churn1Success, ">= 0.99", res.Churn1Success >= 0.99)
	res.check("churn2_success", res.Churn2Success, ">= 0.99", res.Churn2Success >= 0.99)
	return nil
}
