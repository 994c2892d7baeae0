// Package workload is the file-system workload of `triad sim d2`: a tree
// of real paths and sizes (by default Go's own src, kept as a manifest so
// runs repeat), one copy of it per user volume, the keys a file system
// gives its blocks, and seeded users whose sessions of tasks make a trace
// of timed block accesses.
//
// It stands in for the Harvard NFS trace of "Defragmenting DHT-based
// Distributed File Systems" (../shared/papers/d2-defragmented-dht-fs.txt,
// §4 Fig. 2, §8.1, §9 "Access Groups"), which is not public: users read a
// package (all files of a directory), grep a subtree, edit files, browse,
// create and delete files, with think time over a second between access
// groups and accesses within a group under a second apart.
//
// Keys come from internal/d2/key as D2-FS would assign them (FS): each
// name takes the next free slot of its directory in creation order, each
// file or directory the next inode of its volume, and each 8 KB block of
// it a key of its own.
//
//	m, _ := workload.Default()                 // Go's src
//	tr := workload.NewTrace(m, workload.DefaultConfig())
//	for a, ok := tr.Next(); ok; a, ok = tr.Next() { ... a.Key ... }
//
// Layer: pure data above internal/d2/key; no clock, no goroutines. It reads
// files only in ReadTree and Load, for the command line.
package workload
