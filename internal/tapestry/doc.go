// Package tapestry is Tapestry's prefix-routing mesh and its decentralized
// object location (DOLR), after "Tapestry: A Resilient Global-Scale
// Overlay for Service Deployment" (Zhao, Huang, Stribling, Rhea, Joseph,
// Kubiatowicz; ../shared/papers/tapestry.txt), as a protocol on the host
// runtime (messages 320-383).
//
// A node's ID is its host's first ring ID: 160 bits read as 40 hexadecimal
// digits. Its routing table has 40 levels of 16 entries (§III-B1); entry
// (l, d) holds up to c = 3 links, primary first, to the nearest nodes by
// measured round trip whose IDs share the node's first l digits and have
// d as digit l. Messages travel digit by digit; NEXTHOP (Fig. 3) takes
// the next non-empty entry when a digit has none (surrogate routing), so
// that every key has one root among the live nodes. A hop is a request
// acknowledged by the next node: a hop that times out marks the peer
// dead, which takes it out of the table (its backups are promoted), and
// the message goes on through the next link. A route past 80 hops is a
// loop: dropped and counted.
//
// Object location (§III-B2): a server publishes an object by sending a
// pointer ⟨GUID, server⟩ towards the GUID's root, left at every hop and
// kept sorted by distance; a RouteToObject turns towards the nearest
// server at the first pointer it meets, and a server that no longer holds
// the object sends it on to the root with itself excluded. Pointers are
// soft state: they live two republish intervals; servers republish in one
// batch per next hop, again after a restart, and at once along a path
// whose next hop was lost; a graceful stop unpublishes. Extra pointers go
// to k backups and l nearest neighbours on the first m hops of the path
// (§V-B3), and a Bloom filter of 10 bits per pointer answers most
// negative pointer lookups (§IV-D). Not in the paper (issue 44): a
// pointer counts only once its server says it serves the key, unless it
// came straight from the server (confirm.go), and an unpublish is taken
// only from the server or the peer the pointer came from.
//
// Membership (§III-C): a joiner routes to its surrogate, which sends an
// acknowledged multicast to every node sharing their longest prefix; each
// adds the joiner, hands it the pointers it is now root of, and the
// joiner builds its table level by level from the nearest k = 16 nodes of
// the level above and their backpointers. A leaving node tells the nodes
// that point at it, with a replacement per level, and hands its root
// pointers on. Beacons find failed links; a hole left by one is refilled
// from the nodes of the same level.
//
// Applications (§IV-B) register an id and get Deliver at the destination
// and, for messages sent with Upcall, Forward at every hop.
//
// Layer: node logic, above host, rpc, wire, id and node. It must not
// import os, net, sync, syscall, the wall clock, global randomness or a
// driver.
package tapestry
