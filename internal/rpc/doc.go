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
package rpc
