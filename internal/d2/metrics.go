package d2

import "triad/internal/node"

// Metrics are the node's figures for the metrics page (triad_d2_*): its
// state now, then its counters.
func (n *Node) Metrics() []node.Metric {
	joined := 0.0
	if n.joined {
		joined = 1
	}
	out := []node.Metric{
		{Name: "joined", Help: "1 once this node holds its position on D2's ring.", Gauge: true, Value: joined},
		{Name: "primary_blocks", Help: "Blocks of the key range this node is the primary of (its load, §6).", Gauge: true, Value: float64(n.Load())},
		{Name: "held", Help: "Blocks and pointers this node holds (primary and replica).", Gauge: true, Value: float64(n.Held())},
		{Name: "pointers", Help: "Pointers held for blocks not yet fetched (§6).", Gauge: true, Value: float64(n.Pointers())},
		{Name: "successors", Help: "Successors known.", Gauge: true, Value: float64(len(n.succs))},
		{Name: "links", Help: "Long links known.", Gauge: true, Value: float64(len(n.links))},
		{Name: "cache_entries", Help: "Lookup cache entries (§5).", Gauge: true, Value: float64(n.CacheLen())},
		{Name: "nodes_estimate", Help: "This node's estimate of the ring's node count.", Gauge: true, Value: float64(n.Estimate())},
		{Name: "distrusted_peers", Help: "Replica partners this node distrusts now: found lacking blocks they had acknowledged (possession audits).", Gauge: true, Value: float64(len(n.Distrusted()))},
	}
	st := n.Stats
	for _, c := range []struct {
		name, help string
		v          uint64
	}{
		{"lookups", "Lookups started here.", st.Lookups},
		{"lookup_hops", "Steps of those lookups.", st.LookupHops},
		{"lookup_failures", "Lookups that failed.", st.LookupFailures},
		{"lookup_messages", "Lookup steps sent and answered here.", st.LookupMsgs},
		{"cache_hits", "Client requests sent straight to a cached owner.", st.CacheHits},
		{"cache_misses", "Client requests that needed a lookup.", st.CacheMisses},
		{"cache_wrong", "Cached owners that said the key was not theirs.", st.CacheWrong},
		{"puts", "Client puts served as the gateway.", st.Puts},
		{"gets", "Client gets served as the gateway.", st.Gets},
		{"deletes", "Client deletes served as the gateway.", st.Deletes},
		{"latests", "Client Latest requests served as the gateway.", st.Latests},
		{"bytes_written", "Block bytes stored here.", st.BytesWritten},
		{"mismatches", "Blocks whose content hash did not match their pointer: skipped.", st.Mismatches},
		{"conflicts", "Conditional puts whose condition did not hold: nothing stored.", st.Conflicts},
		{"moves", "Load-balancing moves this node made.", st.Moves},
		{"probes", "Load-balancing probes.", st.Probes},
		{"migrated_bytes", "Block bytes fetched for pointers or pushed to replicas.", st.MigratedBytes},
		{"dropped", "Blocks and pointers dropped: no longer this node's to keep.", st.Dropped},
		{"bad_requests", "Messages refused as malformed.", st.BadRequests},
		{"unauthorized", "Writes refused: no valid signature of the volume's writer (a client's, or a copy another node gave).", st.Unauthorized},
		{"copies_unverified", "Copies an owner claimed for a put that its named holders did not confirm: a node acknowledging what it does not keep.", st.CopiesUnverified},
		{"copies_confirmed", "Relayed puts whose replicas told the gateway of their copies themselves, so it asked no holder.", st.CopiesConfirmed},
		{"gateway_copies", "Copies a gateway placed itself because the owner's claimed copies were not there.", st.GatewayCopies},
		{"audits", "Possession audits sent to replica partners.", st.Audits},
		{"audits_failed", "Replica partners found lacking a block they had acknowledged: distrusted.", st.AuditsFailed},
		{"quota_refused", "Volume-name claims refused: past the client's quota at this node.", st.QuotaRefused},
		{"refused_positions", "Positions claimed for another sender, refused.", st.RefusedPositions},
		{"busy", "Requests refused: too many in flight.", st.Busy},
	} {
		out = append(out, node.Metric{Name: c.name, Help: "D2: " + c.help, Value: float64(c.v)})
	}
	return out
}
