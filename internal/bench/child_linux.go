package bench

import (
	"os/exec"
	"syscall"
)

// command is exec.Command for the node and server processes a benchmark
// starts: the kernel kills them with SIGKILL if the benchmark dies, so a
// benchmark killed outright (SIGKILL, a CI timeout) leaves none running.
//
// The kernel sends the signal when the OS thread that started the child
// exits, not the process; Go ends a thread only when a goroutine locked to
// it (runtime.LockOSThread) returns, so no such goroutine may call this.
func command(bin string, args ...string) *exec.Cmd {
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd
}
