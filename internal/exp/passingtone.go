package exp

import (
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"time"

	"triad/internal/deploy"
	"triad/internal/dhash"
	"triad/internal/id"
	"triad/internal/maint"
	"triad/internal/node"
	"triad/internal/sim"
	"triad/internal/wire"
)

// PassingToneConfig is one `triad sim passingtone --scenario` run: a ring
// of block-store hosts running Passing Tone's maintenance (the real code of
// internal/maint) on the simulator, an event that disturbs it, and what
// maintenance moved to put it right.
type PassingToneConfig struct {
	Scenario string // restart, transient, addition, wipe, partition or liars
	Seed     uint64
	Hosts    int           // default 25: a host holds about 8% of the data
	Objects  int           // put before the event; default 1,000
	Size     int           // bytes per object; default 8 KiB
	Interval time.Duration // maintenance period; default 2 minutes
	// Budget is each host's repair budget in bytes per second (zero: none,
	// the default on a LAN). The wipe scenario runs with WipeBudget when
	// it is zero, so that its time is the budget's to explain.
	Budget int
	// Audits is maint.Config.Audits, the challenges per synchronization
	// with a replica partner; zero: the default, negative: none (to see
	// what the liars scenario does without them).
	Audits int
	Log    io.Writer
}

// WipeBudget is the wipe scenario's repair budget per host, bytes per
// second, unless the config sets one: small enough that the wiped host's
// pull (about 2/25 of 1,000 objects of 8 KiB) takes about 40 s, well
// above the few seconds a failure takes to notice and settle.
const WipeBudget = 16 << 10

// Scenarios lists the scenarios in the order `--scenario all` runs them.
var Scenarios = []string{"restart", "transient", "addition", "wipe", "partition", "liars"}

// Liars are the Byzantine hosts of the liars scenario, spaced around the
// ring so that no replica set holds two (fewer than k faulty machines in
// any): one acknowledges stores and keeps only the keys, which its Merkle
// tree lists (a lying TreeInfo; issue 27's ack-and-drop host), one
// returns forged bytes. (A host that drops the keys too, its tree honest,
// fails its audits only six rounds on, as a host slowly filling its range
// would not: internal/maint's TestAuditsRepairAroundALiar covers it.)
var Liars = []sim.Lie{sim.LyingTree, sim.Forge}

// liarsWithin is how many maintenance periods after the liars' puts the
// liars scenario claims every object is at k honest copies on its honest
// replica set: a liar fails its first audit at its neighbours' next round
// (at most 1.25 periods on), and a round and a sweep repair around it.
const liarsWithin = 3

// ScenarioResult is what one scenario measured.
type ScenarioResult struct {
	Scenario string `json:"scenario"`
	Seed     uint64 `json:"seed"`
	Hosts    int    `json:"hosts"`
	Objects  int    `json:"objects"`
	// BytesMoved is what maintenance copied (repairs and hand-overs) after
	// the event, on the hosts the scenario names; BytesNeeded is what had
	// to move there for every object to be at k copies on its replica set.
	BytesMoved  uint64  `json:"bytes_moved"`
	BytesNeeded uint64  `json:"bytes_needed"`
	MovedRatio  float64 `json:"moved_over_needed"`
	// UnderReplicated counts objects with fewer than k copies on their
	// replica set (their first k live successors) at the end; a scenario
	// passes only with none, reached within two maintenance periods of the
	// event's end.
	UnderReplicated int `json:"under_replicated"`
	// Lost counts acknowledged objects with no copy left on an honest host
	// (liars: the objects put after the liars turned).
	Lost int `json:"lost"`
	// ForgedLeaves counts the Leaves a liar sent in another host's name,
	// RefusedLeaves those the ring refused (liars).
	// Fragmented counts the objects put as fragments (liars).
	Fragmented     int     `json:"fragmented,omitempty"`
	ForgedLeaves   int     `json:"forged_leaves,omitempty"`
	RefusedLeaves  int     `json:"refused_leaves,omitempty"`
	WholeAfterSecs float64 `json:"whole_after_seconds"` // virtual, from the event's end
	// Budget is the repair budget per host the scenario ran with (bytes
	// per second, 0: none). For a wipe, BudgetSecs is the least time that
	// budget allows for the repair: the bytes of the host that had to
	// fetch the most (the returned host's new range, or what another host
	// fetched after the wipe) over the budget. The wipe passes only if every object
	// is whole within BudgetSecs plus SlackSecs (noticing the failure, the
	// settle delay, one object in flight).
	Budget     int     `json:"repair_budget_bytes_per_second"`
	BudgetSecs float64 `json:"budget_allows_seconds,omitempty"`
	SlackSecs  float64 `json:"slack_seconds,omitempty"`
	Note       string  `json:"note"`
	Checked
	Pass        bool    `json:"pass"`
	WallSeconds float64 `json:"wall_seconds"`
}

// RunPassingTone runs one scenario.
func RunPassingTone(cfg PassingToneConfig) (ScenarioResult, error) {
	if cfg.Hosts == 0 {
		cfg.Hosts = 25
	}
	if cfg.Objects == 0 {
		cfg.Objects = 1000
	}
	if cfg.Size == 0 {
		cfg.Size = 8 << 10
	}
	if cfg.Interval == 0 {
		cfg.Interval = 2 * time.Minute
	}
	if cfg.Hosts < 6 || cfg.Objects < 1 || cfg.Size < 1 {
		return ScenarioResult{}, fmt.Errorf("passingtone: want at least 6 hosts and 1 object")
	}
	if !slices.Contains(Scenarios, cfg.Scenario) {
		return ScenarioResult{}, fmt.Errorf("passingtone: no scenario %q (want one of %v)", cfg.Scenario, Scenarios)
	}
	logf := func(format string, args ...any) {
		if cfg.Log != nil {
			fmt.Fprintf(cfg.Log, format+"\n", args...)
		}
	}
	wall := time.Now()
	if cfg.Budget < 0 {
		return ScenarioResult{}, fmt.Errorf("passingtone: a negative repair budget")
	}
	if cfg.Scenario == "wipe" && cfg.Budget == 0 {
		cfg.Budget = WipeBudget
	}
	res := ScenarioResult{Scenario: cfg.Scenario, Seed: cfg.Seed, Hosts: cfg.Hosts, Objects: cfg.Objects, Budget: cfg.Budget}
	p := &ptRun{cfg: cfg, s: sim.New(sim.Config{Seed: cfg.Seed}, sim.NewTopology(cfg.Hosts+1, cfg.Seed)), r: rand.New(rand.NewPCG(cfg.Seed, 0x9a55)), chk: &Checker{}}
	k := dhash.DefaultConfig().Replicas
	p.k = k
	opts := deploy.DefaultOptions()
	mc := maint.DefaultConfig()
	mc.Interval = cfg.Interval
	mc.Budget = cfg.Budget
	if cfg.Audits != 0 {
		mc.Audits = max(cfg.Audits, 0)
	}
	opts.Maint = &mc
	p.factory = deploy.Factory(opts, func() node.Addr { return p.bootstrap() })
	for range cfg.Hosts {
		if _, err := p.s.AddHost(p.factory); err != nil {
			return res, err
		}
		p.s.RunFor(20 * time.Millisecond)
	}
	if err := waitStable(p.s, 5*time.Minute); err != nil {
		return res, err
	}
	p.s.RunFor(cfg.Interval)
	p.put(cfg.Objects)
	p.s.RunFor(2 * cfg.Interval) // every range whole before the event
	logf("sim passingtone: %d hosts, %d objects of %d bytes, k = %d, maintenance every %v; %d under %d copies before the event",
		cfg.Hosts, cfg.Objects, cfg.Size, k, cfg.Interval, len(p.under()), k)

	switch cfg.Scenario {
	case "restart":
		// A clean restart: down for a second, back with its disk.
		h := p.s.Hosts()[1]
		before := p.movedAll()
		p.s.Crash(h)
		p.s.RunFor(time.Second)
		if err := p.s.Restart(h); err != nil {
			return res, err
		}
		p.s.RunFor(3 * cfg.Interval)
		res.BytesMoved = p.movedAll().since(before)
		res.Note = "bytes moved on all hosts in the 3 maintenance periods after a host restarted within a second"
		res.Pass = res.BytesMoved == 0
	case "transient":
		// A host holding about 1/hosts of the keys as primary (2/hosts of
		// the copies) is down for 15 minutes while writes go on.
		h := p.s.Hosts()[1]
		p.s.Crash(h)
		newKeys := p.putFor(15*time.Minute, cfg.Objects/10)
		// What the host had to receive on return: the objects written
		// meanwhile whose replica set it is in once back.
		if err := p.s.Restart(h); err != nil {
			return res, err
		}
		res.BytesNeeded = p.bytesIn(newKeys, h)
		res.WholeAfterSecs = p.untilWhole(10 * cfg.Interval)
		res.BytesMoved = maintOf(h).Stats.BytesRepaired
		res.Note = "bytes moved to the host after a 15-minute failure, against the bytes written to its range meanwhile"
		res.Pass = float64(res.BytesMoved) <= 1.2*float64(res.BytesNeeded)
	case "addition":
		h, err := p.s.AddHost(p.factory)
		if err != nil {
			return res, err
		}
		p.s.RunFor(time.Minute)
		res.BytesNeeded = p.bytesIn(p.keys, h)
		res.WholeAfterSecs = p.untilWhole(10 * cfg.Interval)
		res.BytesMoved = maintOf(h).Stats.BytesRepaired
		res.Note = "bytes the new host pulled (global maintenance elsewhere may hand it some), against the bytes of the objects whose replica set it joined"
		res.Pass = res.BytesMoved <= res.BytesNeeded
	case "wipe":
		h := p.s.Hosts()[2]
		held := p.heldBy(h)
		before, fetchedBefore := p.movedAll(), p.fetchedAll()
		p.s.Wipe(h)
		p.s.RunFor(30 * time.Second)
		if err := p.s.Restart(h); err != nil {
			return res, err
		}
		res.WholeAfterSecs = p.untilWhole(10 * cfg.Interval)
		// Every copy the host held had to be made again, somewhere; and
		// the host, back at new positions, had to fill its new range,
		// which only its own budget can carry.
		pull := p.bytesIn(p.keys, h)
		res.BytesNeeded = p.bytesOf(held) + pull
		res.BytesMoved = p.movedAll().since(before)
		most := max(pull, p.fetchedAll().mostSince(fetchedBefore))
		res.BudgetSecs = float64(most) / float64(cfg.Budget)
		res.SlackSecs = (mc.Settle + 10*time.Second).Seconds() + float64(cfg.Size)/float64(cfg.Budget)
		res.Note = fmt.Sprintf("bytes moved on all hosts after a disk failure, against the copies lost plus the returned host's new range; "+
			"at %d B/s per host, the host that had to fetch the most (%d bytes) needs at least %.0fs", cfg.Budget, most, res.BudgetSecs)
		res.Pass = float64(res.BytesMoved) <= 1.2*float64(res.BytesNeeded) && res.WholeAfterSecs <= res.BudgetSecs+res.SlackSecs
	case "partition":
		var a, b []int
		for i := range p.s.Hosts() {
			if i%2 == 0 {
				a = append(a, i)
			} else {
				b = append(b, i)
			}
		}
		before := p.movedAll()
		p.s.Partition(a, b)
		newKeys := p.putFor(3*cfg.Interval, cfg.Objects/10)
		p.s.Heal()
		res.WholeAfterSecs = p.untilWhole(20 * cfg.Interval)
		res.BytesMoved = p.movedAll().since(before)
		res.BytesNeeded = uint64(len(newKeys)) * uint64(k) * uint64(cfg.Size)
		res.Note = fmt.Sprintf("bytes moved on all hosts during and after a partition of %v, against k copies of what was written meanwhile", 3*cfg.Interval)
		res.Pass = true
	case "liars":
		// Hosts spaced around the ring turn Byzantine (a clean restart as
		// liars: ack-and-drop, a lying tree, forged bytes); then more
		// objects are put, which they acknowledge too.
		liars := p.spaced(len(Liars))
		before := p.movedAll()
		var needed []id.ID
		for i, h := range liars {
			needed = append(needed, p.heldBy(h)...)
			p.s.Crash(h)
			h.Lie = Liars[i]
		}
		p.s.RunFor(time.Second)
		for _, h := range liars {
			if err := p.s.Restart(h); err != nil {
				return res, err
			}
		}
		p.s.RunFor(30 * time.Second)
		// The first liar also forges Leaves for an honest host: its ref as
		// it is, and its ID at the liar's own address. Neither may take the
		// host off its neighbours' lists.
		sent, refused, evicted := p.forgeLeaves(liars[0], p.honestSuccessor(liars[len(liars)-1]))
		res.ForgedLeaves, res.RefusedLeaves = sent, refused
		if evicted != "" {
			p.chk.violate("forged Leave: %s", evicted)
		}
		for _, b := range putBlocks(p.s, p.r, cfg.Objects/2, cfg.Size, wire.RedundancyReplicas, p.chk) {
			if b.key.IsZero() {
				continue
			}
			p.keys = append(p.keys, b.key)
			p.sizes[b.key] = cfg.Size
			if slices.ContainsFunc(b.holders, func(n wire.NodeRef) bool { return p.s.HostAt(n.Addr).Lie != 0 }) {
				needed = append(needed, b.key)
			}
		}
		// And some as fragments, which the forger serves forged: the
		// checker reads them back (dhash checks each fragment against the
		// descriptor its key names) and checks the honest holders'.
		for _, b := range putBlocks(p.s, p.r, cfg.Objects/10, cfg.Size, wire.RedundancyFragments, p.chk) {
			if !b.key.IsZero() {
				res.Fragmented++
			}
		}
		p.within = liarsWithin * cfg.Interval
		res.WholeAfterSecs = p.untilWhole(10 * cfg.Interval)
		p.chk.CheckCopies("after the liars' puts")
		p.chk.CheckReads(p.s, "after the liars' puts", p.r.IntN)
		// Then the disk of the first liar's honest successor fails: the
		// one honest copy the liar's acknowledged objects had, had the
		// liar's neighbours trusted its tree.
		victim := p.honestSuccessor(liars[0])
		// The liar's new successor has yet to find it out: the same
		// periods are claimed.
		p.s.Wipe(victim)
		p.untilWhole(10 * cfg.Interval)
		p.chk.CheckCopies("after a disk failure beside a liar")
		p.chk.CheckReads(p.s, "after a disk failure beside a liar", p.r.IntN)
		res.Lost = len(p.chk.Lost(p.s))
		res.BytesMoved = p.movedAll().since(before)
		res.BytesNeeded = p.bytesOf(needed)
		var audits, failed uint64
		for _, h := range p.s.Hosts() {
			if h.Up() && h.Lie == 0 {
				audits += maintOf(h).Stats.Audits
				failed += maintOf(h).Stats.AuditsFailed
			}
		}
		res.Note = fmt.Sprintf("bytes moved on all hosts after %d hosts turned liars (%v) and then %s's honest successor lost its disk, against the copies the liars were to hold; "+
			"%d audits by honest hosts, %d failed; %d forged Leaves, %d refused; %d objects as fragments; lost: %d", len(liars), Liars, liars[0].Lie, audits, failed, res.ForgedLeaves, res.RefusedLeaves, res.Fragmented, res.Lost)
		res.Pass = res.Lost == 0 && res.RefusedLeaves == res.ForgedLeaves
	}
	res.UnderReplicated = len(p.under())
	// The invariant: once the ring is stable, no object stays off its
	// replica set for more than two maintenance periods.
	res.Checked = p.chk.report()
	res.Pass = res.Pass && res.UnderReplicated == 0 && len(p.chk.Violations) == 0
	if res.BytesNeeded > 0 {
		res.MovedRatio = float64(res.BytesMoved) / float64(res.BytesNeeded)
	}
	res.WallSeconds = time.Since(wall).Seconds()
	return res, nil
}

type ptRun struct {
	cfg     PassingToneConfig
	s       *sim.Sim
	r       *rand.Rand
	k       int
	factory sim.Factory
	keys    []id.ID
	sizes   map[id.ID]int
	chk     *Checker
	// within is how long after an event placement is claimed (zero: two
	// maintenance periods).
	within time.Duration
}

func (p *ptRun) bootstrap() node.Addr {
	for _, h := range p.s.Hosts() {
		if h.Up() {
			return h.Addr
		}
	}
	return ""
}

func maintOf(h *sim.Host) *maint.Maint { return deploy.Of(h).Maint }

// put stores n objects now, 10 ms apart.
func (p *ptRun) put(n int) []id.ID {
	if p.sizes == nil {
		p.sizes = map[id.ID]int{}
	}
	var fresh []id.ID
	for _, b := range putBlocks(p.s, p.r, n, p.cfg.Size, wire.RedundancyReplicas, nil) {
		if !b.key.IsZero() {
			fresh = append(fresh, b.key)
			p.sizes[b.key] = p.cfg.Size
		}
	}
	p.keys = append(p.keys, fresh...)
	return fresh
}

// putFor keeps writing n objects spread over d, and returns their keys.
func (p *ptRun) putFor(d time.Duration, n int) []id.ID {
	end := p.s.Now() + d
	var fresh []id.ID
	for i := 0; i < n && p.s.Now() < end; i++ {
		fresh = append(fresh, p.put(1)...)
		p.s.RunFor(d / time.Duration(n+1))
	}
	p.s.RunUntil(end)
	return fresh
}

// under lists the objects with fewer than k copies on their replica set.
func (p *ptRun) under() []id.ID { return underPlaced(p.s, p.keys, p.k) }

// untilWhole runs until every object is at k copies on its replica set,
// for at most limit, and returns how long that took. Two maintenance
// periods in (or at the end, if sooner), the checker checks that
// placement: once the ring is stable, no key stays off its replica set
// longer than that.
func (p *ptRun) untilWhole(limit time.Duration) float64 {
	start := p.s.Now()
	checkAt := start + 2*p.cfg.Interval
	if p.within > 0 {
		checkAt = start + p.within
	}
	checked := false
	for p.s.Now()-start < limit && len(p.under()) > 0 {
		p.s.RunFor(time.Second)
		if !checked && p.s.Now() >= checkAt {
			p.chk.CheckPlacement(p.s, "the claimed periods after the event", p.keys, p.k)
			checked = true
		}
	}
	took := (p.s.Now() - start).Seconds()
	if !checked {
		p.s.RunUntil(max(checkAt, p.s.Now()))
		p.chk.CheckPlacement(p.s, "the claimed periods after the event", p.keys, p.k)
	}
	return took
}

// bytesIn sums the objects among keys whose replica set includes h.
func (p *ptRun) bytesIn(keys []id.ID, h *sim.Host) uint64 {
	var n uint64
	set := replicaSets(p.s, p.k)
	for _, key := range keys {
		if slices.Contains(set(key), h) {
			n += uint64(p.sizes[key])
		}
	}
	return n
}

func (p *ptRun) heldBy(h *sim.Host) []id.ID {
	var out []id.ID
	for _, key := range p.keys {
		if has(p.s, h, key) {
			out = append(out, key)
		}
	}
	return out
}

func (p *ptRun) bytesOf(keys []id.ID) uint64 {
	var n uint64
	for _, key := range keys {
		n += uint64(p.sizes[key])
	}
	return n
}

// moved is a snapshot of what maintenance has copied, per running host
// incarnation.
type moved map[*maint.Maint]uint64

// movedAll is a snapshot of what each running host's maintenance has
// copied: repairs and hand-overs.
func (p *ptRun) movedAll() moved {
	return p.snapshot(func(st maint.Stats) uint64 { return st.BytesRepaired + st.BytesHandedOver })
}

// fetchedAll is a snapshot of what each running host's maintenance has
// fetched for itself (what its own budget carried in).
func (p *ptRun) fetchedAll() moved {
	return p.snapshot(func(st maint.Stats) uint64 { return st.BytesRepaired })
}

// snapshot takes of from the maintenance counters of each running host.
func (p *ptRun) snapshot(of func(maint.Stats) uint64) moved {
	out := moved{}
	for _, h := range p.s.Hosts() {
		if h.Up() {
			m := maintOf(h)
			out[m] = of(m.Stats)
		}
	}
	return out
}

// mostSince is the most one incarnation added after the snapshot before.
func (now moved) mostSince(before moved) uint64 {
	var most uint64
	for m, b := range now {
		most = max(most, b-before[m])
	}
	return most
}

// since sums what was copied after the snapshot before: the whole count of
// an incarnation that started since.
func (now moved) since(before moved) uint64 {
	var n uint64
	for m, b := range now {
		n += b - before[m]
	}
	return n
}

// runningVnodes maps each running host's vnode IDs to the host.
func (p *ptRun) runningVnodes() map[id.ID]*sim.Host {
	hostOf := make(map[id.ID]*sim.Host)
	for _, h := range p.s.Hosts() {
		if h.Up() {
			for _, v := range chordOf(h).Vnodes() {
				hostOf[v.Self().ID] = h
			}
		}
	}
	return hostOf
}

// spaced picks n running hosts evenly spaced in ring order, from a random
// start: with n well under hosts/k, no replica set holds two of them.
func (p *ptRun) spaced(n int) []*sim.Host {
	o := newOracle(p.s)
	hostOf := p.runningVnodes()
	start := p.r.IntN(len(o.ids))
	var out []*sim.Host
	for i := range n {
		out = append(out, hostOf[o.ids[(start+i*len(o.ids)/n)%len(o.ids)]])
	}
	return out
}

// honestSuccessor is the running honest host next after h in ring order.
func (p *ptRun) honestSuccessor(h *sim.Host) *sim.Host {
	o := newOracle(p.s)
	hostOf := p.runningVnodes()
	at := chordOf(h).Vnodes()[0].Self().ID
	for range o.ids {
		at = o.successor(at.AddPow2(0))
		if x := hostOf[at]; x.Lie == 0 {
			return x
		}
	}
	return nil
}

// forgeLeaves has liar send Leaves in victim's name to victim's
// predecessor and successor: victim's own ref, and victim's ID at the
// liar's address. It returns the Leaves sent, how many the ring refused
// (ring.Stats.RefusedLeaves on the receivers), and, if a neighbour
// dropped victim from its lists, which.
func (p *ptRun) forgeLeaves(liar, victim *sim.Host) (sent, refused int, evicted string) {
	v := chordOf(victim).Vnodes()[0]
	self, pred, succ := v.Self(), v.Predecessor(), v.Successor()
	targets := []*sim.Host{p.s.HostAt(pred.Addr), p.s.HostAt(succ.Addr)}
	before := 0
	for _, h := range targets {
		before += int(chordOf(h).Stats.RefusedLeaves)
	}
	leave := &wire.Leave{Preds: v.Preds(), Succs: v.Succs()}
	for _, from := range []wire.NodeRef{self, {ID: self.ID, Addr: liar.Addr}} {
		for _, to := range []wire.NodeRef{pred, succ} {
			sent++
			p.s.Do(liar, func(env node.Env) {
				env.Send(to.Addr, wire.Envelope{Kind: wire.OneWay, From: from, To: to.ID, Msg: leave})
			})
		}
	}
	// Watched every 20 ms for a second: the victim's own stabilization
	// would undo an eviction within seconds.
	for end := p.s.Now() + time.Second; p.s.Now() < end && evicted == ""; {
		p.s.RunFor(20 * time.Millisecond)
		if s := chordOf(targets[0]).Vnodes()[0].Successor(); s.ID != self.ID {
			evicted = fmt.Sprintf("%s's successor is %s, not %s", pred.Addr, s.Addr, victim.Addr)
		}
		if s := chordOf(targets[1]).Vnodes()[0].Predecessor(); s.ID != self.ID {
			evicted = fmt.Sprintf("%s's predecessor is %s, not %s", succ.Addr, s.Addr, victim.Addr)
		}
	}
	p.s.RunFor(time.Second)
	for _, h := range targets {
		refused += int(chordOf(h).Stats.RefusedLeaves)
	}
	refused -= before
	return sent, refused, evicted
}
