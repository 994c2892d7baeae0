// Package cc is congestion control for requests routed through the ring,
// after "Handling Very Large Numbers Of Messages In Distributed Hash
// Tables" (Klemm, Le Boudec, Kostić, Aberer): requests travel recursively,
// one message per hop, to the node responsible for their key, which sends
// an overlay acknowledgement back to the source (§I, §IV).
//
// Every node forwards through one queue of bounded capacity, served no
// faster than its uplink (Config.UplinkBps). Four schemes are selectable
// so that they can be compared, as in §V:
//
//   - None: sources inject at the rate the application asks and send again
//     what times out, without slowing down; a full queue drops. Past its
//     capacity the ring collapses (§III, Figure 4).
//   - Loss: a full queue drops; a source keeps a window of requests in
//     flight, grows it additively on an acknowledgement and halves it on a
//     timeout, and retransmits what timed out (CSCC of [7]).
//   - BackPressure: nothing is dropped; a node whose queue is full tells
//     the neighbours that feed it to hold their messages for it until it
//     has room again, and a source injects only while its own queue has
//     room (BPCC of [7]).
//   - Marking: the paper's scheme (§IV). At every hop the queue's length
//     is averaged with δ and the request is marked with probability
//     q = min(s̄/(t·(t−s̄))·(x/x_avg)^γ, 1) (equation 10), where t is the
//     feedback threshold, x the source's rate carried in the request and
//     x_avg the node's running average of the rates it sees; a mark is
//     never cleared, and the acknowledgement carries it back. A source
//     grows its window by c+/w on an unmarked acknowledgement and
//     multiplies it by c− on a marked one or a timeout.
//
// A source keeps one DHT-wide round-trip estimate for its retransmission
// timeouts (§IV-3), whatever the destination. Its window bounds what the
// application may inject: Send refuses once the source's backlog is full,
// so callers see back-pressure rather than an unbounded queue. Two
// departures from the paper, both written where they are made: a source
// decreases at most once per round trip (as TCP with ECN does), so that a
// burst of marks from one congested queue is one signal; and the window
// counts requests rather than a rate, the rate the queues compare being
// the window over the smoothed round trip.
//
// Cross-load (§V-C) is a node that stops forwarding for exponentially
// distributed pauses (Config.PauseFraction, Config.PauseMean).
//
// The scripts in testdata/trace (TestTrace) show the schemes message by
// message on a static ring: marking.txt (a queue over the threshold marks,
// and the source halves its window once per round trip), aimd.txt (the
// window grows on acknowledgements and halves on a timeout), full-queue.txt
// (a full queue drops) and backpressure.txt (a full queue holds its
// neighbours instead).
//
// Layer: a protocol on the host runtime (internal/host), beside dhash and
// maint; it routes with a Router, either the Chord ring's next hop or a
// static ring for experiments. Node logic: no clock, socket, disk or
// goroutine.
package cc
