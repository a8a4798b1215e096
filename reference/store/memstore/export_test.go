package memstore

import "time"

// OrderLen is the length of the time index, gone dents included, so that a
// spec can check it stays bounded.
func (s *Store) OrderLen() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.order)
}

// HeapBefore reports whether a rec due at a comes before one due at b, the
// one at a scheduled first: what the heaps decide, keys and all.
func HeapBefore(a, b time.Time) bool {
	ra, rb := &rec{seq: 1}, &rec{seq: 2}
	ra.setAt(a)
	rb.setAt(b)
	var h recHeap
	h.push(ra)
	h.push(rb)
	return h.min() == ra
}

// TestHeap is a rec heap for a property spec: recs by number, each given
// its seq in the order pushed.
type TestHeap struct {
	h    recHeap
	recs map[int]*rec
	seq  uint64
}

// NewTestHeap returns an empty heap.
func NewTestHeap() *TestHeap { return &TestHeap{recs: map[int]*rec{}} }

// Push adds rec n, due at t.
func (h *TestHeap) Push(n int, t time.Time) {
	h.seq++
	r := &rec{seq: h.seq, hidx: -1}
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
		if s.r.hidx != i || s.key != s.r.key || s.seq != s.r.seq {
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
