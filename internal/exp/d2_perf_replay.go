package exp

import (
	"time"

	"triad/internal/d2"
	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/sim"
)

// perfPhase is one replay of every user's groups on a ring: one placement,
// one access-link class, seq or para, each user through its own gateway
// (hosts that served no client request before, so their lookup caches
// start empty).
type perfPhase struct {
	r      *perfRing
	place  d2Placement
	para   bool
	w      perfWorkload
	blocks map[int32]perfBlock
	gws    []*sim.Host

	// Times is each user's groups' completion times, in the trace's order.
	Times                [][]time.Duration
	OK, Failed, TimedOut int
	// Local is the reads of keys the gateway owns: the node counts each as
	// a cache miss (its cache holds no range of its own) answered without
	// a message.
	Local int
	// Errors counts the failed reads by error.
	Errors               map[string]int
	left                 int // users still replaying
	before               []d2.Stats
	CacheHits, CacheMiss uint64
	Lookups, LookupHops  uint64
	Started              time.Duration
	Ended                time.Duration
}

// run replays the phase and returns once every user is done (or after a
// day of virtual time, which no phase comes near).
func (p *perfPhase) run() {
	s := p.r.s
	p.Times = make([][]time.Duration, len(p.w.Users))
	p.left = len(p.w.Users)
	p.Started = s.Now()
	for i, gw := range p.gws {
		p.before = append(p.before, p.r.nodes[gw.Index].Stats)
		if len(p.w.Users[i].Groups) == 0 {
			p.left--
			continue
		}
		s.DoAt(gw, s.Now()+p.w.Users[i].Groups[0].Think, func(env node.Env) { p.group(env, i, 0) })
	}
	for t := 0; p.left > 0 && t < 24*360; t++ {
		s.RunFor(10 * time.Second)
	}
	p.Ended = s.Now()
	for i, gw := range p.gws {
		st, b := p.r.nodes[gw.Index].Stats, p.before[i]
		p.CacheHits += st.CacheHits - b.CacheHits
		p.CacheMiss += st.CacheMisses - b.CacheMisses
		p.Lookups += st.Lookups - b.Lookups
		p.LookupHops += st.LookupHops - b.LookupHops
	}
}

// since is the virtual time from the simulator's epoch to env's now.
func (p *perfPhase) since(env node.Env) time.Duration { return env.Now().Sub(p.r.s.Epoch()) }

// group runs user u's group g at its gateway: seq issues each read once
// the one before ends, para up to perfMaxInFlight at once. When all have
// ended (read, failed or timed out) the next group starts after its think
// time.
func (p *perfPhase) group(env node.Env, u, g int) {
	reads := p.w.Users[u].Groups[g].Reads
	start := p.since(env)
	next, ended := 0, 0
	var issue func(env node.Env)
	finish := func(env node.Env) {
		if ended++; ended < len(reads) {
			issue(env)
			return
		}
		p.Times[u] = append(p.Times[u], max(p.since(env)-start, perfMinGroup))
		if g+1 == len(p.w.Users[u].Groups) {
			p.left--
			return
		}
		gw := p.gws[u]
		p.r.s.DoAt(gw, p.since(env)+p.w.Users[u].Groups[g+1].Think, func(env node.Env) { p.group(env, u, g+1) })
	}
	issue = func(env node.Env) {
		if next < len(reads) {
			next++
			p.read(env, u, reads[next-1], finish)
		}
	}
	width := 1
	if p.para {
		width = perfMaxInFlight
	}
	for range min(width, len(reads)) {
		issue(env)
	}
}

// read gets one block through user u's gateway and calls finish once,
// when it arrives, fails, or reaches the timeout (whichever is first).
func (p *perfPhase) read(env node.Env, u int, rd perfRead, finish func(env node.Env)) {
	gw := p.gws[u]
	b := p.blocks[max(rd.Bytes, 1)]
	k := keyOf(p.place, rd)
	over := false
	end := func(env node.Env, timedOut bool, err error) {
		if over {
			return
		}
		over = true
		switch {
		case timedOut:
			p.TimedOut++
		case err != nil:
			p.Failed++
			if p.Errors == nil {
				p.Errors = map[string]int{}
			}
			p.Errors[err.Error()]++
		default:
			p.OK++
		}
		finish(env)
	}
	d := p.r.nodes[gw.Index]
	if k.In(d.Pred().Pos, d.Me().Pos) {
		p.Local++
	}
	p.r.s.DoAt(gw, p.since(env)+perfTimeout, func(env node.Env) { end(env, true, nil) })
	d.Get(env, k, b.hash, func(env node.Env, _ []byte, err error) { end(env, false, err) })
}

// keyOf is block rd's key under placement p.
func keyOf(p d2Placement, rd perfRead) id.ID { return placePosition(p, rd.Key).ID() }
