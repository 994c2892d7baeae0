// Package disk is triad's storage engine on a real disk (the UsenetDHT
// paper's storage engine, §5): objects are appended to segment files
// grouped by expiry window, so a window whose objects have all expired is
// freed by unlinking whole files; a bbolt database beside them is the
// metadata index and holds the persisted Merkle tree that Passing Tone
// compares. A group commit makes puts durable with one fdatasync per
// interval, the segments serve as the log the index catches up with at
// checkpoints, and Open recovers from a crash without serving bad bytes.
//
// Disk implements store.Engine and passes storetest.RunContract. It is the
// one package of the store that does I/O (os, syscall, bbolt, memory
// maps); its segments go through internal/vfs, so that tests can open it
// on a file system that loses what was not synced (OpenFS). Node logic
// must not import it, only drivers and commands do, handing the engine to
// dhash as a store.Engine.
//
//	d, err := disk.Open(store.Options{Dir: dir})
//	...
//	defer d.Close()
//
// The files:
//
//   - disk.go: Disk, Open and Close
//   - write.go: the write path (Put, append to a segment) and group commit
//   - checkpoint.go: the index and tree catching up with the segments
//   - delete.go: Delete, tombstones and their cutoff rule
//   - compact.go: rewriting segments less than half live
//   - expire.go: keys leaving the tree at expiry; windows reclaimed
//   - read.go: Get, Stat, Keys, Stats, the tree queries; quarantine
//   - view.go: View, reading in place from a memory map
//   - record.go: the segment record format
//   - index.go: the bbolt index's buckets and its Merkle tree backend
//   - recover.go: Open's recovery: replay past the watermarks, cut tails
//
// docs/storage.md describes the layout, recovery and measurements.
package disk
