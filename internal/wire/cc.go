package wire

import (
	"bytes"

	"triad/internal/id"
)

// Message types of congestion control (routed requests), 256-319.
const (
	TypeCCRequest Type = 256
	TypeCCAck     Type = 257
	TypeCCPause   Type = 258
	TypeCCFlood   Type = 259
)

// CCRequest is a request routed recursively, one hop at a time, towards
// the node responsible for Key (congestion paper §IV). Source is the node
// that injected it and gets the overlay acknowledgement; Rate is the
// source's request rate when it sent it, in thousandths of a request per
// second, which queues compare with the rates they see for fairness;
// Marked is the congestion bit, set by a queue and never cleared.
type CCRequest struct {
	Seq     uint64 // the source's number for it; a retransmission keeps it
	Key     id.ID
	Source  NodeRef
	Rate    uint64
	Marked  bool
	Hops    uint32
	Payload []byte
}

// CCAck is the overlay acknowledgement the responsible node sends the
// source of a CCRequest: it carries the congestion bit back.
type CCAck struct {
	Seq    uint64
	Marked bool
	Hops   uint32
}

// CCPause is hop-by-hop back-pressure (the 'back-pressure' baseline): the
// sender's forwarding queue is full (Paused) and the receiver must hold
// what it would route through it, or it has room again.
type CCPause struct{ Paused bool }

// CCFlood sets a node's load generator (for benchmarks): MilliRate
// thousandths of a request per second for random keys from then on, 0 to
// stop. The reply is an Ack. Only a client on the node's own machine may
// send it.
type CCFlood struct{ MilliRate uint64 }

// Bounds of routed requests.
const (
	MaxCCPayload = 16 << 10
	MaxCCHops    = 64
)

func (*CCRequest) Type() Type { return TypeCCRequest }
func (m *CCRequest) encode(b []byte) []byte {
	b = putUint(b, 1, m.Seq)
	b = putID(b, 2, m.Key)
	b = putNode(b, 3, m.Source)
	b = putUint(b, 4, m.Rate)
	b = putBool(b, 5, m.Marked)
	b = putUint(b, 6, uint64(m.Hops))
	return putBytes(b, 7, m.Payload)
}
func (m *CCRequest) decodeField(d *decoder, f field) {
	switch f.num {
	case 1:
		m.Seq = d.uint(f)
	case 2:
		m.Key = d.id(f)
	case 3:
		m.Source = d.node(f)
	case 4:
		m.Rate = d.uint(f)
	case 5:
		m.Marked = d.bool(f)
	case 6:
		if m.Hops = d.uint32(f); m.Hops > MaxCCHops {
			d.fail("%d hops", m.Hops)
		}
	case 7:
		if m.Payload = d.data(f); len(m.Payload) > MaxCCPayload {
			d.fail("a payload of %d bytes", len(m.Payload))
		}
	}
}
func (m *CCRequest) clone() Msg {
	c := *m
	c.Payload = bytes.Clone(m.Payload)
	return &c
}

func (*CCAck) Type() Type { return TypeCCAck }
func (m *CCAck) encode(b []byte) []byte {
	b = putUint(b, 1, m.Seq)
	b = putBool(b, 2, m.Marked)
	return putUint(b, 3, uint64(m.Hops))
}
func (m *CCAck) decodeField(d *decoder, f field) {
	switch f.num {
	case 1:
		m.Seq = d.uint(f)
	case 2:
		m.Marked = d.bool(f)
	case 3:
		m.Hops = d.uint32(f)
	}
}
func (m *CCAck) clone() Msg { return new(*m) }

func (*CCPause) Type() Type                        { return TypeCCPause }
func (m *CCPause) encode(b []byte) []byte          { return putBool(b, 1, m.Paused) }
func (m *CCPause) decodeField(d *decoder, f field) { m.Paused = d.bool(f) }
func (m *CCPause) clone() Msg                      { return new(*m) }

func (*CCFlood) Type() Type                        { return TypeCCFlood }
func (m *CCFlood) encode(b []byte) []byte          { return putUint(b, 1, m.MilliRate) }
func (m *CCFlood) decodeField(d *decoder, f field) { m.MilliRate = d.uint(f) }
func (m *CCFlood) clone() Msg                      { return new(*m) }
