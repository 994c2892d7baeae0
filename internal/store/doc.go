// Package store is the contract of triad's storage engine, the part of a
// node that keeps objects until their expiry: the storage engine of the
// UsenetDHT paper (§5), with expiry-grouped append-only files, a metadata
// index and a persisted Merkle tree for Passing Tone.
//
// It holds only what both sides of the contract share: the Engine
// interface, its Options (WithDefaults), PutOptions, Meta, Stats and the
// errors, and the rules every engine applies the same way (CheckPut,
// CheckKey, WindowOf, WindowEnd, EntersTree, ObjectBytes, CompareRoots).
// The engines live in subpackages: disk (segments and a bbolt index on a
// real disk) and mem (in memory, for the simulator); storetest holds the
// contract tests both pass.
//
// The first rule of the contract: a put never replaces what is stored. A
// key is verified before anything is written (the content hash of a whole
// object; the caller checks an Opaque one), putting the same object again
// only extends its expiry, and putting another object under a stored key
// fails with ErrConflict and stores nothing. Only Delete takes an object
// away before its expiry; a put after it stores again.
//
// Node logic (dhash) imports this package, so it must stay free of I/O: it
// imports errors, fmt and time, id and merkle, and nothing else — never
// os, syscall, sync, bbolt, or the engines — and it never reads the wall
// clock (the engine fills in a nil Options.Now).
//
//	var e store.Engine = mem.New(store.Options{Now: clock})
//	err := e.Put(key, data, expiry, store.PutOptions{})
//	data, meta, err := e.Get(key)
//
// docs/storage.md describes the design.
package store
