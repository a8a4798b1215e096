//go:build !unix

package adapter

import "os/exec"

// ownGroup leaves cmd as it is where there are no process groups: its
// cancellation kills the command alone.
func ownGroup(*exec.Cmd) {}
