package tapestry_test

import (
	"errors"
	"testing"
	"time"

	"triad/internal/deploy"
	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/sim"
	"triad/internal/tapestry"
	"triad/internal/wire"
)

// mesh is a simulated Tapestry of hosts that run it alone.
type mesh struct {
	t     *testing.T
	s     *sim.Sim
	cfg   tapestry.Config
	hosts []*sim.Host
}

func newMesh(t *testing.T, seed uint64, n int, cfg tapestry.Config) *mesh {
	t.Helper()
	m := &mesh{t: t, s: sim.New(sim.Config{Seed: seed, DecodeMessages: true}, sim.NewTopology(n, seed)), cfg: cfg}
	for i := 0; i < n; i++ {
		m.add()
		m.s.RunFor(2 * time.Second)
	}
	m.s.RunFor(30 * time.Second)
	return m
}

func (m *mesh) options() deploy.Options {
	o := deploy.DefaultOptions()
	o.NoRing, o.Blocks = true, nil
	c := m.cfg
	o.Tapestry = &c
	return o
}

// add boots one more host, joining through the first.
func (m *mesh) add() *sim.Host {
	m.t.Helper()
	boot := func() node.Addr {
		if len(m.hosts) == 0 {
			return ""
		}
		return m.hosts[0].Addr
	}
	h, err := m.s.AddHost(deploy.Factory(m.options(), boot))
	if err != nil {
		m.t.Fatal(err)
	}
	m.hosts = append(m.hosts, h)
	return h
}

func tap(h *sim.Host) *tapestry.Node { return deploy.Of(h).Tap }

func (m *mesh) live() (map[string]wire.NodeRef, []id.ID) {
	refs := map[string]wire.NodeRef{}
	var ids []id.ID
	for _, h := range m.hosts {
		if h.Up() {
			r := tap(h).Self()
			refs[r.Addr] = r
			ids = append(ids, r.ID)
		}
	}
	return refs, ids
}

// check runs the invariant checker over every live node.
func (m *mesh) check() {
	m.t.Helper()
	live, _ := m.live()
	n := 0
	for _, h := range m.hosts {
		if h.Up() {
			for _, v := range tapestry.Check(tap(h), live, 3) {
				if n++; n <= 10 {
					m.t.Error(v)
				}
			}
		}
	}
	if n > 10 {
		m.t.Errorf("... %d violations in all", n)
	}
}

// TestJoinsBuildConsistentTables: 64 nodes that join one after another
// end with tables in which an entry is empty only if no node has its
// prefix, and every route to a node ends at the oracle's root.
func TestJoinsBuildConsistentTables(t *testing.T) {
	cfg := tapestry.DefaultConfig()
	m := newMesh(t, 1, 64, cfg)
	for _, h := range m.hosts {
		if !tap(h).Joined() {
			t.Fatalf("%s never joined", h.Addr)
		}
	}
	m.check()
	_, ids := m.live()
	r := m.s.Rand()
	wrong, done := 0, 0
	for i := 0; i < 200; i++ {
		key := id.Random(r, id.Bytes)
		from := m.hosts[r.IntN(len(m.hosts))]
		want := tapestry.Root(ids, key, 4)
		m.s.Do(from, func(env node.Env) {
			tap(from).RouteToNode(env, key, tapestry.AppDOLR, false, nil, func(env node.Env, o tapestry.Outcome) {
				done++
				if o.Err != nil || o.Status != wire.TapDelivered || o.Node.ID != want {
					wrong++
					t.Logf("route to %s from %s: %+v, want root %s", key.Short(), from.Addr, o, want.Short())
				}
			})
		})
	}
	m.s.RunFor(20 * time.Second)
	if done != 200 || wrong != 0 {
		t.Errorf("%d of 200 routes ended, %d at the wrong root", done, wrong)
	}
	var forwarded, links uint64
	for _, h := range m.hosts {
		forwarded += tap(h).Stats.Forwarded
		links += tap(h).Stats.LinksAdded
	}
	t.Logf("%d hops forwarded, %d links added, %d messages in all", forwarded, links, m.s.Totals().Messages)
	if forwarded == 0 || links < 64*15 {
		t.Errorf("%d hops forwarded and %d links added: the mesh did not form", forwarded, links)
	}
}

// TestPublishAndLocate: objects published at one server are located from
// every node, at that server.
func TestPublishAndLocate(t *testing.T) {
	m := newMesh(t, 2, 48, tapestry.DefaultConfig())
	server := m.hosts[5]
	r := m.s.Rand()
	var keys []id.ID
	for i := 0; i < 20; i++ {
		k := id.Random(r, id.Bytes)
		keys = append(keys, k)
		m.s.Do(server, func(env node.Env) { tap(server).Publish(env, k, tapestry.AppDOLR, time.Time{}) })
	}
	m.s.RunFor(10 * time.Second)
	found, done := 0, 0
	for _, h := range m.hosts {
		for _, k := range keys {
			m.s.Do(h, func(env node.Env) {
				tap(h).RouteToObject(env, k, tapestry.AppDOLR, nil, func(env node.Env, o tapestry.Outcome) {
					done++
					if o.Status == wire.TapDelivered && o.Node.Addr == server.Addr {
						found++
					}
				})
			})
		}
	}
	m.s.RunFor(20 * time.Second)
	if want := len(m.hosts) * len(keys); done != want || found != want {
		t.Errorf("%d of %d locates ended, %d found the server", done, want, found)
	}
}

// TestClientAppZeroIsLocation: a client's publish or locate that names no
// application is plain location, not an unknown application.
func TestClientAppZeroIsLocation(t *testing.T) {
	m := newMesh(t, 3, 2, tapestry.DefaultConfig())
	n := tap(m.hosts[0])
	k := id.Random(m.s.Rand(), id.Bytes)
	if err := n.Validate(&wire.TapLocate{Key: k}); err != nil {
		t.Errorf("a locate with no application: %v", err)
	}
	if err := n.Validate(&wire.TapPublish{Data: []byte("x")}); err != nil {
		t.Errorf("a publish with no application: %v", err)
	}
	if err := n.Validate(&wire.TapLocate{Key: k, App: 9}); err == nil {
		t.Error("a locate for an application the node does not run was accepted")
	}
}

// TestForgedRefsAreRefused: on a host whose ring checks that IDs are
// derived from addresses, a node named inside a Tapestry message (a
// leave's replacement, a multicast's joiner, a pointer's server, a list
// of nodes) is held to the same check as a sender, so a peer cannot seed
// others' tables with IDs of its choosing.
func TestForgedRefsAreRefused(t *testing.T) {
	m := newMesh(t, 4, 2, tapestry.DefaultConfig())
	n := tap(m.hosts[0])
	honest := id.Key([]byte("h9"))
	n.Host().CheckSenders(func(r wire.NodeRef) error {
		if r.ID != id.Key([]byte(r.Addr)) {
			return errors.New("not derived")
		}
		return nil
	})
	good := wire.NodeRef{ID: honest, Addr: "h9"}
	forged := wire.NodeRef{ID: id.Random(m.s.Rand(), id.Bytes), Addr: "h9"}
	k := id.Random(m.s.Rand(), id.Bytes)
	for _, c := range []struct {
		name string
		of   func(wire.NodeRef) wire.Msg
	}{
		{"leave replacement", func(r wire.NodeRef) wire.Msg { return &wire.TapLeave{Replacements: []wire.NodeRef{r}} }},
		{"multicast joiner", func(r wire.NodeRef) wire.Msg { return &wire.TapMulticast{Joiner: r, Prefix: 1, Level: 1} }},
		{"node list", func(r wire.NodeRef) wire.Msg { return &wire.TapNodes{Nodes: []wire.NodeRef{r}} }},
		{"pointer server", func(r wire.NodeRef) wire.Msg {
			return &wire.TapPointers{Pointers: []wire.TapPointer{{Key: k, App: tapestry.AppDOLR, Server: r, TTLMillis: 1000}}}
		}},
	} {
		if err := n.Validate(c.of(good)); err != nil {
			t.Errorf("%s naming a derived ID: %v", c.name, err)
		}
		if err := n.Validate(c.of(forged)); err == nil {
			t.Errorf("%s naming an ID not derived from its address was accepted", c.name)
		}
	}
}
