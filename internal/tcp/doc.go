// Package tcp is the real driver: it runs one node.Handler (a process with
// all its virtual servers) over TCP with real time.
//
// One event-loop goroutine owns the handler and calls Handle for every
// event; nothing else touches node state. Around it: an accept loop and one
// reader goroutine per inbound connection (a malformed or oversized frame
// closes that connection and is counted, never more); one outbound
// connection per peer, dialled on first use, with a bounded send queue
// (frames beyond it are dropped and counted, as a lossy network would) and
// closed after IdleTimeout without traffic; timers from time.AfterFunc; and
// offloaded work on Workers goroutines (what they cannot take yet waits in
// the loop). Totals are bounded in bytes, not only per connection:
//
//   - connections: MaxConns accepted at once, MaxConnsPerAddr of them from
//     one IPv4 address or IPv6 /64 (more are closed on arrival), and a few
//     slots past MaxConns for the node's own machine, so that an
//     operator's command is answered when strangers hold the rest;
//   - inbound frames: MaxInflightBytes read and not yet handled, charged
//     as a frame's body arrives (a header alone holds nothing; a reader
//     waits for room before its buffer grows), with the last eighth kept
//     for frames of 64 KiB or less; of it, connections not yet known (see
//     Driver) hold at most MaxStrangerBytes together; a frame's body has
//     FrameTimeout once its length has come;
//   - outbound frames: MaxQueuedBytes queued per connection and
//     MaxQueuedBytesTotal in all (more are dropped and counted, as a lossy
//     network would); a request read on an accepted connection holds
//     room for its reply until it is answered (an eighth of
//     MaxQueuedBytes if its reply may carry a block, wire.BigReply, else
//     a 128th), and the connection is not read while its replies queued
//     and in service, with one more, pass half of MaxQueuedBytes, or the
//     node's pass half of MaxQueuedBytesTotal: a client that asks and
//     never reads is held back by TCP, not by the node's memory, and one
//     that asks fast is paused before its replies exist, not dropped
//     once they do;
//   - an idle connection keeps a 4 KiB read buffer and at most 16 KiB more;
//   - refusals (forged, bad or oversized frames, refused connections and
//     handshakes) are logged once per 10 s of each kind, with a count of
//     those not logged; Stats counts every one.
//
// Peers prove the address they claim (see Driver): replies are read only
// from connections we dialled, requests only from accepted connections
// that proved their address with a Challenge and Proof (or, with TLS, a
// certificate that names it), and answered on the connection they came in
// on. Clients that have no listen address (the triad CLI) get their
// replies on the connection they asked on; who may send which message
// type (a node, any client, only an operator) is wire's table
// (wire.RoleOf), so the driver names no protocol's messages. That
// handshake is a state machine without I/O in handshake.go: the reader of
// an accepted connection feeds it frames and deadlines and carries out the
// actions it returns; testdata/handshake is its script, case by case.
//
// The rest: driver.go has Config, Stats, the event loop, the accept loop
// and each accepted connection's reader; conn.go the outbound connections
// and their queues; limits.go the byte budgets, the frame reader and the
// rate-limited refusal logs. A client's one-shot request is client.Call.
//
//	d, _ := tcp.Listen(cfg)            // binds, so d.Addr() is known
//	n, _ := deploy.New(opts, d.Addr(), d.Storage(), d.Rand()) // a host and its protocols
//	err := d.Run(ctx, n.Host)          // until ctx ends; then a graceful Stop
//
// Layer: a driver, beside sim and below cmd/triad and client. It may do
// everything node logic must not (sockets, goroutines, real time) and
// imports node, wire, pki, the storage engine and ring (only to check a
// certificate's vnodes, ring.VnodeIndex); node logic must never import it.
// It imports no other protocol (dhash, maint, d2, tapestry, usenet): what a
// protocol keeps of its own it asks for by name (Config.Stores).
package tcp
