// Package e2e is the harness of the end-to-end tests: real `triad`
// processes on 127.0.0.1, built once per test binary from cmd/triad and
// run with internal/proc, killed with SIGKILL and restarted. A Cluster is
// a set of `triad node` processes with the ring's consistency check
// (ring.Check over every node's `triad ring --json`); a DHash is a
// cluster of one-vnode nodes with clients, puts and gets; an Up is a
// `triad up` (on ConsecutiveFreePorts) and a News a `triad nntp`, with
// PostArticle for either. The tests that use it live in cmd/triad (the
// commands' own) and in the packages under internal/e2e, one per
// subsystem, so that each package's tests stay within go test's time and
// can run beside the others:
//
//	e2e/dhash     the ring and the block store: kills, restarts, maintenance
//	e2e/tapestry  Tapestry's publish and locate, its chaos loop and bench
//	e2e/d2        D2 and its file system (TestFS), with its bench
//	e2e/news      the news server: nntplib, feeds and SIGKILLs, on a local
//	              spool, on the DHT, in triad up and in peered sites
//
// It implements no part of a paper; it checks them. Layer: it drives the
// system from outside, as a binary, through its client and wire; only tests
// import it.
package e2e
