// Package host is the runtime every protocol of a host plugs into. One Host
// per process (or per simulated machine) owns what the protocols share: the
// host's identity (its address), the RPC layer (request ids, calls in
// flight, timeouts from measured round trips or Vivaldi predictions),
// Vivaldi coordinates, and liveness (which peers were declared dead).
//
// A protocol (the Chord ring, the DHash block store, Passing Tone
// maintenance and congestion control today; Tapestry and D2 next) is a
// Protocol value registered once with Register, with the range of wire
// message types it owns (wire.Ranges). The host answers Ping itself and
// dispatches to a protocol the requests and one-way messages of its range
// (after its Validate, if it is a Validator), the timers and offloaded work
// it set (each protocol claims its own typed values), and the peers the
// host declares dead. A message whose type nobody registered, or whose
// sender the ring's check refuses (CheckSenders: an ID not derived from
// its address), is refused and counted (Stats.BadMessages) before any
// protocol sees it. A protocol runs unchanged in the simulator and over
// TCP, because it sees the world only through node.Env.
//
//	h, err := host.New(host.DefaultConfig(), addr)
//	chord, err := ring.New(cfg, h, state, bootstrap) // registers itself
//	err = driver.Run(ctx, h)                         // internal/deploy does all this
//
// Vivaldi follows DHash++ §4.1 (coordinates from RPC round trips) and the
// timeouts follow DHash++ §5 (STP: predicted RTT plus a multiple of the
// prediction's error for peers never measured).
//
// Layer: node logic. It imports node, rpc, vivaldi, wire and id; never os,
// net, sync, the wall clock or goroutines (internal/node's purity test).
package host
