package supervisor

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"syscall"
)

// killTree SIGKILLs pid's process group and every process below pid, as
// ending a container or a control group does: a process that left the
// group (setsid: RQ's work horse, a daemonizing child) dies with the copy
// it belongs to, not after it. The tree is read first and the kill sent
// to all of it at once: nothing is stopped beforehand, so the copy's
// connections close as a real crash closes them, within a millisecond of
// the kill (a copy frozen for the scan kept its Redis socket open, and a
// message Redis handed it then was lost to a worker already dead). A
// process forked between the read and the kill (a fork in that
// millisecond) is not reached.
func killTree(pid int) error {
	kids := descendants(pid)
	err := signalGroup(pid, syscall.SIGKILL)
	for _, k := range kids {
		if e := syscall.Kill(k, syscall.SIGKILL); e != nil && !errors.Is(e, syscall.ESRCH) && err == nil {
			err = e
		}
	}
	return err
}

// descendants returns the processes below pid (its children, theirs, and
// so on), read from /proc: the parent of each is field 4 of its stat.
func descendants(pid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone since the listing
		}
		// "PID (COMM) STATE PPID ...": COMM may hold spaces and parentheses.
		k := bytes.LastIndexByte(b, ')')
		if k < 0 {
			continue
		}
		f := bytes.Fields(b[k+1:])
		if len(f) < 2 {
			continue
		}
		if pp, err := strconv.Atoi(string(f[1])); err == nil {
			children[pp] = append(children[pp], p)
		}
	}
	var out []int
	queue := []int{pid}
	seen := map[int]bool{pid: true}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
				queue = append(queue, c)
			}
		}
	}
	return out
}
