// Package merkle is the Merkle tree Passing Tone synchronizes with
// (UsenetDHT §4.3, "Local maintenance", and §4.5): a 64-way tree over the
// keys a server stores, whose every node holds the hash of its children, so
// two servers holding the same keys under a prefix see equal hashes there
// and need look no further.
//
// A node is addressed by its Prefix (the first Depth 6-bit digits of a
// key), so a sync can ask a peer for any node directly. A node with at most
// LeafMax keys is a leaf and hashes its keys; the shape depends only on the
// key set, so equal sets give equal trees. The tree lives in a Backend: Mem
// in memory, or the storage engine's index on disk (store.Disk), as
// Passing Tone keeps the tree beside the objects rather than in them.
//
//	t := merkle.NewMem()
//	merkle.Update(t, added, removed)       // batch: shared ancestors hash once
//	root := merkle.Lookup(t, merkle.Root())
//	kids := merkle.Children(t, p)          // what a peer compares next
//
// Layer: node logic, above id only. It must not import os, net, sync,
// syscall, the wall clock, global randomness or the storage engine, nor
// start goroutines (TestNodePackagesStaySansIO, in package node, checks
// this and everything it imports).
package merkle
