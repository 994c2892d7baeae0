package tapestry_test

import (
	"slices"
	"testing"
	"time"

	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/sim"
	"triad/internal/tapestry"
	"triad/internal/wire"
)

// TestKilledRootIsRepairedWithin30s: when the root of many objects is
// killed, the nodes around it find it dead, send the pointers whose next
// hop it was on to the new root (path republish), and every object is
// located from every live node 30 s later; the new roots hold the
// pointers as roots.
func TestKilledRootIsRepairedWithin30s(t *testing.T) {
	m := newMesh(t, 13, 32, tapestry.DefaultConfig())
	servers := []int{3, 9, 15, 21}
	var keys []id.ID
	for _, i := range servers {
		keys = append(keys, m.publish(m.hosts[i], 15)...)
	}
	m.s.RunFor(10 * time.Second)
	victim, its := m.busiestRoot(keys, servers)
	m.s.Crash(victim)
	m.s.RunFor(30 * time.Second)
	failed := 0
	for _, l := range m.locate(keys, m.hosts) {
		if l.o.Status != wire.TapDelivered {
			if failed++; failed <= 10 {
				t.Errorf("30 s after the root %s was killed, locate %s from %s: %v (%v)", victim.Addr, l.key.Short(), l.from, l.o.Status, l.o.Err)
			}
		}
	}
	if failed > 0 {
		t.Errorf("%d locates failed; %s was the root of %d objects", failed, victim.Addr, len(its))
	}
	_, ids := m.live()
	for _, k := range keys {
		root := addrOf(m, tapestry.Root(ids, k, 4))
		if _, isRoot := tap(m.s.HostAt(root)).Pointers(k); !isRoot {
			t.Errorf("%s's new root %s holds no root pointer for it", k.Short(), root)
		}
	}
}

// TestDeadPrimaryIsReplacedByBackup: when the primary link of an entry
// dies, beacons find it, a backup takes its place at once, and no entry
// of any node names the dead node a minute later.
func TestDeadPrimaryIsReplacedByBackup(t *testing.T) {
	m := newMesh(t, 14, 48, tapestry.DefaultConfig())
	// An entry with a primary and a backup, on a node that is not the
	// bootstrap.
	var owner *sim.Host
	var entry wire.TapEntry
	for _, h := range m.hosts[1:] {
		for _, e := range tap(h).Table().Entries {
			if len(e.Links) >= 2 && e.Links[0].Addr != m.hosts[0].Addr {
				owner, entry = h, e
				break
			}
		}
		if owner != nil {
			break
		}
	}
	if owner == nil {
		t.Fatal("no entry has a backup")
	}
	primary, backup := entry.Links[0], entry.Links[1]
	m.s.Crash(m.s.HostAt(primary.Addr))
	m.s.RunFor(time.Minute)
	var now wire.TapEntry
	for _, e := range tap(owner).Table().Entries {
		if e.Level == entry.Level && e.Digit == entry.Digit {
			now = e
		}
	}
	if len(now.Links) == 0 || now.Links[0].Addr != backup.Addr || slices.ContainsFunc(now.Links, func(r wire.NodeRef) bool { return r.Addr == primary.Addr }) {
		t.Errorf("entry (%d, %x) of %s was %v; after its primary died it is %v, want %s first", entry.Level, entry.Digit, owner.Addr, entry.Links, now.Links, backup.Addr)
	}
	m.check()
}

// TestSimultaneousJoins: 16 nodes that join a 48-node mesh at the same
// instant all finish joining, and the tables end consistent: no hole
// where a live node has the prefix, no dead entry; routes end at the
// oracle's root.
func TestSimultaneousJoins(t *testing.T) {
	m := newMesh(t, 15, 48, tapestry.DefaultConfig())
	var joiners []*sim.Host
	for range 16 {
		joiners = append(joiners, m.add())
	}
	m.s.RunFor(2 * time.Minute)
	for _, h := range joiners {
		if !tap(h).Joined() {
			t.Errorf("%s has not joined after 2 minutes", h.Addr)
		}
	}
	m.check()
	_, ids := m.live()
	r := m.s.Rand()
	wrong := 0
	for range 100 {
		key := id.Random(r, id.Bytes)
		from := m.hosts[r.IntN(len(m.hosts))]
		want := tapestry.Root(ids, key, 4)
		m.s.Do(from, func(env node.Env) {
			tap(from).RouteToNode(env, key, tapestry.AppDOLR, false, nil, func(_ node.Env, o tapestry.Outcome) {
				if o.Status != wire.TapDelivered || o.Node.ID != want {
					wrong++
				}
			})
		})
	}
	m.s.RunFor(15 * time.Second)
	if wrong > 0 {
		t.Errorf("%d of 100 routes did not end at the oracle's root", wrong)
	}
}

// TestQuickRestartRejoins: a node killed and started again on the same
// data a second later, before any beacon finds it dead, joins again: the
// others still route its own ID to it, so its join must go around it to
// the surrogate the mesh has without it. Within 30 s it has joined, the
// tables are whole, and objects it serves are located from every node.
func TestQuickRestartRejoins(t *testing.T) {
	m := newMesh(t, 17, 24, tapestry.DefaultConfig())
	victim := m.hosts[11]
	keys := m.publish(victim, 20)
	m.s.RunFor(10 * time.Second)
	m.s.Crash(victim)
	m.s.RunFor(time.Second)
	if err := m.s.Restart(victim); err != nil {
		t.Fatal(err)
	}
	m.s.RunFor(30 * time.Second)
	if !tap(victim).Joined() {
		t.Fatalf("%s has not joined again 30 s after a quick restart", victim.Addr)
	}
	m.check()
	failed := 0
	for _, l := range m.locate(keys, m.hosts) {
		if l.o.Status != wire.TapDelivered || l.o.Node.Addr != victim.Addr {
			failed++
		}
	}
	if failed != 0 {
		t.Errorf("%d of %d locates of the restarted server's objects failed", failed, len(keys)*len(m.hosts))
	}
}

// TestFlashCrowdSettlesWithin40s: as many nodes as a 48-node mesh has
// join it at the same instant (a mass restart, a flash crowd). Joiners
// reach each other's tables only through repair: 40 s later, well inside
// the periodic repair's minute, every one has joined and the tables are
// whole, because each runs repair rounds of its own soon after its join.
func TestFlashCrowdSettlesWithin40s(t *testing.T) {
	m := newMesh(t, 21, 48, tapestry.DefaultConfig())
	var joiners []*sim.Host
	for range 48 {
		joiners = append(joiners, m.add())
	}
	m.s.RunFor(40 * time.Second)
	for _, h := range joiners {
		if !tap(h).Joined() {
			t.Errorf("%s has not joined after 40 s", h.Addr)
		}
	}
	m.check()
}

// TestDeadRootIsRoutedAroundAtOnce: the moment the root of many objects
// dies, before anything declares it dead, locates of its objects time out
// on it, go around it, and end at the node that is the root without it,
// which holds a copy of each root pointer: every one is found.
func TestDeadRootIsRoutedAroundAtOnce(t *testing.T) {
	m := newMesh(t, 23, 32, tapestry.DefaultConfig())
	servers := []int{2, 8, 14, 20}
	var keys []id.ID
	for _, i := range servers {
		keys = append(keys, m.publish(m.hosts[i], 15)...)
	}
	m.s.RunFor(10 * time.Second)
	victim, its := m.busiestRoot(keys, servers)
	m.s.Crash(victim)
	var froms []*sim.Host
	for _, h := range m.hosts {
		if h != victim && len(froms) < 8 {
			froms = append(froms, h)
		}
	}
	failed := 0
	for _, l := range m.locate(its, froms) {
		if l.o.Status != wire.TapDelivered {
			failed++
		}
	}
	if failed > 0 {
		t.Errorf("%d of %d locates of the %d objects rooted at %s failed in the seconds after it died", failed, len(its)*len(froms), len(its), victim.Addr)
	}
}

// TestRestartedRootKeepsItsPointers: the root of many objects is killed
// and started again a second later, before anything declared it dead, so
// routes go to it as the root again at once and nobody sends it the root
// pointers it lost. It reloads them (RootsFile): every object rooted at it
// is found 15 s after the restart, long before any server republishes.
func TestRestartedRootKeepsItsPointers(t *testing.T) {
	m := newMesh(t, 29, 32, tapestry.DefaultConfig())
	servers := []int{2, 8, 14, 20}
	var keys []id.ID
	for _, i := range servers {
		keys = append(keys, m.publish(m.hosts[i], 15)...)
	}
	m.s.RunFor(15 * time.Second) // past the roots' save
	victim, its := m.busiestRoot(keys, servers)
	m.s.Crash(victim)
	m.s.RunFor(time.Second)
	if err := m.s.Restart(victim); err != nil {
		t.Fatal(err)
	}
	m.s.RunFor(15 * time.Second)
	failed := 0
	for _, l := range m.locate(its, m.hosts[:8]) {
		if l.o.Status != wire.TapDelivered {
			failed++
		}
	}
	if failed > 0 {
		t.Errorf("%d of %d locates of the %d objects rooted at the restarted %s failed", failed, len(its)*8, len(its), victim.Addr)
	}
}

// TestRefusedHopKeepsItsLink: a node that refuses a hop (busy: here, still
// joining after a restart) is alive; the sender goes around it for that
// message but keeps it in its table. Forgetting it left holes in the
// tables of every node that routed to it meanwhile, and those nodes took
// themselves for the root of its keys.
func TestRefusedHopKeepsItsLink(t *testing.T) {
	m := newMesh(t, 31, 32, tapestry.DefaultConfig())
	victim := m.hosts[12]
	var holders []*sim.Host
	for _, h := range m.hosts {
		if h != victim && slices.ContainsFunc(tap(h).Table().Entries, func(e wire.TapEntry) bool {
			return slices.ContainsFunc(e.Links, func(r wire.NodeRef) bool { return r.Addr == victim.Addr })
		}) {
			holders = append(holders, h)
		}
	}
	vid := tap(victim).Self().ID
	m.s.Crash(victim)
	if err := m.s.Restart(victim); err != nil {
		t.Fatal(err)
	}
	// Routes to the victim's own ID while it is still joining: each hop
	// that reaches it is refused.
	for _, h := range holders {
		m.s.Do(h, func(env node.Env) {
			tap(h).RouteToNode(env, vid, tapestry.AppDOLR, false, nil, nil)
		})
	}
	m.s.RunFor(3 * time.Second)
	lost := 0
	for _, h := range holders {
		if !slices.ContainsFunc(tap(h).Table().Entries, func(e wire.TapEntry) bool {
			return slices.ContainsFunc(e.Links, func(r wire.NodeRef) bool { return r.Addr == victim.Addr })
		}) {
			lost++
		}
	}
	if lost > 0 {
		t.Errorf("%d of %d nodes that routed to %s while it refused took it out of their tables", lost, len(holders), victim.Addr)
	}
}

// busiestRoot is the node, neither the first nor a server, that is the
// oracle's root of the most of keys, and those keys.
func (m *mesh) busiestRoot(keys []id.ID, servers []int) (*sim.Host, []id.ID) {
	m.t.Helper()
	_, ids := m.live()
	rooted := map[id.ID][]id.ID{}
	for _, k := range keys {
		r := tapestry.Root(ids, k, 4)
		rooted[r] = append(rooted[r], k)
	}
	var victim *sim.Host
	for _, h := range m.hosts[1:] {
		if n := len(rooted[tap(h).Self().ID]); n > 0 && !slices.Contains(servers, h.Index) && (victim == nil || n > len(rooted[tap(victim).Self().ID])) {
			victim = h
		}
	}
	if victim == nil {
		m.t.Fatal("no node but the servers is a root")
	}
	return victim, rooted[tap(victim).Self().ID]
}

// TestMassJoinLeavesNoHole (issue 45: TestTapestryCluster failed in CI
// with a node that took itself for a key's root): 16 nodes join at once,
// on 150 seeds; 20 s after the last has joined, no table has an empty
// entry that a live node could fill. A repair round asked one link a
// level, and none for a level with no link: 41 of 300 such meshes had a
// hole 25 s on, and seeds 144 and 149 a node whose whole first level
// stayed empty for good.
func TestMassJoinLeavesNoHole(t *testing.T) {
	bad := 0
	for seed := uint64(1); seed <= 150; seed++ {
		cfg := tapestry.DefaultConfig()
		cfg.Beacon = 5 * time.Second // TestTapestryCluster's
		m := &mesh{t: t, s: sim.New(sim.Config{Seed: seed}, sim.NewTopology(16, seed)), cfg: cfg}
		m.add()
		m.s.RunFor(time.Second)
		for range 15 {
			m.add()
		}
		joined := false
		for i := 0; i < 120 && !joined; i++ {
			m.s.RunFor(time.Second)
			joined = true
			for _, h := range m.hosts {
				joined = joined && tap(h).Joined()
			}
		}
		if !joined {
			t.Fatalf("seed %d: not every node joined within 2 minutes", seed)
		}
		m.s.RunFor(20 * time.Second)
		live, _ := m.live()
		for _, h := range m.hosts {
			if vs := tapestry.Check(tap(h), live, 3); len(vs) > 0 {
				if bad++; bad <= 5 {
					t.Errorf("seed %d: %v", seed, vs)
				}
				break
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of 150 meshes with a hole 20 s after every node joined", bad)
	}
}
