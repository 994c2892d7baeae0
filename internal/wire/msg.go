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

// Message types of the runtime (the RPC layer), 1-15.
const (
	TypePing  Type = 1
	TypeAck   Type = 2
	TypeError Type = 3
	// The drivers' connection handshake (never seen by a node): a node
	// that accepts a connection claiming a sender address sends a
	// Challenge to that address over a connection it dials itself, and
	// the claim holds once the Proof comes back on the accepted one.
	TypeChallenge Type = 4
	TypeProof     Type = 5
)

// Message types of the ring (Chord), 16-63.
const (
	TypeStabilize    Type = 16
	TypeGetNeighbors Type = 17
	TypeNeighbors    Type = 18
	TypeLookup       Type = 19
	TypeLookupDone   Type = 20
	TypeNextHop      Type = 21
	TypeNextHopInfo  Type = 22
	TypeLeave        Type = 23
	TypeGetRingInfo  Type = 24
	TypeRingInfo     Type = 25
	TypeClientLookup Type = 26
)

// Message types of the block store (DHash), 64-127.
const (
	TypeStoreBlock     Type = 64
	TypeFetchBlock     Type = 65
	TypeBlock          Type = 66
	TypeStatBlock      Type = 67
	TypeBlockInfo      Type = 68
	TypeClientPut      Type = 69
	TypePutDone        Type = 70
	TypeClientGet      Type = 71
	TypeClientStat     Type = 72
	TypeStatDone       Type = 73
	TypeClientPutBatch Type = 74
	TypePutBatchDone   Type = 75
	TypeStatBlocks     Type = 76
	TypeBlockInfos     Type = 77
	TypeStoreBlocks    Type = 78
	TypeStoresDone     Type = 79
)

// Message types of maintenance (Passing Tone), 128-191.
const (
	TypeTreeQuery      Type = 128
	TypeTreeInfo       Type = 129
	TypeGetMaintStatus Type = 130
	TypeMaintStatus    Type = 131
	TypeMaintControl   Type = 132
	TypeAudit          Type = 133
	TypeAuditProof     Type = 134
)

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

// types is every message type the codec knows, one line each, in number
// order: adding a message is a line here, its constant, its struct and
// its methods (Type, encode, decodeField, clone), its number in
// testdata/types.txt and its schema in schema.proto. newMsg, Type.String
// and RoleOf read it; TestTypeRegistry holds it to the registry.
var types = [...]typeInfo{
	{TypePing, "Ping", RoleClient, false, newOf[Ping]},
	{TypeAck, "Ack", RoleNode, false, newOf[Ack]},
	{TypeError, "Error", RoleNode, false, newOf[Error]},
	{TypeChallenge, "Challenge", RoleNode, false, newOf[Challenge]},
	{TypeProof, "Proof", RoleNode, false, newOf[Proof]},

	{TypeStabilize, "Stabilize", RoleNode, false, newOf[Stabilize]},
	{TypeGetNeighbors, "GetNeighbors", RoleNode, false, newOf[GetNeighbors]},
	{TypeNeighbors, "Neighbors", RoleNode, false, newOf[Neighbors]},
	{TypeLookup, "Lookup", RoleNode, false, newOf[Lookup]},
	{TypeLookupDone, "LookupDone", RoleNode, false, newOf[LookupDone]},
	{TypeNextHop, "NextHop", RoleNode, false, newOf[NextHop]},
	{TypeNextHopInfo, "NextHopInfo", RoleNode, false, newOf[NextHopInfo]},
	{TypeLeave, "Leave", RoleNode, false, newOf[Leave]},
	{TypeGetRingInfo, "GetRingInfo", RoleClient, false, newOf[GetRingInfo]},
	{TypeRingInfo, "RingInfo", RoleNode, false, newOf[RingInfo]},
	{TypeClientLookup, "ClientLookup", RoleClient, false, newOf[ClientLookup]},

	{TypeStoreBlock, "StoreBlock", RoleNode, false, newOf[StoreBlock]},
	{TypeFetchBlock, "FetchBlock", RoleNode, true, newOf[FetchBlock]},
	{TypeBlock, "Block", RoleNode, false, newOf[Block]},
	{TypeStatBlock, "StatBlock", RoleClient, false, newOf[StatBlock]},
	{TypeBlockInfo, "BlockInfo", RoleNode, false, newOf[BlockInfo]},
	{TypeClientPut, "ClientPut", RoleClient, false, newOf[ClientPut]},
	{TypePutDone, "PutDone", RoleNode, false, newOf[PutDone]},
	{TypeClientGet, "ClientGet", RoleClient, true, newOf[ClientGet]},
	{TypeClientStat, "ClientStat", RoleClient, false, newOf[ClientStat]},
	{TypeStatDone, "StatDone", RoleNode, false, newOf[StatDone]},
	{TypeClientPutBatch, "ClientPutBatch", RoleClient, false, newOf[ClientPutBatch]},
	{TypePutBatchDone, "PutBatchDone", RoleNode, false, newOf[PutBatchDone]},
	{TypeStatBlocks, "StatBlocks", RoleClient, false, newOf[StatBlocks]},
	{TypeBlockInfos, "BlockInfos", RoleNode, false, newOf[BlockInfos]},
	{TypeStoreBlocks, "StoreBlocks", RoleNode, false, newOf[StoreBlocks]},
	{TypeStoresDone, "StoresDone", RoleNode, false, newOf[StoresDone]},

	{TypeTreeQuery, "TreeQuery", RoleNode, false, newOf[TreeQuery]},
	{TypeTreeInfo, "TreeInfo", RoleNode, false, newOf[TreeInfo]},
	{TypeGetMaintStatus, "GetMaintStatus", RoleClient, false, newOf[GetMaintStatus]},
	{TypeMaintStatus, "MaintStatus", RoleNode, false, newOf[MaintStatus]},
	{TypeMaintControl, "MaintControl", RoleOperator, false, newOf[MaintControl]}, // pausing maintenance
	{TypeAudit, "Audit", RoleNode, false, newOf[Audit]},
	{TypeAuditProof, "AuditProof", RoleNode, false, newOf[AuditProof]},

	{TypeCCRequest, "CCRequest", RoleNode, false, newOf[CCRequest]},
	{TypeCCAck, "CCAck", RoleNode, false, newOf[CCAck]},
	{TypeCCPause, "CCPause", RoleNode, false, newOf[CCPause]},
	{TypeCCFlood, "CCFlood", RoleOperator, false, newOf[CCFlood]}, // setting the routed-request load generator

	{TypeTapRoute, "TapRoute", RoleNode, false, newOf[TapRoute]},
	{TypeTapDeliver, "TapDeliver", RoleNode, false, newOf[TapDeliver]},
	{TypeTapPointers, "TapPointers", RoleNode, false, newOf[TapPointers]},
	{TypeTapMulticast, "TapMulticast", RoleNode, false, newOf[TapMulticast]},
	{TypeTapNodes, "TapNodes", RoleNode, false, newOf[TapNodes]},
	{TypeTapNearby, "TapNearby", RoleNode, false, newOf[TapNearby]},
	{TypeTapNotify, "TapNotify", RoleNode, false, newOf[TapNotify]},
	{TypeTapJoined, "TapJoined", RoleNode, false, newOf[TapJoined]},
	{TypeTapLeave, "TapLeave", RoleNode, false, newOf[TapLeave]},
	{TypeTapGetTable, "TapGetTable", RoleClient, false, newOf[TapGetTable]},
	{TypeTapTable, "TapTable", RoleNode, false, newOf[TapTable]},
	{TypeTapPublish, "TapPublish", RoleClient, false, newOf[TapPublish]}, // stores the object on the node's disk, as ClientPut
	{TypeTapPublished, "TapPublished", RoleNode, false, newOf[TapPublished]},
	{TypeTapUnpublish, "TapUnpublish", RoleClient, false, newOf[TapUnpublish]},
	{TypeTapLocate, "TapLocate", RoleClient, true, newOf[TapLocate]}, // a fetch is answered with the object
	{TypeTapLocated, "TapLocated", RoleNode, false, newOf[TapLocated]},
	{TypeTapBench, "TapBench", RoleOperator, false, newOf[TapBench]}, // the routing microbenchmark's load
	{TypeTapBenchDone, "TapBenchDone", RoleNode, false, newOf[TapBenchDone]},
	{TypeTapCheckServed, "TapCheckServed", RoleNode, false, newOf[TapCheckServed]},
	{TypeTapServed, "TapServed", RoleNode, false, newOf[TapServed]},

	{TypeD2Join, "D2Join", RoleNode, false, newOf[D2Join]},
	{TypeD2GetNeighbors, "D2GetNeighbors", RoleNode, false, newOf[D2GetNeighbors]},
	{TypeD2Neighbors, "D2Neighbors", RoleNode, false, newOf[D2Neighbors]},
	{TypeD2FindSucc, "D2FindSucc", RoleNode, false, newOf[D2FindSucc]},
	{TypeD2Next, "D2Next", RoleNode, false, newOf[D2Next]},
	{TypeD2Leave, "D2Leave", RoleNode, false, newOf[D2Leave]},
	{TypeD2Store, "D2Store", RoleNode, false, newOf[D2Store]},
	{TypeD2Stored, "D2Stored", RoleNode, false, newOf[D2Stored]},
	{TypeD2Fetch, "D2Fetch", RoleNode, true, newOf[D2Fetch]},
	{TypeD2Block, "D2Block", RoleNode, false, newOf[D2Block]},
	{TypeD2Pointers, "D2Pointers", RoleNode, false, newOf[D2Pointers]},
	{TypeD2Keys, "D2Keys", RoleNode, false, newOf[D2Keys]},
	{TypeD2KeyList, "D2KeyList", RoleNode, false, newOf[D2KeyList]},
	{TypeD2Put, "D2Put", RoleClient, false, newOf[D2Put]},
	{TypeD2Get, "D2Get", RoleClient, true, newOf[D2Get]}, // answered with the block
	{TypeD2Delete, "D2Delete", RoleClient, false, newOf[D2Delete]},
	{TypeD2Latest, "D2Latest", RoleClient, false, newOf[D2Latest]},
	{TypeD2Drop, "D2Drop", RoleNode, false, newOf[D2Drop]},
	{TypeD2Invite, "D2Invite", RoleNode, false, newOf[D2Invite]},
	{TypeD2Stat, "D2Stat", RoleClient, false, newOf[D2Stat]}, // which nodes hold a key
	{TypeD2Holders, "D2Holders", RoleNode, false, newOf[D2Holders]},
	{TypeD2List, "D2List", RoleClient, false, newOf[D2List]}, // a volume's keys
	{TypeD2Listing, "D2Listing", RoleNode, false, newOf[D2Listing]},
	{TypeD2GetSpace, "D2GetSpace", RoleClient, false, newOf[D2GetSpace]}, // a node's D2 engine's room, and whether it joined
	{TypeD2Space, "D2Space", RoleNode, false, newOf[D2Space]},
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
type Ping struct{}

// Ack is the empty reply.
type Ack struct{}

// Challenge asks the process at the sender's claimed address to prove that
// a connection claiming that address is its own, by sending Nonce back on
// it as a Proof. Drivers exchange it; nodes never see it.
type Challenge struct{ Nonce uint64 }

// Proof answers a Challenge on the connection whose claim it proves.
type Proof struct{ Nonce uint64 }

// Stabilize is Chord's stabilize and notify in one round trip: the sender
// believes it is the receiver's predecessor. The reply is the receiver's
// Neighbors.
type Stabilize struct{}

// GetNeighbors asks for the receiver's predecessor and successor lists.
type GetNeighbors struct{}

// Neighbors carries a node's predecessor list (nearest first) and successor
// list (nearest first).
type Neighbors struct {
	Preds []NodeRef
	Succs []NodeRef
}

// Lookup is a recursive lookup in flight. Each hop acknowledges it (Ack) and
// forwards it; the node that can answer sends LookupDone to Origin.
type Lookup struct {
	LookupID uint64
	Key      id.ID
	Origin   NodeRef
	// MinSuccs selects where the lookup stops. Zero routes to the key's
	// immediate predecessor (classic Chord). m > 0 lets the first node whose
	// successor list already holds m successors of Key answer (DHash++
	// "integration"), saving the last hops.
	MinSuccs uint32
	Hops     uint32
}

// LookupDone ends a lookup: the answering node's view of Key's successors,
// nearest first. Failed is set when no route was found.
type LookupDone struct {
	LookupID uint64
	Key      id.ID
	Hops     uint32
	Pred     NodeRef
	Succs    []NodeRef
	Failed   string
}

// NextHop asks one step of an iterative lookup.
type NextHop struct {
	Key      id.ID
	MinSuccs uint32
}

// NextHopInfo answers NextHop: either Done with the key's successors, or the
// next candidates to ask, best first.
type NextHopInfo struct {
	Done  bool
	Succs []NodeRef
	Next  []NodeRef
}

// Leave tells a neighbour that the sender is leaving gracefully, with its
// lists so the neighbour can close the gap at once.
type Leave struct {
	Preds []NodeRef
	Succs []NodeRef
}

// GetRingInfo asks a process for the routing state of all its virtual
// servers (for `triad ring`).
type GetRingInfo struct{}

// Finger is one finger-table entry: the successor of self + 2^Bit.
type Finger struct {
	Bit  uint32
	Node NodeRef
}

// VnodeInfo is one virtual server's routing state.
type VnodeInfo struct {
	Self    NodeRef
	Preds   []NodeRef
	Succs   []NodeRef
	Fingers []Finger
}

// RingInfo answers GetRingInfo.
type RingInfo struct {
	Vnodes []VnodeInfo
}

// ClientLookup asks a process to look up Key from one of its virtual
// servers; the reply is a LookupDone.
type ClientLookup struct {
	Key id.ID
}
