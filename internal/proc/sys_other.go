//go:build !linux

package proc

import "os/exec"

// tieToParent does nothing: only Linux can tie a child's life to its
// starter's.
func tieToParent(*exec.Cmd) {}
