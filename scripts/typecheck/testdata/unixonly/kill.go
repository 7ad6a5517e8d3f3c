// Package unixonly builds on linux and darwin, not on windows: syscall has
// no Kill there.
package unixonly

import "syscall"

// Stop signals pid.
func Stop(pid int) error {
	return syscall.Kill(pid, syscall.SIGTERM)
}
