package wire

import (
	"triad/internal/id"
)

// Bounds of Tapestry's messages. Levels and digits are those of 160-bit
// IDs read as 40 hexadecimal digits (Tapestry §III-A); a mesh of base 4
// (the paper's Fig. 17) has 80 levels of 4 digits.
const (
	TapLevels       = 40
	TapBase         = 16
	TapMaxLevels    = 80
	MaxTapHops      = 80                  // a routed message past it is a loop (dropped, counted)
	MaxTapPayload   = 1 << 20             // a routed message's or a fetched object's bytes
	MaxTapExclude   = 8                   // servers a query found without the object
	MaxTapPointers  = 1024                // pointers in one TapPointers batch
	MaxTapEntries   = TapLevels * TapBase // also 80 levels of base 4
	MaxTapLinks     = 3                   // c: a primary and two backups per entry
	MaxTapApp       = 1 << 16
	MaxTapTTLMillis = 30 * 24 * 3600 * 1000 // a pointer's soft state: 30 days at most
)

// TapOp says what a TapRoute is routed for.
type TapOp uint32

// Routed operations.
const (
	TapToNode   TapOp = 1 // RouteToNode: deliver at the key's root (Exact: only at a node with the key as its ID)
	TapToObject TapOp = 2 // RouteToObject: turn towards the nearest server at the first pointer met
	TapToRoot   TapOp = 3 // to the object's root without turning: the root answers with every server it knows
	TapJoin     TapOp = 4 // a new node (Origin) asks its surrogate, the key's root, to insert it
	TapToServer TapOp = 5 // redirected by a pointer to the server that published the object
)

// TapStatus is the outcome a TapRouteDone reports.
type TapStatus uint32

// Outcomes.
const (
	TapDelivered   TapStatus = 0 // reached its node, or found the object
	TapNotFound    TapStatus = 1 // the root knows no live server of the object
	TapNotExact    TapStatus = 2 // an exact route ended at a node with another ID
	TapLooped      TapStatus = 3 // dropped: past the hop bound
	TapUnreachable TapStatus = 4 // no next hop answered
)

// TapRoute is one hop of a message routed through the mesh, digit by
// digit (Tapestry Fig. 3). Level is how many digits of Key the route has
// resolved, which NEXTHOP continues from; Origin gets a TapRouteDone with
// the outcome. The reply is an Ack as soon as the hop has taken it.
//
//wire:msg 320 node
type TapRoute struct {
	Op      TapOp     `wire:"1"`
	Key     id.ID     `wire:"2"`
	App     uint32    `wire:"3"` // the application it is for (Tapestry's A_id)
	Exact   bool      `wire:"4"` // TapToNode: deliver only at a node whose ID is Key
	Upcall  bool      `wire:"5"` // call the application's Forward at every hop
	Origin  NodeRef   `wire:"6"`
	Seq     uint64    `wire:"7"` // the origin's number for it
	Level   uint32    `wire:"8"`
	Hops    uint32    `wire:"9"`
	Exclude []NodeRef `wire:"10,max=MaxTapExclude"` // servers found without the object
	Path    []NodeRef `wire:"11"`                   // the hops so far, up to MaxListLen
	Payload []byte    `wire:"12,max=MaxTapPayload"`
}

// TapRouteDone tells a routed message's origin where it ended.
//
//wire:msg 321 node
type TapRouteDone struct {
	Seq     uint64    `wire:"1"`
	Key     id.ID     `wire:"2"`
	Status  TapStatus `wire:"3"`
	Node    NodeRef   `wire:"4"` // where it was delivered: the root, or the server holding the object
	Root    NodeRef   `wire:"5"` // for TapToRoot: the root
	Servers []NodeRef `wire:"6"` // for TapToRoot: the servers the root knows, nearest first
	Hops    uint32    `wire:"7"`
	Path    []NodeRef `wire:"8"`
	Payload []byte    `wire:"9,max=MaxTapPayload"`
}

// TapPointer is one location pointer ⟨Key, Server⟩ on its way to Key's
// root (Tapestry §III-B2, Fig. 4), or its removal.
//
//wire:struct
type TapPointer struct {
	Key       id.ID   `wire:"1"`
	App       uint32  `wire:"2"`
	Server    NodeRef `wire:"3"`
	Level     uint32  `wire:"4"` // digits the publish path has resolved
	Hops      uint32  `wire:"5"`
	TTLMillis uint64  `wire:"6"` // soft state: how long the pointer lives unless republished
	Remove    bool    `wire:"7"` // unpublish: drop it here and on the way to the root
	Extra     bool    `wire:"8"` // an extra pointer (§V-B3) kept where it lands, not forwarded
	// Backup marks an extra pointer for the node that would be the key's
	// root without its sender, the root: it is routed on, hop by hop as a
	// publish is, and kept (as an extra pointer) only where it ends.
	Backup bool `wire:"9"`
}

// TapPointers carries a batch of pointers for one next hop: publishes
// and republishes are batched per next hop. The reply is an Ack.
//
//wire:msg 322 node
type TapPointers struct {
	Pointers []TapPointer `wire:"1,max=MaxTapPointers"`
}

// TapMulticast is one branch of a join's acknowledged multicast (§III-C1)
// to every node whose ID starts with the joiner's first Prefix digits: the
// receiver adds Joiner to its table, hands over the pointers Joiner is
// now root of, and passes it on for digit Level. Others are joiners still
// multicasting through the sender. The reply is a TapNodes: the nodes the
// branch reached.
//
//wire:msg 323 node
type TapMulticast struct {
	Joiner NodeRef   `wire:"1"`
	Prefix uint32    `wire:"2"`
	Level  uint32    `wire:"3"`
	Others []NodeRef `wire:"4"`
}

// TapNodes is a list of nodes: a multicast branch's, or a level's.
//
//wire:msg 324 node
type TapNodes struct {
	Nodes     []NodeRef `wire:"1"`
	Truncated bool      `wire:"2"` // more than MaxListLen were known
}

// TapNearby asks a node for the nodes of one level that a joiner's
// nearest-neighbour search needs: the level's backpointers and entries.
// The reply is a TapNodes.
//
//wire:msg 325 node
type TapNearby struct {
	Level uint32 `wire:"1"`
}

// TapNotifyKind says what a TapNotify tells.
type TapNotifyKind uint32

// Notifications.
const (
	TapPointsAt TapNotifyKind = 1 // the sender put the receiver in its table at Level
	TapDropped  TapNotifyKind = 2 // the sender took the receiver out of its table at Level
	TapHello    TapNotifyKind = 3 // the sender asks to be considered for the receiver's table
)

// TapNotify keeps backpointers and announces joiners; one-way.
//
//wire:msg 326 node
type TapNotify struct {
	Kind  TapNotifyKind `wire:"1"`
	Level uint32        `wire:"2"`
}

// TapJoined tells a joiner that its multicast is done, with the nodes
// it reached: the joiner's first neighbour set. One-way.
//
//wire:msg 327 node
type TapJoined struct {
	Prefix uint32    `wire:"1"`
	Nodes  []NodeRef `wire:"2"`
}

// TapLeave tells the nodes that point at the sender that it is leaving,
// with a replacement for the sender per level. One-way.
//
//wire:msg 328 node
type TapLeave struct {
	Replacements []NodeRef `wire:"1"`
}

// TapGetTable asks a node for its routing table and status; the reply is
// a TapTable.
//
//wire:msg 329 client
type TapGetTable struct{}

// TapEntry is one entry of a routing table: the links of Level and Digit,
// primary first, with their round-trip times.
//
//wire:struct
type TapEntry struct {
	Level     uint32    `wire:"1"`
	Digit     uint32    `wire:"2"`
	Links     []NodeRef `wire:"3,max=MaxTapLinks"`
	RTTMicros []uint64  `wire:"4,max=MaxTapLinks"`
}

// TapTable is a node's routing table and status.
//
//wire:msg 330 node
type TapTable struct {
	Self         NodeRef    `wire:"1"`
	Joined       bool       `wire:"2"`
	Entries      []TapEntry `wire:"3,max=MaxTapEntries"`
	Backpointers []NodeRef  `wire:"4"`                 // up to MaxListLen of them
	Counters     []Counter  `wire:"5,max=MaxCounters"` // pointers held, published objects, republish queue, counters
}

// TapPublish asks a node to store Data in its engine under its content
// hash and publish the key (TTLMillis: the object's expiry; 0: the node's
// default; App 0: plain location). The reply is a TapPublishDone.
//
//wire:msg 331 client
type TapPublish struct {
	Data      []byte `wire:"1,max=MaxTapPayload"`
	TTLMillis uint64 `wire:"2"`
	App       uint32 `wire:"3"`
}

// TapCheckServed asks a server which of Keys it serves: a node holding
// pointers to it that came from another node checks them before it
// routes to them or lists them (internal/tapestry's confirm.go). The reply
// is a TapServed.
//
//wire:msg 338 node
type TapCheckServed struct {
	Keys []id.ID `wire:"1,max=MaxTapPointers"`
}

// TapServed lists the keys of a TapCheckServed the sender serves.
//
//wire:msg 339 node
type TapServed struct {
	Keys []id.ID `wire:"1,max=MaxTapPointers"`
}

// TapPublishDone is the key TapPublish published.
//
//wire:msg 332 node
type TapPublishDone struct {
	Key id.ID `wire:"1"`
}

// TapUnpublish asks a node to stop publishing Key; the reply is an Ack.
//
//wire:msg 333 client
type TapUnpublish struct {
	Key id.ID `wire:"1"`
}

// TapLocate asks a node to route to the object Key: its server
// (RouteToObject), every server its root knows (All), or its bytes
// (Fetch). The reply is a TapLocateDone.
//
//wire:msg 334 client big
type TapLocate struct {
	Key   id.ID  `wire:"1"`
	All   bool   `wire:"2"`
	Fetch bool   `wire:"3"`
	App   uint32 `wire:"4"`
}

// TapLocateDone is where a TapLocate ended.
//
//wire:msg 335 node
type TapLocateDone struct {
	Found   bool      `wire:"1"`
	Servers []NodeRef `wire:"2"`
	Root    NodeRef   `wire:"3"`
	Hops    uint32    `wire:"4"`
	Path    []NodeRef `wire:"5"`
	Micros  uint64    `wire:"6"` // from the node's send to the outcome's arrival
	Data    []byte    `wire:"7,max=MaxTapPayload"`
}

// TapBench makes a node route Count messages of Size bytes to Key, with
// Window in flight, each acknowledged by the hop that takes it: the
// routing microbenchmark (§V-B1). Only an operator may send it. The reply
// is a TapBenchDone.
//
//wire:msg 336 operator
type TapBench struct {
	Key    id.ID  `wire:"1"`
	Count  uint32 `wire:"2"`
	Size   uint32 `wire:"3"`
	Window uint32 `wire:"4"`
}

// TapBenchDone is a TapBench's outcome: messages acknowledged and failed,
// the time from the first send to the last acknowledgement, and the
// median and 90th percentile of a hop's round trip.
//
//wire:msg 337 node
type TapBenchDone struct {
	Acked     uint64 `wire:"1"`
	Failed    uint64 `wire:"2"`
	Micros    uint64 `wire:"3"`
	P50Micros uint64 `wire:"4"`
	P90Micros uint64 `wire:"5"`
}

// Bounds of a TapBench.
const (
	MaxTapBenchCount  = 10_000_000
	MaxTapBenchWindow = 4096
)
