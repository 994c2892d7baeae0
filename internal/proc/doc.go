// Package proc runs real triad processes on 127.0.0.1 — the nodes and
// news servers that the benchmarks (internal/bench, `triad chaos`) and the
// end-to-end tests (cmd/triad) start — the way an operator's machine
// would: it starts one, waits until it prints a line or listens on a
// port, kills it with SIGKILL as a crash would, and starts it again with
// the same arguments, so on the same data folder, as a reboot would.
//
// A Proc is one such process over its incarnations. The output of every
// incarnation (stdout and stderr, each start marked) is appended to one
// log file; the stdout lines of the running one are also kept, up to
// MaxKeptBytes, for WaitLine and WaitOutput. Every wait is bounded, and
// its error says what it waited for and for how long and ends with the
// log's last lines, so a failure explains itself.
//
//	p, err := proc.Start(proc.Config{Binary: bin, Log: filepath.Join(dir, "node0.log"),
//		Args: []string{"node", "--listen", addr, "--data", filepath.Join(dir, "node0")}})
//	err = p.WaitPort(addr, 10*time.Second)
//	err = p.Kill()    // SIGKILL, and wait for the exit
//	err = p.Restart() // the same command line, the same data folder
//	err = p.Stop(syscall.SIGTERM, 10*time.Second)
//
// On Linux the kernel kills a child with SIGKILL when its starter dies
// (Pdeathsig), so a benchmark or test killed outright leaves no process
// behind; the signal goes when the OS thread that started the child
// exits, which Go does only for a goroutine locked to its thread, so no
// such goroutine may start a Proc.
//
// Layer: a harness above the whole system; it uses the standard library
// only, and the system under test only as a binary. It imports no other
// package of triad, and only internal/bench, the tests and their harness
// (e2e) may import it.
package proc
