//go:build !linux

package bench

import "os/exec"

// command is exec.Command for the processes a benchmark starts; only
// Linux can tie their lives to the benchmark's (child_linux.go).
func command(bin string, args ...string) *exec.Cmd { return exec.Command(bin, args...) }
