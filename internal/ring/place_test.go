package ring_test

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"triad/internal/id"
	"triad/internal/ring"
	"triad/internal/sim"
	"triad/internal/wire"
)

// heldShares samples the ring at keys evenly spaced over the first 64 bits
// and returns, per host address, the share of keys it holds as one of
// each key's first replicas distinct hosts (clockwise successors): the
// bytes each host stores, counted independently of Place's arithmetic.
func heldShares(vnodes []wire.NodeRef, replicas int) map[string]float64 {
	const keys = 1 << 14
	pts := slices.Clone(vnodes)
	slices.SortFunc(pts, func(a, b wire.NodeRef) int { return a.ID.Cmp(b.ID) })
	top := func(x id.ID) uint64 { return binary.BigEndian.Uint64(x.Bytes()) }
	shares := map[string]float64{}
	for k := range uint64(keys) {
		key := k*(1<<64/keys) + 12345
		i, _ := slices.BinarySearchFunc(pts, key, func(p wire.NodeRef, key uint64) int { return cmp.Compare(top(p.ID), key) })
		var holders []string
		for j := 0; len(holders) < replicas && j < len(pts); j++ {
			if a := pts[(i+j)%len(pts)].Addr; !slices.Contains(holders, a) {
				holders = append(holders, a)
			}
		}
		for _, a := range holders {
			shares[a] += 1.0 / keys
		}
	}
	return shares
}

// fullest is the largest host's share over the mean share.
func fullest(shares map[string]float64) float64 {
	most, sum := 0.0, 0.0
	for _, s := range shares {
		most, sum = max(most, s), sum+s
	}
	return most / (sum / float64(len(shares)))
}

// buildRing has hosts join one after another, each placed by place given
// the vnodes of those before it, and returns every vnode.
func buildRing(t *testing.T, addrs []string, place func(addr string, others []wire.NodeRef) []id.ID) []wire.NodeRef {
	t.Helper()
	var all []wire.NodeRef
	for _, a := range addrs {
		for _, x := range place(a, all) {
			all = append(all, wire.NodeRef{ID: x, Addr: a})
		}
	}
	return all
}

// Three hosts of 8 vnodes, two replicas (the news deployment): placed one
// after another by Place, the fullest host holds within 3% of the mean
// share on every one of 20 random rings, where the first 8 derived
// positions give the fullest 1.1 times the mean or more on most of them.
func TestPlaceEvensOutShares(t *testing.T) {
	const vnodes, replicas = 8, 2
	r := rand.New(rand.NewPCG(31, 8))
	worstPlaced, firstOver := 0.0, 0
	for trial := range 20 {
		base := 20000 + r.IntN(40000)
		addrs := []string{fmt.Sprintf("127.0.0.1:%d", base), fmt.Sprintf("127.0.0.1:%d", base+1), fmt.Sprintf("127.0.0.1:%d", base+2)}
		placed := buildRing(t, addrs, func(a string, others []wire.NodeRef) []id.ID {
			ids, err := ring.Place(a, vnodes, ring.MaxVnodes, replicas, others)
			if err != nil {
				t.Fatal(err)
			}
			return ids
		})
		first := buildRing(t, addrs, func(a string, _ []wire.NodeRef) []id.ID {
			ids, _ := ring.Place(a, vnodes, vnodes, replicas, nil)
			return ids
		})
		p, f := fullest(heldShares(placed, replicas)), fullest(heldShares(first, replicas))
		worstPlaced = max(worstPlaced, p)
		if f >= 1.1 {
			firstOver++
		}
		t.Logf("ring %d (ports %d-%d): fullest host %.3f of the mean placed, %.3f at the first positions", trial, base, base+2, p, f)
	}
	if worstPlaced > 1.03 {
		t.Errorf("placed: the fullest host held %.3f times the mean share on some ring, want at most 1.03", worstPlaced)
	}
	if firstOver < 10 {
		t.Errorf("only %d of 20 rings at the first positions had a host at 1.1 times the mean or more: the comparison shows nothing", firstOver)
	}
}

// Place takes vnode 0 first and positions the host may use, each once,
// and the same ring gives the same answer; with no more positions than
// vnodes it takes the first ones, as a host did before Place.
func TestPlacePositions(t *testing.T) {
	const addr = "127.0.0.1:4001"
	others := buildRing(t, []string{"127.0.0.1:4002", "127.0.0.1:4003"}, func(a string, o []wire.NodeRef) []id.ID {
		ids, err := ring.Place(a, 8, 16, 2, o)
		if err != nil {
			t.Fatal(err)
		}
		return ids
	})
	ids, err := ring.Place(addr, 8, 16, 2, others)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := ring.Place(addr, 8, 16, 2, others)
	if !slices.Equal(ids, again) {
		t.Errorf("two calls on the same ring: %v and %v", ids, again)
	}
	seen := map[int]bool{}
	for i, x := range ids {
		j, ok := ring.VnodeIndex(wire.NodeRef{ID: x, Addr: addr})
		if !ok || j >= 16 || seen[j] || (i == 0) != (j == 0) {
			t.Fatalf("vnode %d at %s: index %d (derived %v), want a position below 16, each once, vnode 0 first", i, x.Short(), j, ok)
		}
		seen[j] = true
	}
	firstOnly, _ := ring.Place(addr, 3, 3, 2, others)
	if want := []id.ID{ring.VnodeID(addr, 0), ring.VnodeID(addr, 1), ring.VnodeID(addr, 2)}; !slices.Equal(firstOnly, want) {
		t.Errorf("3 vnodes among 3 positions: %v, want the first three", firstOnly)
	}
	for _, bad := range [][2]int{{0, 4}, {5, 4}, {8, ring.MaxVnodes + 1}} {
		if _, err := ring.Place(addr, bad[0], bad[1], 2, nil); err == nil {
			t.Errorf("%d vnodes among %d positions placed", bad[0], bad[1])
		}
	}
}

// A host keeps the positions it chose across restarts; when it may use
// fewer than it holds (a certificate reissued with fewer vnodes), those
// beyond are moved to the lowest positions free, and said once.
func TestLoadDerivedStateKeepsChosenPositions(t *testing.T) {
	const addr = "127.0.0.1:4001"
	r := rand.New(rand.NewPCG(5, 6))
	st := sim.NewStorage(func() time.Time { return time.Unix(0, 0) })
	chosen := []id.ID{ring.VnodeID(addr, 0), ring.VnodeID(addr, 5), ring.VnodeID(addr, 40)}
	if err := ring.SeedIDs(st, chosen); err != nil {
		t.Fatal(err)
	}
	s, moved, err := ring.LoadDerivedState(st, r, addr, 3, ring.MaxVnodes)
	if err != nil || len(moved) != 0 || !slices.Equal(s.IDs, chosen) {
		t.Fatalf("restart: ids %v moved %v err %v; want %v kept", s.IDs, moved, err, chosen)
	}
	s, moved, err = ring.LoadDerivedState(st, r, addr, 3, 8)
	want := []id.ID{ring.VnodeID(addr, 0), ring.VnodeID(addr, 5), ring.VnodeID(addr, 1)}
	if err != nil || !slices.Equal(moved, chosen[2:]) || !slices.Equal(s.IDs, want) {
		t.Fatalf("8 positions: ids %v moved %v err %v; want %v, moved %v", s.IDs, moved, err, want, chosen[2:])
	}
	if s, moved, err = ring.LoadDerivedState(st, r, addr, 3, 8); err != nil || len(moved) != 0 || !slices.Equal(s.IDs, want) {
		t.Fatalf("second load: ids %v moved %v err %v; want %v, none moved", s.IDs, moved, err, want)
	}
	swapped := sim.NewStorage(func() time.Time { return time.Unix(0, 0) })
	if err := ring.SeedIDs(swapped, []id.ID{ring.VnodeID(addr, 3), ring.VnodeID(addr, 0)}); err != nil {
		t.Fatal(err)
	}
	s, _, err = ring.LoadDerivedState(swapped, r, addr, 2, 8)
	if want := []id.ID{ring.VnodeID(addr, 0), ring.VnodeID(addr, 1)}; err != nil || !slices.Equal(s.IDs, want) {
		t.Fatalf("vnode 0 not first: ids %v err %v; want %v", s.IDs, err, want)
	}
}
