// Package powercut is the power-cut harness of the crash tests: a Recorder
// keeps, before every sync of a vfs.MemFS, what a power cut would leave,
// and a test reopens its engine from each of those crash points and checks
// that every acknowledged write is there. The storage engine's test
// (internal/store/disk) and the news site's (internal/usenet) use it.
//
// Beside the MemFS a crash point keeps the test's own state (how many
// writes were acknowledged, the clock, the bbolt files). bbolt does its own
// I/O on the OS and its fsync discipline is trusted, so a power cut leaves
// a bbolt file as last committed (Committed), which Restore puts back
// before a reopen (docs/storage.md).
//
//	rec := powercut.New(func() state { return state{acked: n(), index: committed()} })
//	mem := vfs.NewMem()
//	rec.Record(mem)
//	... a workload on mem: puts, acknowledged ...
//	rec.Last(mem)
//	for i, p := range rec.Points() {
//		... reopen from p.FS.CrashClone(), check what p.State says was acknowledged ...
//	}
//
// It is a test helper: only tests import it.
package powercut
