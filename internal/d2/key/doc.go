// Package key is D2's block key (§4 and Fig. 3 of "Defragmenting DHT-based
// Distributed File Systems", ../shared/papers/d2-defragmented-dht-fs.txt):
// 64 bytes that sort the way the volume's namespace does, so that a
// directory's files, and each file's blocks, sit next to each other on
// the ring and a task meets few nodes.
//
//	bytes  0-19  volume ID
//	bytes 20-43  12 directory levels, 2 bytes each: the slot of every
//	             path component from the root (0 = no more levels)
//	bytes 44-51  hash of the path below level 12 (0 when the path fits)
//	bytes 52-55  inode
//	bytes 56-59  block number
//	bytes 60-63  version
//
// A name gets a slot, a 2-byte value unused in its directory, when it is
// created (FreeSlot); the key of a file's or directory's blocks is derived
// once from its parent's (Child) and kept in the directory entry, so a
// renamed file keeps its keys (§4). A path deeper than 12 levels, or a
// name in a directory whose 65,534 slots are taken (Overflow), is still
// placed, by hash, and Hashed reports it so the file system can count
// them.
//
// A volume's ID is derived from its writer's ed25519 public key
// (VolumeOfKey); a Grant is the writer's signature that lets the nodes
// put, replace or delete one key of the volume (grant.go), so that no one
// else can (RELIABILITY E3). The name registry's volume (Registry) has no
// writer: its records are put if absent, unsigned, and never changed.
//
// Layer: pure data (imports id and the standard library's crypto only).
package key
