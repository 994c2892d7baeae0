package wire

import (
	"triad/internal/id"
)

// CCRequest is a request routed recursively, one hop at a time, towards
// the node responsible for Key (congestion paper §IV). Source is the node
// that injected it and gets the overlay acknowledgement; Rate is the
// source's request rate when it sent it, in thousandths of a request per
// second, which queues compare with the rates they see for fairness;
// Marked is the congestion bit, set by a queue and never cleared.
//
//wire:msg 256 node
type CCRequest struct {
	Seq     uint64  `wire:"1"` // the source's number for it; a retransmission keeps it
	Key     id.ID   `wire:"2"`
	Source  NodeRef `wire:"3"`
	Rate    uint64  `wire:"4"`
	Marked  bool    `wire:"5"`
	Hops    uint32  `wire:"6,max=MaxCCHops"`
	Payload []byte  `wire:"7,max=MaxCCPayload"`
}

// CCAck is the overlay acknowledgement the responsible node sends the
// source of a CCRequest: it carries the congestion bit back.
//
//wire:msg 257 node
type CCAck struct {
	Seq    uint64 `wire:"1"`
	Marked bool   `wire:"2"`
	Hops   uint32 `wire:"3"`
}

// CCPause is hop-by-hop back-pressure (the 'back-pressure' baseline): the
// sender's forwarding queue is full (Paused) and the receiver must hold
// what it would route through it, or it has room again.
//
//wire:msg 258 node
type CCPause struct {
	Paused bool `wire:"1"`
}

// CCFlood sets a node's load generator (for benchmarks): MilliRate
// thousandths of a request per second for random keys from then on, 0 to
// stop. The reply is an Ack. Only a client on the node's own machine may
// send it.
//
//wire:msg 259 operator
type CCFlood struct {
	MilliRate uint64 `wire:"1"`
}

// Bounds of routed requests.
const (
	MaxCCPayload = 16 << 10
	MaxCCHops    = 64
)
