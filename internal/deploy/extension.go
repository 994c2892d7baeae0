package deploy

import (
	"fmt"
	"time"

	"triad/internal/d2"
	"triad/internal/host"
	"triad/internal/store"
	"triad/internal/tapestry"
)

// Extension is a protocol beyond the ring and the block store that a
// daemon runs when its operator turns it on (--NAME): its configuration
// table (host.Setting, declared by the protocol and bound to a Config of
// its own), and what turning it on adds to a host's Options and to the
// stores its driver keeps. The daemons iterate Extensions and name no
// protocol.
type Extension struct {
	// Name is the flag that turns the protocol on (and its key in a
	// configuration file).
	Name string
	// Usage is that flag's help.
	Usage string
	// On runs the protocol.
	On bool
	// Settings is the protocol's table, bound to its configuration.
	Settings []host.Setting

	apply  func(o *Options)
	stores func(capacity int64, sync time.Duration) map[string]store.Options
}

// Extensions are the protocols a daemon may turn on, each off and with its
// defaults: Tapestry, then D2.
func Extensions() []*Extension {
	t := tapestry.DefaultConfig()
	d := d2.DefaultConfig()
	// A node's D2 ring settles in a few rounds; every five seconds, both
	// its neighbours and its long links.
	d.Stabilize, d.FixLinks = 5*time.Second, 5*time.Second
	return []*Extension{
		{Name: "tapestry", Settings: t.Settings(),
			Usage: "also run Tapestry's mesh and object location (triad publish, locate, fetch), with the node's first ring ID, joining through --join",
			apply: func(o *Options) { c := t; o.Tapestry = &c }},
		{Name: "d2", Settings: d.Settings(),
			Usage: "also run D2, the store of triad fs volumes: blocks of up to 64 KB under 64-byte keys that keep a directory's files on a few neighbours, balanced by moving nodes (a second storage engine under the data folder's d2/), joining through --join",
			apply: func(o *Options) { c := d; o.D2 = &c },
			stores: func(capacity int64, sync time.Duration) map[string]store.Options {
				return map[string]store.Options{d2.StoreName: {KeyWidth: d2.KeyBytes, Capacity: capacity, MaxObject: d.BlockBytes + d2.RecordOverhead, SyncInterval: sync}}
			}},
	}
}

// Apply checks e's settings and, if e is on, sets its part of o and
// returns the stores the driver must keep for it, each with capacity
// bytes and the block store's sync interval.
func (e *Extension) Apply(o *Options, capacity int64, sync time.Duration) (map[string]store.Options, error) {
	if !e.On {
		return nil, nil
	}
	for _, s := range e.Settings {
		if s.Check == nil {
			continue
		}
		if err := s.Check(); err != nil {
			return nil, fmt.Errorf("--%s %v: %w", s.Key, valueOf(s.Value), err)
		}
	}
	e.apply(o)
	if e.stores == nil {
		return nil, nil
	}
	return e.stores(capacity, sync), nil
}

// valueOf is what a setting holds, as an error names it.
func valueOf(v any) any {
	switch v := v.(type) {
	case *bool:
		return *v
	case *int:
		return *v
	case *string:
		return *v
	case *time.Duration:
		return *v
	}
	return v
}
