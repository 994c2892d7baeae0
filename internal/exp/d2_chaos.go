package exp

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"triad/internal/d2"
	"triad/internal/d2/key"
	"triad/internal/host"
	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/sim"
	"triad/internal/wire"
)

// The chaos experiment (issue 43, item 6, the simulator's half of `triad
// chaos --d2`): internal/d2's node code on the simulator, under crashes,
// restarts, wiped disks, cold restarts (every node down at once) and
// partitions, while a writer puts new blocks and renews a lease as D2-FS
// does; an invariant checker runs during the run and after it.
//
// One failure at a time, as `triad chaos --d2` does: a node crashed and
// started again (the lease key's owner every other time; every
// chaosWipeEvery-th start on an empty disk, which also loses the saved
// position and peers), a cold restart or a partition; the next crash
// comes 5-30 s after the last failure ends (after a cold restart or a
// partition, once its check is done and a sync round has passed). A node
// starts as a deployment's would (deploy.Node's bootstraps): told to join
// through the first host, with the peers its ring layer saved on its
// disk. The writer is a client on the larger side of a partition: it
// reaches only the gateways there.
//
// The invariants:
//   - placement: once the failures are over and the ring has had
//     chaosSettle to repair (a few sync intervals), every block put
//     acknowledged with chaosMinCopies copies or more is held, with its
//     bytes, by the r live nodes that are its key's owner and the owner's
//     successors on the ring of the joined nodes (the oracle);
//   - read: and a Get through a random node returns it;
//   - lease-fork: one holder at a time: no two acknowledged lease puts
//     named the same previous bytes (the IfHash chain never forks);
//   - lease-latest: at the end, Latest of the lease key answers the bytes
//     of the writer's last acknowledged lease put; during the run, a
//     Latest the writer reads (after a conflict) answers that record or a
//     later one, or fails: never an older one, nor none (d2.Node.Latest
//     sees every put acknowledged before it);
//   - cold-start: within chaosColdBound of a cold restart's last start,
//     every node has joined and exactly one founded the ring;
//   - ring: chaosHealBound after a partition heals, and at the end, the
//     nodes are one ring: every node's successor and predecessor are the
//     oracle's;
//   - lost (every chaosLostEvery): an acknowledged block is on some disk,
//     of a host up or down;
//   - joined (at the end): every node is up and on the ring.

// D2Chaos is the chaos experiment's name for `triad sim d2 --experiment`.
// It is not one of D2Experiments: "all" reproduces the paper's figures,
// this checks invariants.
const D2Chaos = "chaos"

// D2ChaosHelp is what `triad sim d2 --help` says of the chaos experiment.
const D2ChaosHelp = `
--experiment chaos (not part of all) runs internal/d2's node code on 48
simulated hosts (--quick: 16), r = 3, balancing off, stabilizing every 5 s,
syncing replicas every minute, for 3 simulated hours of failures (--quick:
30 minutes), one at a time, the next 5-30 s after the last ends: a node
crashed for 5-60 s and started again (the lease key's owner every other
time; every 4th start on a wiped disk, its position and saved peers lost
with it, but never the first node's, which the others are told to join
through), 2 cold restarts (every node down for 20-60 s, then started again
over 20 s, each with the first node's address and the 16 successors and
predecessors by ring ID its disk saved) and 2 partitions (a random quarter
of the nodes cut off for 1-3 minutes). Meanwhile a writer, through random
live nodes (on the larger side of a partition), puts new blocks if absent
(D2-FS's superblocks) every 2 s and replaces a lease block every 3 s with
IfHash of the bytes it last wrote (on a conflict it reads Latest and
retakes the lease over its own record, as D2-FS does). Then the ring
settles for 6 minutes and the checker runs.

Violations: an acknowledged (2 copies or more) block not held by its key's
3 successors on the ring of the joined nodes (placement), or not read back
with its SHA-256 (read); two acknowledged lease puts that replaced the same
bytes: the lease's chain forked, two holders (lease-fork); Latest of the
lease key answering an older record than the last acknowledged one, or
none, during the run, or other than the last acknowledged bytes at the end
(lease-latest); a cold restart after which some node had not joined within
6 stabilization rounds, or more or fewer than one node founded the ring
(cold-start); the nodes not one ring, with the oracle's successors and
predecessors, a minute after a partition heals or at the end (ring); an
acknowledged block on no disk at all, checked every 5 minutes (lost); a
node not on the ring at the end (joined). The first few of each are
printed; --check exits non-zero on any.`

// The chaos run's timing. Sync and pointer stabilization are scaled down
// from d2.DefaultConfig's (5 minutes and an hour) so that the ring repairs
// within the run; chaosSettle is what the checker waits after the last
// failure: the pointer time and four sync rounds.
const (
	chaosStabilize = 5 * time.Second
	chaosSync      = time.Minute
	chaosPointers  = 2 * time.Minute
	chaosSettle    = chaosPointers + 4*chaosSync
	chaosColdBound = 6 * chaosStabilize // every node joined after a cold restart
	chaosHealBound = chaosSync          // the ring whole again after a partition

	chaosPutEvery   = 2 * time.Second
	chaosLeaseEvery = 3 * time.Second
	chaosReadEvery  = 10 * time.Second
	chaosLostEvery  = 5 * time.Minute
	// chaosClientTimeout is how long the writer waits for an answer; a
	// gateway that crashed never gives one.
	chaosClientTimeout = time.Minute

	chaosMinDown, chaosMaxDown = 5 * time.Second, 60 * time.Second
	chaosMinGap, chaosMaxGap   = 5 * time.Second, 30 * time.Second // between one failure's end and the next crash
	chaosWipeEvery             = 4
	chaosColdMinDown           = 20 * time.Second
	chaosColdMaxDown           = 60 * time.Second
	chaosStagger               = 20 * time.Second // a cold restart's starts are spread over this
	chaosMinPartition          = time.Minute
	chaosMaxPartition          = 3 * time.Minute

	chaosMinCopies = 2 // an acknowledged put: stored on this many nodes at least
	chaosShown     = 5 // instances of each invariant's violations listed
)

// chaosNodeConfig is the nodes' D2: the default, balancing off, with the
// faster timers above.
func chaosNodeConfig() d2.Config {
	c := d2.DefaultConfig()
	c.CheckPeers = false // its writer uses the hosts' own API, unsigned
	c.Threshold = 0
	c.Stabilize = chaosStabilize
	c.Sync = chaosSync
	c.PointerStabilization = chaosPointers
	return c
}

// d2ChaosSizes is how big a chaos run is.
type d2ChaosSizes struct {
	Nodes   int
	Volumes int           // whose superblocks the writer puts; the lease is volume 0's
	Length  time.Duration // of the failures
	// ColdRestarts and Partitions are spread over Length, in turn.
	ColdRestarts, Partitions int
}

// D2ChaosConfig is one run of the chaos experiment.
type D2ChaosConfig struct {
	Seed  uint64
	Quick bool
	Log   io.Writer
	// Rogue runs the last node as an insider (issue 44, `sim d2
	// --scenario rogue`): at a position aimed at the end of the writer's
	// last volume, so that it owns the volume's blocks, it answers every
	// put it owns with three copies and keeps none (d2.Config.AckAndDrop),
	// and it never moves to balance load.
	Rogue bool

	// Set by tests: sizes in place of Quick's or the full run's; node
	// changes the nodes' configuration; tamper runs just before the final
	// checks, to show that they catch what it breaks.
	sizes  *d2ChaosSizes
	node   func(*d2.Config)
	tamper func(c *d2Chaos)
	// trace, if set, receives a line per failure and lease operation.
	trace io.Writer
}

func (c D2ChaosConfig) size() d2ChaosSizes {
	switch {
	case c.sizes != nil:
		return *c.sizes
	case c.Quick:
		return d2ChaosSizes{Nodes: 16, Volumes: 8, Length: 30 * time.Minute, ColdRestarts: 2, Partitions: 2}
	}
	return d2ChaosSizes{Nodes: 48, Volumes: 24, Length: 3 * time.Hour, ColdRestarts: 2, Partitions: 2}
}

// D2ChaosResult is what a chaos run did and found.
type D2ChaosResult struct {
	Seed          uint64  `json:"seed"`
	Experiment    string  `json:"experiment"`
	Quick         bool    `json:"quick"`
	Nodes         int     `json:"nodes"`
	ChaosMinutes  float64 `json:"chaos_minutes"`
	SettleMinutes float64 `json:"settle_minutes"` // from the last failure's end to the final checks (at least chaosSettle)

	// The writer's new blocks: Acked were acknowledged with 2 copies or
	// more (the checker holds the ring to them), AckedShort with one,
	// Failed failed, Unanswered never answered (the gateway crashed).
	Puts       int `json:"puts"`
	Acked      int `json:"acked"`
	AckedShort int `json:"acked_short"`
	Failed     int `json:"puts_failed"`
	Unanswered int `json:"puts_unanswered"`
	// The lease: puts tried, acknowledged with 2 copies or more,
	// conflicts, retakes (a conflict after which Latest named the
	// writer's own record), and puts or Latests that failed or timed out.
	LeasePuts      int `json:"lease_puts"`
	LeaseAcked     int `json:"lease_acked"`
	LeaseConflicts int `json:"lease_conflicts"`
	LeaseRetakes   int `json:"lease_retakes"`
	LeaseFailed    int `json:"lease_failed"`
	// Reads are Gets of acknowledged blocks during the failures (a
	// figure, not an invariant).
	Reads       int `json:"reads"`
	ReadsFailed int `json:"reads_failed"`

	Crashes      int `json:"crashes"`       // single nodes crashed and started again
	OwnerCrashes int `json:"owner_crashes"` // of them, the lease key's owner
	Wipes        int `json:"wipes"`         // starts on an empty disk
	ColdRestarts int `json:"cold_restarts"`
	// ColdJoinSeconds is, per cold restart, from its last start until
	// every node had joined (-1: not within 5 minutes); Founders the
	// nodes that founded the ring again.
	ColdJoinSeconds []float64 `json:"cold_join_seconds"`
	Founders        []int     `json:"founders"`
	Partitions      int       `json:"partitions"`

	// With Rogue: the writer's puts to the volume the rogue aims at,
	// those acknowledged, and the copies gateways found an owner claimed
	// without holding (d2.Stats.CopiesUnverified, every node).
	RogueHost        int `json:"rogue_host,omitempty"`
	RoguePuts        int `json:"rogue_volume_puts,omitempty"`
	RogueAcked       int `json:"rogue_volume_acked,omitempty"`
	CopiesUnverified int `json:"copies_unverified,omitempty"`
	// Reads of the rogue's volume during the failures, and those failed;
	// the nodes that distrust the rogue at the end (d2's audit.go).
	RogueReads        int `json:"rogue_volume_reads,omitempty"`
	RogueReadsFailed  int `json:"rogue_volume_reads_failed,omitempty"`
	RogueDistrustedBy int `json:"rogue_distrusted_by,omitempty"`

	Violations  int            `json:"violations"`
	ByInvariant map[string]int `json:"violations_by_invariant,omitempty"`
	Violated    []string       `json:"violated,omitempty"` // the first few
	// TraceHash is the simulator's hash of every event: a seed gives the
	// same run, and so the same hash, every time.
	TraceHash   uint64  `json:"trace_hash"`
	WallSeconds float64 `json:"wall_seconds"`
}

// chaosBlock is a block the writer put: volume v's superblock of commit
// gen.
type chaosBlock struct {
	k      id.ID
	data   []byte
	v, gen uint32
}

func (b chaosBlock) String() string { return fmt.Sprintf("superblock %d of volume %d", b.gen, b.v) }

// window is a stretch of virtual time.
type window struct{ from, to time.Duration }

// chaosEvent is a planned cold restart or partition.
type chaosEvent struct {
	at   time.Duration
	cold bool
	dur  time.Duration // cold: every node down this long; partition: how long it lasts
}

// d2Chaos is one run in progress.
type d2Chaos struct {
	cfg   d2.Config
	rogue int // the rogue host's index, -1 for none (D2ChaosConfig.Rogue)
	sz    d2ChaosSizes
	s     *sim.Sim
	hosts []*sim.Host
	nodes []*d2.Node // each host's node, of its current incarnation
	saved []bool     // each host's disk holds its saved peers
	chord []int      // the hosts in ring-ID order (their ring layer's)
	fail  *rand.Rand // the failures' choices
	write *rand.Rand // the writer's
	res   *D2ChaosResult
	err   error // a host that would not start: the run stops
	log   io.Writer
	trace io.Writer

	start, end time.Duration // of the failures
	hold       []window      // no crash begins in these (the planned events)
	down       int           // the host crashed on its own; -1: none
	starts     int           // restarts after a crash of one node
	minority   []bool        // the partition's smaller side; nil: healed
	lastFault  time.Duration // when the last failure ended
	stopAt     time.Duration // the writer stops (the final checks near)

	vols   []key.Volume
	gens   []uint32
	blocks []chaosBlock // acknowledged with chaosMinCopies or more
	lost   map[int]bool // blocks reported lost
	lease  chaosLease
}

// RunD2Chaos runs the chaos experiment.
func RunD2Chaos(cfg D2ChaosConfig) (D2ChaosResult, error) {
	wall := time.Now()
	c, err := newD2Chaos(cfg)
	if err != nil {
		return D2ChaosResult{}, err
	}
	c.start = c.s.Now()
	c.end = c.start + c.sz.Length
	c.schedule(c.plan())
	for t := c.start; t < c.end && c.err == nil; t += 5 * time.Minute {
		c.s.RunUntil(min(t+5*time.Minute, c.end))
		logf(c.log, "sim d2 chaos: %.0f of %.0f minutes of failures, %d crashes, %d violations, %.0fs of wall time",
			(c.s.Now() - c.start).Minutes(), c.sz.Length.Minutes(), c.res.Crashes, c.res.Violations, time.Since(wall).Seconds())
	}
	if c.err == nil {
		c.quiesce()
	}
	if c.err != nil {
		return *c.res, c.err
	}
	if cfg.tamper != nil {
		cfg.tamper(c)
	}
	c.finalChecks()
	for _, n := range c.nodes {
		if n != nil {
			c.res.CopiesUnverified += int(n.Stats.CopiesUnverified)
		}
	}
	c.res.TraceHash = c.s.TraceHash()
	c.res.WallSeconds = time.Since(wall).Seconds()
	return *c.res, nil
}

// newD2Chaos boots the ring: one host a second, each joining through the
// first, until all have joined and stabilized.
func newD2Chaos(cfg D2ChaosConfig) (*d2Chaos, error) {
	sz := cfg.size()
	nc := chaosNodeConfig()
	if cfg.node != nil {
		cfg.node(&nc)
	}
	c := &d2Chaos{cfg: nc, sz: sz, s: sim.New(sim.Config{Seed: cfg.Seed}, sim.NewTopology(sz.Nodes, cfg.Seed)), rogue: -1,
		nodes: make([]*d2.Node, sz.Nodes), saved: make([]bool, sz.Nodes),
		fail: rand.New(rand.NewPCG(cfg.Seed, 0xfa11)), write: rand.New(rand.NewPCG(cfg.Seed, 0x5717e)),
		down: -1, stopAt: math.MaxInt64, lost: map[int]bool{}, log: cfg.Log, trace: cfg.trace,
		res: &D2ChaosResult{Seed: cfg.Seed, Experiment: D2Chaos, Quick: cfg.Quick, Nodes: sz.Nodes,
			ChaosMinutes: sz.Length.Minutes(), ByInvariant: map[string]int{}}}
	nonce := binary.BigEndian.AppendUint64(nil, cfg.Seed)
	for v := range max(sz.Volumes, 1) {
		c.vols = append(c.vols, key.VolumeOf(fmt.Sprintf("chaos volume %d", v), nonce))
	}
	c.gens = make([]uint32, len(c.vols))
	c.lease = chaosLease{k: key.Root(c.vols[0]).WithBlock(1, 0).ID(), holder: fmt.Sprintf("chaos lease of writer %d", cfg.Seed),
		prevs: map[string]int{}}
	if cfg.Rogue {
		if len(c.vols) < 2 {
			return nil, errors.New("sim d2 chaos: a rogue needs two volumes (it aims at the last; the lease is the first's)")
		}
		c.rogue, c.res.RogueHost = sz.Nodes-1, sz.Nodes-1
	}
	for i := range sz.Nodes {
		h, err := c.s.AddHost(c.factory(i))
		if err != nil {
			return nil, err
		}
		c.hosts = append(c.hosts, h)
		c.chord = append(c.chord, i)
		c.s.RunFor(time.Second)
	}
	slices.SortFunc(c.chord, func(a, b int) int { return c.ringID(a).Cmp(c.ringID(b)) })
	for range 360 {
		if len(c.ring()) == sz.Nodes {
			break
		}
		c.s.RunFor(10 * time.Second)
	}
	if j := len(c.ring()); j < sz.Nodes {
		return nil, fmt.Errorf("sim d2 chaos: %d of %d nodes joined in an hour", j, sz.Nodes)
	}
	c.s.RunFor(10 * nc.Stabilize)
	return c, nil
}

// factory starts host i's node: its position from its disk (a random one
// on an empty disk), its blocks from its D2 engine, and as bootstraps the
// first host and the peers its disk saved (bootstraps).
func (c *d2Chaos) factory(i int) sim.Factory {
	return func(addr node.Addr, st node.Storage, r *rand.Rand) (node.Handler, error) {
		h, err := host.New(host.DefaultConfig(), addr)
		if err != nil {
			return nil, err
		}
		_, saved := st.ReadFile(d2.PositionFile)
		pos, err := d2.LoadPosition(st, r)
		if err != nil {
			return nil, err
		}
		self := wire.NodeRef{ID: id.Key([]byte(addr)), Addr: addr}
		cfg := c.cfg
		if c.rogue == i {
			cfg.AckAndDrop, cfg.Threshold = true, 0
			if saved != nil { // a first start, or a wiped disk: aim again
				pos = c.rogueAim()
			}
		}
		cfg.Seed = addr // the first node: every other is told to join through it
		if i > 0 {
			cfg.Seed = c.hosts[0].Addr
		}
		d, err := d2.New(cfg, h, self, pos, d2.EngineOf(st), c.bootstraps(i))
		if err != nil {
			return nil, err
		}
		c.nodes[i] = d
		return h, nil
	}
}

// rogueAim is the position the rogue takes: the last key of the writer's
// last volume, so that it owns the volume's blocks.
func (c *d2Chaos) rogueAim() id.ID {
	v := c.vols[len(c.vols)-1]
	b := bytes.Repeat([]byte{0xff}, d2.KeyBytes)
	copy(b, v[:])
	x, _ := id.FromBytes(b)
	return x
}

// ringID is host i's ring ID, which its address gives (the ring layer's
// and the envelopes' sender).
func (c *d2Chaos) ringID(i int) id.ID { return id.Key([]byte(c.hosts[i].Addr)) }

// chaosSavedPeers is how many successors, and as many predecessors, by
// ring ID a host's disk names: internal/ring's default successor list.
const chaosSavedPeers = 16

// bootstraps are what a deployment gives host i's D2 (deploy.Node's
// bootstraps): the address it was told to join through (the first host;
// the first host itself has none: it founded the ring), then the peers
// its ring layer saved on its disk (internal/ring's State: successors
// and predecessors by ring ID), which a wiped disk no longer has.
func (c *d2Chaos) bootstraps(i int) []node.Addr {
	var out []node.Addr
	if i > 0 {
		out = append(out, c.hosts[0].Addr)
	}
	if !c.saved[i] {
		return out
	}
	at := slices.Index(c.chord, i)
	n := len(c.chord)
	for _, dir := range []int{1, n - 1} {
		for k := 1; k <= min(chaosSavedPeers, n-1); k++ {
			if j := c.chord[(at+dir*k)%n]; j != 0 && !slices.Contains(out, c.hosts[j].Addr) {
				out = append(out, c.hosts[j].Addr)
			}
		}
	}
	return out
}

// savePeers notes that host i's disk holds saved peers once it has been
// on the ring (a deployment's ring layer saves them as it runs).
func (c *d2Chaos) savePeers(i int) {
	c.saved[i] = c.saved[i] || c.nodes[i].Joined()
}

// violate records a broken invariant, and its first few instances.
func (c *d2Chaos) violate(invariant, format string, args ...any) {
	c.res.Violations++
	c.res.ByInvariant[invariant]++
	if c.res.ByInvariant[invariant] <= chaosShown {
		at := (c.s.Now() - c.start).Round(time.Second)
		c.res.Violated = append(c.res.Violated, fmt.Sprintf("%s at %v: %s", invariant, at, fmt.Sprintf(format, args...)))
	}
}

// tracef writes a line to the trace, if there is one: the time, then
// the line.
func (c *d2Chaos) tracef(format string, args ...any) {
	if c.trace != nil {
		fmt.Fprintf(c.trace, "%9v %s\n", (c.s.Now() - c.start).Round(time.Millisecond), fmt.Sprintf(format, args...))
	}
}

// chaosMember is a node on the oracle's ring.
type chaosMember struct {
	pos  id.ID
	host int
}

// ring is the oracle: the live joined nodes by position.
func (c *d2Chaos) ring() []chaosMember {
	var out []chaosMember
	for i, h := range c.hosts {
		if n := c.nodes[i]; h.Up() && n.Joined() {
			out = append(out, chaosMember{pos: n.Me().Pos, host: i})
		}
	}
	slices.SortFunc(out, func(a, b chaosMember) int { return a.pos.Cmp(b.pos) })
	return out
}

// holders are k's r holders on ring: its owner (the first position at or
// after k) and the owner's successors, as host indices.
func holders(ring []chaosMember, k id.ID, r int) []int {
	if len(ring) == 0 {
		return nil
	}
	i, _ := slices.BinarySearchFunc(ring, k, func(m chaosMember, k id.ID) int { return m.pos.Cmp(k) })
	var out []int
	for j := range min(r, len(ring)) {
		out = append(out, ring[(i+j)%len(ring)].host)
	}
	return out
}

// engineHas reports whether host i's disk holds data under k.
func (c *d2Chaos) engineHas(i int, b chaosBlock) bool {
	got, _, err := d2.EngineOf(c.hosts[i].Storage()).Get(b.k)
	return err == nil && bytes.Equal(d2.BlockOf(got), b.data)
}

// WriteText prints the run for people.
func (r D2ChaosResult) WriteText(w io.Writer) {
	fmt.Fprintf(w, "sim d2 chaos, seed %d, quick %v: %d nodes, %.0f minutes of failures, checked %.0f minutes after the last\n",
		r.Seed, r.Quick, r.Nodes, r.ChaosMinutes, r.SettleMinutes)
	fmt.Fprintf(w, "writer: %d new blocks put: %d acknowledged with 2 copies or more (checked), %d with one, %d failed, %d unanswered\n",
		r.Puts, r.Acked, r.AckedShort, r.Failed, r.Unanswered)
	fmt.Fprintf(w, "lease: %d puts, %d acknowledged with 2 copies or more, %d conflicts, %d retaken over its own record, %d failed; reads during the failures %d, %d failed\n",
		r.LeasePuts, r.LeaseAcked, r.LeaseConflicts, r.LeaseRetakes, r.LeaseFailed, r.Reads, r.ReadsFailed)
	fmt.Fprintf(w, "failures: %d crashes (%d of the lease key's owner), %d wipes, %d cold restarts (every node joined after %v s; founders %v), %d partitions\n",
		r.Crashes, r.OwnerCrashes, r.Wipes, r.ColdRestarts, r.ColdJoinSeconds, r.Founders, r.Partitions)
	if r.RogueHost > 0 {
		fmt.Fprintf(w, "rogue: host %d aimed at the last volume, acknowledging what it owns or is given without keeping it: %d puts to that volume, %d acknowledged (on copies gateways confirmed); %d copies claimed and not held; reads of that volume during the failures %d, %d failed; distrusted at the end by %d nodes\n",
			r.RogueHost, r.RoguePuts, r.RogueAcked, r.CopiesUnverified, r.RogueReads, r.RogueReadsFailed, r.RogueDistrustedBy)
	}
	fmt.Fprintf(w, "violations: %d", r.Violations)
	for _, k := range []string{"placement", "read", "lease-fork", "lease-latest", "cold-start", "lost", "ring", "joined", "distrust", "rogue"} {
		if n := r.ByInvariant[k]; n > 0 {
			fmt.Fprintf(w, "  %s %d", k, n)
		}
	}
	fmt.Fprintln(w)
	for _, v := range r.Violated {
		fmt.Fprintf(w, "  %s\n", v)
	}
	fmt.Fprintf(w, "wall time %.1fs\n", r.WallSeconds)
}

// The failures.

// plan places the cold restarts and partitions over the failures, in
// turn (a partition first), each near the middle of a slot of its own.
func (c *d2Chaos) plan() []chaosEvent {
	colds, parts := c.sz.ColdRestarts, c.sz.Partitions
	k := colds + parts
	if k == 0 {
		return nil
	}
	slot := c.sz.Length / time.Duration(k+1)
	var out []chaosEvent
	for j := range k {
		cold := colds > 0 && (j%2 == 1 || parts == 0)
		if cold {
			colds--
		} else {
			parts--
		}
		at := c.start + slot*time.Duration(j+1) + time.Duration(c.fail.Int64N(int64(slot/4)+1)) - slot/8
		ev := chaosEvent{at: at, cold: cold, dur: between(c.fail, chaosMinPartition, chaosMaxPartition)}
		if cold {
			ev.dur = between(c.fail, chaosColdMinDown, chaosColdMaxDown)
		}
		out = append(out, ev)
	}
	return out
}

// between is a random duration in [lo, hi].
func between(r *rand.Rand, lo, hi time.Duration) time.Duration {
	return lo + time.Duration(r.Int64N(int64(hi-lo)+1))
}

// schedule sets the run going: the planned events, the crashes, the
// writer and the checker's rounds.
func (c *d2Chaos) schedule(events []chaosEvent) {
	for _, ev := range events {
		// No crash in the event, nor until its check and a sync round
		// after; one begun just before it is over before it starts.
		w := window{from: ev.at - chaosMaxDown - 15*time.Second}
		if ev.cold {
			w.to = ev.at + ev.dur + chaosStagger + chaosColdBound + c.cfg.Sync
			c.s.At(ev.at, func() { c.coldRestart(ev) })
		} else {
			w.to = ev.at + ev.dur + chaosHealBound + c.cfg.Sync
			c.s.At(ev.at, func() { c.partition(ev) })
		}
		c.hold = append(c.hold, w)
	}
	c.s.At(c.start+between(c.fail, chaosMinGap, chaosMaxGap), c.crashNext)
	c.s.At(c.start, c.putTick)
	c.s.At(c.start+time.Second, c.leaseTick)
	c.s.At(c.start+chaosReadEvery, c.readTick)
	c.s.At(c.start+chaosLostEvery, c.lostTick)
}

// held is the hold window t falls in, if any.
func (c *d2Chaos) held(t time.Duration) (window, bool) {
	for _, w := range c.hold {
		if t >= w.from && t < w.to {
			return w, true
		}
	}
	return window{}, false
}

// crashNext crashes a node (the lease key's owner every other time, else
// a random live one) and schedules its start again.
func (c *d2Chaos) crashNext() {
	now := c.s.Now()
	if now+chaosMaxDown >= c.end || c.err != nil {
		return
	}
	if w, in := c.held(now); in {
		c.s.At(w.to, c.crashNext)
		return
	}
	i := -1
	if c.res.Crashes%2 == 0 {
		if hs := holders(c.ring(), c.lease.k, 1); len(hs) == 1 {
			i = hs[0]
			c.res.OwnerCrashes++
		}
	}
	if i < 0 {
		var up []int
		for j, h := range c.hosts {
			if h.Up() {
				up = append(up, j)
			}
		}
		i = up[c.fail.IntN(len(up))]
	}
	c.savePeers(i)
	c.s.Crash(c.hosts[i])
	c.down = i
	c.res.Crashes++
	c.tracef("crash %s; lease: %s", c.hosts[i].Addr, c.leaseView())
	c.s.At(now+between(c.fail, chaosMinDown, chaosMaxDown), func() { c.startAgain(i) })
}

// startAgain starts the crashed host i, every chaosWipeEvery-th time on
// an empty disk (not the first host's, which the others are told to join
// through and which, wiped, would found a ring of its own, as `triad chaos
// --d2` spares it: the next start's is wiped instead), and schedules the
// next crash.
func (c *d2Chaos) startAgain(i int) {
	c.starts++
	h := c.hosts[i]
	wipe := c.starts >= chaosWipeEvery*(c.res.Wipes+1) && i != 0
	if wipe {
		c.s.Wipe(h)
		c.saved[i] = false // the saved peers were on the disk
		c.res.Wipes++
	}
	if err := c.s.Restart(h); err != nil {
		c.err = err
		return
	}
	c.tracef("start %s (wiped %v) at %s", h.Addr, wipe, c.nodes[i].Me().Pos.Short())
	c.down = -1
	now := c.s.Now()
	c.lastFault = now
	c.s.At(now+between(c.fail, chaosMinGap, chaosMaxGap), c.crashNext)
}

// partition cuts a random quarter of the nodes off for ev.dur.
func (c *d2Chaos) partition(ev chaosEvent) {
	n := len(c.hosts)
	cut := c.fail.Perm(n)[:max(n/4, 1)]
	slices.Sort(cut)
	c.minority = make([]bool, n)
	for _, i := range cut {
		c.minority[i] = true
	}
	c.s.Partition(cut)
	c.res.Partitions++
	c.tracef("partition: %v cut off; lease: %s", cut, c.leaseView())
	round := c.res.Partitions
	c.s.At(ev.at+ev.dur, func() {
		c.tracef("heal")
		c.s.Heal()
		c.minority = nil
		c.lastFault = c.s.Now()
	})
	c.s.At(ev.at+ev.dur+chaosHealBound, func() { c.checkHealed(round) })
}

// checkHealed: chaosHealBound after a partition healed, the nodes are
// one ring again.
func (c *d2Chaos) checkHealed(round int) {
	c.checkRing(c.ring(), fmt.Sprintf("%v after partition %d healed", chaosHealBound, round))
}

// coldRestart crashes every node at once and starts them all again
// ev.dur later, over chaosStagger in a random order; then the checker
// times the joins and checks the founding.
func (c *d2Chaos) coldRestart(ev chaosEvent) {
	for i, h := range c.hosts {
		if h.Up() {
			c.savePeers(i)
			c.s.Crash(h)
		}
	}
	c.res.ColdRestarts++
	c.tracef("cold restart: every node down")
	round := len(c.res.Founders)
	c.res.Founders = append(c.res.Founders, 0)
	c.res.ColdJoinSeconds = append(c.res.ColdJoinSeconds, -1)
	var last time.Duration
	for _, i := range c.fail.Perm(len(c.hosts)) {
		at := ev.at + ev.dur + time.Duration(c.fail.Int64N(int64(chaosStagger)+1))
		last = max(last, at)
		c.s.At(at, func() {
			if err := c.s.Restart(c.hosts[i]); err != nil && c.err == nil {
				c.err = err
			}
			c.tracef("cold start %s", c.hosts[i].Addr)
		})
	}
	c.s.At(last, func() {
		c.lastFault = last
		c.watchJoins(round, last)
	})
	c.s.At(last+chaosColdBound, func() { c.checkColdStart(round) })
}

// watchJoins times a cold restart's joins: from its last start until
// every node is on the ring, polled every second for 5 minutes at most.
func (c *d2Chaos) watchJoins(round int, last time.Duration) {
	now := c.s.Now()
	if len(c.ring()) == len(c.hosts) {
		c.res.ColdJoinSeconds[round] = (now - last).Seconds()
		return
	}
	if c.trace != nil {
		var out []string
		for i, h := range c.hosts {
			if !c.nodes[i].Joined() {
				out = append(out, h.Addr)
			}
		}
		c.tracef("cold restart %d: not joined %v", round+1, out)
	}
	if now-last < 5*time.Minute {
		c.s.At(now+time.Second, func() { c.watchJoins(round, last) })
	}
}

// checkColdStart: every node joined, and exactly one founded the ring.
func (c *d2Chaos) checkColdStart(round int) {
	founders := 0
	var out []string
	for i, h := range c.hosts {
		if !h.Up() || !c.nodes[i].Joined() {
			out = append(out, h.Addr)
		}
		founders += int(c.nodes[i].Stats.Founded)
		if c.nodes[i].Stats.Founded > 0 {
			c.tracef("cold restart %d: %s founded (bootstraps %v)", round+1, h.Addr, c.bootstraps(i))
		}
	}
	c.res.Founders[round] = founders
	if len(out) > 0 {
		c.violate("cold-start", "cold restart %d: %d nodes not on the ring %v after the last start: %v", round+1, len(out), chaosColdBound, out)
	}
	if founders != 1 {
		c.violate("cold-start", "cold restart %d: %d nodes founded the ring, want 1", round+1, founders)
	}
}

// The writer.

// gateway is a random live node the writer reaches (on the larger side
// of a partition).
func (c *d2Chaos) gateway() (int, bool) {
	var up []int
	for i, h := range c.hosts {
		if h.Up() && (c.minority == nil || !c.minority[i]) {
			up = append(up, i)
		}
	}
	if len(up) == 0 {
		return 0, false
	}
	return up[c.write.IntN(len(up))], true
}

// putTick puts a new block, if absent: a volume's next superblock.
func (c *d2Chaos) putTick() {
	now := c.s.Now()
	if now >= c.stopAt || c.err != nil {
		return
	}
	c.s.At(now+chaosPutEvery, c.putTick)
	v := c.write.IntN(len(c.vols))
	c.gens[v]++
	data := make([]byte, 32+c.write.IntN(1024))
	for i := range data {
		data[i] = byte(c.write.Uint32())
	}
	b := chaosBlock{k: key.Root(c.vols[v]).WithBlock(0, c.gens[v]).ID(), data: data, v: uint32(v), gen: c.gens[v]}
	c.res.Puts++
	rogueVol := c.rogue >= 0 && v == len(c.vols)-1
	if rogueVol {
		c.res.RoguePuts++
	}
	gw, ok := c.gateway()
	if !ok {
		c.res.Failed++
		return
	}
	c.res.Unanswered++
	c.s.Do(c.hosts[gw], func(env node.Env) {
		c.nodes[gw].Put(env, b.k, b.data, wire.D2PutIfAbsent, nil, func(env node.Env, copies int, err error) {
			c.res.Unanswered--
			switch {
			case err != nil:
				c.res.Failed++
			case copies >= chaosMinCopies:
				c.res.Acked++
				c.blocks = append(c.blocks, b)
				if rogueVol {
					c.res.RogueAcked++
				}
			default:
				c.res.AckedShort++
			}
		})
	})
}

// readTick reads a random acknowledged block back: a figure of
// availability during the failures; other bytes than were put would be a
// violation (a get checks the SHA-256, so none should come).
func (c *d2Chaos) readTick() {
	now := c.s.Now()
	if now >= c.stopAt || c.err != nil {
		return
	}
	c.s.At(now+chaosReadEvery, c.readTick)
	gw, ok := c.gateway()
	if !ok || len(c.blocks) == 0 {
		return
	}
	b := c.blocks[c.write.IntN(len(c.blocks))]
	c.res.Reads++
	rogueVol := c.rogue >= 0 && int(b.v) == len(c.vols)-1
	if rogueVol {
		c.res.RogueReads++
	}
	c.s.Do(c.hosts[gw], func(env node.Env) {
		c.nodes[gw].Get(env, b.k, d2.Sum(b.data), func(env node.Env, data []byte, err error) {
			switch {
			case err != nil:
				c.res.ReadsFailed++
				if rogueVol {
					c.res.RogueReadsFailed++
				}
			case !bytes.Equal(data, b.data):
				c.violate("read", "%v read through %s: other bytes than were put", b, c.hosts[gw].Addr)
			}
		})
	})
}

// lostTick checks that every acknowledged block is on some disk, of a
// host up or down: a block on none is lost for good.
func (c *d2Chaos) lostTick() {
	now := c.s.Now()
	if now >= c.stopAt || c.err != nil {
		return
	}
	c.s.At(now+chaosLostEvery, c.lostTick)
	for bi, b := range c.blocks {
		if c.lost[bi] || slices.ContainsFunc(c.hosts, func(h *sim.Host) bool { return c.engineHas(h.Index, b) }) {
			continue
		}
		c.lost[bi] = true
		c.violate("lost", "%v, acknowledged, is on no disk", b)
	}
}

// The lease, as D2-FS's writer keeps it (internal/d2fs/lease.go): every
// put is IfHash of the bytes the writer last wrote (IfAbsent before its
// first); on a conflict it reads Latest and, if the record there is its
// own (an older copy, or a put that seemed to fail), takes the lease
// again over it. Each record names the writer and the put's sequence
// number.

// chaosLease is the lease writer's state and the checker's record of it.
type chaosLease struct {
	k      id.ID
	holder string
	last   []byte // the record the writer believes the key holds; nil: none
	latest bool   // read Latest before the next put
	busy   bool   // a put or Latest in flight, since since
	since  time.Duration
	op     int // the operation in flight; an answer to an older one is ignored
	seq    int
	// prevs maps each previous record (its SHA-256 in hex, or "absent")
	// that an acknowledged put replaced to that put's sequence number.
	prevs map[string]int
	// acked is the last acknowledged put's bytes and sequence number, at
	// ackedAt; stopped: the writer's last put is acknowledged and it
	// stopped.
	acked    []byte
	ackedSeq int
	ackedAt  time.Duration
	stopped  bool
}

// own reports whether data is one of the writer's records.
func (l *chaosLease) own(data []byte) bool { return bytes.HasPrefix(data, []byte(l.holder+" seq ")) }

// seqOf is the sequence number of the writer's record data (0: not one).
func (l *chaosLease) seqOf(data []byte) int {
	if !l.own(data) {
		return 0
	}
	n, _ := strconv.Atoi(string(data[len(l.holder)+len(" seq "):]))
	return n
}

// leaseTick runs the lease writer: the next put or Latest unless one is
// in flight (given up after chaosClientTimeout: its gateway may have
// crashed). It stops, once the final checks near, at its first
// acknowledged put.
func (c *d2Chaos) leaseTick() {
	l := &c.lease
	now := c.s.Now()
	if c.err != nil || (now >= c.stopAt && l.ackedAt >= c.stopAt && !l.busy) {
		l.stopped = c.err == nil
		return
	}
	c.s.At(now+chaosLeaseEvery, c.leaseTick)
	if l.busy && now-l.since < chaosClientTimeout {
		return
	}
	if l.busy {
		l.busy = false
		c.res.LeaseFailed++
	}
	gw, ok := c.gateway()
	if !ok {
		return
	}
	l.op++
	l.busy, l.since = true, now
	if l.latest {
		c.leaseLatest(gw, l.op)
		return
	}
	c.leasePut(gw, l.op)
}

// leasePut replaces the writer's last record with a new one.
func (c *d2Chaos) leasePut(gw, op int) {
	l := &c.lease
	l.seq++
	seq := l.seq
	data := fmt.Appendf(nil, "%s seq %d", l.holder, seq)
	mode, prev := wire.D2PutIfAbsent, []byte(nil)
	if l.last != nil {
		mode, prev = wire.D2PutIfHash, d2.Sum(l.last)
	}
	c.res.LeasePuts++
	c.tracef("lease put %d through %s, mode %d over %s", seq, c.hosts[gw].Addr, mode, c.record(l.last))
	c.s.Do(c.hosts[gw], func(env node.Env) {
		c.nodes[gw].Put(env, l.k, data, mode, prev, func(env node.Env, copies int, err error) {
			if l.op != op || !l.busy {
				return
			}
			c.tracef("lease put %d: %d copies, %v; lease: %s", seq, copies, err, c.leaseView())
			l.busy = false
			switch {
			case err == nil:
				l.last = data
				if copies >= chaosMinCopies {
					c.leaseAcked(data, prev, seq)
				}
			case errors.Is(err, d2.ErrConflict):
				c.res.LeaseConflicts++
				l.latest = true
			default:
				c.res.LeaseFailed++ // outcome unknown: the next put tells
			}
		})
	})
}

// leaseAcked records an acknowledged lease put and checks that no other
// acknowledged put replaced the same record: the chain does not fork.
func (c *d2Chaos) leaseAcked(data, prev []byte, seq int) {
	l := &c.lease
	c.res.LeaseAcked++
	l.acked, l.ackedSeq, l.ackedAt = data, seq, c.s.Now()
	p := "absent"
	if prev != nil {
		p = hex.EncodeToString(prev)
	}
	if first, ok := l.prevs[p]; ok {
		c.violate("lease-fork", "lease puts %d and %d were both acknowledged replacing %.16s: two holders", first, seq, p)
		return
	}
	l.prevs[p] = seq
}

// leaseLatest reads the lease after a conflict.
func (c *d2Chaos) leaseLatest(gw, op int) {
	l := &c.lease
	c.s.Do(c.hosts[gw], func(env node.Env) {
		c.nodes[gw].Latest(env, l.k.Bytes(), func(env node.Env, k id.ID, data []byte, found bool, err error) {
			if l.op != op || !l.busy {
				return
			}
			c.tracef("lease latest through %s: %s (found %v), %v", c.hosts[gw].Addr, c.record(data), found, err)
			l.busy = false
			switch {
			case err == nil && l.ackedSeq > 0 && (!found || l.seqOf(data) < l.ackedSeq):
				// Latest sees every put acknowledged before it, or
				// fails (d2.Node.Latest).
				c.violate("lease-latest", "Latest through %s answered %s after #%d was acknowledged", c.hosts[gw].Addr, c.record(data), l.ackedSeq)
			}
			switch {
			case err != nil:
				c.res.LeaseFailed++
			case !found:
				l.last, l.latest = nil, false
			case k != l.k || !l.own(data):
				c.violate("lease-latest", "Latest of the lease key answered %s, %q: not the writer's record", k.Short(), data)
				l.last, l.latest = bytes.Clone(data), false
			default:
				l.last, l.latest = bytes.Clone(data), false
				c.res.LeaseRetakes++
			}
		})
	})
}

// record names a lease record by its sequence number.
func (c *d2Chaos) record(data []byte) string {
	if data == nil {
		return "none"
	}
	if !c.lease.own(data) {
		return fmt.Sprintf("%q", data)
	}
	return "#" + string(data[len(c.lease.holder)+len(" seq "):])
}

// leaseView is where the lease key's records are: each of its holders on
// the oracle's ring, then every other disk that has one.
func (c *d2Chaos) leaseView() string {
	hs := holders(c.ring(), c.lease.k, c.cfg.Replicas)
	var out []string
	for i, h := range c.hosts {
		got, _, err := d2.EngineOf(h.Storage()).Get(c.lease.k)
		got = d2.BlockOf(got)
		j := slices.Index(hs, i)
		if err != nil && j < 0 {
			continue
		}
		v := c.record(got)
		if err != nil {
			v = "-"
		}
		tag := ""
		if j >= 0 {
			tag = fmt.Sprintf("[%d]", j)
		}
		if !h.Up() {
			tag += "(down)"
		}
		out = append(out, fmt.Sprintf("%s%s=%s", h.Addr, tag, v))
	}
	return fmt.Sprint(out)
}

// The end of the run.

// quiesce ends the failures (a crashed node is started again, a
// partition healed), runs chaosSettle past the last, stopping the writer
// two sync rounds before, and waits for the lease writer's last put.
func (c *d2Chaos) quiesce() {
	for i := 0; c.down >= 0 && i < 120 && c.err == nil; i++ {
		c.s.RunFor(time.Second)
	}
	if c.minority != nil {
		c.s.Heal()
		c.minority = nil
		c.lastFault = c.s.Now()
	}
	settle := chaosSettle
	if c.rogue >= 0 {
		// The rogue's partners must find it out again after their own
		// failures: an owner's audit period (d2's audit.go), six rounds
		// past the pointer stabilization time, and a second strike two
		// rounds after.
		settle += c.cfg.PointerStabilization + 8*c.cfg.Sync
	}
	settled := max(c.lastFault, c.s.Now()) + settle
	c.stopAt = settled - 2*c.cfg.Sync
	c.s.RunUntil(settled)
	for i := 0; i < 120 && !c.lease.stopped && c.err == nil; i++ {
		c.s.RunFor(time.Second)
	}
	c.res.SettleMinutes = (c.s.Now() - c.lastFault).Minutes()
	if !c.lease.stopped {
		c.violate("lease-latest", "no lease put was acknowledged in the %v after the failures", chaosSettle)
	}
}

// finalChecks holds the settled ring to the invariants.
func (c *d2Chaos) finalChecks() {
	ring := c.ring()
	for i, h := range c.hosts {
		if !h.Up() || !c.nodes[i].Joined() {
			c.violate("joined", "%s is not on the ring (up %v)", h.Addr, h.Up())
		}
	}
	c.checkRing(ring, "at the end")
	c.checkPlacement(ring)
	c.checkDistrust()
	c.checkReads()
	c.checkLatest()
}

// checkRing: the nodes are one ring, every node's successor and
// predecessor the oracle's; when is when it is checked.
func (c *d2Chaos) checkRing(ring []chaosMember, when string) {
	if bad := c.ringErrors(ring); len(bad) > 0 {
		cycles, off := c.rings(ring)
		c.violate("ring", "%s: %d rings and %d nodes on none; %d successors and predecessors wrong: %s",
			when, cycles, off, len(bad), strings.Join(bad[:min(len(bad), 3)], ", "))
	}
}

// ringErrors lists the nodes of ring whose successor or predecessor is
// not the oracle's.
func (c *d2Chaos) ringErrors(ring []chaosMember) []string {
	var out []string
	for j, m := range ring {
		n := c.nodes[m.host]
		next, prev := ring[(j+1)%len(ring)], ring[(j+len(ring)-1)%len(ring)]
		if s := n.Succs(); len(s) == 0 || s[0].Pos != next.pos {
			out = append(out, fmt.Sprintf("%s's successor is not %s", c.hosts[m.host].Addr, c.hosts[next.host].Addr))
		}
		if n.Pred().Pos != prev.pos {
			out = append(out, fmt.Sprintf("%s's predecessor is %q, not %s", c.hosts[m.host].Addr, n.Pred().Node.Addr, c.hosts[prev.host].Addr))
		}
	}
	return out
}

// rings counts the cycles the live nodes' successor pointers make (1
// for a whole ring), and the nodes of ring on none (pointing into one
// that does not point back, or at a node down).
func (c *d2Chaos) rings(ring []chaosMember) (cycles, off int) {
	next := map[node.Addr]node.Addr{}
	for i, h := range c.hosts {
		if s := c.nodes[i].Succs(); h.Up() && len(s) > 0 {
			next[h.Addr] = s[0].Node.Addr
		}
	}
	on := map[node.Addr]bool{}
	for _, m := range ring {
		// Walk len(ring) steps: whatever the walk reaches then is on a
		// cycle; mark that cycle once.
		a := c.hosts[m.host].Addr
		for range len(c.hosts) {
			a = next[a]
		}
		if a == "" || on[a] {
			continue
		}
		cycles++
		for b := a; !on[b]; b = next[b] {
			on[b] = true
		}
	}
	for _, m := range ring {
		if !on[c.hosts[m.host].Addr] {
			off++
		}
	}
	return cycles, off
}

// checkPlacement: each acknowledged block is held, bytes and all, by its
// key's r holders on the oracle's ring.
//
// With a rogue, which keeps nothing, the oracle's ring leaves it out: its
// partners' audits must have found it (the rogue invariant), its owners
// must push past it and its successor must sync its range (audit.go), so
// that every key it should hold is on r honest nodes.
func (c *d2Chaos) checkPlacement(ring []chaosMember) {
	if c.rogue >= 0 {
		ring = slices.DeleteFunc(slices.Clone(ring), func(m chaosMember) bool { return m.host == c.rogue })
	}
	for _, b := range c.blocks {
		var missing []string
		for _, i := range holders(ring, b.k, c.cfg.Replicas) {
			block, pointer := c.nodes[i].Holds(b.k)
			switch {
			case !block && pointer:
				missing = append(missing, c.hosts[i].Addr+" (a pointer)")
			case !block || !c.engineHas(i, b):
				missing = append(missing, c.hosts[i].Addr)
			}
		}
		if len(ring) < c.cfg.Replicas || len(missing) > 0 {
			c.violate("placement", "%v not held by %v of its %d successors", b, missing, c.cfg.Replicas)
		}
	}
}

// checkDistrust: no node distrusts an honest one (a crash or a wiped
// disk is no lie), and with a rogue, some node distrusts it.
func (c *d2Chaos) checkDistrust() {
	for i, n := range c.nodes {
		if n == nil || !c.hosts[i].Up() {
			continue
		}
		for _, a := range n.Distrusted() {
			if c.rogue >= 0 && a == c.hosts[c.rogue].Addr {
				c.res.RogueDistrustedBy++
				continue
			}
			c.violate("distrust", "%s distrusts %s, an honest node", c.hosts[i].Addr, a)
		}
	}
	if c.rogue >= 0 && c.res.RogueDistrustedBy == 0 {
		c.violate("rogue", "no node distrusts the rogue %s", c.hosts[c.rogue].Addr)
	}
}

// checkReads gets every acknowledged block through a random node, with
// its SHA-256, 200 at a time.
func (c *d2Chaos) checkReads() {
	for lo := 0; lo < len(c.blocks); lo += 200 {
		batch := c.blocks[lo:min(lo+200, len(c.blocks))]
		left := len(batch)
		for _, b := range batch {
			gw, ok := c.gateway()
			if !ok {
				c.violate("read", "no node up to read through")
				return
			}
			c.s.Do(c.hosts[gw], func(env node.Env) {
				c.nodes[gw].Get(env, b.k, d2.Sum(b.data), func(env node.Env, data []byte, err error) {
					left--
					if err != nil || !bytes.Equal(data, b.data) {
						c.violate("read", "%v through %s: %v", b, c.hosts[gw].Addr, err)
					}
				})
			})
		}
		for i := 0; i < 120 && left > 0; i++ {
			c.s.RunFor(time.Second)
		}
		if left > 0 {
			c.violate("read", "%d gets never answered", left)
		}
	}
}

// checkLatest: Latest of the lease key, through three random nodes,
// answers the last acknowledged lease record.
func (c *d2Chaos) checkLatest() {
	l := &c.lease
	if l.acked == nil {
		c.violate("lease-latest", "no lease put was ever acknowledged")
		return
	}
	left := 3
	for range left {
		gw, _ := c.gateway()
		c.s.Do(c.hosts[gw], func(env node.Env) {
			c.nodes[gw].Latest(env, l.k.Bytes(), func(env node.Env, k id.ID, data []byte, found bool, err error) {
				left--
				if err != nil || !found || k != l.k || !bytes.Equal(data, l.acked) {
					c.violate("lease-latest", "Latest through %s: %q (found %v, %v), want %q", c.hosts[gw].Addr, data, found, err, l.acked)
				}
			})
		})
	}
	for i := 0; i < 60 && left > 0; i++ {
		c.s.RunFor(time.Second)
	}
	if left > 0 {
		c.violate("lease-latest", "%d Latests never answered", left)
	}
}
