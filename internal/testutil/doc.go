// Package testutil holds what triad's tests share that is not a harness
// of its own: WaitFor and Poll, the one way a test waits on the wall
// clock for a condition.
//
// A test that runs real goroutines, sockets or processes cannot advance
// time; it polls a condition with a deadline, never sleeps and hopes
// (STYLE.md). A simulator test advances virtual time instead and needs
// none of this.
//
//	testutil.WaitFor(t, 5*time.Second, "the peer to be marked dead", func() bool {
//		return drv.Stats().PeersDead.Load() > 0
//	})
//
// Only tests and test-helper packages (deploytest, storetest, e2e) may import it.
package testutil
