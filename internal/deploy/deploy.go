package deploy

import (
	"errors"
	"fmt"
	"math/rand/v2"

	"triad/internal/cc"
	"triad/internal/d2"
	"triad/internal/dhash"
	"triad/internal/host"
	"triad/internal/id"
	"triad/internal/maint"
	"triad/internal/node"
	"triad/internal/ring"
	"triad/internal/tapestry"
	"triad/internal/wire"
)

// Options say what runs on a host.
type Options struct {
	// Vnodes is the number of ring positions (virtual servers). Default 1.
	Vnodes int
	// Positions is, with Ring.VerifyIDs, how many positions derived from
	// the host's address its vnodes may sit at (ring.LoadDerivedState):
	// at least Vnodes, which is the default.
	Positions int
	// Bootstrap is the address of any ring member to join through; empty
	// starts a new ring unless the host saved peers.
	Bootstrap node.Addr
	// Host configures the runtime (RPC, liveness).
	Host host.Config
	// Ring configures the Chord protocol.
	Ring ring.Config
	// Blocks configures the block store; nil runs the ring alone.
	Blocks *dhash.Config
	// Maint configures local maintenance (Passing Tone) of the block
	// store; nil runs none. Its Replicas, and its Fragments and Rebuild
	// (see New), come from the block store.
	Maint *maint.Config
	// CC configures congestion control of routed requests (cc), routed on
	// the ring; nil runs none.
	CC *cc.Config
	// Tapestry configures the Tapestry mesh and object location; nil runs
	// none. Its node ID is the host's first ring ID, and it joins through
	// Bootstrap.
	Tapestry *tapestry.Config
	// D2 configures D2's store and load-balancing ring (internal/d2) on
	// the host's store d2.StoreName (node.Storage.Store, which the driver
	// must keep: tcp.Config.Stores); nil runs none. It joins through Bootstrap and the peers an
	// earlier run knew.
	D2 *d2.Config
	// NoRing leaves the ring (and so the block store, maintenance and
	// congestion control) out: a host that runs Tapestry alone, as the
	// Tapestry experiments do. Its ring IDs are still made and kept.
	NoRing bool
	// Machine, if not zero, is the host's machine identity
	// (wire.NodeRef.Machine) in place of the random one its state keeps:
	// hosts given the same one never hold two replicas of a block.
	Machine uint64
}

// DefaultOptions is one vnode running the ring and the block store with
// their defaults.
func DefaultOptions() Options {
	b := dhash.DefaultConfig()
	return Options{Vnodes: 1, Host: host.DefaultConfig(), Ring: ring.DefaultConfig(), Blocks: &b}
}

// Node is one assembled host: the runtime, which drivers run as the
// node.Handler, and the protocols registered on it.
type Node struct {
	Host   *host.Host
	Ring   *ring.Chord    // nil when Options.NoRing
	Tap    *tapestry.Node // nil when Options.Tapestry is nil
	D2     *d2.Node       // nil when Options.D2 is nil
	Blocks *dhash.Node    // nil when Options.Blocks is nil
	Maint  *maint.Maint   // nil when Options.Maint or Options.Blocks is nil
	CC     *cc.Node       // nil when Options.CC is nil
	// State is the ring state the host started from: its vnode IDs and
	// the peers it last knew.
	State ring.State
	// Moved lists the IDs a host with Ring.VerifyIDs kept from an earlier
	// run in place of the IDs derived from its address (ring.VnodeID), and
	// left: the caller says so once. Empty otherwise.
	Moved []id.ID
}

// Report is what one protocol of a host reports about itself
// (node.Metric): the metrics page shows each as triad_PROTOCOL_NAME.
type Report struct {
	Protocol string
	Metrics  []node.Metric
}

// reporter is a protocol with figures of its own.
type reporter interface{ Metrics() []node.Metric }

// Reports are the figures of the host's protocols that report their own
// (Tapestry, D2), in a fixed order. It must run on the host's event loop.
func (n *Node) Reports() []Report {
	var out []Report
	for _, p := range []struct {
		name string
		r    reporter
		on   bool
	}{{"tapestry", n.Tap, n.Tap != nil}, {"d2", n.D2, n.D2 != nil}} {
		if p.on {
			out = append(out, Report{p.name, p.r.Metrics()})
		}
	}
	return out
}

// Handle runs the host's runtime, so a Node can be handed to a driver.
func (n *Node) Handle(env node.Env, ev node.Event) { n.Host.Handle(env, ev) }

// New builds the host at addr from what its storage holds (ring IDs and
// peers of an earlier run, and the storage engine the driver opened), with
// r as its random source for new IDs. With Ring.VerifyIDs (real nodes) the
// IDs are the ones derived from addr instead (ring.LoadDerivedState), and
// an earlier run's other IDs are left (Node.Moved). Protocols are
// registered, and so started, in a fixed order, each after the protocols
// it uses: the ring, then congestion control (routed on the ring), the
// block store, and maintenance (which repairs the block store's copies);
// those whose Options are nil are left out.
func New(o Options, addr node.Addr, st node.Storage, r *rand.Rand) (*Node, error) {
	if o.Vnodes == 0 {
		o.Vnodes = 1
	}
	var state ring.State
	var moved []id.ID
	var err error
	if o.Ring.VerifyIDs {
		state, moved, err = ring.LoadDerivedState(st, r, addr, o.Vnodes, max(o.Positions, o.Vnodes))
	} else {
		state, err = ring.LoadState(st, r, o.Vnodes)
	}
	if err != nil {
		return nil, err
	}
	if o.Machine != 0 {
		state.Machine = o.Machine
	}
	h, err := host.New(o.Host, addr)
	if err != nil {
		return nil, err
	}
	if o.NoRing {
		n := &Node{Host: h, State: state, Moved: moved}
		return n, errors.Join(n.addTapestry(o, st), n.addD2(o, st, r))
	}
	chord, err := ring.New(o.Ring, h, state, o.Bootstrap)
	if err != nil {
		return nil, err
	}
	n := &Node{Host: h, Ring: chord, State: state, Moved: moved}
	if o.CC != nil {
		if n.CC, err = cc.New(*o.CC, h, cc.ChordRouter{Ring: chord}); err != nil {
			return nil, fmt.Errorf("deploy: %w", err)
		}
	}
	if o.Blocks != nil {
		if n.Blocks, err = dhash.New(*o.Blocks, chord); err != nil {
			return nil, fmt.Errorf("deploy: %w", err)
		}
		if o.Maint != nil {
			mc := *o.Maint
			mc.Replicas = o.Blocks.Replicas
			// Missing fragments met in a round are rebuilt from m others.
			// Where fragments are the default, rounds also compare the
			// wider range whose fragments a vnode keeps (its l-th
			// predecessor on); elsewhere only fragments in the replica
			// range are seen, as the wider syncs would cost every round.
			mc.Rebuild = n.Blocks.RebuildFragment
			if o.Blocks.Redundancy == wire.RedundancyFragments {
				mc.Fragments = o.Blocks.TotalFrags
			}
			if o.Ring.Preds < mc.Replicas {
				return nil, fmt.Errorf("deploy: maintenance needs a predecessor list of at least %d (the replicas), not %d", mc.Replicas, o.Ring.Preds)
			}
			if n.Maint, err = maint.New(mc, chord); err != nil {
				return nil, fmt.Errorf("deploy: %w", err)
			}
		}
	}
	return n, errors.Join(n.addTapestry(o, st), n.addD2(o, st, r))
}

// addD2 registers D2, at the position an earlier run saved or, the first
// time, a random one (D2's positions move to balance load, so they are
// not derived from the address as ring IDs are).
func (n *Node) addD2(o Options, st node.Storage, r *rand.Rand) error {
	if o.D2 == nil {
		return nil
	}
	engine := d2.EngineOf(st)
	if engine == nil {
		return fmt.Errorf("deploy: D2 needs the driver to keep its store %q (tcp.Config.Stores)", d2.StoreName)
	}
	pos, err := d2.LoadPosition(st, r)
	if err != nil {
		return fmt.Errorf("deploy: %w", err)
	}
	self := wire.NodeRef{ID: n.State.IDs[0], Addr: n.Host.Addr(), Machine: n.State.Machine}
	cfg := *o.D2
	cfg.Seed = o.Bootstrap // after a cold start, the node every other joins founds again
	if cfg.Seed == "" {
		cfg.Seed = n.Host.Addr() // the first node: the seed
	}
	if n.D2, err = d2.New(cfg, n.Host, self, pos, engine, n.bootstraps(o)); err != nil {
		return fmt.Errorf("deploy: %w", err)
	}
	return nil
}

// bootstraps are the addresses a protocol with a ring of its own joins
// through: the bootstrap first, then every peer an earlier run knew, so
// that a restart whose bootstrap is down rejoins through another.
func (n *Node) bootstraps(o Options) []node.Addr {
	var out []node.Addr
	if o.Bootstrap != "" {
		out = append(out, o.Bootstrap)
	}
	for _, p := range n.State.Peers {
		out = append(out, p.Addr)
	}
	return out
}

// addTapestry registers Tapestry, last, with the host's first ring ID and
// the objects an earlier run published.
func (n *Node) addTapestry(o Options, st node.Storage) error {
	if o.Tapestry == nil {
		return nil
	}
	objects, err := tapestry.LoadObjects(st)
	if err != nil {
		return fmt.Errorf("deploy: %w", err)
	}
	roots, err := tapestry.LoadRoots(st)
	if err != nil {
		return fmt.Errorf("deploy: %w", err)
	}
	self := wire.NodeRef{ID: n.State.IDs[0], Addr: n.Host.Addr(), Machine: n.State.Machine}
	tc := *o.Tapestry
	if o.Ring.VerifyIDs && tc.CheckNode == nil {
		tc.CheckNode = firstVnodeOnly
	}
	if n.Tap, err = tapestry.New(tc, n.Host, self, n.bootstraps(o), objects, roots); err != nil {
		return fmt.Errorf("deploy: %w", err)
	}
	return nil
}

// firstVnodeOnly accepts a node whose ID is the first vnode ID derived
// from its address: the one a host runs Tapestry with.
func firstVnodeOnly(r wire.NodeRef) error {
	if i, ok := ring.VnodeIndex(r); !ok || i != 0 {
		return fmt.Errorf("deploy: %s is not the first vnode of %s: Tapestry runs on vnode 0 only", r.ID.Short(), r.Addr)
	}
	return nil
}

// Factory builds hosts from o, as the simulator's hosts are built (a
// sim.Factory; deploy does not import the simulator, which the real
// daemons must not link); bootstrap picks the address each new host
// joins through (called once per boot; it may return "" to start a ring
// or rejoin from saved peers).
func Factory(o Options, bootstrap func() node.Addr) func(addr node.Addr, st node.Storage, r *rand.Rand) (node.Handler, error) {
	return func(addr node.Addr, st node.Storage, r *rand.Rand) (node.Handler, error) {
		o := o
		if bootstrap != nil {
			o.Bootstrap = bootstrap()
		}
		return New(o, addr, st, r)
	}
}

// FactoryAt is Factory for a host placed at the ring positions ids (the
// first boot only: a restart keeps what the host saved).
func FactoryAt(o Options, ids []id.ID, bootstrap func() node.Addr) func(addr node.Addr, st node.Storage, r *rand.Rand) (node.Handler, error) {
	f := Factory(o, bootstrap)
	return func(addr node.Addr, st node.Storage, r *rand.Rand) (node.Handler, error) {
		if err := ring.SeedIDs(st, ids); err != nil {
			return nil, err
		}
		return f(addr, st, r)
	}
}

// Of returns the Node a simulated host (a *sim.Host) runs, or nil while
// it is down or when it runs something else.
func Of(h interface{ Handler() node.Handler }) *Node {
	n, _ := h.Handler().(*Node)
	return n
}
