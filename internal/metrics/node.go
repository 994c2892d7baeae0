package metrics

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"triad/internal/cc"
	"triad/internal/deploy"
	"triad/internal/node"
	"triad/internal/ring"
	"triad/internal/rpc"
	"triad/internal/store"
	"triad/internal/tcp"
	"triad/internal/wire"
)

// NodeSnapshot is what a node counts, copied at one moment on its event
// loop.
type NodeSnapshot struct {
	Vnodes        []VnodeSnapshot
	Ring          ring.Stats
	PeersDead     uint64
	BadMessages   uint64
	RPCCalls      uint64
	RPCReplies    uint64
	RPCTimeouts   uint64
	RPCStray      uint64
	RPCPending    int
	RPCLatency    map[wire.Type]rpc.Histogram
	Addr          string
	Coord         wire.Coord            // this process's Vivaldi coordinate
	PeerCoords    map[string]wire.Coord // those of the peers it knows, by address
	HasBlocks     bool
	Puts          uint64
	PutsFailed    uint64
	PutsDeferred  uint64
	Gets          uint64
	GetsFailed    uint64
	CopiesStored  uint64
	CopiesRefused uint64
	CopiesServed  uint64
	BadCopies     uint64
	Maint         *wire.MaintStatus // nil without maintenance
	CC            *cc.Stats         // nil without congestion control
	// Protocols are the figures the protocols that report their own
	// (Tapestry, D2) gave (deploy.Node.Reports).
	Protocols []deploy.Report
}

// VnodeSnapshot is one virtual server's neighbourhood.
type VnodeSnapshot struct {
	ID           string // the first 8 hex digits of its ring ID
	Self         wire.NodeRef
	Successors   int
	Predecessors int
	Succs        []wire.NodeRef // nearest first
	Preds        []wire.NodeRef // nearest first
	Fingers      []wire.NodeRef // distinct, nearest first
}

// TakeNodeSnapshot copies n's counters. It must run on n's event loop.
func TakeNodeSnapshot(n *deploy.Node) NodeSnapshot {
	s := NodeSnapshot{Ring: n.Ring.Stats, RPCLatency: map[wire.Type]rpc.Histogram{},
		Addr: n.Host.Addr(), Coord: n.Host.Coord(), PeerCoords: n.Host.PeerCoords()}
	for _, v := range n.Ring.Vnodes() {
		vs := VnodeSnapshot{ID: v.Self().ID.String()[:8], Self: v.Self(), Successors: len(v.Succs()), Predecessors: len(v.Preds()),
			Succs: slices.Clone(v.Succs()), Preds: slices.Clone(v.Preds())}
		for _, f := range v.Fingers() {
			if !f.IsZero() && !slices.ContainsFunc(vs.Fingers, func(g wire.NodeRef) bool { return g.ID == f.ID }) {
				vs.Fingers = append(vs.Fingers, f)
			}
		}
		s.Vnodes = append(s.Vnodes, vs)
	}
	s.PeersDead, s.BadMessages = n.Host.Stats.PeersDeclaredDead, n.Host.Stats.BadMessages
	c := n.Host.RPC()
	s.RPCCalls, s.RPCReplies, s.RPCTimeouts, s.RPCStray, s.RPCPending = c.Calls, c.Replies, c.Timeouts, c.Stray, c.Pending()
	for t, h := range c.Latency {
		s.RPCLatency[t] = *h
	}
	if b := n.Blocks; b != nil {
		st := b.Stats
		s.HasBlocks = true
		s.Puts, s.PutsFailed, s.PutsDeferred, s.Gets, s.GetsFailed = st.Puts, st.PutsFailed, st.PutsDeferred, st.Gets, st.GetsFailed
		s.CopiesStored, s.CopiesRefused, s.CopiesServed, s.BadCopies = st.Stored, st.StoreRefused, st.Fetched, st.BadCopies
	}
	if n.Maint != nil {
		s.Maint = n.Maint.Status()
	}
	if n.CC != nil {
		st := n.CC.Snapshot()
		s.CC = &st
	}
	s.Protocols = n.Reports()
	return s
}

// Node collects one node process's metrics.
type Node struct {
	drv    *tcp.Driver
	node   *deploy.Node
	engine store.Engine
}

// NewNode is the collector of the node that drv runs.
func NewNode(drv *tcp.Driver, n *deploy.Node) *Node {
	return &Node{drv: drv, node: n, engine: drv.Storage().Engine()}
}

// snapshotTimeout bounds how long a scrape waits for the node's loop.
const snapshotTimeout = 5 * time.Second

// Describe implements prometheus.Collector: the metrics are unchecked
// (their label values, the RPC types seen, vary).
func (c *Node) Describe(chan<- *prometheus.Desc) {}

// Snapshot takes a snapshot of the node's counters on its event loop.
func (c *Node) Snapshot(ctx context.Context) (NodeSnapshot, error) {
	// Buffered: a loop that runs fn after the caller gave up does not block.
	snaps := make(chan NodeSnapshot, 1)
	if err := c.drv.Do(ctx, func(node.Env) { snaps <- TakeNodeSnapshot(c.node) }); err != nil {
		return NodeSnapshot{}, fmt.Errorf("the node's event loop did not answer: %w", err)
	}
	return <-snaps, nil
}

// StoreStats are the node's storage engine's figures.
func (c *Node) StoreStats() store.Stats { return c.engine.Stats() }

// Collect implements prometheus.Collector.
func (c *Node) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), snapshotTimeout)
	defer cancel()
	snap, err := c.Snapshot(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(prometheus.NewDesc("triad_node_snapshot", "A snapshot of the node's counters.", nil, nil), err)
		return
	}
	emitNode(ch, snap)
	emitStore(ch, c.engine.Stats())
	emitDriver(ch, &c.drv.Stats)
}

// emitter writes const metrics.
type emitter struct{ ch chan<- prometheus.Metric }

func (e emitter) metric(kind prometheus.ValueType, name, help string, v float64, labels ...string) {
	var keys, values []string
	for i := 0; i+1 < len(labels); i += 2 {
		keys, values = append(keys, labels[i]), append(values, labels[i+1])
	}
	e.ch <- prometheus.MustNewConstMetric(prometheus.NewDesc(name, help, keys, nil), kind, v, values...)
}

func (e emitter) counter(name, help string, v uint64, labels ...string) {
	e.metric(prometheus.CounterValue, name, help, float64(v), labels...)
}

func (e emitter) gauge(name, help string, v float64, labels ...string) {
	e.metric(prometheus.GaugeValue, name, help, v, labels...)
}

func emitNode(ch chan<- prometheus.Metric, s NodeSnapshot) {
	e := emitter{ch}
	e.gauge("triad_ring_vnodes", "Virtual servers (ring positions) in this process.", float64(len(s.Vnodes)))
	for _, v := range s.Vnodes {
		e.gauge("triad_ring_successors", "Successors a vnode knows (its successor list).", float64(v.Successors), "vnode", v.ID)
		e.gauge("triad_ring_predecessors", "Predecessors a vnode knows.", float64(v.Predecessors), "vnode", v.ID)
	}
	e.counter("triad_ring_neighbour_changes_total", "Stabilization rounds that found a vnode's successor or predecessor changed.", s.Ring.NeighbourChanges)
	e.counter("triad_ring_quick_rounds_total", "Extra stabilization rounds run while a vnode's lists were changing.", s.Ring.QuickRounds)
	e.counter("triad_ring_lookups_total", "Lookups started here that ended, by outcome.", s.Ring.LookupsDone, "outcome", "done")
	e.counter("triad_ring_lookups_total", "Lookups started here that ended, by outcome.", s.Ring.LookupsFailed, "outcome", "failed")
	e.counter("triad_ring_iterative_fallbacks_total", "Recursive lookups retried iteratively.", s.Ring.IterativeFallbacks)
	e.counter("triad_ring_hop_failures_total", "Lookup hops that failed and were routed around.", s.Ring.HopFailures)
	e.counter("triad_ring_refused_leaves_total", "Leave messages refused: the vnode they name is not the sender's own.", s.Ring.RefusedLeaves)
	e.counter("triad_ring_forged_refs_total", "Messages refused because a node reference in them has an ID not derived from its address.", s.Ring.ForgedRefs)
	hops := map[float64]uint64{}
	var count, cum uint64
	var sum float64
	for h, n := range s.Ring.Hops {
		count += n
		sum += float64(h * int(n))
	}
	for _, le := range []int{0, 1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 24, ring.MaxCountedHops - 1} {
		cum = 0
		for h := 0; h <= le; h++ {
			cum += s.Ring.Hops[h]
		}
		hops[float64(le)] = cum
	}
	ch <- prometheus.MustNewConstHistogram(prometheus.NewDesc("triad_ring_lookup_hops", "Hops taken by the lookups done here.", nil, nil), count, sum, hops)

	e.counter("triad_host_peers_declared_dead_total", "Peers this node declared dead after failed calls.", s.PeersDead)
	e.counter("triad_host_bad_messages_total", "Messages dropped before any protocol saw them.", s.BadMessages)
	e.counter("triad_rpc_calls_total", "Calls this node made to other nodes.", s.RPCCalls)
	e.counter("triad_rpc_replies_total", "Calls answered.", s.RPCReplies)
	e.counter("triad_rpc_timeouts_total", "Calls that timed out.", s.RPCTimeouts)
	e.counter("triad_rpc_stray_replies_total", "Replies to no call in flight (late, repeated or forged), dropped.", s.RPCStray)
	e.gauge("triad_rpc_pending_calls", "Calls in flight.", float64(s.RPCPending))
	types := make([]wire.Type, 0, len(s.RPCLatency))
	for t := range s.RPCLatency {
		types = append(types, t)
	}
	sort.Slice(types, func(i, j int) bool { return types[i] < types[j] })
	desc := prometheus.NewDesc("triad_rpc_latency_seconds", "Round-trip times of the calls answered, by request type.", []string{"type"}, nil)
	for _, t := range types {
		h := s.RPCLatency[t]
		buckets := map[float64]uint64{}
		var cum uint64
		for i, le := range rpc.LatencyBuckets {
			cum += h.Counts[i]
			buckets[le.Seconds()] = cum
		}
		ch <- prometheus.MustNewConstHistogram(desc, h.Count, h.Sum.Seconds(), buckets, t.String())
	}
	if s.HasBlocks {
		for _, o := range []struct {
			outcome string
			n       uint64
		}{{"ok", s.Puts - min(s.Puts, s.PutsFailed)}, {"failed", s.PutsFailed}} {
			e.counter("triad_dhash_puts_total", "Puts this node coordinated, by outcome.", o.n, "outcome", o.outcome)
		}
		e.counter("triad_dhash_deferrals_total", "Puts deferred: the write window was full.", s.PutsDeferred)
		e.counter("triad_dhash_gets_total", "Gets this node coordinated, by outcome.", s.Gets-min(s.Gets, s.GetsFailed), "outcome", "ok")
		e.counter("triad_dhash_gets_total", "Gets this node coordinated, by outcome.", s.GetsFailed, "outcome", "failed")
		e.counter("triad_dhash_copies_stored_total", "Copies written here for other nodes' puts.", s.CopiesStored)
		e.counter("triad_dhash_copies_refused_total", "Copies refused (full, too large, malformed).", s.CopiesRefused)
		e.counter("triad_dhash_copies_served_total", "Copies read from here for other nodes' gets.", s.CopiesServed)
		e.counter("triad_dhash_bad_copies_total", "Fetched copies that failed verification.", s.BadCopies)
	}
	if s.Maint != nil {
		emitMaint(e, s.Maint)
	}
	if s.CC != nil {
		emitCC(e, s.CC)
	}
	for _, r := range s.Protocols {
		emitReport(e, r)
	}
}

// emitReport writes a protocol's own figures as triad_PROTOCOL_NAME: a
// gauge as it is, a counter as NAME_total.
func emitReport(e emitter, r deploy.Report) {
	for _, m := range r.Metrics {
		name := "triad_" + r.Protocol + "_" + m.Name
		if m.Gauge {
			e.gauge(name, m.Help, m.Value)
		} else {
			e.metric(prometheus.CounterValue, name+"_total", m.Help, m.Value)
		}
	}
}

// emitCC writes congestion control's counters: a source's requests and
// its window, and the forwarding queue's drops and marks.
func emitCC(e emitter, st *cc.Stats) {
	e.counter("triad_cc_requests_injected_total", "Routed requests this node sent as their source (first transmissions).", st.Injected)
	e.counter("triad_cc_requests_acked_total", "Routed requests of this source acknowledged by the node responsible for their key.", st.Acked)
	e.counter("triad_cc_requests_acked_marked_total", "Of those, acknowledged with the congestion bit.", st.AckedMarked)
	e.counter("triad_cc_requests_acked_here_total", "Of those, for keys this node holds itself: routed no hop.", st.AckedHere)
	e.counter("triad_cc_retransmissions_total", "Routed requests sent again after a timeout.", st.Retransmits)
	e.counter("triad_cc_requests_lost_total", "Routed requests given up after their retries.", st.Lost)
	e.counter("triad_cc_requests_refused_total", "Requests the source refused: its backlog was full.", st.Refused)
	e.metric(prometheus.CounterValue, "triad_cc_request_delay_seconds_total", "Time from the first sending to the acknowledgement, summed over acknowledged requests.", st.DelaySum.Seconds())
	e.counter("triad_cc_forwarded_total", "Routed requests sent on towards their key.", st.Forwarded)
	e.counter("triad_cc_delivered_total", "Routed requests that reached this node, responsible for their key.", st.Delivered)
	e.counter("triad_cc_queue_drops_total", "Routed requests dropped: the forwarding queue was full.", st.Dropped)
	e.counter("triad_cc_marked_total", "Routed requests this node's queue marked.", st.Marked)
	e.gauge("triad_cc_window_requests", "The source's window: requests it may have in flight.", st.Window)
	e.gauge("triad_cc_outstanding_requests", "The source's requests in flight.", float64(st.Outstanding))
	e.gauge("triad_cc_queue_requests", "Routed requests waiting in the forwarding queue.", float64(st.Queue))
}

// maintCounters maps the counters of a maintenance status to metrics:
// a name and help, and whether it is a gauge (what waits now).
var maintCounters = map[string]struct {
	name, help string
	gauge      bool
}{
	"rounds":                 {"triad_maint_rounds_total", "Maintenance rounds (Passing Tone) run by this node's vnodes.", false},
	"syncs":                  {"triad_maint_syncs_total", "Synchronizations with a neighbour.", false},
	"syncs_unchanged":        {"triad_maint_syncs_unchanged_total", "Synchronizations that found both trees equal.", false},
	"tree_nodes_compared":    {"triad_maint_tree_nodes_compared_total", "Merkle tree nodes compared with neighbours.", false},
	"keys_compared":          {"triad_maint_keys_compared_total", "Keys compared with neighbours.", false},
	"objects_repaired":       {"triad_maint_objects_repaired_total", "Objects fetched because this node's replica range lacked them.", false},
	"bytes_repaired":         {"triad_maint_repaired_bytes_total", "Bytes of the objects repaired.", false},
	"objects_handed_over":    {"triad_maint_objects_handed_over_total", "Objects handed to the nodes now responsible for them.", false},
	"bytes_handed_over":      {"triad_maint_handed_over_bytes_total", "Bytes handed over.", false},
	"expired_not_repaired":   {"triad_maint_expired_skipped_total", "Missing objects not repaired because they had expired.", false},
	"fragments_rebuilt":      {"triad_maint_fragments_rebuilt_total", "Erasure-coded fragments rebuilt.", false},
	"fragments_not_rebuilt":  {"triad_maint_fragments_not_rebuilt_total", "Fragments that could not be rebuilt.", false},
	"failed":                 {"triad_maint_failed_total", "Fetches or hand-overs that failed.", false},
	"sweeps":                 {"triad_maint_sweeps_total", "Sweeps for objects outside this node's range.", false},
	"stretches":              {"triad_maint_stretches_total", "Rounds that stretched to a farther neighbour.", false},
	"expiries_extended":      {"triad_maint_expiries_extended_total", "Copies given the later expiry a neighbour listed for them.", false},
	"audits_sent":            {"triad_maint_audits_sent_total", "Challenges sent to replica partners to prove they hold an object's bytes.", false},
	"audits_failed":          {"triad_maint_audits_failed_total", "Audits failed: a wrong proof, a key still lacked a recheck period on, no answer.", false},
	"suspects_marked":        {"triad_maint_suspects_marked_total", "Times a replica partner was made a suspect (its ranges repaired around it).", false},
	"suspects":               {"triad_maint_suspects", "Replica partners suspect now.", true},
	"queued_fetches":         {"triad_maint_repair_queue_objects", "Objects found missing and not yet fetched.", true},
	"queued_fetch_bytes":     {"triad_maint_repair_queue_bytes", "Bytes of the objects waiting to be fetched, as far as known.", true},
	"queued_hand_overs":      {"triad_maint_hand_over_queue_objects", "Objects waiting to be handed over.", true},
	"queued_hand_over_bytes": {"triad_maint_hand_over_queue_bytes", "Bytes waiting to be handed over.", true},
}

func emitMaint(e emitter, st *wire.MaintStatus) {
	paused := 0.0
	if st.Paused {
		paused = 1
	}
	e.gauge("triad_maint_paused", "1 while an operator has paused maintenance.", paused)
	for _, c := range st.Counters {
		m, ok := maintCounters[c.Name]
		if !ok {
			continue
		}
		if m.gauge {
			e.gauge(m.name, m.help, float64(c.Value))
		} else {
			e.counter(m.name, m.help, c.Value)
		}
	}
}

// ExpiryLabels name the buckets of store.Stats.ByExpiry.
var ExpiryLabels = [len(store.ExpiryHorizons) + 1]string{"1h", "1d", "7d", "30d", "90d", "365d", "later"}

func emitStore(ch chan<- prometheus.Metric, st store.Stats) {
	e := emitter{ch}
	e.gauge("triad_store_objects", "Objects in the storage engine's index.", float64(st.Objects))
	e.gauge("triad_store_bytes", "Bytes of the storage engine's segment files.", float64(st.Usage))
	e.gauge("triad_store_capacity_bytes", "The storage engine's capacity (0: the disk's).", float64(st.Capacity))
	e.gauge("triad_store_segments", "Segment files.", float64(st.Segments))
	for i, b := range st.ByExpiry {
		e.gauge("triad_store_bytes_by_expiry", "Bytes of the storage engine whose expiry window ends within a horizon (and not within the one before).", float64(b), "expires_within", ExpiryLabels[i])
		e.gauge("triad_store_objects_by_expiry", "Objects of the storage engine whose expiry window ends within a horizon (and not within the one before).", float64(st.ObjectsByExpiry[i]), "expires_within", ExpiryLabels[i])
	}
	e.counter("triad_store_reclaimed_windows_total", "Expiry windows whose segments were unlinked to make room, their objects expired.", uint64(st.Reclaimed))
	e.counter("triad_store_clock_steps_total", "Forward steps of the wall clock past the monotonic one: expiry and reclamation went on at the monotonic time, not the stepped one.", uint64(st.ClockSteps))
	e.counter("triad_store_reclaimed_bytes_total", "Bytes of the segments unlinked to make room.", uint64(st.ReclaimedBytes))
	e.counter("triad_store_quarantined_objects_total", "Damaged objects found by reads and set aside.", uint64(st.Quarantined))
	e.counter("triad_store_syncs_total", "File syncs of the storage engine's group commit: an fdatasync per segment written since the last commit, and one of the folder after files were added.", uint64(st.Syncs))
}

func emitDriver(ch chan<- prometheus.Metric, st *tcp.Stats) {
	e := emitter{ch}
	e.counter("triad_net_frames_received_total", "Frames read from peers and clients.", st.FramesIn.Load())
	e.counter("triad_net_frames_sent_total", "Frames written.", st.FramesOut.Load())
	e.counter("triad_net_frames_inline_total", "Frames of those written that the event loop wrote itself to an idle connection, with no hand-off to its writer.", st.InlineFrames.Load())
	e.counter("triad_net_bad_frames_total", "Frames that did not decode.", st.BadFrames.Load())
	e.counter("triad_net_queue_drops_total", "Frames dropped: a connection's send queue was full, in frames or bytes, or all connections' queued bytes were.", st.QueueDrops.Load())
	e.counter("triad_net_stalled_frames_total", "Frames whose body did not arrive within the frame timeout of their header; the connection was closed.", st.StalledFrames.Load())
	e.counter("triad_net_read_pauses_total", "Times an accepted connection was not read while its unsent replies passed half their limit.", st.ReadPauses.Load())
	e.counter("triad_net_dial_failures_total", "Connections to peers that could not be made.", st.DialFailures.Load())
	e.counter("triad_net_connections_accepted_total", "Connections accepted.", st.ConnsAccepted.Load())
	e.counter("triad_net_connections_refused_total", "Connections closed on arrival: the connection limit, in all or from one address, was reached.", st.Refused.Load())
	e.counter("triad_net_forged_frames_total", "Frames dropped because they did not match the connection they came on.", st.Forged.Load())
	e.counter("triad_net_tls_refused_total", "Connections closed because their TLS handshake failed: no certificate, another CA's, expired, revoked, or not the dialled node's.", st.TLSRefused.Load())
	e.counter("triad_net_unproven_connections_total", "Accepted connections closed because they never proved the address they claimed.", st.Unproven.Load())
}
