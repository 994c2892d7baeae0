// Package node is the contract between protocol code and the drivers that run
// it: the Env a node acts through and the Events it is driven by.
//
// Node logic is a deterministic state machine ("sans-IO"): it never touches
// sockets, clocks, goroutines or global randomness. The tcp driver runs it
// over TCP with real time; the sim driver runs thousands of the same nodes
// under virtual time from one seed. See DESIGN.md, "Node logic is a
// deterministic state machine".
//
//	func (h *Host) Handle(env node.Env, ev node.Event) {
//		switch ev := ev.(type) {
//		case node.MsgIn:      ...
//		case node.TimerFired: ...
//		}
//	}
//
// Layer: node logic, above wire. It defines the contract and must not
// import a driver, os, net, sync, syscall, the wall clock or global
// randomness, nor start goroutines. TestNodePackagesStaySansIO, in this
// package, holds every node-logic package and all it imports from this
// module and from third parties to that rule. The contract imports no
// protocol (ring, dhash, maint, d2, tapestry, usenet): a protocol's own
// storage is a store it names (Storage.Store).
package node
