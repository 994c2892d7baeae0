package ring

import (
	"fmt"
	"time"

	"triad/internal/wire"
)

// Config sets the ring protocol's behaviour.
type Config struct {
	// Succs is the successor-list length. Default 16.
	Succs int
	// Preds is the predecessor-list length. Default 16.
	Preds int
	// StabilizeInterval is the mean time between stabilization rounds of a
	// vnode; each round is jittered by ±25%. Default 1s.
	StabilizeInterval time.Duration
	// QuickStabilize, when positive, is the mean delay of the extra
	// stabilization rounds that a vnode runs, one after another, for one
	// StabilizeInterval after a round that changed its successor or
	// predecessor list. A list that is filling, as every list is while a
	// ring forms or after a join, a failure or a leave, then fills in
	// rounds this far apart rather than StabilizeInterval apart; a
	// settled list costs nothing more. After a burst of up to about 7 s,
	// quick rounds are held to two per StabilizeInterval
	// (Vnode.quickRound), whatever a peer's answers do.
	// Zero (the default) keeps the fixed rounds that the papers'
	// experiments assume; real nodes (cmd/triad) set StabilizeInterval/8.
	QuickStabilize time.Duration
	// FixFingersInterval is the mean time between finger refreshes of a
	// vnode (one finger each). Default 1s.
	FixFingersInterval time.Duration
	// LookupTimeout is how long a recursive lookup may take before the
	// origin falls back to an iterative one. Default 4s.
	LookupTimeout time.Duration
	// HopTries bounds the next hops a node tries for one forwarded lookup
	// before it reports failure. Default 3.
	HopTries int
	// IterativeSteps bounds the calls of one iterative lookup. Default 32.
	IterativeSteps int
	// SaveInterval is how often the peers a host knows are written to disk.
	// Default 30s; zero disables periodic saves (the state is still saved
	// at start and at Stop).
	SaveInterval time.Duration
	// ProbeInterval is the mean time between probes of a peer declared
	// dead, to find rings that split in a partition. Default 30s; zero
	// disables probes.
	ProbeInterval time.Duration
	// PNSSamples is how many nodes at the start of a finger's range are
	// candidates for it; the one with the lowest round-trip time (measured
	// or predicted by Vivaldi) becomes the finger (proximity neighbour
	// selection). 1 is classic Chord. Default 16, as in DHash++.
	PNSSamples int
	// VerifyIDs makes a host's vnode IDs the ones derived from its address
	// (VnodeID; load its state with LoadDerivedState) and refuses, and
	// counts (Stats.ForgedRefs), every message whose sender, or any node
	// reference it carries (successor and predecessor lists, lookup
	// answers, a Leave's lists, a lookup's origin), has an ID not derived
	// from its address: a node cannot place itself, or name others, where
	// it likes. Default false: the simulator's hosts are placed at random
	// or chosen IDs, and its experiments' figures depend on them; real
	// nodes (cmd/triad) set it.
	VerifyIDs bool
	// Membership, when set, replaces the protocol's view of the ring with
	// one the driver keeps (see Membership): simulator experiments only.
	Membership Membership
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{
		Succs:              16,
		Preds:              16,
		StabilizeInterval:  time.Second,
		FixFingersInterval: time.Second,
		LookupTimeout:      4 * time.Second,
		HopTries:           3,
		IterativeSteps:     32,
		SaveInterval:       30 * time.Second,
		ProbeInterval:      30 * time.Second,
		PNSSamples:         16,
	}
}

// Validate reports a config that cannot work.
func (c Config) Validate() error {
	switch {
	case c.Succs < 1 || c.Succs > wire.MaxListLen:
		return fmt.Errorf("ring: successor list length %d not in [1, %d]", c.Succs, wire.MaxListLen)
	case c.Preds < 1 || c.Preds > wire.MaxListLen:
		return fmt.Errorf("ring: predecessor list length %d not in [1, %d]", c.Preds, wire.MaxListLen)
	case c.StabilizeInterval <= 0 || c.FixFingersInterval <= 0 || c.QuickStabilize < 0:
		return fmt.Errorf("ring: maintenance intervals must be positive")
	case c.LookupTimeout <= 0:
		return fmt.Errorf("ring: lookup timeout must be positive")
	case c.HopTries < 1 || c.IterativeSteps < 1:
		return fmt.Errorf("ring: hop tries and iterative steps must be at least 1")
	case c.PNSSamples < 1 || c.PNSSamples > 1024:
		return fmt.Errorf("ring: PNS samples %d not in [1, 1024]", c.PNSSamples)
	case c.SaveInterval < 0 || c.ProbeInterval < 0:
		return fmt.Errorf("ring: save interval and dead memory must not be negative")
	}
	return nil
}
