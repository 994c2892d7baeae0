// Package dhash is the block store on the ring (DHash, as in DHash++ and
// UsenetDHT): content-hash blocks kept as k whole replicas on the key's
// first k successors, or as l erasure-coded fragments of which any m rebuild
// the block. A Node is a protocol registered on the host runtime
// (internal/host) beside the ring: it owns the block messages and finds
// holders through the ring's lookups. Like the ring it is a pure state
// machine; the host's storage engine, which the driver owns, is reached only
// through typed work values (engineWork) that the driver runs.
//
// From DHash++ (dhashpp-low-latency-high-throughput.txt): "Erasure-coding
// vs. replication" (7-of-14 fragments by default when fragments are asked
// for; a get fetches from the nearest holders by Vivaldi) and "Integration"
// (a lookup stops at a node that already knows enough successors of the
// key, unless NoIntegration). From UsenetDHT §3.2-3.3 and §5.4: each block
// carries an expiry time; replicas skip virtual servers of one host. The
// write window bounds the puts a node coordinates at once (fault.ErrBusy
// beyond it), like STP's window ("High throughput: STP"). A host checks
// every copy it stores against the key and never replaces a copy it holds:
// the same copy only extends the expiry, another is refused (docs/dhash.md).
// A whole block's key is its content hash; a fragmented block's is the hash
// of its descriptor (package frag), which every fragment carries, so each
// fragment verifies against the key on its own. A get that
// finds a holder's copy damaged (quarantined by its engine) stores a good
// copy back there once it has the block (repair.go). Passing Tone
// (UsenetDHT §4, internal/maint) keeps the copies in place; it rebuilds a
// host's missing fragment through RebuildFragment.
//
//	n, err := dhash.New(dhash.DefaultConfig(), chord) // registers on chord's host; see internal/deploy
//	// inside the node's loop (a Request event, or a handler):
//	n.Put(env, data, expiry, wire.RedundancyDefault, func(env node.Env, key id.ID, holders []wire.NodeRef, err error) {...})
//	n.Get(env, key, wire.RedundancyDefault, func(env node.Env, b dhash.Block, err error) {...})
//
// Layer: node logic, above host, ring, rpc, node, wire and id. It imports
// store only for the engine contract's types and errors, and reaches the
// engine only through env.Offload work. It must not import os, net, sync, syscall, the
// wall clock, global randomness or a driver, nor start goroutines
// (TestNodePackagesStaySansIO, in package node).
package dhash
