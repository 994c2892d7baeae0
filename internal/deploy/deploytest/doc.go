// Package deploytest drives a few hosts built by deploy.New by hand, for
// trace tests in the style of etcd raft's interaction tests: a script says
// which message is delivered and when time moves, and the printed trace of
// what the hosts sent and how their rings changed is the expectation
// (cockroachdb/datadriven, regenerated with -rewrite and then read).
//
// Unlike internal/sim, nothing happens by itself. Messages sent wait in one
// queue, in the order sent, until the script delivers (or drops) them;
// they cross the real codec on the way. Timers fire only when the script
// advances the clock, one at a time in (due time, order set). Offloaded
// work runs at once against the host's storage, and its WorkDone is handled
// right after the event that offloaded it. Hosts get fixed ring IDs (their
// ring state file is written before deploy.New), random sources seeded from
// the cluster's seed, and storage (sim.Storage: state files in a map and a
// mem engine on the cluster's clock) that survives a crash. IDs print as
// the prefixes the script gave, host names stand for addresses, and
// nothing is printed in map order, so a trace is the same on every run.
//
//	c := deploytest.New(deploy.DefaultOptions(), 1)
//	datadriven.RunTestAny(t, "testdata/trace/join.txt", c.Run)
//
// Each directive is its own handler in a Directives table, with its
// synopsis: the hosts, the clock, the network and the ring in script.go
// (add-host, crash, restart, tick, run, deliver, drop, deliver-all,
// in-flight, stabilize, ring), the block store in blocks.go (put, get,
// damage: a host's copy of a block, which its next read quarantines), and
// D2 in d2.go when the options run it (add-host d2=POSITION, d2-put with
// a mode and prev, d2-get, d2-latest, d2-holds: every host's copy and
// its version, d2-sync, d2-stats, d2-peers).
// tick and deliver step by hand; run delivers each message as soon as
// the event that sent it is over, and stabilize runs rounds of it until
// the ring is right, printing a summary. A protocol's test adds its own
// directives with Register (internal/maint's and internal/tapestry's trace
// tests do), and how its messages print with RegisterFormat:
//
//	c.Register(deploytest.Directives{
//		"stats": {Usage: "stats NAME", Run: func(c *deploytest.Cluster, t testing.TB, d *datadriven.TestData) {
//			h := c.HostArg(t, d)
//			c.Logf("%s: %+v\n", h.Name, h.Node.Maint.Stats)
//		}},
//	})
//
// Layer: test support above deploy; only tests import it.
package deploytest
