// Package id holds ring identifiers: fixed-width unsigned integers stored as
// big-endian bytes, with the circular arithmetic Chord needs (interval
// membership on the circle, clockwise distance, adding 2^i).
//
// The width is a property of each value, not of the package: the Chord ring
// uses 160 bits (content keys are the first 160 bits of SHA-256), and D2's
// 512-bit keys use the same code. Mixing widths in one operation is a
// programming error and panics.
//
//	k := id.Key(data)                  // 160-bit content key
//	if k.In(pred, self) { ... }        // k in (pred, self]
//
// Layer: the bottom. It must import nothing of this module, and nothing that
// touches the outside world (os, net, sync, the wall clock, global
// randomness: TestNodePackagesStaySansIO, in package node).
package id
