package sim

import (
	"strconv"
	"unsafe"
)

// idBlock is the size of the blocks job IDs are cut from: about forty
// generated IDs a block, and at most this much kept alive by one long-lived
// ID (a dead letter's) beside its own bytes.
const idBlock = 512

// idArena makes the generated jobs' IDs, "<task>-<n>", from shared blocks
// of bytes: one allocation for some forty jobs instead of one a job (the
// simulator makes millions). The bytes of an ID, once handed out, are never
// written again: a block only grows past them, and a full one is left to
// the IDs that use it and the garbage collector.
type idArena struct {
	buf []byte
}

// id returns task+"-"+n.
func (a *idArena) id(task string, n int64) string {
	const maxDigits = 20
	need := len(task) + 1 + maxDigits
	if cap(a.buf)-len(a.buf) < need {
		a.buf = make([]byte, 0, max(idBlock, need))
	}
	start := len(a.buf)
	a.buf = strconv.AppendInt(append(append(a.buf, task...), '-'), n, 10)
	// The string shares the block's bytes, which nothing writes again.
	return unsafe.String(&a.buf[start], len(a.buf)-start)
}
