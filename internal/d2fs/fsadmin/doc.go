// Package fsadmin is the administration of D2-FS volumes that the triad
// fs commands print: the volume registry (a name for each volume ID,
// signed by the volume's writer), the writers' key files, a volume's
// status as its nodes hold it, the holders of its blocks, and the orphans
// fsck finds. It implements no part of the paper itself
// (../shared/papers/d2-defragmented-dht-fs.txt §3 has the volumes, the
// superblock and the lease it reports on); it sits over internal/d2fs and
// internal/d2client so that cmd/triad is flags and printing only, and so
// that these rules are tested without a process.
//
// Most functions take a Store: d2client.Blocks over the network, or
// d2fs.MemBlocks wrapped by a test. The ones that ask nodes about
// themselves (holders, a node's D2 space) take *d2client.Blocks.
package fsadmin
