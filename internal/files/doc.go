// Package files stores files of any size in the block store: a file that
// fits in one block is that block; a larger one is cut into chunks, each a
// content-hash block of its own, listed in order by a manifest block whose
// key names the file (as CFS and DHash store files on a DHT; UsenetDHT §3
// keeps each article as one object, so the news server does not need it).
// Chunks are put and fetched several at a time; a chunk the store defers
// (its write window is full) is tried again for up to a minute.
//
//	key, err := files.Put(ctx, cluster, data, files.Options{Chunk: 1 << 20})
//	data, err := files.Get(ctx, cluster, key, files.Options{})
//
// The manifest is text: a magic line, "size N", then one "KEY LENGTH" line
// per chunk; ParseManifest bounds and checks every field.
//
// Layer: a client-side library above internal/client's API (through the
// Store interface) and internal/wire's errors; node logic never imports it.
package files
