package tapestry

import (
	"slices"
	"strings"
	"time"

	"triad/internal/fault"
	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/rpc"
	"triad/internal/wire"
)

// joinState is a join in progress: the nearest-neighbour search (§III-C1)
// runs level by level from the prefix shared with the surrogate down to 0.
type joinState struct {
	attempt int
	started time.Time
	level   int                     // the level being filled
	list    map[string]wire.NodeRef // its candidates
	waiting int                     // measurements or queries outstanding
	next    map[string]wire.NodeRef // candidates gathered for the level below
}

// joinRetry is how long a join waits for its surrogate before it starts
// again; joinBackoff, how long it waits after the bootstrap refused it (it
// is joining itself) or did not answer.
const (
	joinRetry   = 30 * time.Second
	joinBackoff = 2 * time.Second
)

// startJoin routes a join to this node's surrogate through a bootstrap,
// the next one at each attempt.
func (n *Node) startJoin(env node.Env, attempt int) {
	n.join = &joinState{attempt: attempt, started: env.Now()}
	m := &wire.TapRoute{Op: wire.TapJoin, Key: n.self.ID, App: AppSystem, Origin: n.self, Path: []wire.NodeRef{n.self}, Hops: 1}
	n.Stats.JoinMessages++
	n.h.Call(env, n.bootstraps[attempt%len(n.bootstraps)], n.self, id.ID{}, m, 0, func(env node.Env, _ wire.Msg, err error) {
		if err != nil {
			env.After(joinBackoff, joinTimer{attempt: attempt})
		}
	})
	env.After(joinRetry, joinTimer{attempt: attempt})
}

// surrogate starts the acknowledged multicast that inserts joiner: this
// node is the root of its ID.
func (n *Node) surrogate(env node.Env, joiner wire.NodeRef) {
	if joiner.Addr == n.self.Addr {
		return
	}
	p := n.self.ID.SharedDigits(joiner.ID, n.table.bits)
	if p >= n.table.levels {
		return // its ID is ours: refused (nothing to tell it that it can act on)
	}
	n.Stats.JoinsServed++
	mc := &wire.TapMulticast{Joiner: joiner, Prefix: uint32(p), Level: uint32(p)}
	n.multicast(env, mc, func(env node.Env, nodes []wire.NodeRef, _ bool) {
		n.send(env, joiner, &wire.TapJoined{Prefix: uint32(p), Nodes: nodes})
	})
}

// receiveMulticast runs one branch of a join's multicast and answers with
// the nodes it reached.
func (n *Node) receiveMulticast(env node.Env, in node.MsgIn, mc *wire.TapMulticast) {
	if n.mcasts >= n.cfg.MaxFanout {
		n.Stats.Busy++
		rpc.RespondError(env, in, n.self, fault.CodeBusy, "tapestry: too many multicasts in progress")
		return
	}
	n.multicast(env, mc, func(env node.Env, nodes []wire.NodeRef, truncated bool) {
		rpc.Respond(env, in, n.self, &wire.TapNodes{Nodes: nodes, Truncated: truncated})
	})
}

// multicastTimeout is how long a branch waits for its sub-branches.
const multicastTimeout = 20 * time.Second

// multicast adds the joiner here (and hands it root pointers, in addLink)
// and passes the multicast on to one node of every other entry of the
// levels from mc.Level down the table: together they reach every node
// with the joiner's prefix once, if tables are consistent. Joiners
// that passed through this node in the last joinWindow go along as
// Others, so that simultaneous joiners learn of each other.
func (n *Node) multicast(env node.Env, mc *wire.TapMulticast, done func(node.Env, []wire.NodeRef, bool)) {
	n.Stats.Multicasts++
	n.mcasts++
	joiner := mc.Joiner
	n.noteJoiner(env, joiner)
	n.consider(env, joiner)
	for _, o := range mc.Others {
		n.consider(env, o)
	}
	others := n.otherJoiners(env, joiner.Addr)
	reached := []wire.NodeRef{n.self}
	reached = append(reached, others...)
	truncated := false
	type child struct {
		ref   wire.NodeRef
		level int
	}
	var children []child
	for l := int(mc.Level); l < len(n.table.rows); l++ {
		own := n.table.digit(n.self.ID, l)
		for d := 0; d < n.table.base; d++ {
			if e := n.table.entry(l, d); d != own && len(e) > 0 {
				children = append(children, child{e[0].ref, l + 1})
			}
		}
	}
	pending := len(children)
	finish := func(env node.Env) {
		n.mcasts--
		done(env, reached, truncated)
	}
	if pending == 0 {
		finish(env)
		return
	}
	for _, c := range children {
		m := &wire.TapMulticast{Joiner: joiner, Prefix: mc.Prefix, Level: uint32(c.level), Others: others}
		ok := n.call(env, c.ref, m, multicastTimeout, func(env node.Env, reply wire.Msg, err error) {
			if r, isNodes := reply.(*wire.TapNodes); isNodes && err == nil {
				truncated = truncated || r.Truncated
				for _, x := range r.Nodes {
					if len(reached) >= wire.MaxListLen {
						truncated = true
						break
					}
					if !slices.ContainsFunc(reached, func(y wire.NodeRef) bool { return y.Addr == x.Addr }) {
						reached = append(reached, x)
					}
				}
			}
			if pending--; pending == 0 {
				finish(env)
			}
		})
		if !ok {
			pending--
		}
	}
	if pending == 0 {
		finish(env)
	}
}

// A joiner is remembered for joinWindow after its multicast passed
// through this node, not only while the multicast runs: a surrogate with
// an empty table finishes a multicast at once, and the joins that reached
// it just after would otherwise never hear of the one before (a trace,
// testdata/trace/massjoin.txt, left three such tables with a hole each
// until the next repair round). A join that takes longer than joinWindow
// starts again (joinRetry). maxJoiners bounds what is remembered.
const (
	joinWindow = joinRetry
	maxJoiners = 64
)

// recentJoiner is a joiner and when it is forgotten.
type recentJoiner struct {
	ref   wire.NodeRef
	until time.Time
}

// noteJoiner remembers joiner for joinWindow, dropping the expired and,
// past maxJoiners, the one forgotten soonest.
func (n *Node) noteJoiner(env node.Env, joiner wire.NodeRef) {
	now := env.Now()
	for a, j := range n.joiners {
		if !now.Before(j.until) {
			delete(n.joiners, a)
		}
	}
	if _, ok := n.joiners[joiner.Addr]; !ok && len(n.joiners) >= maxJoiners {
		var soonest string
		for a, j := range n.joiners {
			if soonest == "" || j.until.Before(n.joiners[soonest].until) || j.until.Equal(n.joiners[soonest].until) && a < soonest {
				soonest = a
			}
		}
		delete(n.joiners, soonest)
	}
	n.joiners[joiner.Addr] = recentJoiner{joiner, now.Add(joinWindow)}
}

// otherJoiners are up to 8 joiners of the last joinWindow, but the one
// named, the most recent first.
func (n *Node) otherJoiners(env node.Env, but string) []wire.NodeRef {
	now := env.Now()
	var out []recentJoiner
	for a, j := range n.joiners {
		if a != but && now.Before(j.until) {
			out = append(out, j)
		}
	}
	slices.SortFunc(out, func(a, b recentJoiner) int {
		if c := b.until.Compare(a.until); c != 0 {
			return c
		}
		return strings.Compare(a.ref.Addr, b.ref.Addr)
	})
	refs := make([]wire.NodeRef, 0, min(len(out), 8))
	for _, j := range out[:min(len(out), 8)] {
		refs = append(refs, j.ref)
	}
	return refs
}

// joinedBy starts the nearest-neighbour search when the surrogate says
// the multicast is done.
func (n *Node) joinedBy(env node.Env, from wire.NodeRef, m *wire.TapJoined) {
	js := n.join
	if n.joined || js == nil || js.list != nil {
		return
	}
	js.level = int(m.Prefix)
	js.list = map[string]wire.NodeRef{}
	for _, r := range append(slices.Clone(m.Nodes), from) {
		if r.Addr != n.self.Addr && !r.IsZero() {
			js.list[r.Addr] = r
		}
	}
	n.fillLevel(env)
}

// fillLevel measures the candidates of the current level and puts them in
// the table; then it asks the k nearest for the level below.
func (n *Node) fillLevel(env node.Env) {
	js := n.join
	js.waiting = len(js.list)
	if js.waiting == 0 {
		n.nextLevel(env)
		return
	}
	for _, r := range sortedRefs(js.list) {
		n.Stats.JoinMessages++
		n.measure(env, r, func(env node.Env, rtt time.Duration, ok bool) {
			if ok {
				n.addLink(env, r, rtt)
				// Every node the join heard of considers the joiner too,
				// not only those it links to: a node whose entry for the
				// joiner's digit lost its only link (the joiner itself,
				// killed and now back) learns of it now, not at its next
				// repair round, up to 90 s on (issue 45: triad chaos
				// --tapestry took 80 s to locate every object after its
				// churn, a node taking itself for the root meanwhile).
				n.send(env, r, &wire.TapNotify{Kind: wire.TapHello, Level: uint32(js.level)})
			}
			if js.waiting--; js.waiting == 0 && n.join == js {
				n.nextLevel(env)
			}
		})
	}
}

// nextLevel asks the k nearest candidates of this level for the nodes of
// the level below (their entries and backpointers there); at level 0 the
// join is done.
func (n *Node) nextLevel(env node.Env) {
	js := n.join
	if js.level == 0 {
		n.finishJoin(env)
		return
	}
	js.level--
	nearest := sortedRefs(js.list)
	slices.SortStableFunc(nearest, func(a, b wire.NodeRef) int { return int(n.rttTo(a) - n.rttTo(b)) })
	if len(nearest) > n.cfg.NearestK {
		nearest = nearest[:n.cfg.NearestK]
	}
	js.next = map[string]wire.NodeRef{}
	for _, r := range nearest {
		js.next[r.Addr] = r
	}
	js.waiting = len(nearest)
	if js.waiting == 0 {
		js.list = js.next
		n.fillLevel(env)
		return
	}
	for _, r := range nearest {
		n.Stats.JoinMessages++
		n.call(env, r, &wire.TapNearby{Level: uint32(js.level)}, 0, func(env node.Env, reply wire.Msg, err error) {
			if n.join != js {
				return
			}
			if l, ok := reply.(*wire.TapNodes); ok && err == nil {
				for _, x := range l.Nodes {
					if x.Addr != n.self.Addr {
						js.next[x.Addr] = x
					}
				}
			}
			if js.waiting--; js.waiting == 0 {
				js.list = js.next
				n.fillLevel(env)
			}
		})
	}
}

// settleAfter are the times after a join at which the node runs a repair
// round of its own, besides the periodic ones: nodes that joined at the
// same time (a mass restart, a flash crowd) reach each other's tables
// only through repair, and a minute's wait left holes that long.
var settleAfter = []time.Duration{5 * time.Second, 15 * time.Second, 30 * time.Second}

// finishJoin ends the join: the node routes and serves from now on.
func (n *Node) finishJoin(env node.Env) {
	n.joined = true
	n.join = nil
	n.Stats.Joins++
	n.republishAll(env)
	env.After(settleAfter[0], settleTimer{})
}

// JoinedAt is when a join in progress started (zero when joined).
func (n *Node) JoinedAt() time.Time {
	if n.join == nil {
		return time.Time{}
	}
	return n.join.started
}

func sortedRefs(m map[string]wire.NodeRef) []wire.NodeRef {
	out := make([]wire.NodeRef, 0, len(m))
	for _, r := range m {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b wire.NodeRef) int { return strings.Compare(a.Addr, b.Addr) })
	return out
}

// nearby answers a TapNearby: the links of the level and the nodes that
// point at this one there.
func (n *Node) nearby(level int) *wire.TapNodes {
	out := &wire.TapNodes{}
	add := func(r wire.NodeRef) {
		if len(out.Nodes) >= wire.MaxListLen {
			out.Truncated = true
			return
		}
		if !slices.ContainsFunc(out.Nodes, func(x wire.NodeRef) bool { return x.Addr == r.Addr }) {
			out.Nodes = append(out.Nodes, r)
		}
	}
	for _, r := range n.table.level(level) {
		add(r)
	}
	for _, b := range n.sortedBack() {
		if b.levels.has(level) {
			add(b.ref)
		}
	}
	return out
}

// leave hands everything on before a graceful stop (§III-C2).
func (n *Node) leave(env node.Env) {
	if !n.joined {
		return
	}
	n.leaving = true
	for _, k := range n.sortedObjects() {
		n.Unpublish(env, k)
	}
	// Root pointers go to the root the key has without this node.
	var out batches
	for _, k := range n.ptrs.sortedKeys() {
		for _, p := range n.ptrs.byKey[k] {
			if !p.root {
				continue
			}
			next, level, none := n.table.nextHop(0, k, true, nil)
			if none {
				continue
			}
			q := n.wirePointer(env, k, p)
			q.Level = uint32(level)
			out.add(next, q)
		}
	}
	n.sendBatches(env, out)
	var repl []wire.NodeRef
	for l := range n.table.rows {
		if refs := n.table.level(l); len(refs) > 0 && len(repl) < wire.MaxListLen {
			repl = append(repl, refs[0])
		}
	}
	told := map[string]bool{}
	tell := func(r wire.NodeRef) {
		if !told[r.Addr] {
			told[r.Addr] = true
			n.send(env, r, &wire.TapLeave{Replacements: repl})
		}
	}
	for _, b := range n.sortedBack() {
		tell(b.ref)
	}
	n.table.all(func(_, _ int, l link) { tell(l.ref) })
}

// left handles a neighbour's leave: it goes as if dead, and its
// replacements are considered.
func (n *Node) left(env node.Env, from wire.NodeRef, m *wire.TapLeave) {
	if from.IsZero() {
		return
	}
	n.Stats.LeavesReceived++
	n.h.Departed(env, from.Addr)
	n.forget(env, from.Addr)
	for _, r := range m.Replacements {
		if r.Addr != from.Addr {
			n.consider(env, r)
		}
	}
}

// beacon probes every link (§III-C3): one that does not answer is
// declared dead, which takes it out of the table.
func (n *Node) beacon(env node.Env) {
	seen := map[string]bool{}
	n.table.all(func(_, _ int, l link) {
		if seen[l.ref.Addr] {
			return
		}
		seen[l.ref.Addr] = true
		n.Stats.Beacons++
		n.call(env, l.ref, &wire.Ping{}, 0, nil)
	})
}

// repairRound asks up to repairAsks random links of every level for that
// level's nodes, which fills holes that joins and failures left. A level
// with no link at all, above the deepest one that has some, is asked of
// the links of the next level down: they share this node's prefix to
// that level, so their rows above it are this node's. (One asked link a
// level, and none for an empty level, left 41 of 300 simulated meshes of
// 16 nodes that joined at once with a hole 25 s on, and 2 with a whole
// empty first level for good: its routes stayed among the nodes of its
// own first digit, often ending at itself as the root, which is how
// TestTapestryCluster failed in CI, issue 45.)
func (n *Node) repairRound(env node.Env) {
	if !n.joined {
		return
	}
	levels := make([][]wire.NodeRef, len(n.table.rows))
	known := 0
	for l := range n.table.rows {
		levels[l] = n.table.level(l)
		known += len(levels[l])
	}
	if known == 0 && len(n.bootstraps) > 0 {
		// A table with no link at all (its join's multicast reached
		// nobody else yet): the bootstrap knows the first level.
		n.askAt(env, n.bootstraps[env.Rand().IntN(len(n.bootstraps))], 0)
		return
	}
	for l := range levels {
		refs := levels[l]
		for k := l + 1; len(refs) == 0 && k < len(levels); k++ {
			refs = slices.Clone(levels[k])
		}
		for i := 0; i < repairAsks && len(refs) > 0; i++ {
			j := env.Rand().IntN(len(refs))
			n.ask(env, refs[j], l)
			refs = slices.Delete(refs, j, j+1)
		}
	}
}

// repairAsks is how many links of a level a repair round asks.
const repairAsks = 3

// ask queries ref for the nodes of level and considers them.
func (n *Node) ask(env node.Env, ref wire.NodeRef, level int) {
	n.Stats.RepairQueries++
	n.call(env, ref, &wire.TapNearby{Level: uint32(level)}, 0, n.considerNodes)
}

// askAt is ask of a node known by its address alone (a bootstrap).
func (n *Node) askAt(env node.Env, addr node.Addr, level int) {
	n.Stats.RepairQueries++
	n.h.Call(env, addr, n.self, id.ID{}, &wire.TapNearby{Level: uint32(level)}, 0, n.considerNodes)
}

// considerNodes considers the nodes of a TapNodes reply.
func (n *Node) considerNodes(env node.Env, reply wire.Msg, err error) {
	if l, ok := reply.(*wire.TapNodes); ok && err == nil {
		for _, r := range l.Nodes {
			n.consider(env, r)
		}
	}
}

// repairEntry refills an entry that lost a link from the nodes of the
// same level: they know the level's nodes as well as this node did.
func (n *Node) repairEntry(env node.Env, s slot) {
	n.Stats.HolesRepaired++
	asked := 0
	for _, r := range n.table.level(s.level) {
		if asked == 3 {
			break
		}
		n.ask(env, r, s.level)
		asked++
	}
	if asked == 0 && s.level > 0 {
		for _, r := range n.table.level(s.level - 1) {
			if asked == 3 {
				break
			}
			n.ask(env, r, s.level)
			asked++
		}
	}
}

// Table is the node's routing table and status, for `triad tapestry`.
func (n *Node) Table() *wire.TapTable {
	t := &wire.TapTable{Self: n.self, Joined: n.joined}
	for lv, r := range n.table.rows {
		if r == nil {
			continue
		}
		for d, e := range r {
			if len(e) == 0 {
				continue
			}
			te := wire.TapEntry{Level: uint32(lv), Digit: uint32(d)}
			for _, l := range e {
				te.Links = append(te.Links, l.ref)
				te.RTTMicros = append(te.RTTMicros, uint64(l.rtt/time.Microsecond))
			}
			t.Entries = append(t.Entries, te)
		}
	}
	for _, b := range n.sortedBack() {
		if len(t.Backpointers) < wire.MaxListLen {
			t.Backpointers = append(t.Backpointers, b.ref)
		}
	}
	for _, c := range n.Counters() {
		t.Counters = append(t.Counters, wire.Counter{Name: c.Name, Value: c.Value})
	}
	return t
}

// Counter is one named figure of Counters.
type Counter struct {
	Name  string
	Value uint64
}

// tapestryGauges are the counters that say what the node holds now
// rather than count events.
var tapestryGauges = map[string]bool{"links": true, "backpointers": true, "pointers_held": true,
	"objects_published": true, "republish_queue": true, "routes_in_flight": true}

// Metrics are the node's Counters for the metrics page
// (triad_tapestry_*): a gauge for what it holds now, a counter for the
// rest.
func (n *Node) Metrics() []node.Metric {
	cs := n.Counters()
	out := make([]node.Metric, len(cs))
	for i, c := range cs {
		what := strings.ReplaceAll(c.Name, "_", " ")
		if tapestryGauges[c.Name] {
			out[i] = node.Metric{Name: c.Name, Help: "Tapestry: " + what + " now (triad tapestry status).", Gauge: true, Value: float64(c.Value)}
		} else {
			out[i] = node.Metric{Name: c.Name, Help: "Tapestry: " + what + " (triad tapestry status).", Value: float64(c.Value)}
		}
	}
	return out
}

// Counters are the node's figures by name: what it holds now, then its
// counters; `triad tapestry status` and /metrics show them.
func (n *Node) Counters() []Counter {
	s := n.Stats
	lookups, neg, fp := n.BloomStats()
	return []Counter{
		{"links", uint64(n.table.size)}, {"backpointers", uint64(len(n.back))},
		{"pointers_held", uint64(n.ptrs.count)}, {"objects_published", uint64(len(n.published))},
		{"republish_queue", uint64(n.queued)}, {"routes_in_flight", uint64(len(n.routes))},
		{"routed", s.Routed}, {"forwarded", s.Forwarded}, {"delivered", s.Delivered}, {"redirected", s.Redirected},
		{"server_miss", s.ServerMiss}, {"loops", s.Loops}, {"unreachable", s.Unreachable}, {"hop_retries", s.HopRetries},
		{"bad_requests", s.BadRequests}, {"rate_limited", s.RateLimited}, {"busy", s.Busy},
		{"pointers_stored", s.PointersStored}, {"pointers_evicted", n.ptrs.Evicted}, {"pointers_expired", n.ptrs.Expired},
		{"pointer_batches", s.PointerBatches}, {"republished", s.Republished}, {"path_republished", s.PathRepublished},
		{"root_handovers", s.RootHandovers}, {"multicasts", s.Multicasts}, {"joins_served", s.JoinsServed},
		{"beacons", s.Beacons}, {"links_added", s.LinksAdded}, {"links_lost", s.LinksLost}, {"holes_repaired", s.HolesRepaired},
		{"timed_out", s.TimedOut}, {"leaves_received", s.LeavesReceived},
		{"suspected", s.Suspected}, {"false_suspects", s.FalseSuspects},
		{"pointers_dropped", s.PointersDropped}, {"pointers_shed", s.PointersShed},
		{"pointers_refused", s.PointersRefused}, {"removes_refused", s.RemovesRefused},
		{"server_checks", s.ServerChecks}, {"pointers_forged", s.PointersForged}, {"checks_deferred", s.ChecksDeferred},
		{"bloom_lookups", lookups}, {"bloom_negative", neg}, {"bloom_false_positive", fp},
	}
}
