// Package rpc layers request/reply calls on top of node.Env's one-way
// messages: request ids, a timeout per call, exactly one continuation per
// call (reply, error reply or timeout, whichever comes first), and a round-
// trip-time sample for every reply (later fed to Vivaldi).
//
// A Client lives inside a node's state machine and is driven by its events:
//
//	c.Call(env, to, from, dst, &wire.Ping{}, func(env node.Env, m wire.Msg, err error) {...})
//	// in Handle:
//	case node.MsgIn:      if ev.Env.Kind == wire.Reply { c.HandleReply(env, ev) }
//	case node.TimerFired: if c.HandleTimer(env, ev.T) { return }
//
// The timeouts follow DHash++'s STP (dhashpp-low-latency-high-throughput.txt,
// "High throughput: STP"): from each peer's smoothed RTT and variance, or
// from its Vivaldi prediction for a peer never measured.
//
// Layer: node logic, above node, wire and id. It must not import os, net,
// sync, syscall, the wall clock, global randomness or a driver, nor start
// goroutines (TestNodePackagesStaySansIO, in package node).
package rpc
