package proc

import (
	"os/exec"
	"syscall"
)

// tieToParent has the kernel kill cmd's process with SIGKILL if this one
// dies first (see the package comment for the thread caveat).
func tieToParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
