package wire

import "triad/internal/fault"

// Per-message encoders and field decoders. Field numbers follow schema.proto.

func (*Ping) Type() Type                          { return TypePing }
func (*Ping) encode(b []byte) []byte              { return b }
func (*Ping) decodeField(*decoder, field)         {}
func (m *Ping) clone() Msg                        { return new(*m) }
func (*Ack) Type() Type                           { return TypeAck }
func (*Ack) encode(b []byte) []byte               { return b }
func (*Ack) decodeField(*decoder, field)          {}
func (m *Ack) clone() Msg                         { return new(*m) }
func (*Stabilize) Type() Type                     { return TypeStabilize }
func (*Stabilize) encode(b []byte) []byte         { return b }
func (*Stabilize) decodeField(*decoder, field)    {}
func (m *Stabilize) clone() Msg                   { return new(*m) }
func (*GetNeighbors) Type() Type                  { return TypeGetNeighbors }
func (*GetNeighbors) encode(b []byte) []byte      { return b }
func (*GetNeighbors) decodeField(*decoder, field) {}
func (m *GetNeighbors) clone() Msg                { return new(*m) }
func (*GetRingInfo) Type() Type                   { return TypeGetRingInfo }
func (*GetRingInfo) encode(b []byte) []byte       { return b }
func (*GetRingInfo) decodeField(*decoder, field)  {}
func (m *GetRingInfo) clone() Msg                 { return new(*m) }

func (*Challenge) Type() Type               { return TypeChallenge }
func (m *Challenge) encode(b []byte) []byte { return putUint(b, 1, m.Nonce) }
func (m *Challenge) decodeField(d *decoder, f field) {
	if f.num == 1 {
		m.Nonce = d.uint(f)
	}
}
func (m *Challenge) clone() Msg { return new(*m) }

func (*Proof) Type() Type               { return TypeProof }
func (m *Proof) encode(b []byte) []byte { return putUint(b, 1, m.Nonce) }
func (m *Proof) decodeField(d *decoder, f field) {
	if f.num == 1 {
		m.Nonce = d.uint(f)
	}
}
func (m *Proof) clone() Msg { return new(*m) }

func (*Error) Type() Type { return TypeError }
func (m *Error) encode(b []byte) []byte {
	b = putUint(b, 1, uint64(m.Code))
	return putString(b, 2, m.Text)
}
func (m *Error) decodeField(d *decoder, f field) {
	switch f.num {
	case 1:
		m.Code = fault.Code(d.uint32(f))
	case 2:
		m.Text = d.str(f, MaxTextBytes)
	}
}
func (m *Error) clone() Msg { return new(*m) }

func (*Neighbors) Type() Type { return TypeNeighbors }
func (m *Neighbors) encode(b []byte) []byte {
	b = putNodes(b, 1, m.Preds)
	return putNodes(b, 2, m.Succs)
}
func (m *Neighbors) decodeField(d *decoder, f field) {
	switch f.num {
	case 1:
		m.Preds = d.nodes(m.Preds, f)
	case 2:
		m.Succs = d.nodes(m.Succs, f)
	}
}

// Both lists in one allocation: the simulator clones one per stabilization
// round trip.
func (m *Neighbors) clone() Msg {
	p, s := len(m.Preds), len(m.Succs)
	if m.Preds == nil || m.Succs == nil {
		return &Neighbors{Preds: cloneNodes(m.Preds), Succs: cloneNodes(m.Succs)}
	}
	both := make([]NodeRef, p+s)
	copy(both, m.Preds)
	copy(both[p:], m.Succs)
	return &Neighbors{Preds: both[:p:p], Succs: both[p:]}
}

func (*Leave) Type() Type { return TypeLeave }
func (m *Leave) encode(b []byte) []byte {
	b = putNodes(b, 1, m.Preds)
	return putNodes(b, 2, m.Succs)
}
func (m *Leave) decodeField(d *decoder, f field) {
	switch f.num {
	case 1:
		m.Preds = d.nodes(m.Preds, f)
	case 2:
		m.Succs = d.nodes(m.Succs, f)
	}
}
func (m *Leave) clone() Msg { return &Leave{Preds: cloneNodes(m.Preds), Succs: cloneNodes(m.Succs)} }

func (*Lookup) Type() Type { return TypeLookup }
func (m *Lookup) encode(b []byte) []byte {
	b = putUint(b, 1, m.LookupID)
	b = putID(b, 2, m.Key)
	b = putNode(b, 3, m.Origin)
	b = putUint(b, 4, uint64(m.MinSuccs))
	return putUint(b, 5, uint64(m.Hops))
}
func (m *Lookup) decodeField(d *decoder, f field) {
	switch f.num {
	case 1:
		m.LookupID = d.uint(f)
	case 2:
		m.Key = d.id(f)
	case 3:
		m.Origin = d.node(f)
	case 4:
		m.MinSuccs = d.uint32(f)
	case 5:
		m.Hops = d.uint32(f)
	}
}
func (m *Lookup) clone() Msg { return new(*m) }

func (*LookupDone) Type() Type { return TypeLookupDone }
func (m *LookupDone) encode(b []byte) []byte {
	b = putUint(b, 1, m.LookupID)
	b = putID(b, 2, m.Key)
	b = putUint(b, 3, uint64(m.Hops))
	b = putNode(b, 4, m.Pred)
	b = putNodes(b, 5, m.Succs)
	return putString(b, 6, m.Failed)
}
func (m *LookupDone) decodeField(d *decoder, f field) {
	switch f.num {
	case 1:
		m.LookupID = d.uint(f)
	case 2:
		m.Key = d.id(f)
	case 3:
		m.Hops = d.uint32(f)
	case 4:
		m.Pred = d.node(f)
	case 5:
		m.Succs = d.nodes(m.Succs, f)
	case 6:
		m.Failed = d.str(f, MaxTextBytes)
	}
}
func (m *LookupDone) clone() Msg {
	c := *m
	c.Succs = cloneNodes(m.Succs)
	return &c
}

func (*NextHop) Type() Type { return TypeNextHop }
func (m *NextHop) encode(b []byte) []byte {
	b = putID(b, 1, m.Key)
	return putUint(b, 2, uint64(m.MinSuccs))
}
func (m *NextHop) decodeField(d *decoder, f field) {
	switch f.num {
	case 1:
		m.Key = d.id(f)
	case 2:
		m.MinSuccs = d.uint32(f)
	}
}
func (m *NextHop) clone() Msg { return new(*m) }

func (*NextHopInfo) Type() Type { return TypeNextHopInfo }
func (m *NextHopInfo) encode(b []byte) []byte {
	b = putBool(b, 1, m.Done)
	b = putNodes(b, 2, m.Succs)
	return putNodes(b, 3, m.Next)
}
func (m *NextHopInfo) decodeField(d *decoder, f field) {
	switch f.num {
	case 1:
		m.Done = d.bool(f)
	case 2:
		m.Succs = d.nodes(m.Succs, f)
	case 3:
		m.Next = d.nodes(m.Next, f)
	}
}
func (m *NextHopInfo) clone() Msg {
	return &NextHopInfo{Done: m.Done, Succs: cloneNodes(m.Succs), Next: cloneNodes(m.Next)}
}

func (*ClientLookup) Type() Type               { return TypeClientLookup }
func (m *ClientLookup) encode(b []byte) []byte { return putID(b, 1, m.Key) }
func (m *ClientLookup) decodeField(d *decoder, f field) {
	if f.num == 1 {
		m.Key = d.id(f)
	}
}
func (m *ClientLookup) clone() Msg { return new(*m) }

func (*RingInfo) Type() Type { return TypeRingInfo }
func (m *RingInfo) encode(b []byte) []byte {
	for _, v := range m.Vnodes {
		b = appendTagBytes(b, 1)
		b = appendNested(b, func(b []byte) []byte {
			b = putNode(b, 1, v.Self)
			b = putNodes(b, 2, v.Preds)
			b = putNodes(b, 3, v.Succs)
			for _, fg := range v.Fingers {
				b = appendTagBytes(b, 4)
				b = appendNested(b, func(b []byte) []byte {
					b = putUint(b, 1, uint64(fg.Bit))
					return putNode(b, 2, fg.Node)
				})
			}
			return b
		})
	}
	return b
}
func (m *RingInfo) decodeField(d *decoder, f field) {
	if f.num != 1 {
		return
	}
	if len(m.Vnodes) >= MaxVnodes {
		d.fail("more than %d vnodes", MaxVnodes)
		return
	}
	var v VnodeInfo
	d.nested(f, func(g field) {
		switch g.num {
		case 1:
			v.Self = d.node(g)
		case 2:
			v.Preds = d.nodes(v.Preds, g)
		case 3:
			v.Succs = d.nodes(v.Succs, g)
		case 4:
			if len(v.Fingers) >= MaxFingers {
				d.fail("more than %d fingers", MaxFingers)
				return
			}
			var fg Finger
			d.nested(g, func(h field) {
				switch h.num {
				case 1:
					fg.Bit = d.uint32(h)
				case 2:
					fg.Node = d.node(h)
				}
			})
			v.Fingers = append(v.Fingers, fg)
		}
	})
	m.Vnodes = append(m.Vnodes, v)
}
func (m *RingInfo) clone() Msg {
	c := &RingInfo{}
	for _, v := range m.Vnodes {
		c.Vnodes = append(c.Vnodes, VnodeInfo{Self: v.Self, Preds: cloneNodes(v.Preds), Succs: cloneNodes(v.Succs),
			Fingers: append([]Finger(nil), v.Fingers...)})
	}
	return c
}
