package ring_test

import (
	"slices"
	"testing"
	"time"

	"triad/internal/deploy"
	"triad/internal/host"
	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/ring"
	"triad/internal/sim"
	"triad/internal/wire"
)

// view is a ring.Membership over a sorted list, as an experiment keeps it.
type view struct{ live []wire.NodeRef }

func (v *view) at(x id.ID) int {
	i, _ := slices.BinarySearchFunc(v.live, x, func(n wire.NodeRef, x id.ID) int { return n.ID.Cmp(x) })
	return i
}

func (v *view) Succs(x id.ID, n int) []wire.NodeRef {
	var out []wire.NodeRef
	for i, j := v.at(x), 0; j < min(n, len(v.live)); j++ {
		out = append(out, v.live[(i+j)%len(v.live)])
	}
	return out
}

func (v *view) Preds(x id.ID, n int) []wire.NodeRef {
	var out []wire.NodeRef
	for i, j := v.at(x), 1; j <= min(n, len(v.live)); j++ {
		out = append(out, v.live[((i-j)%len(v.live)+len(v.live))%len(v.live)])
	}
	return out
}

// TestMembershipViewReplacesTheProtocol: with a Membership view, hosts
// send no ring messages, take their lists from the view, answer lookups
// from it, and tell watchers when Refresh changes a neighbour.
func TestMembershipViewReplacesTheProtocol(t *testing.T) {
	v := &view{}
	s := sim.New(sim.Config{Seed: 3}, sim.NewTopology(8, 3))
	cfg := ring.DefaultConfig()
	cfg.Membership = v
	cfg.Succs, cfg.Preds = 3, 3
	opts := deploy.Options{Vnodes: 1, Host: host.DefaultConfig(), Ring: cfg}
	var hosts []*sim.Host
	for range 8 {
		h, err := s.AddHost(deploy.Factory(opts, nil))
		if err != nil {
			t.Fatal(err)
		}
		hosts = append(hosts, h)
		v.live = append(v.live, chord(h).Vnodes()[0].Self())
	}
	slices.SortFunc(v.live, func(a, b wire.NodeRef) int { return a.ID.Cmp(b.ID) })
	changed := make(map[*sim.Host]int)
	for _, h := range hosts {
		s.DoAt(h, 0, func(env node.Env) {
			chord(h).OnNeighbours(1, func(node.Env) { changed[h]++ })
		})
	}
	s.RunFor(time.Minute)
	if n := s.Totals().Messages; n != 0 {
		t.Fatalf("%d messages sent: the ring protocol ran", n)
	}
	var views []wire.VnodeInfo
	for _, h := range hosts {
		views = append(views, chord(h).RingInfo().Vnodes...)
	}
	if bad := ring.Check(views, ring.Want{Succs: 3, Preds: 3}); len(bad) > 0 {
		t.Fatalf("lists not the view's: %v", bad)
	}
	// A lookup is answered from the view, at once.
	key := v.live[4].ID.AddPow2(0)
	var got ring.Result
	s.DoAt(hosts[0], s.Now(), func(env node.Env) {
		chord(hosts[0]).Lookup(env, key, ring.LookupOptions{}, func(_ node.Env, r ring.Result) { got = r })
	})
	s.RunFor(time.Millisecond)
	if got.Err != nil || len(got.Succs) == 0 || got.Succs[0] != v.live[5] || got.Pred != v.live[4] {
		t.Fatalf("lookup of %s: %+v, want successor %s", key.Short(), got, v.live[5].ID.Short())
	}
	// Drop vnode 3 from the view: its neighbours learn of it at Refresh,
	// and only a changed successor or predecessor tells the watchers.
	gone := v.live[3]
	v.live = slices.Delete(v.live, 3, 4)
	clear(changed)
	for _, h := range hosts {
		if h.Addr != gone.Addr {
			s.DoAt(h, s.Now(), func(env node.Env) { chord(h).Refresh(env) })
		}
	}
	s.RunFor(time.Millisecond)
	pred, succ := s.HostAt(v.live[2].Addr), s.HostAt(v.live[3].Addr)
	if changed[pred] != 1 || changed[succ] != 1 || len(changed) != 2 {
		t.Fatalf("watchers told %v, want only the gone vnode's two neighbours once", changed)
	}
	if chord(pred).Vnodes()[0].Successor() != v.live[3] {
		t.Fatalf("predecessor's successor is %v", chord(pred).Vnodes()[0].Successor())
	}
}
