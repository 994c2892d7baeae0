package wire

import (
	"fmt"

	"triad/internal/id"
)

// Type identifies a message type on the wire. Every number is fixed here,
// lies in its protocol's range (see Ranges) and is never reused or given a
// new meaning: testdata/types.txt is the append-only registry that
// TestTypeRegistry holds this list and schema.proto to.
type Type uint16

// Role says who may send a message of a type: what a driver checks
// against the connection a frame arrives on (see tcp.Driver), so that the
// driver names no protocol's messages.
type Role uint8

const (
	// RoleNode types are sent by nodes only, never by a client.
	RoleNode Role = iota
	// RoleClient types are the client API: a client (a program, a news
	// front-end, an operator) may send them, and so may a node.
	RoleClient
	// RoleOperator types are an operator's commands: only a client the
	// node trusts as its operator may send them, never a node.
	RoleOperator
)

// Range is the block of message type numbers, Lo to Hi inclusive, that
// belongs to one protocol. A protocol numbers its messages inside its own
// range, so protocols can grow without coordinating with each other.
type Range struct {
	Protocol string
	Lo, Hi   Type
}

// ranges is the table behind Ranges and RangeOf, in number order. Ranges
// marked reserved have no messages yet.
var ranges = [...]Range{
	{"runtime", 1, 15},     // Ping, Ack, Error: the RPC layer
	{"ring", 16, 63},       // Chord
	{"dhash", 64, 127},     // blocks
	{"maint", 128, 191},    // Passing Tone maintenance
	{"usenet", 192, 255},   // site-to-site header flooding; reserved
	{"cc", 256, 319},       // congestion control: routed requests
	{"tapestry", 320, 383}, // Tapestry: prefix routing, object location
	{"d2", 384, 447},       // D2: its ring, block store and load balancing
}

// Ranges returns the protocols' number ranges in number order. The caller
// owns the slice.
func Ranges() []Range { return append([]Range(nil), ranges[:]...) }

// RangeOf returns the range that holds t; ok is false for a number outside
// every range.
func RangeOf(t Type) (r Range, ok bool) {
	for _, r := range ranges {
		if r.Lo <= t && t <= r.Hi {
			return r, true
		}
	}
	return Range{}, false
}

// typeInfo is one message type's entry in the types table.
type typeInfo struct {
	typ  Type
	name string // as in testdata/types.txt and the logs
	role Role   // who may send it
	// bigReply: a request of this type may be answered with a block (up to
	// the frame limit), so a driver holds more room for its reply.
	bigReply bool
	new      func() Msg
}

// newOf makes the zero message of type T, for the types table.
func newOf[T any, P interface {
	*T
	Msg
}]() Msg {
	return P(new(T))
}

// byType indexes types by number. It is built once and never changed.
var byType = func() map[Type]*typeInfo {
	m := make(map[Type]*typeInfo, len(types))
	for i := range types {
		ti := &types[i]
		if _, dup := m[ti.typ]; dup {
			panic(fmt.Sprintf("wire: type %d listed twice", ti.typ))
		}
		if got := ti.new().Type(); got != ti.typ {
			panic(fmt.Sprintf("wire: %s listed as type %d is type %d", ti.name, ti.typ, got))
		}
		m[ti.typ] = ti
	}
	return m
}()

// newMsg returns the zero message of type t, or nil for a type the codec
// does not know.
func newMsg(t Type) Msg {
	if ti := byType[t]; ti != nil {
		return ti.new()
	}
	return nil
}

// RoleOf says who may send a message of type t; an unknown type is a
// node's.
func RoleOf(t Type) Role {
	if ti := byType[t]; ti != nil {
		return ti.role
	}
	return RoleNode
}

// BigReply reports whether a request of type t may be answered with a
// block (up to the frame limit), so that a driver holds more room for its
// reply than for another's; false for an unknown type.
func BigReply(t Type) bool {
	ti := byType[t]
	return ti != nil && ti.bigReply
}

// String names the type, for logs and errors.
func (t Type) String() string {
	if ti := byType[t]; ti != nil {
		return ti.name
	}
	return fmt.Sprintf("Type(%d)", uint16(t))
}

// Ping asks whether a node is alive; the answer is an Ack.
//
//wire:msg 1 client
type Ping struct{}

// GetNodeInfo asks a process about itself (triad status): the reply is a
// NodeInfo. The runtime answers it, as it does Ping.
//
//wire:msg 6 client
type GetNodeInfo struct{}

// NodeInfo answers GetNodeInfo: the build the process runs, when its host
// began, its data folder's file system, and the peers it holds dead now
// (declared dead within its dead memory and not heard from since), which
// its neighbours may already have dropped from their lists.
//
//wire:msg 7 node
type NodeInfo struct {
	Version   string   `wire:"1,max=MaxVersionBytes"`
	Started   int64    `wire:"2"` // Unix nanoseconds
	DiskFree  uint64   `wire:"3"` // bytes a writer may still use there; 0 with DiskTotal 0: unknown
	DiskTotal uint64   `wire:"4"`
	Dead      []string `wire:"5,max=MaxListLen,each=MaxAddrBytes"`
}

// MaxVersionBytes bounds NodeInfo.Version.
const MaxVersionBytes = 128

// Ack is the empty reply.
//
//wire:msg 2 node
type Ack struct{}

// Challenge asks the process at the sender's claimed address to prove that
// a connection claiming that address is its own, by sending Nonce back on
// it as a Proof. Drivers exchange it; nodes never see it.
//
//wire:msg 4 node
type Challenge struct {
	Nonce uint64 `wire:"1"`
}

// Proof answers a Challenge on the connection whose claim it proves.
//
//wire:msg 5 node
type Proof struct {
	Nonce uint64 `wire:"1"`
}

// Stabilize is Chord's stabilize and notify in one round trip: the sender
// believes it is the receiver's predecessor. The reply is the receiver's
// Neighbors.
//
//wire:msg 16 node
type Stabilize struct{}

// GetNeighbors asks for the receiver's predecessor and successor lists.
//
//wire:msg 17 node
type GetNeighbors struct{}

// Neighbors carries a node's predecessor list (nearest first) and successor
// list (nearest first).
//
//wire:msg 18 node
type Neighbors struct {
	Preds []NodeRef `wire:"1"`
	Succs []NodeRef `wire:"2"`
}

// Lookup is a recursive lookup in flight. Each hop acknowledges it (Ack) and
// forwards it; the node that can answer sends LookupDone to Origin.
//
//wire:msg 19 node
type Lookup struct {
	LookupID uint64  `wire:"1"`
	Key      id.ID   `wire:"2"`
	Origin   NodeRef `wire:"3"`
	// MinSuccs selects where the lookup stops. Zero routes to the key's
	// immediate predecessor (classic Chord). m > 0 lets the first node whose
	// successor list already holds m successors of Key answer (DHash++
	// "integration"), saving the last hops.
	MinSuccs uint32 `wire:"4"`
	Hops     uint32 `wire:"5"`
}

// LookupDone ends a lookup: the answering node's view of Key's successors,
// nearest first. Failed is set when no route was found.
//
//wire:msg 20 node
type LookupDone struct {
	LookupID uint64    `wire:"1"`
	Key      id.ID     `wire:"2"`
	Hops     uint32    `wire:"3"`
	Pred     NodeRef   `wire:"4"`
	Succs    []NodeRef `wire:"5"`
	Failed   string    `wire:"6"`
}

// NextHop asks one step of an iterative lookup.
//
//wire:msg 21 node
type NextHop struct {
	Key      id.ID  `wire:"1"`
	MinSuccs uint32 `wire:"2"`
}

// NextHopInfo answers NextHop: either Done with the key's successors, or the
// next candidates to ask, best first.
//
//wire:msg 22 node
type NextHopInfo struct {
	Done  bool      `wire:"1"`
	Succs []NodeRef `wire:"2"`
	Next  []NodeRef `wire:"3"`
}

// Leave tells a neighbour that the sender is leaving gracefully, with its
// lists so the neighbour can close the gap at once.
//
//wire:msg 23 node
type Leave struct {
	Preds []NodeRef `wire:"1"`
	Succs []NodeRef `wire:"2"`
}

// GetRingInfo asks a process for the routing state of all its virtual
// servers (for `triad ring`).
//
//wire:msg 24 client
type GetRingInfo struct{}

// Finger is one finger-table entry: the successor of self + 2^Bit.
//
//wire:struct
type Finger struct {
	Bit  uint32  `wire:"1"`
	Node NodeRef `wire:"2"`
}

// VnodeInfo is one virtual server's routing state.
//
//wire:struct
type VnodeInfo struct {
	Self    NodeRef   `wire:"1"`
	Preds   []NodeRef `wire:"2"`
	Succs   []NodeRef `wire:"3"`
	Fingers []Finger  `wire:"4,max=MaxFingers"`
}

// RingInfo answers GetRingInfo.
//
//wire:msg 25 node
type RingInfo struct {
	Vnodes []VnodeInfo `wire:"1,max=MaxVnodes"`
}

// ClientLookup asks a process to look up Key from one of its virtual
// servers; the reply is a LookupDone.
//
//wire:msg 26 client
type ClientLookup struct {
	Key id.ID `wire:"1"`
	// MinSuccs, as in Lookup: 0 asks for the key's immediate predecessor's
	// whole successor list; m > 0 lets the first node that knows m of the
	// key's successors answer (a client that sends its block to the first
	// of them needs no more). The node caps it at its successor list's
	// length.
	MinSuccs uint32 `wire:"2"`
}
