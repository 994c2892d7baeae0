package tapestry_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"triad/internal/deploy"
	"triad/internal/deploy/deploytest"
	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/tapestry"
	"triad/internal/wire"
)

// TestTrace replays the scripts in testdata/trace on hosts running
// Tapestry alone, driven by hand (deploytest: nothing happens unless the
// script delivers a message or moves the clock), one fresh cluster per
// script. The directives are deploytest's (add-host, crash, tick, run,
// deliver...) and the tap-* ones below; a node's Tapestry ID is its
// host's ID (id=PREFIX). Regenerate the expectations with
//
//	go test ./internal/tapestry -run TestTrace -rewrite
//
// and read the diff: a changed trace is a changed protocol.
func TestTrace(t *testing.T) {
	datadriven.Walk(t, "testdata/trace", func(t *testing.T, path string) {
		c := deploytest.New(traceOptions(), 1)
		c.Register(tapDirectives)
		c.RegisterFormat(formatTap)
		datadriven.RunTestAny(t, path, c.Run)
	})
}

// traceOptions are hosts that run Tapestry alone (no ring, no block
// store), with its defaults: base 16, 3 links per entry, beacons every
// 20 s, repair every minute, republish every 10 minutes.
func traceOptions() deploy.Options {
	o := deploy.DefaultOptions()
	o.NoRing, o.Blocks = true, nil
	cfg := tapestry.DefaultConfig()
	o.Tapestry = &cfg
	return o
}

// tapDirectives drive Tapestry: its API at a host (publish, locate,
// route) and views of the mesh (tables, pointers, the invariant check).
var tapDirectives = deploytest.Directives{
	"tap-publish":   {Usage: "tap-publish from=NAME key=PREFIX", Run: doPublish},
	"tap-unpublish": {Usage: "tap-unpublish from=NAME key=PREFIX", Run: doUnpublish},
	"tap-locate":    {Usage: "tap-locate from=NAME key=PREFIX [all]", Run: doLocate},
	"tap-route":     {Usage: "tap-route from=NAME key=PREFIX", Run: doRoute},
	"tap-table":     {Usage: "tap-table NAME", Run: doTable},
	"tap-pointers":  {Usage: "tap-pointers key=PREFIX", Run: doPointers},
	"tap-check":     {Usage: "tap-check", Run: doCheck},
}

// tapHost is the running host a directive names with from=NAME.
func tapHost(c *deploytest.Cluster, t testing.TB, d *datadriven.TestData) *deploytest.Host {
	var from string
	d.ScanArgs(t, "from", &from)
	h := c.Host(from)
	if h == nil || !h.Up() || h.Node.Tap == nil {
		d.Fatalf(t, "%s is unknown, down or runs no Tapestry", from)
	}
	return h
}

// tapKey reads key=PREFIX, an object's key (IDs' width).
func tapKey(c *deploytest.Cluster, t testing.TB, d *datadriven.TestData) id.ID {
	var s string
	d.ScanArgs(t, "key", &s)
	k, err := c.ParseID(s)
	if err != nil {
		d.Fatalf(t, "%v", err)
	}
	return k
}

// outcome prints a route's outcome when it arrives.
func outcome(c *deploytest.Cluster, h *deploytest.Host, what string, k id.ID) tapestry.Done {
	return func(env node.Env, o tapestry.Outcome) {
		if o.Err != nil {
			c.Logf("  %s: %s %s failed: %v\n", h.Name, what, c.ID(k), o.Err)
			return
		}
		s := fmt.Sprintf("  %s: %s %s done: %s at %s, %d hops, path %s", h.Name, what, c.ID(k), tapStatus(o.Status), c.Ref(o.Node), o.Hops, c.Refs(o.Path))
		if !o.Root.IsZero() {
			s += fmt.Sprintf(", root %s, servers %s", c.Ref(o.Root), c.Refs(o.Servers))
		}
		c.Logf("%s\n", s)
	}
}

func doPublish(c *deploytest.Cluster, t testing.TB, d *datadriven.TestData) {
	h, k := tapHost(c, t, d), tapKey(c, t, d)
	err := c.Do(h, fmt.Sprintf("%s: tap-publish %s", h.Name, c.ID(k)), func(env node.Env) {
		h.Node.Tap.Publish(env, k, tapestry.AppDOLR, c.Now().Add(time.Hour))
	})
	if err != nil {
		d.Fatalf(t, "%v", err)
	}
}

func doUnpublish(c *deploytest.Cluster, t testing.TB, d *datadriven.TestData) {
	h, k := tapHost(c, t, d), tapKey(c, t, d)
	if err := c.Do(h, fmt.Sprintf("%s: tap-unpublish %s", h.Name, c.ID(k)), func(env node.Env) { h.Node.Tap.Unpublish(env, k) }); err != nil {
		d.Fatalf(t, "%v", err)
	}
}

// doLocate routes towards an object (RouteToObject: it turns at the first
// pointer met), or with all to its root (LocateAll: every server the root
// knows).
func doLocate(c *deploytest.Cluster, t testing.TB, d *datadriven.TestData) {
	h, k := tapHost(c, t, d), tapKey(c, t, d)
	all := d.HasArg("all")
	what := "tap-locate"
	if all {
		what += " all"
	}
	err := c.Do(h, fmt.Sprintf("%s: %s %s", h.Name, what, c.ID(k)), func(env node.Env) {
		if all {
			h.Node.Tap.LocateAll(env, k, outcome(c, h, what, k))
		} else {
			h.Node.Tap.RouteToObject(env, k, tapestry.AppDOLR, nil, outcome(c, h, what, k))
		}
	})
	if err != nil {
		d.Fatalf(t, "%v", err)
	}
}

// doRoute routes to a key's root (RouteToNode, not exact).
func doRoute(c *deploytest.Cluster, t testing.TB, d *datadriven.TestData) {
	h, k := tapHost(c, t, d), tapKey(c, t, d)
	err := c.Do(h, fmt.Sprintf("%s: tap-route %s", h.Name, c.ID(k)), func(env node.Env) {
		h.Node.Tap.RouteToNode(env, k, tapestry.AppDOLR, false, nil, outcome(c, h, "tap-route", k))
	})
	if err != nil {
		d.Fatalf(t, "%v", err)
	}
}

// doTable prints a host's table: whether it has joined, each filled entry
// (level/digit: links, nearest first) and its backpointers.
func doTable(c *deploytest.Cluster, t testing.TB, d *datadriven.TestData) {
	h := c.HostArg(t, d)
	if !h.Up() {
		d.Fatalf(t, "%s is down", h.Name)
	}
	tt := h.Node.Tap.Table()
	c.Logf("%s: joined=%v\n", h.Name, tt.Joined)
	for _, e := range tt.Entries {
		c.Logf("  %d/%x %s\n", e.Level, e.Digit, c.Refs(e.Links))
	}
	c.Logf("  backpointers %s\n", c.Refs(tt.Backpointers))
}

// doPointers prints, for every running host, the servers it holds
// pointers to for key, and "root" where it holds them as the key's root.
func doPointers(c *deploytest.Cluster, t testing.TB, d *datadriven.TestData) {
	k := tapKey(c, t, d)
	any := false
	for _, h := range c.Hosts() {
		if !h.Up() {
			continue
		}
		servers, root := h.Node.Tap.Pointers(k)
		if len(servers) == 0 {
			continue
		}
		any = true
		s := ""
		if root {
			s = " (root)"
		}
		c.Logf("%s: %s -> %s%s\n", h.Name, c.ID(k), c.Refs(servers), s)
	}
	if !any {
		c.Logf("no pointers to %s\n", c.ID(k))
	}
}

// doCheck holds every running host's table to the running hosts
// (tapestry.Check: no entry names a host that is down, and no entry is
// empty that a running host could fill).
func doCheck(c *deploytest.Cluster, t testing.TB, d *datadriven.TestData) {
	live := map[string]wire.NodeRef{}
	for _, h := range c.Hosts() {
		if h.Up() {
			live[h.Name] = h.Node.Tap.Self()
		}
	}
	var bad []string
	for _, h := range c.Hosts() {
		if h.Up() {
			bad = append(bad, tapestry.Check(h.Node.Tap, live, 5)...)
		}
	}
	if len(bad) == 0 {
		c.Logf("tables ok\n")
		return
	}
	c.Logf("%s\n", strings.Join(bad, "\n"))
}

var tapOps = map[wire.TapOp]string{wire.TapToNode: "node", wire.TapToObject: "object", wire.TapToRoot: "root", wire.TapJoin: "join", wire.TapToServer: "server"}

func tapStatus(s wire.TapStatus) string {
	switch s {
	case wire.TapDelivered:
		return "delivered"
	case wire.TapNotFound:
		return "not found"
	case wire.TapNotExact:
		return "not exact"
	case wire.TapLooped:
		return "looped"
	case wire.TapUnreachable:
		return "unreachable"
	}
	return fmt.Sprintf("status(%d)", s)
}

var notifyKinds = map[wire.TapNotifyKind]string{wire.TapPointsAt: "points-at", wire.TapDropped: "dropped", wire.TapHello: "hello"}

// formatTap prints Tapestry's messages with the fields a trace reads.
func formatTap(c *deploytest.Cluster, m wire.Msg) (string, bool) {
	t := m.Type().String()
	switch m := m.(type) {
	case *wire.TapRoute:
		return fmt.Sprintf("%s %s key=%s level=%d hops=%d origin=%s", t, tapOps[m.Op], c.ID(m.Key), m.Level, m.Hops, c.Ref(m.Origin)), true
	case *wire.TapRouteDone:
		s := fmt.Sprintf("%s key=%s %s at=%s hops=%d", t, c.ID(m.Key), tapStatus(m.Status), c.Ref(m.Node), m.Hops)
		if !m.Root.IsZero() {
			s += fmt.Sprintf(" root=%s servers=%s", c.Ref(m.Root), c.Refs(m.Servers))
		}
		return s, true
	case *wire.TapPointers:
		ps := make([]string, len(m.Pointers))
		for i, p := range m.Pointers {
			ps[i] = fmt.Sprintf("%s->%s@%d", c.ID(p.Key), c.Ref(p.Server), p.Level)
			if p.Remove {
				ps[i] += "(remove)"
			}
			if p.Extra {
				ps[i] += "(extra)"
			}
		}
		return fmt.Sprintf("%s [%s]", t, strings.Join(ps, " ")), true
	case *wire.TapMulticast:
		return fmt.Sprintf("%s joiner=%s prefix=%d level=%d others=%s", t, c.Ref(m.Joiner), m.Prefix, m.Level, c.Refs(m.Others)), true
	case *wire.TapNodes:
		return fmt.Sprintf("%s %s", t, c.Refs(m.Nodes)), true
	case *wire.TapNearby:
		return fmt.Sprintf("%s level=%d", t, m.Level), true
	case *wire.TapNotify:
		return fmt.Sprintf("%s %s level=%d", t, notifyKinds[m.Kind], m.Level), true
	case *wire.TapJoined:
		return fmt.Sprintf("%s prefix=%d nodes=%s", t, m.Prefix, c.Refs(m.Nodes)), true
	case *wire.TapLeave:
		return fmt.Sprintf("%s replacements=%s", t, c.Refs(m.Replacements)), true
	case *wire.TapCheckServed:
		return fmt.Sprintf("%s %s", t, keyList(c, m.Keys)), true
	case *wire.TapServed:
		return fmt.Sprintf("%s %s", t, keyList(c, m.Keys)), true
	}
	return "", false
}

func keyList(c *deploytest.Cluster, keys []id.ID) string {
	s := make([]string, len(keys))
	for i, k := range keys {
		s[i] = c.ID(k)
	}
	return "[" + strings.Join(s, " ") + "]"
}
