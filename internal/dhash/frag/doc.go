// Package frag is the format of an erasure-coded block's fragments and of
// the key that names such a block. It is pure (no coding: dhash runs the
// Reed-Solomon codec), so that a host, maintenance and the Go client can
// all check a fragment, or a rebuilt block, against its key.
//
// A fragmented block is named by its Descriptor: the coding (m of l), the
// block's size and content hash, and the hash of every fragment's shard.
// Its key is the first 160 bits of SHA-512/256 of the descriptor's bytes.
// Every fragment carries the whole descriptor, so one fragment proves
// itself against the key without the others: the descriptor must hash to
// the key and the shard to the descriptor's entry at the fragment's index
// (Fragment.Verify). A block rebuilt from any m fragments is checked by
// its content hash, which the descriptor names.
//
// A whole block keeps the key id.Key(data), the first 160 bits of SHA-256.
// SHA-512/256 is another function (other initial values), so no block's
// content hash is a descriptor's key: a key names either a whole block or a
// fragmented one, and a copy of the other kind under it never verifies.
//
// From DHash++ (dhashpp-low-latency-high-throughput.txt), "Erasure-coding
// vs. replication": a block is kept as l fragments of which any m rebuild
// it; issue 27 adds that each fragment is checkable on its own, so that a
// forged fragment neither blocks a read nor counts as a copy.
//
// Layer: pure data, above id only; dhash, maint and client import it.
package frag
