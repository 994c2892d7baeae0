package bench

import (
	"os/exec"
	"syscall"
)

// command is exec.Command for the node and server processes a benchmark
// starts: the kernel kills them with SIGKILL if the benchmark dies, so a
// benchmark killed outright (SIGKILL, a CI timeout) leaves none running.
func command(bin string, args ...string) *exec.Cmd {
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd
}
