package memstore

import (
	"time"

	"github.com/faultline/faultline/reference/dlq"
)

// OrderLen is the length of the time index, gone dents included, so that a
// spec can check it stays bounded.
func (s *Store) OrderLen() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.order)
}

// HeapBefore reports whether job idA due at a comes before job idB due at
// b, the one at a pushed first: what the heaps decide, keys and all.
func HeapBefore(idA string, a time.Time, idB string, b time.Time) bool {
	ra, rb := &rec{hidx: -1}, &rec{hidx: -1}
	ra.job.ID, rb.job.ID = idA, idB
	ra.setAt(a)
	rb.setAt(b)
	var h recHeap
	h.push(ra)
	h.push(rb)
	return h.min() == ra
}

// TestHeap is a rec heap for a property spec: recs by number, each with
// the job ID it is given.
type TestHeap struct {
	h    recHeap
	recs map[int]*rec
}

// NewTestHeap returns an empty heap.
func NewTestHeap() *TestHeap { return &TestHeap{recs: map[int]*rec{}} }

// Push adds rec n, of job id, due at t.
func (h *TestHeap) Push(n int, id string, t time.Time) {
	r := &rec{hidx: -1}
	r.job.ID = id
	r.setAt(t)
	h.recs[n] = r
	h.h.push(r)
}

// Remove takes rec n out.
func (h *TestHeap) Remove(n int) {
	h.h.remove(h.recs[n])
	delete(h.recs, n)
}

// SetAt moves rec n to t.
func (h *TestHeap) SetAt(n int, t time.Time) { h.h.setAt(h.recs[n], t) }

// Min returns the number of the earliest rec, or -1; ok is false when a
// rec's recorded position is not where it is.
func (h *TestHeap) Min() (n int, ok bool) {
	for i, s := range h.h.items {
		if s.r.hidx != i || s.key != s.r.key || s.pfx != idPrefix(s.r.job.ID) {
			return 0, false
		}
	}
	m := h.h.min()
	for k, r := range h.recs {
		if r == m {
			return k, true
		}
	}
	return -1, m == nil
}

// FoldRune is dlq.FoldRune, for the spec that checks it is canonical.
func FoldRune(r rune) rune { return dlq.FoldRune(r) }
