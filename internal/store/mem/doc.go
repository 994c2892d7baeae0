// Package mem is triad's storage engine held in memory, for the simulator
// and tests. It keeps what disk.Disk keeps, the UsenetDHT paper's storage
// engine (§5) minus the files: objects grouped by expiry window, reclaimed
// a whole window at a time past the high-water mark, and a Merkle tree of
// the keys that have not expired. With Options.DropData it keeps keys,
// sizes and expiries but no payload, so large simulations fit in memory.
// Damage marks a stored copy damaged: its next read quarantines it, as
// disk.Disk does with a record that fails its checksums, so simulations
// can exercise repair.
//
// Mem implements store.Engine and passes storetest.RunContract. It does no
// I/O and imports neither os nor bbolt; it uses a mutex and a B-tree, so
// node logic takes it as a store.Engine rather than importing it.
//
//	e := mem.New(store.Options{Now: clock})
//
// docs/storage.md describes the engine it stands in for.
package mem
