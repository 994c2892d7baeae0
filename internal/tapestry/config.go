package tapestry

import (
	"errors"
	"time"
	"triad/internal/wire"
)

// Config sets a node's Tapestry. Zero fields take DefaultConfig's value
// where one is noted.
type Config struct {
	// DigitBits is the bits per digit: 4, base 16 with 40 levels (the
	// default), or 2, base 4 with 80 (the paper's Fig. 17).
	DigitBits int
	// Links is c, the links kept per routing-table entry: a primary and
	// c-1 backups (3; footnote 2).
	Links int
	// NearestK is k, how many of the nearest nodes of a level a joiner
	// asks for the next level's candidates (16; §III-C1).
	NearestK int
	// Republish is how often a server republishes its objects; a pointer
	// lives twice that unless refreshed (10 minutes).
	Republish time.Duration
	// Beacon is how often a node probes every link of its table (20 s).
	Beacon time.Duration
	// Repair is how often a node asks a neighbour of each level for its
	// entries of that level, to fill holes (60 s).
	Repair time.Duration
	// MaxPointers bounds the pointers a node holds (200,000, about 220 MB
	// at the table's cost per pointer); past it the soonest to expire are
	// dropped, and counted.
	MaxPointers int
	// MaxPointersPerServer bounds the pointers a node holds that name one
	// server (20,000): one publisher, or one forged name, fills no more
	// of the table (issue 44). Past it, new ones naming that server are
	// refused and not sent on.
	MaxPointersPerServer int
	// ExtraBackups, ExtraNearest and ExtraHops are the optimization of
	// §V-B3 (k, l, m): on the first m hops of a publish path, pointers
	// also go to k backups of the next hop and the l nearest neighbours
	// of the current one. Zero: none.
	ExtraBackups, ExtraNearest, ExtraHops int
	// NoBloom turns the pointer table's Bloom filter off.
	NoBloom bool
	// NoServerCheck takes every pointer as its sender states it: a
	// pointer relayed by another node is routed to and listed without
	// its server's word that it serves the key (confirm.go).
	NoServerCheck bool
	// PublishRate bounds the pointers a peer may send a node per second,
	// with a burst of twice that (20,000).
	PublishRate float64
	// MaxQueuedPerPeer is one peer's share of the pointers a node holds
	// to send on (131,072 of 1,048,576): past it that peer's are dropped,
	// counted (pointers_shed), and the others' still fit (publish.go).
	MaxQueuedPerPeer int
	// RouteTimeout is how long an originated route waits for its outcome
	// (10 s).
	RouteTimeout time.Duration
	// MaxFanout bounds the multicast branches a node runs at once (256).
	MaxFanout int
	// ConfirmTimeout is how long the probe of a link that missed a call's
	// timeout waits before the link is declared dead (5 s): a burst (a
	// publish of thousands of pointers on a slow uplink) queues answers
	// well past an adaptive timeout, and a false death costs a live node
	// its place in the tables.
	ConfirmTimeout time.Duration
	// CheckNode, if set, must accept every node the mesh hears from or of
	// (senders, and nodes named in messages), on top of the host's check:
	// a node's Tapestry ID is its host's first ring ID, so real nodes
	// accept only vnode 0 of an address, or a certificate for V vnodes
	// would hold V places in every table (internal/deploy sets it with
	// derived IDs). Nil: the host's check alone.
	CheckNode func(wire.NodeRef) error
}

// DefaultConfig is c = 3, k = 16, a 10-minute republish, no extra
// pointers.
func DefaultConfig() Config {
	return Config{DigitBits: 4, Links: 3, NearestK: 16, Republish: 10 * time.Minute, Beacon: 20 * time.Second, Repair: time.Minute,
		MaxPointers: 200_000, MaxPointersPerServer: 20_000, PublishRate: 20_000, MaxQueuedPerPeer: maxQueued / 8, RouteTimeout: 10 * time.Second, MaxFanout: 256,
		ConfirmTimeout: 5 * time.Second}
}

// PointerTTL is how long a pointer lives unless republished: two
// republish intervals.
func (c Config) PointerTTL() time.Duration { return 2 * c.Republish }

// Validate reports a configuration that cannot work.
func (c Config) Validate() error {
	switch {
	case c.DigitBits != 4 && c.DigitBits != 2:
		return errors.New("tapestry: digits of 4 bits (base 16) or 2 bits (base 4)")
	case c.Links < 1 || c.Links > 3:
		return errors.New("tapestry: links per entry must be 1 to 3")
	case c.NearestK < 1:
		return errors.New("tapestry: k must be at least 1")
	case c.Republish <= 0 || c.Beacon <= 0 || c.Repair <= 0 || c.RouteTimeout <= 0 || c.ConfirmTimeout <= 0:
		return errors.New("tapestry: republish, beacon, repair, route and confirm timeouts must be positive")
	case c.MaxPointers < 1 || c.MaxPointersPerServer < 1 || c.MaxFanout < 1 || c.PublishRate <= 0 || c.MaxQueuedPerPeer < 1:
		return errors.New("tapestry: pointer bounds, fan-out and publish rate must be positive")
	case c.ExtraBackups < 0 || c.ExtraBackups > 2 || c.ExtraNearest < 0 || c.ExtraNearest > 16 || c.ExtraHops < 0 || c.ExtraHops > 40:
		return errors.New("tapestry: extra pointers (k, l, m) want 0 <= k <= 2, 0 <= l <= 16, 0 <= m <= 40")
	}
	return nil
}
