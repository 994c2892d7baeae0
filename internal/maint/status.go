package maint

import (
	"triad/internal/wire"
)

// Stats count what maintenance did; drivers export them.
type Stats struct {
	Rounds        uint64 // rounds finished
	Syncs         uint64 // neighbour synchronizations finished
	NodesCompared uint64 // tree nodes compared with a neighbour's
	KeysCompared  uint64 // keys listed by a neighbour's differing leaves
	Repaired      uint64 // objects fetched and stored
	BytesRepaired uint64
	Expired       uint64 // objects past their expiry when their turn came (not fetched or handed over) or when fetched (not stored)
	Extended      uint64 // copies of ours given the later expiry a neighbour listed for them
	Rebuilt       uint64 // fragments rebuilt from m others and stored
	Fragments     uint64 // missing fragments not rebuilt (no rebuilder, or too few holders answered)
	Failed        uint64 // queries, fetches and hand-overs that failed
	Unchanged     uint64 // synchronizations that stopped at the root: nothing changed since the last clean one

	// Audits (audit.go).
	Audits       uint64 // challenges sent to replica partners
	AuditsFailed uint64 // wrong proofs, keys still lacked a recheck period on, no answers
	Suspects     uint64 // times a partner was marked a suspect

	// Global maintenance.
	Sweeps          uint64 // sweeps finished
	Stretches       uint64 // stretches of keys placed with their successor
	HandedOver      uint64 // objects given to the successor that lacked them
	BytesHandedOver uint64
}

// Status is the node's maintenance status, as `triad maint status` shows it.
func (m *Maint) Status() *wire.MaintStatus {
	s := m.Stats
	out := &wire.MaintStatus{Paused: m.paused, Counters: []wire.Counter{
		{Name: "rounds", Value: s.Rounds}, {Name: "syncs", Value: s.Syncs},
		{Name: "tree_nodes_compared", Value: s.NodesCompared}, {Name: "keys_compared", Value: s.KeysCompared},
		{Name: "objects_repaired", Value: s.Repaired}, {Name: "bytes_repaired", Value: s.BytesRepaired},
		{Name: "expired_not_repaired", Value: s.Expired}, {Name: "expiries_extended", Value: s.Extended}, {Name: "fragments_rebuilt", Value: s.Rebuilt}, {Name: "fragments_not_rebuilt", Value: s.Fragments},
		{Name: "failed", Value: s.Failed}, {Name: "syncs_unchanged", Value: s.Unchanged}, {Name: "sweeps", Value: s.Sweeps}, {Name: "stretches", Value: s.Stretches},
		{Name: "objects_handed_over", Value: s.HandedOver}, {Name: "bytes_handed_over", Value: s.BytesHandedOver},
		{Name: "audits_sent", Value: s.Audits}, {Name: "audits_failed", Value: s.AuditsFailed}, {Name: "suspects_marked", Value: s.Suspects},
		{Name: "suspects", Value: m.suspectsNow(m.now)},
	}}
	// What waits now: keys found missing and not yet fetched, and keys a
	// sweep has yet to hand over, with their sizes as far as known.
	var fetchKeys, fetchBytes, pushKeys, pushBytes uint64
	for _, v := range m.chord.Vnodes() {
		st := m.state[v]
		if st == nil {
			continue
		}
		mv := wire.MaintVnode{Self: v.Self(), Succ: st.succ, Pred: st.pred, Running: st.round != nil}
		if !st.lastRound.IsZero() {
			mv.LastRound = st.lastRound.UnixNano()
		}
		if st.round != nil {
			mv.Queued, mv.QueuedSize = uint64(st.round.fetch.len()), st.round.fetch.bytes
			fetchKeys += mv.Queued
			fetchBytes += mv.QueuedSize
		}
		if st.sweep != nil {
			pushKeys += uint64(st.sweep.push.len())
			pushBytes += st.sweep.push.bytes
		}
		out.Vnodes = append(out.Vnodes, mv)
	}
	out.Counters = append(out.Counters,
		wire.Counter{Name: "queued_fetches", Value: fetchKeys}, wire.Counter{Name: "queued_fetch_bytes", Value: fetchBytes},
		wire.Counter{Name: "queued_hand_overs", Value: pushKeys}, wire.Counter{Name: "queued_hand_over_bytes", Value: pushBytes})
	return out
}
