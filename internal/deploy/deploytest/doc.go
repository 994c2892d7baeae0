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
//	datadriven.RunTest(t, "testdata/trace/join.txt", func(t *testing.T, d *datadriven.TestData) string {
//		return c.Run(t, d) // or handle a directive of your own first
//	})
//
// Run knows these directives (docs in Run): add-host, crash, restart,
// tick, run, deliver, drop, deliver-all, in-flight, stabilize, ring, put,
// get, damage (a host's copy of a block, which its next read quarantines).
// tick and deliver step by hand; run delivers each message as soon as
// the event that sent it is over, and stabilize runs rounds of it until
// the ring is right, printing a summary. A new protocol adds its
// directives in its own test (handled before falling back to Run) and
// its messages' fields to FormatMsg.
//
// Layer: test support above deploy; only tests import it.
package deploytest
