package wire

import (
	"bytes"
	"slices"

	"google.golang.org/protobuf/encoding/protowire"

	"triad/internal/id"
)

// Message types of Tapestry (prefix routing and object location), 320-383.
const (
	TypeTapRoute       Type = 320
	TypeTapDeliver     Type = 321
	TypeTapPointers    Type = 322
	TypeTapMulticast   Type = 323
	TypeTapNodes       Type = 324
	TypeTapNearby      Type = 325
	TypeTapNotify      Type = 326
	TypeTapJoined      Type = 327
	TypeTapLeave       Type = 328
	TypeTapGetTable    Type = 329
	TypeTapTable       Type = 330
	TypeTapPublish     Type = 331
	TypeTapPublished   Type = 332
	TypeTapUnpublish   Type = 333
	TypeTapLocate      Type = 334
	TypeTapLocated     Type = 335
	TypeTapBench       Type = 336
	TypeTapBenchDone   Type = 337
	TypeTapCheckServed Type = 338
	TypeTapServed      Type = 339
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

// TapStatus is the outcome a TapDeliver reports.
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
// resolved, which NEXTHOP continues from; Origin gets a TapDeliver with
// the outcome. The reply is an Ack as soon as the hop has taken it.
type TapRoute struct {
	Op      TapOp
	Key     id.ID
	App     uint32 // the application it is for (Tapestry's A_id)
	Exact   bool   // TapToNode: deliver only at a node whose ID is Key
	Upcall  bool   // call the application's Forward at every hop
	Origin  NodeRef
	Seq     uint64 // the origin's number for it
	Level   uint32
	Hops    uint32
	Exclude []NodeRef // servers found without the object
	Path    []NodeRef // the hops so far, up to MaxListLen
	Payload []byte
}

// TapDeliver tells a routed message's origin where it ended.
type TapDeliver struct {
	Seq     uint64
	Key     id.ID
	Status  TapStatus
	Node    NodeRef   // where it was delivered: the root, or the server holding the object
	Root    NodeRef   // for TapToRoot: the root
	Servers []NodeRef // for TapToRoot: the servers the root knows, nearest first
	Hops    uint32
	Path    []NodeRef
	Payload []byte
}

// TapPointer is one location pointer ⟨Key, Server⟩ on its way to Key's
// root (Tapestry §III-B2, Fig. 4), or its removal.
type TapPointer struct {
	Key       id.ID
	App       uint32
	Server    NodeRef
	Level     uint32 // digits the publish path has resolved
	Hops      uint32
	TTLMillis uint64 // soft state: how long the pointer lives unless republished
	Remove    bool   // unpublish: drop it here and on the way to the root
	Extra     bool   // an extra pointer (§V-B3) kept where it lands, not forwarded
}

// TapPointers carries a batch of pointers for one next hop: publishes
// and republishes are batched per next hop. The reply is an Ack.
type TapPointers struct {
	Pointers []TapPointer
}

// TapMulticast is one branch of a join's acknowledged multicast (§III-C1)
// to every node whose ID starts with the joiner's first Prefix digits: the
// receiver adds Joiner to its table, hands over the pointers Joiner is
// now root of, and passes it on for digit Level. Others are joiners still
// multicasting through the sender. The reply is a TapNodes: the nodes the
// branch reached.
type TapMulticast struct {
	Joiner NodeRef
	Prefix uint32
	Level  uint32
	Others []NodeRef
}

// TapNodes is a list of nodes: a multicast branch's, or a level's.
type TapNodes struct {
	Nodes     []NodeRef
	Truncated bool // more than MaxListLen were known
}

// TapNearby asks a node for the nodes of one level that a joiner's
// nearest-neighbour search needs: the level's backpointers and entries.
// The reply is a TapNodes.
type TapNearby struct{ Level uint32 }

// TapNotifyKind says what a TapNotify tells.
type TapNotifyKind uint32

// Notifications.
const (
	TapPointsAt TapNotifyKind = 1 // the sender put the receiver in its table at Level
	TapDropped  TapNotifyKind = 2 // the sender took the receiver out of its table at Level
	TapHello    TapNotifyKind = 3 // the sender asks to be considered for the receiver's table
)

// TapNotify keeps backpointers and announces joiners; one-way.
type TapNotify struct {
	Kind  TapNotifyKind
	Level uint32
}

// TapJoined tells a joiner that its multicast is done, with the nodes
// it reached: the joiner's first neighbour set. One-way.
type TapJoined struct {
	Prefix uint32
	Nodes  []NodeRef
}

// TapLeave tells the nodes that point at the sender that it is leaving,
// with a replacement for the sender per level. One-way.
type TapLeave struct {
	Replacements []NodeRef
}

// TapGetTable asks a node for its routing table and status; the reply is
// a TapTable.
type TapGetTable struct{}

// TapEntry is one entry of a routing table: the links of Level and Digit,
// primary first, with their round-trip times.
type TapEntry struct {
	Level, Digit uint32
	Links        []NodeRef
	RTTMicros    []uint64
}

// TapTable is a node's routing table and status.
type TapTable struct {
	Self         NodeRef
	Joined       bool
	Entries      []TapEntry
	Backpointers []NodeRef // up to MaxListLen of them
	Counters     []Counter // pointers held, published objects, republish queue, counters
}

// TapPublish asks a node to store Data in its engine under its content
// hash and publish the key (TTLMillis: the object's expiry; 0: the node's
// default; App 0: plain location). The reply is a TapPublished.
type TapPublish struct {
	Data      []byte
	TTLMillis uint64
	App       uint32
}

// TapCheckServed asks a server which of Keys it serves: a node holding
// pointers to it that came from another node checks them before it
// routes to them or lists them (internal/tapestry's confirm.go). The reply
// is a TapServed.
type TapCheckServed struct{ Keys []id.ID }

// TapServed lists the keys of a TapCheckServed the sender serves.
type TapServed struct{ Keys []id.ID }

// TapPublished is the key TapPublish published.
type TapPublished struct{ Key id.ID }

// TapUnpublish asks a node to stop publishing Key; the reply is an Ack.
type TapUnpublish struct{ Key id.ID }

// TapLocate asks a node to route to the object Key: its server
// (RouteToObject), every server its root knows (All), or its bytes
// (Fetch). The reply is a TapLocated.
type TapLocate struct {
	Key   id.ID
	All   bool
	Fetch bool
	App   uint32
}

// TapLocated is where a TapLocate ended.
type TapLocated struct {
	Found   bool
	Servers []NodeRef
	Root    NodeRef
	Hops    uint32
	Path    []NodeRef
	Micros  uint64 // from the node's send to the outcome's arrival
	Data    []byte
}

// TapBench makes a node route Count messages of Size bytes to Key, with
// Window in flight, each acknowledged by the hop that takes it: the
// routing microbenchmark (§V-B1). Only an operator may send it. The reply
// is a TapBenchDone.
type TapBench struct {
	Key                 id.ID
	Count, Size, Window uint32
}

// TapBenchDone is a TapBench's outcome: messages acknowledged and failed,
// the time from the first send to the last acknowledgement, and the
// median and 90th percentile of a hop's round trip.
type TapBenchDone struct {
	Acked, Failed        uint64
	Micros               uint64
	P50Micros, P90Micros uint64
}

// Bounds of a TapBench.
const (
	MaxTapBenchCount  = 10_000_000
	MaxTapBenchWindow = 4096
)

func (*TapBench) Type() Type { return TypeTapBench }
func (m *TapBench) encode(b []byte) []byte {
	b = putID(b, 1, m.Key)
	b = putUint(b, 2, uint64(m.Count))
	b = putUint(b, 3, uint64(m.Size))
	return putUint(b, 4, uint64(m.Window))
}
func (m *TapBench) decodeField(d *decoder, f field) {
	switch f.num {
	case 1:
		m.Key = d.id(f)
	case 2:
		m.Count = d.uint32(f)
	case 3:
		m.Size = d.uint32(f)
	case 4:
		m.Window = d.uint32(f)
	}
}
func (m *TapBench) clone() Msg { return new(*m) }

func (*TapBenchDone) Type() Type { return TypeTapBenchDone }
func (m *TapBenchDone) encode(b []byte) []byte {
	b = putUint(b, 1, m.Acked)
	b = putUint(b, 2, m.Failed)
	b = putUint(b, 3, m.Micros)
	b = putUint(b, 4, m.P50Micros)
	return putUint(b, 5, m.P90Micros)
}
func (m *TapBenchDone) decodeField(d *decoder, f field) {
	switch f.num {
	case 1:
		m.Acked = d.uint(f)
	case 2:
		m.Failed = d.uint(f)
	case 3:
		m.Micros = d.uint(f)
	case 4:
		m.P50Micros = d.uint(f)
	case 5:
		m.P90Micros = d.uint(f)
	}
}
func (m *TapBenchDone) clone() Msg { return new(*m) }

func putTapPath(b []byte, num protowire.Number, path []NodeRef) []byte { return putNodes(b, num, path) }

func (*TapRoute) Type() Type { return TypeTapRoute }
func (m *TapRoute) encode(b []byte) []byte {
	b = putUint(b, 1, uint64(m.Op))
	b = putID(b, 2, m.Key)
	b = putUint(b, 3, uint64(m.App))
	b = putBool(b, 4, m.Exact)
	b = putBool(b, 5, m.Upcall)
	b = putNode(b, 6, m.Origin)
	b = putUint(b, 7, m.Seq)
	b = putUint(b, 8, uint64(m.Level))
	b = putUint(b, 9, uint64(m.Hops))
	b = putNodes(b, 10, m.Exclude)
	b = putTapPath(b, 11, m.Path)
	return putBytes(b, 12, m.Payload)
}
func (m *TapRoute) decodeField(d *decoder, f field) {
	switch f.num {
	case 1:
		m.Op = TapOp(d.uint32(f))
	case 2:
		m.Key = d.id(f)
	case 3:
		m.App = d.uint32(f)
	case 4:
		m.Exact = d.bool(f)
	case 5:
		m.Upcall = d.bool(f)
	case 6:
		m.Origin = d.node(f)
	case 7:
		m.Seq = d.uint(f)
	case 8:
		m.Level = d.uint32(f)
	case 9:
		m.Hops = d.uint32(f)
	case 10:
		if len(m.Exclude) >= MaxTapExclude {
			d.fail("more than %d excluded servers", MaxTapExclude)
			return
		}
		m.Exclude = d.nodes(m.Exclude, f)
	case 11:
		m.Path = d.nodes(m.Path, f)
	case 12:
		if m.Payload = d.data(f); len(m.Payload) > MaxTapPayload {
			d.fail("a payload of %d bytes", len(m.Payload))
		}
	}
}
func (m *TapRoute) clone() Msg {
	c := *m
	c.Exclude, c.Path, c.Payload = cloneNodes(m.Exclude), cloneNodes(m.Path), bytes.Clone(m.Payload)
	return &c
}

func (*TapDeliver) Type() Type { return TypeTapDeliver }
func (m *TapDeliver) encode(b []byte) []byte {
	b = putUint(b, 1, m.Seq)
	b = putID(b, 2, m.Key)
	b = putUint(b, 3, uint64(m.Status))
	b = putNode(b, 4, m.Node)
	b = putNode(b, 5, m.Root)
	b = putNodes(b, 6, m.Servers)
	b = putUint(b, 7, uint64(m.Hops))
	b = putNodes(b, 8, m.Path)
	return putBytes(b, 9, m.Payload)
}
func (m *TapDeliver) decodeField(d *decoder, f field) {
	switch f.num {
	case 1:
		m.Seq = d.uint(f)
	case 2:
		m.Key = d.id(f)
	case 3:
		m.Status = TapStatus(d.uint32(f))
	case 4:
		m.Node = d.node(f)
	case 5:
		m.Root = d.node(f)
	case 6:
		m.Servers = d.nodes(m.Servers, f)
	case 7:
		m.Hops = d.uint32(f)
	case 8:
		m.Path = d.nodes(m.Path, f)
	case 9:
		if m.Payload = d.data(f); len(m.Payload) > MaxTapPayload {
			d.fail("a payload of %d bytes", len(m.Payload))
		}
	}
}
func (m *TapDeliver) clone() Msg {
	c := *m
	c.Servers, c.Path, c.Payload = cloneNodes(m.Servers), cloneNodes(m.Path), bytes.Clone(m.Payload)
	return &c
}

func (*TapPointers) Type() Type { return TypeTapPointers }
func (m *TapPointers) encode(b []byte) []byte {
	for _, p := range m.Pointers {
		b = appendTagBytes(b, 1)
		b = appendNested(b, func(b []byte) []byte {
			b = putID(b, 1, p.Key)
			b = putUint(b, 2, uint64(p.App))
			b = putNode(b, 3, p.Server)
			b = putUint(b, 4, uint64(p.Level))
			b = putUint(b, 5, uint64(p.Hops))
			b = putUint(b, 6, p.TTLMillis)
			b = putBool(b, 7, p.Remove)
			return putBool(b, 8, p.Extra)
		})
	}
	return b
}
func (m *TapPointers) decodeField(d *decoder, f field) {
	if f.num != 1 {
		return
	}
	if len(m.Pointers) >= MaxTapPointers {
		d.fail("more than %d pointers", MaxTapPointers)
		return
	}
	var p TapPointer
	d.nested(f, func(g field) {
		switch g.num {
		case 1:
			p.Key = d.id(g)
		case 2:
			p.App = d.uint32(g)
		case 3:
			p.Server = d.node(g)
		case 4:
			p.Level = d.uint32(g)
		case 5:
			p.Hops = d.uint32(g)
		case 6:
			p.TTLMillis = d.uint(g)
		case 7:
			p.Remove = d.bool(g)
		case 8:
			p.Extra = d.bool(g)
		}
	})
	m.Pointers = append(m.Pointers, p)
}
func (m *TapPointers) clone() Msg { return &TapPointers{Pointers: slices.Clone(m.Pointers)} }

func (*TapMulticast) Type() Type { return TypeTapMulticast }
func (m *TapMulticast) encode(b []byte) []byte {
	b = putNode(b, 1, m.Joiner)
	b = putUint(b, 2, uint64(m.Prefix))
	b = putUint(b, 3, uint64(m.Level))
	return putNodes(b, 4, m.Others)
}
func (m *TapMulticast) decodeField(d *decoder, f field) {
	switch f.num {
	case 1:
		m.Joiner = d.node(f)
	case 2:
		m.Prefix = d.uint32(f)
	case 3:
		m.Level = d.uint32(f)
	case 4:
		m.Others = d.nodes(m.Others, f)
	}
}
func (m *TapMulticast) clone() Msg {
	c := *m
	c.Others = cloneNodes(m.Others)
	return &c
}

func (*TapNodes) Type() Type { return TypeTapNodes }
func (m *TapNodes) encode(b []byte) []byte {
	b = putNodes(b, 1, m.Nodes)
	return putBool(b, 2, m.Truncated)
}
func (m *TapNodes) decodeField(d *decoder, f field) {
	switch f.num {
	case 1:
		m.Nodes = d.nodes(m.Nodes, f)
	case 2:
		m.Truncated = d.bool(f)
	}
}
func (m *TapNodes) clone() Msg { return &TapNodes{Nodes: cloneNodes(m.Nodes), Truncated: m.Truncated} }

func (*TapNearby) Type() Type               { return TypeTapNearby }
func (m *TapNearby) encode(b []byte) []byte { return putUint(b, 1, uint64(m.Level)) }
func (m *TapNearby) decodeField(d *decoder, f field) {
	if f.num == 1 {
		m.Level = d.uint32(f)
	}
}
func (m *TapNearby) clone() Msg { return new(*m) }

func (*TapNotify) Type() Type { return TypeTapNotify }
func (m *TapNotify) encode(b []byte) []byte {
	b = putUint(b, 1, uint64(m.Kind))
	return putUint(b, 2, uint64(m.Level))
}
func (m *TapNotify) decodeField(d *decoder, f field) {
	switch f.num {
	case 1:
		m.Kind = TapNotifyKind(d.uint32(f))
	case 2:
		m.Level = d.uint32(f)
	}
}
func (m *TapNotify) clone() Msg { return new(*m) }

func (*TapJoined) Type() Type { return TypeTapJoined }
func (m *TapJoined) encode(b []byte) []byte {
	b = putUint(b, 1, uint64(m.Prefix))
	return putNodes(b, 2, m.Nodes)
}
func (m *TapJoined) decodeField(d *decoder, f field) {
	switch f.num {
	case 1:
		m.Prefix = d.uint32(f)
	case 2:
		m.Nodes = d.nodes(m.Nodes, f)
	}
}
func (m *TapJoined) clone() Msg { return &TapJoined{Prefix: m.Prefix, Nodes: cloneNodes(m.Nodes)} }

func (*TapLeave) Type() Type               { return TypeTapLeave }
func (m *TapLeave) encode(b []byte) []byte { return putNodes(b, 1, m.Replacements) }
func (m *TapLeave) decodeField(d *decoder, f field) {
	if f.num == 1 {
		m.Replacements = d.nodes(m.Replacements, f)
	}
}
func (m *TapLeave) clone() Msg { return &TapLeave{Replacements: cloneNodes(m.Replacements)} }

func (*TapGetTable) Type() Type                  { return TypeTapGetTable }
func (*TapGetTable) encode(b []byte) []byte      { return b }
func (*TapGetTable) decodeField(*decoder, field) {}
func (m *TapGetTable) clone() Msg                { return new(*m) }

func (*TapTable) Type() Type { return TypeTapTable }
func (m *TapTable) encode(b []byte) []byte {
	b = putNode(b, 1, m.Self)
	b = putBool(b, 2, m.Joined)
	for _, e := range m.Entries {
		b = appendTagBytes(b, 3)
		b = appendNested(b, func(b []byte) []byte {
			b = putUint(b, 1, uint64(e.Level))
			b = putUint(b, 2, uint64(e.Digit))
			b = putNodes(b, 3, e.Links)
			for _, r := range e.RTTMicros {
				b = protowire.AppendTag(b, 4, protowire.VarintType)
				b = protowire.AppendVarint(b, r)
			}
			return b
		})
	}
	b = putNodes(b, 4, m.Backpointers)
	return putCounters(b, 5, m.Counters)
}
func (m *TapTable) decodeField(d *decoder, f field) {
	switch f.num {
	case 1:
		m.Self = d.node(f)
	case 2:
		m.Joined = d.bool(f)
	case 3:
		if len(m.Entries) >= MaxTapEntries {
			d.fail("more than %d entries", MaxTapEntries)
			return
		}
		var e TapEntry
		d.nested(f, func(g field) {
			switch g.num {
			case 1:
				e.Level = d.uint32(g)
			case 2:
				e.Digit = d.uint32(g)
			case 3:
				if len(e.Links) >= MaxTapLinks {
					d.fail("more than %d links", MaxTapLinks)
					return
				}
				e.Links = d.nodes(e.Links, g)
			case 4:
				if len(e.RTTMicros) >= MaxTapLinks {
					d.fail("more than %d round-trip times", MaxTapLinks)
					return
				}
				e.RTTMicros = append(e.RTTMicros, d.uint(g))
			}
		})
		m.Entries = append(m.Entries, e)
	case 4:
		m.Backpointers = d.nodes(m.Backpointers, f)
	case 5:
		m.Counters = d.counter(m.Counters, f)
	}
}
func (m *TapTable) clone() Msg {
	c := *m
	c.Entries = make([]TapEntry, len(m.Entries))
	for i, e := range m.Entries {
		c.Entries[i] = TapEntry{Level: e.Level, Digit: e.Digit, Links: cloneNodes(e.Links), RTTMicros: slices.Clone(e.RTTMicros)}
	}
	if m.Entries == nil {
		c.Entries = nil
	}
	c.Backpointers, c.Counters = cloneNodes(m.Backpointers), slices.Clone(m.Counters)
	return &c
}

func (*TapPublish) Type() Type { return TypeTapPublish }
func (m *TapPublish) encode(b []byte) []byte {
	b = putBytes(b, 1, m.Data)
	b = putUint(b, 2, m.TTLMillis)
	return putUint(b, 3, uint64(m.App))
}
func (m *TapPublish) decodeField(d *decoder, f field) {
	switch f.num {
	case 1:
		if m.Data = d.data(f); len(m.Data) > MaxTapPayload {
			d.fail("an object of %d bytes", len(m.Data))
		}
	case 2:
		m.TTLMillis = d.uint(f)
	case 3:
		m.App = d.uint32(f)
	}
}
func (m *TapPublish) clone() Msg {
	c := *m
	c.Data = bytes.Clone(m.Data)
	return &c
}

func (*TapPublished) Type() Type               { return TypeTapPublished }
func (m *TapPublished) encode(b []byte) []byte { return putID(b, 1, m.Key) }
func (m *TapPublished) decodeField(d *decoder, f field) {
	if f.num == 1 {
		m.Key = d.id(f)
	}
}
func (m *TapPublished) clone() Msg { return new(*m) }

func (*TapUnpublish) Type() Type               { return TypeTapUnpublish }
func (m *TapUnpublish) encode(b []byte) []byte { return putID(b, 1, m.Key) }
func (m *TapUnpublish) decodeField(d *decoder, f field) {
	if f.num == 1 {
		m.Key = d.id(f)
	}
}
func (m *TapUnpublish) clone() Msg { return new(*m) }

func (*TapLocate) Type() Type { return TypeTapLocate }
func (m *TapLocate) encode(b []byte) []byte {
	b = putID(b, 1, m.Key)
	b = putBool(b, 2, m.All)
	b = putBool(b, 3, m.Fetch)
	return putUint(b, 4, uint64(m.App))
}
func (m *TapLocate) decodeField(d *decoder, f field) {
	switch f.num {
	case 1:
		m.Key = d.id(f)
	case 2:
		m.All = d.bool(f)
	case 3:
		m.Fetch = d.bool(f)
	case 4:
		m.App = d.uint32(f)
	}
}
func (m *TapLocate) clone() Msg { return new(*m) }

func (*TapLocated) Type() Type { return TypeTapLocated }
func (m *TapLocated) encode(b []byte) []byte {
	b = putBool(b, 1, m.Found)
	b = putNodes(b, 2, m.Servers)
	b = putNode(b, 3, m.Root)
	b = putUint(b, 4, uint64(m.Hops))
	b = putNodes(b, 5, m.Path)
	b = putUint(b, 6, m.Micros)
	return putBytes(b, 7, m.Data)
}
func (m *TapLocated) decodeField(d *decoder, f field) {
	switch f.num {
	case 1:
		m.Found = d.bool(f)
	case 2:
		m.Servers = d.nodes(m.Servers, f)
	case 3:
		m.Root = d.node(f)
	case 4:
		m.Hops = d.uint32(f)
	case 5:
		m.Path = d.nodes(m.Path, f)
	case 6:
		m.Micros = d.uint(f)
	case 7:
		if m.Data = d.data(f); len(m.Data) > MaxTapPayload {
			d.fail("an object of %d bytes", len(m.Data))
		}
	}
}
func (m *TapLocated) clone() Msg {
	c := *m
	c.Servers, c.Path, c.Data = cloneNodes(m.Servers), cloneNodes(m.Path), bytes.Clone(m.Data)
	return &c
}

func (*TapCheckServed) Type() Type               { return TypeTapCheckServed }
func (m *TapCheckServed) encode(b []byte) []byte { return putKeys(b, 1, m.Keys) }
func (m *TapCheckServed) decodeField(d *decoder, f field) {
	if f.num == 1 {
		m.Keys = d.keyOf(f, m.Keys, MaxTapPointers)
	}
}
func (m *TapCheckServed) clone() Msg { return &TapCheckServed{Keys: slices.Clone(m.Keys)} }

func (*TapServed) Type() Type               { return TypeTapServed }
func (m *TapServed) encode(b []byte) []byte { return putKeys(b, 1, m.Keys) }
func (m *TapServed) decodeField(d *decoder, f field) {
	if f.num == 1 {
		m.Keys = d.keyOf(f, m.Keys, MaxTapPointers)
	}
}
func (m *TapServed) clone() Msg { return &TapServed{Keys: slices.Clone(m.Keys)} }
