//go:build !linux

package redistest

import "os/exec"

// setParentDeath is a no-op where the kernel cannot tie the server's life to
// the test process's; StopShared stops it.
func setParentDeath(*exec.Cmd) {}
