package ring

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/wire"
)

// A host's vnodes sit at positions derived from its address (VnodeID), so
// where its keys fall is a draw: with 8 vnodes each on 3 hosts and two
// replicas, the fullest host typically holds 1.19 times its fair share of
// the blocks, and 1 ring in 10 gives one host 1.33 times. Place makes the
// draw a choice: a host that may use more positions than it runs (its
// certificate's vnode count, or MaxVnodes without TLS) takes the ones that
// even out the hosts' shares of the ring it joins. Its peers check each
// position with one hash as before; what the host gains is a choice among
// positions it was granted, never a position of its own making.

// placePasses bounds Place's local search (a pass tries every free
// position in every slot; the search ends at the first pass that improves
// nothing), and placeWork the vnodes its weighings visit in all (each
// weighing visits every vnode of the ring once), so that a host of many
// vnodes joining a large ring stops early rather than search for seconds.
const (
	placePasses = 16
	placeWork   = 50_000_000
)

// Place returns the ring positions a new host at addr takes: vnodes of the
// first positions derived from its address (VnodeID(addr, i), i <
// positions), always vnode 0 (Tapestry and D2 run there), chosen so that
// the hosts' shares of the keys, each key held by its first replicas
// distinct hosts, are as even as the choice allows, given the other hosts'
// vnodes in others (refs of any host but addr; duplicates are ignored).
// A host is an address: nodes that share a machine identity, which
// replicas also keep apart (DistinctHosts), are weighed as separate hosts.
// Alone, a host spreads its own vnodes evenly, so that the hosts joining
// after it have even arcs to split. The result is deterministic: vnode 0
// first, then the others in index order.
func Place(addr node.Addr, vnodes, positions, replicas int, others []wire.NodeRef) ([]id.ID, error) {
	if vnodes < 1 || positions < vnodes || positions > MaxVnodes {
		return nil, fmt.Errorf("ring: %d vnodes among %d positions: want 1 <= vnodes <= positions <= %d", vnodes, positions, MaxVnodes)
	}
	p := newPlacement(addr, positions, max(replicas, 1), others)
	chosen := make([]int, vnodes)
	for i := range chosen {
		chosen[i] = i
	}
	best := p.cost(chosen)
	work := 0
	for range placePasses {
		improved := false
		for slot := 1; slot < vnodes; slot++ { // slot 0 stays vnode 0
			for c := 1; c < positions; c++ {
				if slices.Contains(chosen, c) {
					continue
				}
				if work += len(p.others) + vnodes; work > placeWork {
					break
				}
				old := chosen[slot]
				chosen[slot] = c
				if cost := p.cost(chosen); cost < best {
					best, improved = cost, true
				} else {
					chosen[slot] = old
				}
			}
		}
		if !improved {
			break
		}
	}
	slices.Sort(chosen)
	ids := make([]id.ID, vnodes)
	for i, c := range chosen {
		ids[i] = VnodeID(addr, c)
	}
	return ids, nil
}

// placement is Place's working set: the other hosts' points, the new
// host's candidate points, and the hosts numbered (the new host is 0).
type placement struct {
	replicas int
	hosts    int
	others   []point
	cands    []uint64
	mine     []point // scratch: the chosen candidates, sorted
	points   []point // scratch: others plus mine
	shares   []float64
	holders  []int // scratch: one key's holders
}

// point is a vnode on the ring as the search sees it: the top 64 bits of
// its ID (enough to weigh arcs) and its host's number.
type point struct {
	at   uint64
	host int
}

func newPlacement(addr node.Addr, positions, replicas int, others []wire.NodeRef) *placement {
	p := &placement{replicas: replicas, hosts: 1}
	number := map[node.Addr]int{addr: 0}
	seen := map[id.ID]bool{}
	for _, r := range others {
		if r.Addr == addr || r.ID.Width() != id.Bytes || seen[r.ID] {
			continue
		}
		seen[r.ID] = true
		h, ok := number[r.Addr]
		if !ok {
			h = p.hosts
			number[r.Addr] = h
			p.hosts++
		}
		p.others = append(p.others, point{at: top64(r.ID), host: h})
	}
	slices.SortFunc(p.others, comparePoints)
	for i := range positions {
		p.cands = append(p.cands, top64(VnodeID(addr, i)))
	}
	p.shares = make([]float64, 2*p.hosts)
	p.holders = make([]int, 0, replicas)
	return p
}

func top64(x id.ID) uint64 { return binary.BigEndian.Uint64(x.Bytes()) }

// comparePoints orders points clockwise from 0, a tie by host.
func comparePoints(a, b point) int {
	if c := cmp.Compare(a.at, b.at); c != 0 {
		return c
	}
	return a.host - b.host
}

// cost weighs a choice: the sum of squares of the hosts' shares of the
// keys (each key counted at each of its first replicas distinct hosts),
// then, a hundred times lighter, of their shares as first holder, then, a
// hundred times lighter again, of the arcs between neighbouring vnodes. The
// first term is what evens out the stored bytes; the others break its
// ties (on a ring of fewer hosts than replicas every host holds every key)
// so that the hosts that join later find even arcs.
func (p *placement) cost(chosen []int) float64 {
	mine := p.mine[:0]
	for _, c := range chosen {
		mine = append(mine, point{at: p.cands[c]})
	}
	slices.SortFunc(mine, comparePoints)
	p.mine = mine
	// others is sorted once: merge the few chosen points into it
	pts, o := p.points[:0], p.others
	for _, m := range mine {
		i, _ := slices.BinarySearchFunc(o, m, comparePoints)
		pts = append(append(pts, o[:i]...), m)
		o = o[i:]
	}
	pts = append(pts, o...)
	p.points = pts
	clear(p.shares)
	held, first := p.shares[:p.hosts], p.shares[p.hosts:]
	want := min(p.replicas, p.hosts)
	arcs := 0.0
	for i, pt := range pts {
		prev := pts[(i+len(pts)-1)%len(pts)].at
		arc := float64(pt.at-prev) / math.Exp2(64) // the keys in (prev, pt], mod 2^64
		if len(pts) == 1 {
			arc = 1
		}
		arcs += arc * arc
		first[pt.host] += arc
		holders := p.holders[:0]
		for j := 0; len(holders) < want && j < len(pts); j++ {
			if h := pts[(i+j)%len(pts)].host; !slices.Contains(holders, h) {
				holders = append(holders, h)
			}
		}
		for _, h := range holders {
			held[h] += arc
		}
	}
	return sumSquares(held) + 0.01*sumSquares(first) + 1e-4*arcs
}

func sumSquares(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x * x
	}
	return s
}
