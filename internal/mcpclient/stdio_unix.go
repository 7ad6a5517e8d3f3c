//go:build unix

package mcpclient

import (
	"os/exec"
	"syscall"
)

// setGroup starts cmd in a process group of its own, so that stopping it
// can reach its children too (npx runs the server as a child).
func setGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killGroup kills what is left of cmd's process group.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
