// Package wire defines the messages triad nodes exchange and their binary
// codec.
//
// A frame on a connection is a 4-byte big-endian length followed by one
// encoded Envelope. Envelopes and messages use the protobuf wire format
// (google.golang.org/protobuf/encoding/protowire), written by hand from the
// schema in schema.proto rather than generated: the simulator passes message
// values between nodes, so they are plain Go structs, and the format still
// gets protobuf's rules for evolution (unknown fields are skipped, new fields
// take new numbers). Every length is bounded before anything is allocated;
// see the Max constants. FuzzDecode holds the decoder to that.
//
//	b := wire.Encode(nil, wire.Envelope{Kind: wire.Request, ReqID: 7, Msg: &wire.Ping{}})
//	env, err := wire.Decode(b)
//
// Layer: node logic, above id. It must not import os, net, sync, syscall,
// the wall clock, global randomness or any package above it; its only
// third-party import is protowire (TestNodePackagesStaySansIO).
package wire
