package exp

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"time"

	"triad/internal/deploy"
	"triad/internal/dhash"
	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/ring"
	"triad/internal/sim"
	"triad/internal/stats"
	"triad/internal/tapestry"
	"triad/internal/wire"
)

func init() {
	TapestryExperiments = append(TapestryExperiments, "vs-chord")
	tapestryRuns["vs-chord"] = runTapVsChord
}

// TapestryVsChord is the vs-chord experiment's figures, a part of
// TapestryResult: the same gets made through DHash++ and through
// Tapestry. A ratio is Tapestry's median latency over DHash++'s, left
// zero where either system failed a get of that set.
type TapestryVsChord struct {
	VsChordNodes       int          `json:"vs_chord_nodes"`
	VsChordObjects     int          `json:"vs_chord_objects"`
	VsChordRows        []VsChordRow `json:"vs_chord_rows,omitempty"`
	VsChordRandomRatio float64      `json:"vs_chord_random_median_ratio"`
	VsChordNearRatio   float64      `json:"vs_chord_near_median_ratio"`
	// VsChordPointers is the location pointers Tapestry holds per object
	// (two servers each), the state DHash++'s placement does without.
	VsChordPointers float64 `json:"vs_chord_pointers_per_object"`
}

// VsChordRow is one system's gets of one set of requests. Nodes is the
// mean number of other nodes a get reached: for DHash++ the lookup's hops
// and the holders asked for the block, for Tapestry the route's hops,
// the server included; the direct row's 1 is the nearest copy's holder.
// Faster is the fraction of the set's objects this system got sooner
// than the other; LookupMs is DHash++'s median lookup, a part of its
// gets; Nearer is the fraction of Tapestry's gets that the copy nearer
// the client served.
type VsChordRow struct {
	System   string  `json:"system"`
	Clients  string  `json:"clients"`
	Count    int     `json:"count"`
	Failed   int     `json:"failed"`
	MedianMs float64 `json:"median_ms"`
	P90Ms    float64 `json:"p90_ms"`
	Nodes    float64 `json:"nodes"`
	Faster   float64 `json:"faster,omitempty"`
	LookupMs float64 `json:"lookup_median_ms,omitempty"`
	Nearer   float64 `json:"nearer_copy,omitempty"`
}

// The systems and request sets of VsChordRow.
const (
	vsDHash    = "dhash++"
	vsTapestry = "tapestry"
	vsDirect   = "direct rtt"
	vsRandom   = "random"
	vsNear     = "near"
)

// vsRequest is one get of key by client, made once through each system;
// holders are the hosts that hold the key's copies.
type vsRequest struct {
	client  *sim.Host
	key     id.ID
	holders []*sim.Host
}

// runTapVsChord puts the same objects into DHash++ and Tapestry on the
// same hosts and gets each from the same client through both (issue 29:
// "side by side on the same simulated topology and object placement").
//
// The design keeps everything but the protocol equal. One simulation on
// the wide-area topology of the seed, with cfg.nodes(400) hosts that each
// run the ring, the block store and Tapestry (deploy.Options with
// Tapestry set and the ring on): the same node set and the same RTTs.
// Objects are 8 KB blocks put into DHash++ with its default redundancy
// (two whole replicas, at the key's first two successors). Tapestry then
// publishes each key from both of those holders: their engines already
// hold the block under its key, which is what AppFetch serves, so both
// systems find the same bytes on the same two hosts and each may fetch
// the nearer copy (DHash++ by predicted latency, Tapestry by the pointers
// it meets). A get is a lookup and a fetch of the whole block in DHash++
// (dhash.Node.Get, with PNS and integration), a route to the object with
// AppFetch in Tapestry (the server answers the client with the bytes,
// checked against the key): the time from asking to holding the block.
//
// Two request sets: random clients (one per object, as a DHT's readers
// are), and near clients (one of the five hosts nearest a holder):
// locality, which Tapestry's pointers are for and Chord's placement
// ignores. Each set runs through DHash++ then through Tapestry, a get
// every 10 ms. A direct row is the RTT from the client to the nearer
// copy: one round trip, the floor of both.
func runTapVsChord(cfg TapestryConfig, res *TapestryResult) error {
	n := cfg.nodes(400)
	s, m, err := newVsChordSim(cfg, n)
	if err != nil {
		return err
	}
	logf(cfg.Log, "sim tapestry vs-chord: %d hosts, ring and mesh settled at %.0fs virtual", n, s.Now().Seconds())
	reqs, err := vsPlace(s, m, cfg.pick(300, 1000))
	if err != nil {
		return err
	}
	res.violated("vs-chord objects", m.violations(20))
	v := &res.TapestryVsChord
	v.VsChordNodes, v.VsChordObjects = n, len(reqs)
	held := 0
	for _, h := range s.Hosts() {
		held += tap(h).PointersHeld()
	}
	v.VsChordPointers = float64(held) / float64(len(reqs))
	sets := []struct {
		name string
		reqs []vsRequest
	}{{vsRandom, vsClients(s, reqs, 0)}, {vsNear, vsClients(s, reqs, 5)}}
	for _, set := range sets {
		d, dl := vsGetsDHash(s, set.reqs)
		t, tl := vsGetsTapestry(s, set.reqs)
		d.Faster, t.Faster = vsFaster(dl, tl), vsFaster(tl, dl)
		d.Clients, t.Clients = set.name, set.name
		direct := vsDirectRow(s, set.name, set.reqs)
		v.VsChordRows = append(v.VsChordRows, d, t, direct)
		ratio := 0.0
		if d.Failed == 0 && t.Failed == 0 && d.MedianMs > 0 {
			ratio = t.MedianMs / d.MedianMs
		}
		if set.name == vsRandom {
			v.VsChordRandomRatio = ratio
		} else {
			v.VsChordNearRatio = ratio
		}
		for _, r := range []VsChordRow{d, t, direct} {
			logf(cfg.Log, "sim tapestry vs-chord: %s clients, %s: median %.0f ms, p90 %.0f ms, %.2f nodes, %d of %d failed", r.Clients, r.System, r.MedianMs, r.P90Ms, r.Nodes, r.Failed, r.Count+r.Failed)
		}
	}
	return nil
}

// newVsChordSim boots n hosts that run the ring, the block store and
// Tapestry, a second apart (as newTapMesh does), each through a random
// host whose mesh has joined; it waits for the ring to be correct and the
// mesh to pass the checker, then lets fingers, coordinates and RTT
// estimates settle as buildDHash does. The tapMesh is the checker's view.
func newVsChordSim(cfg TapestryConfig, n int) (*sim.Sim, *tapMesh, error) {
	s := sim.New(sim.Config{Seed: cfg.Seed}, sim.NewTopology(n, cfg.Seed))
	tc := tapestry.DefaultConfig()
	o := deploy.DefaultOptions()
	o.Tapestry = &tc
	for i := 0; i < n; i++ {
		var joined []*sim.Host
		for _, h := range s.Hosts() {
			if h.Up() && tap(h).Joined() {
				joined = append(joined, h)
			}
		}
		var boot node.Addr
		if len(joined) > 0 {
			boot = joined[s.Rand().IntN(len(joined))].Addr
		}
		if _, err := s.AddHost(deploy.Factory(o, func() node.Addr { return boot })); err != nil {
			return nil, nil, err
		}
		s.RunFor(time.Second)
	}
	if err := waitStable(s, 10*time.Minute); err != nil {
		return nil, nil, err
	}
	m := &tapMesh{s: s, cfg: tc, hosts: s.Hosts(), r: s.Rand(), objects: map[id.ID]*sim.Host{}}
	if _, ok := m.settle(10*time.Minute, time.Second); !ok {
		return nil, nil, fmt.Errorf("a mesh of %d on ring hosts did not converge in 10 minutes: %v", n, m.violations(3))
	}
	s.RunFor(time.Duration(cfg.pick(2, 3)) * time.Minute)
	return s, m, nil
}

// vsPlace puts k random 8 KB blocks into DHash++ from random hosts and
// publishes each in Tapestry from every host that acknowledged a copy,
// then gives the pointers 30 s to reach the roots. It returns one request
// per object, its client not chosen yet.
func vsPlace(s *sim.Sim, m *tapMesh, k int) ([]vsRequest, error) {
	puts := putBlocks(s, m.r, k, 8192, wire.RedundancyReplicas, nil)
	var reqs []vsRequest
	byHolder := map[*sim.Host][]id.ID{}
	for _, p := range puts {
		if p.key.IsZero() {
			return nil, fmt.Errorf("%d blocks put, one failed", k)
		}
		q := vsRequest{key: p.key}
		for _, r := range p.holders {
			h := s.HostAt(r.Addr)
			if h == nil {
				return nil, fmt.Errorf("block %s: holder %s is no host", p.key.Short(), r.Addr)
			}
			q.holders = append(q.holders, h)
			byHolder[h] = append(byHolder[h], p.key)
		}
		m.objects[p.key] = q.holders[0]
		m.keys = append(m.keys, p.key)
		reqs = append(reqs, q)
	}
	for _, h := range s.Hosts() { // in host order: no map order reaches the trace
		keys := byHolder[h]
		if len(keys) == 0 {
			continue
		}
		s.Do(h, func(env node.Env) {
			for _, key := range keys {
				tap(h).Publish(env, key, tapestry.AppDOLR, time.Time{})
			}
		})
	}
	s.RunFor(30 * time.Second)
	return reqs, nil
}

// vsClients gives each request a client: a random host that holds no
// copy (near = 0), or one of the near hosts nearest the request's first
// holder by RTT.
func vsClients(s *sim.Sim, reqs []vsRequest, near int) []vsRequest {
	hosts := s.Hosts()
	topo := s.Topology()
	out := slices.Clone(reqs)
	for i := range out {
		q := &out[i]
		var cands []*sim.Host
		for _, h := range hosts {
			if !slices.Contains(q.holders, h) {
				cands = append(cands, h)
			}
		}
		if near > 0 {
			first := q.holders[0].Index
			slices.SortStableFunc(cands, func(a, b *sim.Host) int {
				return cmp.Compare(topo.RTT(first, a.Index), topo.RTT(first, b.Index))
			})
			cands = cands[:near]
		}
		q.client = cands[s.Rand().IntN(len(cands))]
	}
	return out
}

// fetchCount is the copies served and the fetches moved on from, over
// every host: the holders the gets asked.
func fetchCount(s *sim.Sim) uint64 {
	var t uint64
	for _, h := range s.Hosts() {
		if b := deploy.Of(h).Blocks; b != nil {
			t += b.Stats.Fetched + b.Stats.FetchRetries
		}
	}
	return t
}

// vsGetsDHash gets each request's key through DHash++, a get every 10 ms.
// Get does not say which nodes it reached: a lookup of the key as Get
// makes it (MinSuccs = the replicas), started by the client when the get
// ends, gives the hops, and the holders asked are counted over all hosts.
// The time is the client's (env.Now): in a host's callback the
// simulator's clock is that of the last action, not of the event.
func vsGetsDHash(s *sim.Sim, reqs []vsRequest) (VsChordRow, []float64) {
	var lat, hops, lookups []float64
	each := make([]float64, len(reqs)) // 0: failed
	failed, outstanding := 0, 0
	f0 := fetchCount(s)
	start := s.Now()
	for i, q := range reqs {
		s.At(start+time.Duration(i)*10*time.Millisecond, func() {
			outstanding++
			s.Do(q.client, func(env node.Env) {
				t0 := env.Now()
				deploy.Of(q.client).Blocks.Get(env, q.key, wire.RedundancyReplicas, func(env node.Env, _ dhash.Block, err error) {
					if err != nil {
						outstanding--
						failed++
						return
					}
					lat = append(lat, ms(env.Now().Sub(t0)))
					each[i] = ms(env.Now().Sub(t0))
					chordOf(q.client).Lookup(env, q.key, ring.LookupOptions{MinSuccs: dhash.DefaultConfig().Replicas}, func(env node.Env, r ring.Result) {
						outstanding--
						if r.Err == nil {
							hops = append(hops, float64(r.Hops))
							lookups = append(lookups, ms(r.Latency))
						}
					})
				})
			})
		})
	}
	drain(s, start+time.Duration(len(reqs))*10*time.Millisecond, &outstanding)
	row := vsRow(vsDHash, lat, failed+outstanding, nil)
	if len(lat) > 0 {
		row.Nodes = mean(hops) + float64(fetchCount(s)-f0)/float64(len(lat))
	}
	row.LookupMs = stats.Quantile(sorted(lookups), 0.5)
	return row, each
}

// vsGetsTapestry gets each request's key through Tapestry, a route to the
// object with AppFetch every 10 ms; a get succeeds when the bytes
// returned hash to the key.
func vsGetsTapestry(s *sim.Sim, reqs []vsRequest) (VsChordRow, []float64) {
	var lat, hops []float64
	each := make([]float64, len(reqs)) // 0: failed
	failed, outstanding, nearer := 0, 0, 0
	start := s.Now()
	for i, q := range reqs {
		s.At(start+time.Duration(i)*10*time.Millisecond, func() {
			outstanding++
			s.Do(q.client, func(env node.Env) {
				tap(q.client).RouteToObject(env, q.key, tapestry.AppFetch, nil, func(env node.Env, o tapestry.Outcome) {
					outstanding--
					if o.Err != nil || o.Status != wire.TapDelivered || id.Key(o.Payload) != q.key {
						failed++
						return
					}
					lat = append(lat, ms(o.Latency))
					each[i] = ms(o.Latency)
					hops = append(hops, float64(o.Hops))
					if o.Node.Addr == vsNearer(s, q).Addr {
						nearer++
					}
				})
			})
		})
	}
	drain(s, start+time.Duration(len(reqs))*10*time.Millisecond, &outstanding)
	row := vsRow(vsTapestry, lat, failed+outstanding, hops)
	if len(lat) > 0 {
		row.Nearer = float64(nearer) / float64(len(lat))
	}
	return row, each
}

// vsFaster is the fraction of requests a got, and sooner than b (or b
// did not).
func vsFaster(a, b []float64) float64 {
	won := 0
	for i := range a {
		if a[i] > 0 && (b[i] == 0 || a[i] < b[i]) {
			won++
		}
	}
	return float64(won) / float64(len(a))
}

// vsNearer is the holder of q's copies nearest its client.
func vsNearer(s *sim.Sim, q vsRequest) *sim.Host {
	best := q.holders[0]
	for _, h := range q.holders[1:] {
		if s.Topology().RTT(q.client.Index, h.Index) < s.Topology().RTT(q.client.Index, best.Index) {
			best = h
		}
	}
	return best
}

// vsDirectRow is the RTT from each client to the nearer copy.
func vsDirectRow(s *sim.Sim, clients string, reqs []vsRequest) VsChordRow {
	var rtt []float64
	for _, q := range reqs {
		rtt = append(rtt, ms(s.Topology().RTT(q.client.Index, vsNearer(s, q).Index)))
	}
	row := vsRow(vsDirect, rtt, 0, nil)
	row.Clients, row.Nodes = clients, 1
	return row
}

func vsRow(system string, lat []float64, failed int, nodes []float64) VsChordRow {
	r := summarize(system, lat, failed, nodes)
	return VsChordRow{System: system, Count: r.Count, Failed: r.Failed, MedianMs: r.MedianMs, P90Ms: r.P90Ms, Nodes: r.MeanHops}
}

// writeText prints the rows, as `triad sim tapestry` does.
func (v TapestryVsChord) writeText(w io.Writer) {
	if v.VsChordNodes == 0 {
		return
	}
	fmt.Fprintf(w, "vs-chord: %d hosts running both, %d objects of 8 KB on DHash++'s two replica holders, each got once per client set\n", v.VsChordNodes, v.VsChordObjects)
	for _, r := range v.VsChordRows {
		extra := ""
		if r.System != vsDirect {
			extra = fmt.Sprintf("  faster %2.0f%%", 100*r.Faster)
		}
		switch {
		case r.LookupMs > 0:
			extra += fmt.Sprintf("  (lookup %.0f ms)", r.LookupMs)
		case r.Nearer > 0:
			extra += fmt.Sprintf("  (nearer copy %.0f%%)", 100*r.Nearer)
		}
		fmt.Fprintf(w, "vs-chord: %-6s clients  %-10s  median %5.0f ms  p90 %5.0f ms  nodes %5.2f  failed %d of %d%s\n", r.Clients, r.System, r.MedianMs, r.P90Ms, r.Nodes, r.Failed, r.Count+r.Failed, extra)
	}
	fmt.Fprintf(w, "vs-chord: tapestry holds %.1f location pointers per object\n", v.VsChordPointers)
	ratio := func(x float64) string {
		if x == 0 {
			return "none (a get failed)"
		}
		return fmt.Sprintf("%.2f", x)
	}
	fmt.Fprintf(w, "vs-chord: tapestry median over dhash++ median: random clients %s, near clients %s\n", ratio(v.VsChordRandomRatio), ratio(v.VsChordNearRatio))
}
