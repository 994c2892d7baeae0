// Package store is the storage engine of one physical node, shared by its
// virtual servers (UsenetDHT §5.4, "Expiration support", and §5.5,
// "Storage performance": adbd's append-only files named by expiry and a
// key-value index holding the metadata and the Merkle tree).
//
// Disk is the real engine. Objects are appended to segment files, one or
// more per expiry window; freeing space unlinks whole files, soonest expiry
// first, when the disk nears its limit. A group commit makes puts durable
// with one fdatasync per interval. A bbolt index maps each key to its
// segment, offset, size and expiry and holds the Merkle tree of unexpired
// keys (package merkle); both catch up at checkpoints, and recovery replays
// the segments past the last one and cuts torn tails. Records carry
// checksums; a read never returns bytes that fail them. Mem is the same
// contract in memory, for the simulator; both pass the contract tests.
//
//	d, err := store.Open(store.Options{Dir: dir})
//	err = d.Put(key, data, expiry, store.PutOptions{})
//	data, meta, err := d.Get(key)
//
// Layer: I/O, below dhash and the front-ends, above merkle and id. It
// touches files and runs its own goroutines, so node logic reaches it only
// through work handed to env.Offload; it must not import node logic above
// merkle (node, rpc, ring, dhash) or a driver.
package store
