package tapestry_test

import (
	"testing"
	"time"

	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/sim"
	"triad/internal/tapestry"
	"triad/internal/wire"
)

// appMulticast is the application id of the test's multicast.
const appMulticast = 7

// bayeux is a Bayeux-style multicast on Tapestry's upcalls (§IV-B): a
// message carries the IDs of the members it is for; at every hop Forward
// splits them by the next hop each would take and sends one copy per next
// hop, so that members behind one link share the copy; a member reached
// gets Deliver. One bayeux serves every node of the test.
type bayeux struct {
	t        *testing.T
	got      map[node.Addr]int // deliveries per node
	forwards int               // copies sent on
}

func encodeMembers(l []id.ID) []byte {
	var b []byte
	for _, x := range l {
		b = x.AppendTo(b)
	}
	return b
}

func decodeMembers(t *testing.T, b []byte) []id.ID {
	var out []id.ID
	for ; len(b) >= id.Bytes; b = b[id.Bytes:] {
		x, err := id.FromBytes(b[:id.Bytes])
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, x)
	}
	return out
}

func (a *bayeux) Deliver(_ node.Env, n *tapestry.Node, _ *wire.TapRoute) { a.got[n.Self().Addr]++ }

func (a *bayeux) Forward(env node.Env, n *tapestry.Node, m *wire.TapRoute, _ wire.NodeRef, _ bool) {
	type branch struct {
		next    wire.NodeRef
		level   int
		members []id.ID
	}
	var branches []*branch
	self := false
	for _, x := range decodeMembers(a.t, m.Payload) {
		next, level, root := n.NextHop(x, 0)
		if root {
			self = self || x == n.Self().ID
			if x != n.Self().ID {
				a.t.Errorf("%s is the root of member %s", n.Self(), x.Short())
			}
			continue
		}
		var b *branch
		for _, c := range branches {
			if c.next.Addr == next.Addr {
				b = c
			}
		}
		if b == nil {
			b = &branch{next: next, level: level}
			branches = append(branches, b)
		}
		b.members = append(b.members, x)
	}
	if self {
		n.Deliver(env, m)
	}
	for _, b := range branches {
		c := *m
		c.Key, c.Payload = b.members[0], encodeMembers(b.members)
		a.forwards++
		n.Forward(env, &c, b.next, b.level)
	}
}

// TestBayeuxMulticastOnUpcalls: one message sent to 50 members of a
// 64-node mesh through an application's Forward and Deliver upcalls
// reaches each member exactly once and no other node, in fewer copies
// than one route per member would take hops.
func TestBayeuxMulticastOnUpcalls(t *testing.T) {
	m := newMesh(t, 12, 64, tapestry.DefaultConfig())
	app := &bayeux{t: t, got: map[node.Addr]int{}}
	for _, h := range m.hosts {
		if err := tap(h).RegisterApp(appMulticast, app); err != nil {
			t.Fatal(err)
		}
	}
	r := m.s.Rand()
	perm := r.Perm(len(m.hosts))
	var members []id.ID
	member := map[node.Addr]bool{}
	for _, i := range perm[:50] {
		members = append(members, tap(m.hosts[i]).Self().ID)
		member[m.hosts[i].Addr] = true
	}
	sender := m.hosts[perm[50]] // not a member
	m.s.Do(sender, func(env node.Env) {
		tap(sender).RouteUpcall(env, members[0], appMulticast, encodeMembers(members), nil)
	})
	m.s.RunFor(10 * time.Second)
	for _, h := range m.hosts {
		want := 0
		if member[h.Addr] {
			want = 1
		}
		if got := app.got[h.Addr]; got != want {
			t.Errorf("%s (member %v) got the message %d times, want %d", h.Addr, member[h.Addr], got, want)
		}
	}
	unicast := unicastHops(m, sender, members)
	t.Logf("%d copies forwarded; one route per member would take %d hops", app.forwards, unicast)
	if app.forwards == 0 || app.forwards >= unicast {
		t.Errorf("%d copies forwarded, want fewer than the %d hops of one route per member", app.forwards, unicast)
	}
}

// unicastHops is the hops one route per member from sender takes in all.
func unicastHops(m *mesh, sender *sim.Host, members []id.ID) int {
	hops := 0
	for _, x := range members {
		m.s.Do(sender, func(env node.Env) {
			tap(sender).RouteToNode(env, x, tapestry.AppDOLR, true, nil, func(_ node.Env, o tapestry.Outcome) { hops += o.Hops })
		})
	}
	m.s.RunFor(10 * time.Second)
	return hops
}
