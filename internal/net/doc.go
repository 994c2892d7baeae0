// Package net is the real driver: it runs one node.Handler (a process with
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
// the loop). Totals are bounded, not only per connection: MaxConns accepted
// connections (more are closed on arrival), MaxInflightBytes of frames read
// and not yet handled across all connections (a reader waits for room
// before it allocates a frame), FrameTimeout for a frame's body once its
// length has come, and an idle connection keeps a 16 KiB read buffer.
//
// Peers prove the address they claim (see Driver): replies are read only
// from connections we dialled, requests only from accepted connections
// that proved their address with a Challenge and Proof, and answered on
// the connection they came in on. Clients that have no listen address (the
// triad CLI) get their replies on the connection they asked on.
//
//	d, _ := net.Listen(cfg)            // binds, so d.Addr() is known
//	n, _ := deploy.New(opts, d.Addr(), d.Storage(), d.Rand()) // a host and its protocols
//	err := d.Run(ctx, n.Host)          // until ctx ends; then a graceful Stop
//
// Layer: a driver, beside sim and below cmd/triad. It may do everything node
// logic must not (sockets, goroutines, real time) and imports node, wire and the
// storage engine; node logic must never import it.
package net
