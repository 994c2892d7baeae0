package maint

import (
	"errors"
	"fmt"
	"time"

	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/wire"
)

// Config sets local maintenance.
type Config struct {
	// Interval is the time between two rounds of one vnode. Default 10m.
	Interval time.Duration
	// SweepInterval is the time between two sweeps of global maintenance
	// by one vnode (the paper leaves it open). Zero: Interval.
	SweepInterval time.Duration
	// Settle is how long after a successor or predecessor changed a
	// vnode looks again, and starts a round if the change is still there:
	// a neighbour back within it (a clean restart) costs nothing. Default
	// 5s.
	Settle time.Duration
	// Replicas is k: a vnode keeps the keys in (k-th predecessor, itself].
	// Default 2.
	Replicas int
	// Queries and Fetches bound the tree queries and the fetches one
	// round has in flight. Default 8 each.
	Queries, Fetches int
	// Budget bounds the bytes per second the host's maintenance fetches
	// and hands over, across its vnodes (UsenetDHT's trace experiment
	// gives each host 150 KB/s); a second's worth may go at once. Zero:
	// no bound (the default, for a LAN).
	Budget int
	// Weight counts each byte a repair moves as Weight bytes, against the
	// budget and in the byte counters: the trace experiment stands small
	// objects in for UsenetDHT's 20 MB ones. Zero or one: as they are.
	Weight int
	// Fragments is l: an erasure-coded block's fragments are on its first
	// l successors, so a vnode also keeps the fragments of the keys in
	// (l-th predecessor, itself]. Rounds synchronize that wider range for
	// fragments only when Fragments > Replicas + 1 and Rebuild is set.
	Fragments int
	// Rebuild makes this host's fragment of key from m others (dhash's
	// RebuildFragment): done gets the fragment and its expiry, and the
	// bytes fetched to make it. Nil: missing fragments are counted, not
	// rebuilt.
	Rebuild func(env node.Env, key id.ID, done func(env node.Env, frag []byte, expiry time.Time, moved int, err error))
	// Audits is how many keys each synchronization with a replica partner
	// challenges it for (audit.go): it must prove it holds their bytes.
	// Default 2. Zero: none, neighbours' trees are trusted.
	Audits int
	// NoWait writes repaired copies without waiting for the engine's
	// group commit: the host's periodic durability (dhash AckWritten),
	// under which a commit may be a whole period away and a repair
	// waiting for it would hold one of the host's few workers.
	NoWait bool
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{Interval: 10 * time.Minute, Settle: 5 * time.Second, Replicas: 2, Queries: 8, Fetches: 8, Audits: 2}
}

// Validate reports a config that cannot work.
func (c Config) Validate() error {
	switch {
	case c.Interval <= 0 || c.Settle <= 0 || c.SweepInterval < 0:
		return errors.New("maint: intervals must be positive")
	case c.Replicas < 1 || c.Replicas > wire.MaxListLen:
		return fmt.Errorf("maint: %d replicas not in [1, %d]", c.Replicas, wire.MaxListLen)
	case c.Fragments < 0 || c.Fragments > wire.MaxListLen:
		return fmt.Errorf("maint: %d fragments not in [0, %d]", c.Fragments, wire.MaxListLen)
	case c.Queries < 1 || c.Fetches < 1:
		return errors.New("maint: queries and fetches in flight must be at least 1")
	case c.Audits < 0 || c.Audits > maxAuditsPerSync:
		return fmt.Errorf("maint: %d audits per synchronization not in [0, %d]", c.Audits, maxAuditsPerSync)
	case c.Budget < 0 || c.Weight < 0:
		return errors.New("maint: the repair budget and weight must not be negative")
	}
	return nil
}
