// Package ring implements the Chord ring that all of triad's storage sits
// on (Stoica et al.; the DHash++ refinements are from
// papers/dhashpp-low-latency-high-throughput.txt).
//
// Chord is the ring protocol of one host, registered on the host runtime
// (internal/host), which owns the RPC layer, Vivaldi and liveness. It runs
// one or more virtual servers (Vnode), each with its own ring ID, successor list
// (default 16), predecessor list (each node asks its predecessor for its
// list, which the predecessor returns with itself first), and finger table.
//
// Maintenance: every StabilizeInterval a vnode sends Stabilize to its
// successor (Chord's stabilize and notify in one round trip) and
// GetNeighbors to its predecessor; every FixFingersInterval it refreshes one
// finger, from the top bit down, restarting at the top once a finger equals
// its successor. With Config.QuickStabilize (real nodes set a
// StabilizeInterval/8) a vnode whose successor or predecessor list changed
// runs extra rounds that far apart for one StabilizeInterval after the
// last change: a vnode reaches the lists before it one neighbour per round
// of that neighbour, so a ring of 24 vnodes started together fills its
// lists of 16 in 3-6 s rather than 11-14 (TestQuickStabilizeFillsTheListsSooner),
// and a settled ring runs no extra rounds. After a burst, a vnode's quick
// rounds are held to two per StabilizeInterval, so a peer whose answers
// change every time cannot multiply its neighbours' traffic by eight. The simulator's experiments
// keep the papers' fixed rounds. A call that times out marks the whole peer process dead
// (in the runtime, which tells every protocol): its vnodes leave every list
// at once and stay out until it is heard from; a peer our successor still
// lists is asked, so a restarted one comes back within a round. Peers
// declared dead are probed every ProbeInterval for our own ID; an answer
// other than ourselves comes from a ring apart, and we adopt it as our
// successor if it is closer, or else notify it, which merges the rings.
//
// Lookups are recursive: each hop acknowledges and forwards; the node that
// can answer sends the key's successors straight to the origin. A hop whose
// next node does not acknowledge tries the next-best node; if the whole
// lookup times out the origin falls back to an iterative lookup it drives
// itself. MinSuccs > 0 stops a lookup early at a node whose successor list
// already holds that many successors of the key (DHash++ "integration").
//
// A real node's vnode IDs are derived from its address (VnodeID: a hash of
// the address and the vnode's index), so it cannot make a position of its
// own, and with Config.VerifyIDs any reference {ID, Addr} it receives is
// checked with one hash (VnodeIndex). A new host that may use more
// positions than it runs vnodes takes those that even out the hosts'
// shares of the ring it joins (Place); a Leave takes off only its sender's own
// vnode. The simulator places its hosts at random or chosen IDs instead.
//
// A host persists its ring IDs and the peers it knows (ring-state.json in its
// node.Storage), so a restarted process rejoins at the same positions
// without being told where the ring is.
//
// Protocols above see neighbour changes through OnNeighbours (local
// maintenance starts a round). For experiments about something else than
// how the ring heals (UsenetDHT's year of failures, §6.2), a simulator
// driver may set Config.Membership: the host then sends no ring messages,
// reads its lists from the driver's view of the hosts up (Refresh), and
// answers lookups from it.
//
// Layer: node logic, above host, vivaldi, rpc, node, wire and id. It must not
// import os, net, sync, syscall, the wall clock, global randomness, the
// storage engine or a driver, nor start goroutines; it reaches its state
// file through its node.Storage in offloaded work (TestNodePackagesStaySansIO).
package ring
