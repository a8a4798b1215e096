package redistest

import (
	"os/exec"
	"syscall"
)

// setParentDeath has the kernel kill redis-server when the test process
// dies, so that a killed test run leaves no server behind.
func setParentDeath(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
