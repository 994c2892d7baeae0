// Package wire defines the messages triad nodes exchange and their binary
// codec.
//
// A frame on a connection is a 4-byte big-endian length followed by one
// encoded Envelope. Envelopes and messages use the protobuf wire format
// (google.golang.org/protobuf/encoding/protowire): the simulator passes
// message values between nodes, so they are plain Go structs, and the
// format still gets protobuf's rules for evolution (unknown fields are
// skipped, new fields take new numbers). Every length is bounded before
// anything is allocated; see the Max constants. FuzzDecode holds the
// decoder to that.
//
// Message type numbers are fixed, one range per protocol (Ranges: runtime
// 1-15, ring 16-63, dhash 64-127, maint 128-191, usenet 192-255, cc
// 256-319, tapestry 320-383, d2 384-447). testdata/types.txt is their
// append-only registry, and TestTypeRegistry fails when a number changes
// meaning or is reused, or when the code, the registry and schema.proto
// disagree.
//
// A message is declared once: its struct, with a //wire:msg line giving
// its number and who may send it (node, client or operator; "big" when
// its reply may hold a block), and a `wire:"N"` tag on every field giving
// its field number and, for a list, a byte string or a bounded integer, a
// bound (max=CONST; lists default to MaxListLen; a list of strings bounds
// each string with each=CONST, default MaxTextBytes). A value nested in a
// message is a struct marked //wire:struct. wiregen (go generate) writes
// the rest from the declarations: the type constant, the line in the types
// table (which gives the decoder, Type.String and RoleOf), encode,
// decodeField and clone (msgs_gen.go), the message in schema.proto and its
// line in testdata/types.txt. The tests make a round-trip sample and a
// fuzz corpus entry of every entry in the table. CI fails when msgs_gen.go
// is not what wiregen writes. For example:
//
//	// D2Stat asks which nodes hold Key; the reply is a D2Holders.
//	//
//	//wire:msg 403 client
//	type D2Stat struct {
//		Key  id.ID  `wire:"1"`
//		Hash []byte `wire:"2,max=MaxD2Hash"`
//	}
//
// The kinds a field may have: bool, uint32, uint64, int64 (zig-zag),
// string, []byte, id.ID, NodeRef (noid: one that may lack an ID), a named
// integer type, a //wire:struct, and a list of any of these. A list of
// integers writes every element, zero too, so that lists pair by position.
// Envelope, NodeRef and Coord keep their hand-written codec (wire.go,
// codec.go): they are the frame itself and its hot path.
//
// Names follow one convention in every protocol: a request is named for
// what it does or asks (StoreBlock, FetchBlock, GetNeighbors, TreeQuery,
// TapLocate, D2FindSucc); a reply for what it carries (Block, Neighbors,
// NextHopInfo, TreeInfo, TapTable, D2Holders, D2Space), XDone for the
// outcome of an operation (PutDone, LookupDone, TapLocateDone,
// TapRouteDone, D2StoreDone), or Ack and Error. A rename keeps the number:
// wiregen appends "N protocol NEW renames OLD" to testdata/types.txt (issue
// 45 renamed TapDeliver, TapPublished, TapLocated and D2Stored so).
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

//go:generate go run ./wiregen
