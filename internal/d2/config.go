package d2

import (
	"errors"
	"time"

	"triad/internal/id"
	"triad/internal/node"
)

// KeyBytes is the width of D2's keys and positions: 64 bytes (§4, Fig. 3).
const KeyBytes = id.MaxBytes

// Config sets a node's D2. Zero fields are invalid unless noted; start
// from DefaultConfig.
type Config struct {
	// Replicas is r, the successors of a key that store its block (3;
	// §3). The successor list holds Replicas+3 nodes.
	Replicas int
	// BlockBytes bounds a block: 64 KB, the data blocks of a D2-FS
	// volume made now (d2fs.DataBlockBytes); the paper's blocks are 8 KB
	// (§3), as D2-FS's metadata and older volumes' data are. Up to
	// wire.MaxD2Block.
	BlockBytes int
	// Probe is the load-balancing probe interval (10 minutes; §8.1): a
	// node samples one random node per interval, and moves at most once
	// per interval.
	Probe time.Duration
	// Threshold is t: a node moves when the node it sampled has more than
	// t times its primary load (4; §6). Zero turns balancing off.
	Threshold float64
	// PointerStabilization is how long a new owner holds a block pointer
	// before it fetches the block (1 hour; §6, §8.1). Zero: at the next
	// sync round, which is balancing without pointers (the baseline of
	// §6's "reducing load balancing overhead").
	PointerStabilization time.Duration
	// CacheTTL is how long a lookup-cache entry lives (1.25 hours; §5).
	// Zero turns the cache off.
	CacheTTL time.Duration
	// MaxCache bounds the lookup cache's entries (4096); the oldest go
	// first.
	MaxCache int
	// Stabilize is how often a node checks its successor and predecessor
	// (30 s).
	Stabilize time.Duration
	// FixLinks is how often a node rebuilds its long links (30 s).
	FixLinks time.Duration
	// Sync is how often a node pushes its primary blocks to the replicas
	// that lack them, fetches due pointers and drops what it no longer
	// replicates (5 minutes).
	Sync time.Duration
	// MaxBlocks bounds the keys (blocks and pointers) a node holds
	// (1,000,000): past it, stores are refused as full.
	MaxBlocks int
	// MaxPending bounds the client requests and lookups a node has in
	// flight (4096): past it, new ones are refused as busy.
	MaxPending int
	// MaxHops bounds a lookup's steps (64).
	MaxHops int
	// Retention is the expiry a stored block is given in the engine,
	// which wants one: D2's blocks live until deleted, so a year, pushed
	// on whenever the block is stored again.
	Retention time.Duration
	// MaxFetchesPerSync bounds the pointer fetches and replica pushes of
	// one sync round (512), so that a node's migration traffic is paced.
	MaxFetchesPerSync int
	// Tombstone is how long a node remembers a key it was told to delete,
	// so that its sync neither brings the key back from a replica the
	// delete missed nor accepts it pushed (1 hour: twelve sync rounds; a
	// replica down longer may bring it back). Zero remembers none.
	Tombstone time.Duration
	// MaxTombstones bounds the deleted keys a node remembers (1 << 18);
	// past it, the oldest are forgotten first.
	MaxTombstones int
	// Seed is the address the deployment's nodes are told to join through
	// (a deployment's --join, deploy.Options.Bootstrap; the first node's
	// own address on the first node). After a cold start the seed founds
	// the ring again, and the others wait for it while it answers
	// (ring.go); a seed down for seedWait surveys, or none named, leaves
	// it to the lowest address.
	Seed node.Addr
	// CheckPeers makes a node check the volume writer's consent on the
	// writes other nodes relay, not only on a client's (auth.go): a put
	// decided at this owner, a dropped copy (on in DefaultConfig). Off
	// only where writers use the host's own API, unsigned (the
	// simulator's experiments).
	CheckPeers bool
	// VerifyCopies makes a gateway acknowledge a relayed put only for the
	// copies the holders confirm, and place the copies an owner's claim
	// lacks itself (verify.go; on in DefaultConfig).
	VerifyCopies bool
	// AckAndDrop, for tests and the simulator's rogue scenario only,
	// makes the node lie as a key's owner and as a replica: it answers
	// every relayed put with r copies on itself and its successors, and
	// every copy given to it with one, and stores and replicates nothing
	// (verify.go and audit.go are what catch it).
	AckAndDrop bool
	// Audits is how many keys a node challenges each replica partner for
	// at each sync round (1; audit.go). Zero turns audits off.
	Audits int
	// Doubt is how long a node does not vouch for keys that came into its
	// replica range through failures rather than from their holders (5
	// minutes): while no holder of a key vouches for it, Latest and
	// conditional puts of it answer unavailable rather than risk a stale
	// copy (doubt.go). A partition longer than this may let a stale copy
	// answer once it ends. Zero doubts nothing.
	Doubt time.Duration
	// MaxNames bounds the volume names one client may claim through this
	// node (registry records put by a client's D2Put): its certificate
	// with TLS, its IP address without (quota.go). Zero: no bound.
	// Default 100.
	MaxNames int
}

// DefaultConfig is the paper's: r = 3, 8 KB blocks, a 10-minute probe, t =
// 4, a 1-hour pointer stabilization time and a 1.25-hour cache TTL.
func DefaultConfig() Config {
	return Config{
		Replicas: 3, BlockBytes: 64 << 10, Probe: 10 * time.Minute, Threshold: 4,
		PointerStabilization: time.Hour, CacheTTL: 75 * time.Minute, MaxCache: 4096,
		Stabilize: 30 * time.Second, FixLinks: 30 * time.Second, Sync: 5 * time.Minute,
		MaxBlocks: 1_000_000, MaxPending: 4096, MaxHops: 64, Retention: 365 * 24 * time.Hour,
		MaxFetchesPerSync: 512, Tombstone: time.Hour, MaxTombstones: 1 << 18,
		Doubt: 5 * time.Minute, CheckPeers: true, VerifyCopies: true, MaxNames: 100, Audits: 1,
	}
}

// Validate reports a configuration that cannot work.
func (c Config) Validate() error {
	switch {
	case c.Replicas < 1 || c.Replicas > 8:
		return errors.New("d2: replicas must be 1 to 8")
	case c.BlockBytes < 1 || c.BlockBytes > maxBlockBytes:
		return errors.New("d2: block size must be 1 byte to 64 KiB")
	case c.Probe <= 0 || c.Stabilize <= 0 || c.FixLinks <= 0 || c.Sync <= 0 || c.PointerStabilization < 0:
		return errors.New("d2: probe, stabilize, link and sync intervals must be positive")
	case c.Threshold != 0 && c.Threshold < 2:
		return errors.New("d2: the balancing threshold t must be 0 (off) or at least 2")
	case c.CacheTTL < 0 || c.MaxCache < 1:
		return errors.New("d2: the cache TTL must not be negative and the cache must hold an entry")
	case c.MaxBlocks < 1 || c.MaxPending < 1 || c.MaxHops < 1 || c.MaxFetchesPerSync < 1:
		return errors.New("d2: block, pending, hop and fetch bounds must be positive")
	case c.Doubt < 0 || c.MaxNames < 0:
		return errors.New("d2: the doubt time and the name quota must not be negative")
	case c.Audits < 0 || c.Audits > maxAudits:
		return errors.New("d2: audits per partner and sync round must be 0 to 16")
	case c.Tombstone < 0 || c.MaxTombstones < 1:
		return errors.New("d2: the tombstone time must not be negative and at least one must be kept")
	case c.Retention < time.Hour:
		return errors.New("d2: retention must be at least an hour")
	}
	return nil
}

// succsLen is the successor list's length: r + 3 (at least r + 2, so a
// node that lost two successors still knows its r).
func (c Config) succsLen() int { return c.Replicas + 3 }
