// Package vivaldi keeps a node's network coordinate (Dabek et al., "Vivaldi:
// a decentralized network coordinate system", SIGCOMM 2004): a point in a
// 2-D plane plus a height, fitted so that the distance between two nodes'
// coordinates predicts their round-trip time. Every RPC reply carries its
// sender's coordinate, so coordinates cost no extra messages; the ring uses
// them to choose nearby fingers (proximity neighbour selection) and to time
// out calls to peers it has never measured (as STP does). DHash++ takes
// both uses from here (dhashpp-low-latency-high-throughput.txt, "Technical
// background: Vivaldi", "Proximity neighbor selection", "STP").
//
//	m := vivaldi.New()
//	m.Observe(peer, rtt, reply.Coord, env.Rand()) // on each reply
//	rtt, relErr, ok := m.Predict(peer)
//
// Layer: node logic, above wire. It takes randomness as a *rand.Rand and
// time as durations; it must not import os, net, sync, the wall clock or
// global randomness, nor start goroutines (TestNodePackagesStaySansIO).
package vivaldi
