// Package maint is Passing Tone's local maintenance (UsenetDHT §4.3,
// Figure 2): each virtual server keeps a copy of every object whose key
// lies in its replica range, the arc from its k-th predecessor to itself,
// by synchronizing that range with its successor and its predecessor and
// fetching what it lacks. Nobody counts replicas and nothing is deleted:
// a server pulls into its own range only, so a neighbour cannot push data
// onto it, and extra copies left by transient failures stay and are
// reused.
//
// Synchronization walks the neighbour's Merkle tree (internal/merkle, kept
// by the storage engine) from the root, one node per TreeQuery, restricted
// to the range: where a node's hash equals ours the subtree is skipped;
// under differing leaves the neighbour lists its keys in the range and we
// fetch (FetchBlock, answered by dhash) those we do not hold. Keys that
// expire soon are out of both trees (store.Options.TreeBuffer), and a
// fetched object already past its expiry is not stored: expired objects
// are never repaired. A round runs every Config.Interval (10 minutes) and
// when a vnode's successor or predecessor changes (the ring tells it; it
// waits Config.Settle, 5 s, for the change to last). A synchronization that
// would repeat the last clean one, both roots unchanged, stops after its
// first query (syncMemo).
//
// Global maintenance (§4.4, Figure 4) sweeps the keys a host stores
// outside a vnode's range: each stretch goes to its current successor,
// which is asked (the same tree walk, the other way round) which keys it
// lacks, and is handed those. Nothing is ever deleted.
//
// Neighbours' trees are not taken on trust (audit.go): each
// synchronization with a replica partner challenges it for a few keys both
// keep, to prove it holds their bytes (SHA-256 of a fresh nonce and the
// bytes; a fragment is fetched and checked against its descriptor). A
// partner that fails is a suspect for a while: no partner, no machine in
// the ranges, and its first copies handed on by its honest successor.
//
// Copies go on distinct machines (ring.DistinctHosts), so a vnode's range
// and partners skip its own machine's vnodes (replicaStart, plan). A
// repair budget (Config.Budget) paces what a host fetches and hands over.
// Operators see Status (`triad maint status`) and pause it (MaintControl,
// accepted from this machine only).
//
// Erasure-coded blocks (DHash++, "Erasure-coding vs. replication") have
// their l fragments on their first l successors, each under another index.
// A missing fragment is rebuilt from any m others (Config.Rebuild, dhash's
// RebuildFragment) under an index no holder has, never fetched; where
// fragments are the deployment's default, rounds also compare the arcs of
// (p_l, p_k] whose fragments a vnode keeps (plan).
//
// The scripts in testdata/trace (TestTrace) show it message by message:
// round.txt (a round, and a quiet one), missing-key.txt (a key found
// missing and fetched), budget.txt (the repair budget pacing fetches),
// sweep.txt (global maintenance handing a key to its successor) and
// fragment.txt (a fragment rebuilt from others).
//
// The files, in the order a reader may take them:
//
//   - maint.go: Maint, its registration on the host, its message handlers
//   - config.go: Config, its defaults and Validate
//   - schedule.go: when rounds and sweeps start (the check timer, Settle)
//   - ranges.go: a vnode's replica range and its round's plan of syncs
//   - round.go: a round, Figure 2: walk each partner's tree, fetch, rebuild
//   - sync.go: the Merkle walk that rounds and sweeps share; SyncCost
//   - queue.go: the repair queue, latest expiry first, and keys set aside
//   - budget.go: the repair budget, a token bucket of bytes per second
//   - global.go: global maintenance, Figure 4: a sweep hands keys on
//   - audit.go: audits of replica partners, and suspects
//   - status.go: Stats and Status (`triad maint status`)
//
// Layer: node logic, registered on the host runtime (host.Register) beside
// the ring and the block store; it reaches the storage engine only through
// offloaded work. It must not import os, net, sync, the wall clock or
// global randomness, nor start goroutines (TestNodePackagesStaySansIO).
package maint
