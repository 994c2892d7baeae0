// Package d2 is D2-Store and its load-balancing DHT, after "Defragmenting
// DHT-based Distributed File Systems"
// (../shared/papers/d2-defragmented-dht-fs.txt), as a protocol on the host
// runtime (messages 384-447).
//
// Ring (§6, §7). A node holds one position on a ring of 64-byte keys
// (KeyBytes; the keys of internal/d2/key) and owns the keys from its
// predecessor's position, exclusive, to its own. Positions travel inside
// D2's messages (wire.D2Ref); the envelopes' senders stay the hosts' ring
// references. A node joins through a bootstrap by looking up its position
// and asking the owner to take it as predecessor; stabilization keeps a
// successor list of r+3 and r predecessors; a successor the host declares
// dead is dropped. Keys are not hashed, so positions crowd where keys do:
// long links are spaced in node count, not in key distance, as Mercury's
// are. Link i is the node about 2^i nodes on, found as link i-1's own link
// i-1, so a node keeps about log2 n links, one per octave of node-count
// distance (the harmonic distribution of Mercury's sampled links, one link
// per octave), and estimates n as 2^links. Lookups are iterative: the node
// that starts one asks each step itself, greedily (the known node nearest
// before the key), and a step that times out is routed around.
//
// D2-Store (§3). A block (8 KB at most) lives on the r = 3 successors of its
// key, in a store.Engine of 64-byte keys given to the node (opaque keys: a
// key is a path, not a hash). Client requests (put, get, delete, latest,
// stat; the client API role) reach any node, which finds the owner and
// talks to the holders directly. A put says what it may replace
// (wire.D2PutMode: keep, replace, if absent, if the current block's
// SHA-256 is prev); the key's owner decides, against what it holds (its
// copy, or the block a pointer names), one put of a key at a time (a
// bounded queue per key), so a conditional put's check and store are
// atomic; a condition that fails is ErrConflict and stores nothing
// (put.go). A put is acknowledged with the copies stored, once the owner
// has heard from each of its r-1 successors, which replace what they hold
// with the owner's choice. A get names the block's SHA-256: a copy that
// does not match is skipped and counted, and the next replica asked.
// Latest(prefix) is the greatest key with a prefix and its bytes (a
// volume's newest root): the owner of the prefix's last key and its
// successors are asked, the greatest taken (an acknowledged put is on the
// owner, or on a successor of a new owner), then the owners before while
// their ranges begin inside the prefix. Stat(k, hash) names k's r holders
// and which of them keep a copy with that SHA-256 (one that does not
// answer is reported as such, not as missing): a client's only view of
// where a block lives. A delete is remembered for an hour by the holders
// it reached, so that no sync brings the key back from a replica it
// missed (tombs.go).
//
// Only a volume's writer writes (RELIABILITY E3; auth.go). A client's
// puts, of every mode, and its deletes carry the writer's ed25519
// signature of the request (internal/d2/key's Grant; the volume ID, a
// key's first 20 bytes, is derived from the public key), which the gateway
// checks against its clock before anything is looked up or changed: a
// request without a valid one is refused as a bad request ("permission
// denied", ErrForbidden) and counted (Stats.Unauthorized). The name
// registry's volume (key.Registry), which no key pair derives, is the one
// exception: its records are put if absent, unsigned, and never replaced
// or deleted. The gateway relays puts to the owner as D2Store, a
// node-to-node message, so no client reaches the owner's decision
// unchecked, and the owner checks the consent it relays again, as every
// holder checks a drop's (Config.CheckPeers, issue 44): a node
// certificate does not stand for a writer. A captured signed request can
// only be replayed on its key, with its bytes, until it expires
// (MaxGrantAhead at most). A block keeps the writer's consent it was put
// with, and every copy of it carries the consent, checked by the node
// that takes it (proof.go); a gateway acknowledges only the copies the
// holders confirm, and places those a lying owner did not make
// (verify.go); replica partners audit each other's possession and route
// copies past one that keeps nothing, so a position aimed at a volume
// buys its node nothing (audit.go); a node counts the names each client
// claims through it against a quota (quota.go).
//
// Consistency under failures (issue 43, not in the paper). Replaced
// blocks carry a version, and the owner decides a conditional put against
// the newest copy among its holders (store.go). A node does not vouch for
// keys that came into its replica range through failures rather than from
// their holders, for Config.Doubt; a conditional put or a Latest needs a
// majority of the key's holders to vouch, else it answers unavailable
// rather than risk a stale copy (doubt.go). After every node stops, the
// deployment's seed founds the ring again (ring.go's cold start).
//
// Lookup cache (§5). A gateway keeps the lookups it made: key range to
// owner and successors, for 1.25 hours. A request in a cached range skips
// the lookup (a hit); a miss, or an owner that answers "not mine", falls
// back to a lookup.
//
// Load balancing (§6, Figs. 4-5). Every probe interval (10 minutes) a node
// samples a node by a short random walk over links, successors and
// predecessors; if its primary load (the keys of its range, blocks and
// pointers) exceeds t = 4 times the node's own, the node leaves and
// rejoins at the median key of that node's range, taking half its load.
// A sampler loaded past t times the sampled node invites it (D2Invite),
// which checks for itself and may move the same way. The node it joins
// hands it block pointers (key, holder), not blocks: it stays one of their
// r successors. Pointers are fetched once held for the pointer
// stabilization time (1 hour), and handed on unfetched if another node
// joins in front first. Once per sync interval (5 minutes) each node
// pushes its primary blocks to the successors that lack them (fetching
// those it holds pointers to: replicas do not wait), takes pointers to
// those only a successor has, and hands off what it no longer replicates:
// a key out of its range at two rounds in a row is looked up, its r
// holders are asked what they hold, missing blocks are pushed to them, and
// it is dropped only once all r hold it. So the r successors of a mover's
// old and new positions fetch or drop replicas, and a move never drops a
// last copy. A node may move once per probe interval; the nodes it joins
// refuse a second move within half an interval (a margin for the time a
// move takes to be seen), and count it.
//
// Bounds: the keys a node holds (blocks and pointers, MaxBlocks), the
// client requests in flight (MaxPending), the puts waiting at an owner (8
// per key, on at most MaxPending keys), the deletes remembered
// (MaxTombstones), the lookup cache (MaxCache), a lookup's steps (MaxHops), the fetches and pushes of a sync round
// (MaxFetchesPerSync), the pointers one join hands over at once, the peers
// whose moves are remembered and the peers being probed after a timeout.
//
// Layer: node logic, above host, rpc, store (through offloaded work),
// wire, id, node and d2/key. It must not import os, net, sync, syscall, the wall
// clock, global randomness or a driver.
//
//	h, _ := host.New(host.DefaultConfig(), addr)
//	n, _ := d2.New(d2.DefaultConfig(), h, ringRef, pos, engine64, bootstraps)
//	// the driver runs h; in its loop:
//	n.Put(env, k, data, wire.D2PutReplace, nil, func(env node.Env, copies int, err error) {...})
//	n.Latest(env, prefix, func(env node.Env, k id.ID, data []byte, found bool, err error) {...})
package d2
