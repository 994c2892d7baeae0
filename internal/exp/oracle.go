package exp

import (
	"slices"
	"sort"

	"triad/internal/deploy"
	"triad/internal/id"
	"triad/internal/ring"
	"triad/internal/sim"
	"triad/internal/wire"
)

// oracle is the true ring: the IDs of every vnode on a running host.
type oracle struct{ ids []id.ID }

func newOracle(s *sim.Sim) oracle {
	var o oracle
	for _, h := range s.Hosts() {
		if !h.Up() {
			continue
		}
		for _, v := range chordOf(h).Vnodes() {
			o.ids = append(o.ids, v.Self().ID)
		}
	}
	slices.SortFunc(o.ids, func(a, b id.ID) int { return a.Cmp(b) })
	return o
}

// successor is the first vnode at or after key, clockwise.
func (o oracle) successor(key id.ID) id.ID {
	i := sort.Search(len(o.ids), func(i int) bool { return o.ids[i].Cmp(key) >= 0 })
	return o.ids[i%len(o.ids)]
}

// views is what every running vnode believes, for ring.Check.
func views(s *sim.Sim) []wire.VnodeInfo {
	var out []wire.VnodeInfo
	for _, h := range s.Hosts() {
		if h.Up() {
			out = append(out, chordOf(h).RingInfo().Vnodes...)
		}
	}
	return out
}

// chordOf is the ring protocol of a running host; nil when the host is
// down.
func chordOf(h *sim.Host) *ring.Chord {
	if n := deploy.Of(h); n != nil {
		return n.Ring
	}
	return nil
}
