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
// Message type numbers are fixed, one range per protocol (Ranges: runtime
// 1-15, ring 16-63, dhash 64-127, maint 128-191, cc 256-319, and ranges
// reserved for usenet, tapestry and d2, which have no messages yet).
// testdata/types.txt is their append-only registry, and TestTypeRegistry
// fails when a number changes meaning or is reused, or when the code, the
// registry and schema.proto disagree.
//
// A message is added in one table, types in msg.go, from which the decoder
// makes messages, Type.String names them and RoleOf says who may send them.
// To add one: take the next free number in its protocol's range and add
// its constant (TypeFoo Type = N); add its line to types ({TypeFoo, "Foo",
// RoleNode, newOf[Foo]}); write its struct and its methods Type, encode,
// decodeField and clone (new(*m) when it holds no slices); add TYPE_FOO = N
// and the message to schema.proto; append "N protocol Foo" to
// testdata/types.txt; and add a sample to samples() in wire_test.go.
//
// Names follow one convention: a request is named for what it does or
// asks (StoreBlock, FetchBlock, GetNeighbors, GetRingInfo, NextHop,
// TreeQuery, Audit); a reply for what it carries (Block, BlockInfo,
// Neighbors, RingInfo, NextHopInfo, TreeInfo, AuditProof), XDone for the
// outcome of a client's operation (PutDone, StatDone, LookupDone), or Ack
// and Error. A rename keeps the number: append "N protocol NEW renames
// OLD" to testdata/types.txt.
//
// Clone copies a message as the codec would (the simulator's hot path uses
// it in place of an encode and a decode); TestCloneIsTheCodec fills every
// field of every type and compares Clone(m) with Decode(Encode(m)).
//
// Errors travel as internal/fault's codes: a node replies with an Error
// of fault.CodeOf(err), and the decoded *Error matches the sentinel of its
// code, so errors.Is(err, fault.ErrNotFound) holds for a local error and
// for a reply alike.
//
//	b := wire.Encode(nil, wire.Envelope{Kind: wire.Request, ReqID: 7, Msg: &wire.Ping{}})
//	env, err := wire.Decode(b)
//
// Layer: node logic, above id and fault (its error codes). It must not import os, net, sync, syscall,
// the wall clock, global randomness or any package above it; its only
// third-party import is protowire (TestNodePackagesStaySansIO).
package wire
