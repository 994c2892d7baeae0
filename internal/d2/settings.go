package d2

import (
	"errors"
	"time"

	"triad/internal/host"
)

// Settings is D2's configuration table (host.Setting), bound to c: what a
// daemon offers its operator as --d2-* flags and keys of a configuration
// file.
func (c *Config) Settings() []host.Setting {
	return []host.Setting{
		{Key: "d2-stabilize", Value: stabilizeEvery{c}, Check: host.Positive(&c.Stabilize),
			Usage: "with --d2: the `duration` between D2's checks of its neighbours and rebuilds of its long links (a new node is on D2's ring after a few rounds)"},
		{Key: "d2-sync", Value: &c.Sync, Check: host.Positive(&c.Sync),
			Usage: "with --d2: how often each node compares its blocks with its replicas' and repairs them (a replica lost with a disk is back within about this)"},
		{Key: "d2-max-names", Value: &c.MaxNames, Check: func() error {
			if c.MaxNames < 0 {
				return errors.New("want 0 (no bound) or more")
			}
			return nil
		}, Usage: "with --d2: the volume names one client (its certificate, or its IP address without --tls) may claim through this node; names never lapse (0: no bound)"},
	}
}

// stabilizeEvery is the one setting of both rounds that keep D2's ring:
// its neighbours' (Stabilize) and its long links' (FixLinks).
type stabilizeEvery struct{ c *Config }

func (s stabilizeEvery) String() string { return s.c.Stabilize.String() }

func (s stabilizeEvery) Set(v string) error {
	d, err := time.ParseDuration(v)
	if err != nil {
		return err
	}
	s.c.Stabilize, s.c.FixLinks = d, d
	return nil
}
