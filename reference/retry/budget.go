package retry

import (
	"math"
	"slices"
)

// calendar is one dependency's retry budget: how many retries are booked to
// run in each slot of time, from the first slot that has not ended. Slot k
// is [epoch + k·W, epoch + (k+1)·W), W the budget's slot width.
//
// Only the slots holding bookings are kept, as runs, so that the memory a
// dependency takes is bounded by the bookings it holds and not by how far
// ahead they are (a 1ns slot and a one-hour Retry-After would otherwise
// need 3.6·10¹² counters). Under sustained overload the full slots form one
// run, so finding room is a binary search and one step, whatever the queue.
type calendar struct {
	// runs are in slot order and disjoint. Run r covers the slots
	// [r.lo, r.hi): the slots before r.hi-1 are full, and the last one holds
	// r.n bookings, 1 ≤ r.n ≤ burst. A run whose last slot is full is never
	// followed by a run starting at its hi: the two are merged, so the first
	// slot after a full run is always free.
	runs []run
}

// run is a stretch of booked slots; see calendar.runs.
type run struct {
	lo, hi int64
	n      int
}

// book books the first slot at or after k that holds fewer than burst
// bookings, if it is not after last, and returns it. It reports false, and
// books nothing, when every slot in [k, last] is full.
func (c *calendar) book(k, last int64, burst int) (int64, bool) {
	i := c.search(k)
	if i < len(c.runs) && c.runs[i].lo <= k {
		// k is in run i: skip its full slots to its last one.
		r := &c.runs[i]
		k = max(k, r.hi-1)
		if r.n < burst {
			if k > last {
				return 0, false
			}
			r.n++
			c.mergeIfFull(i, burst)
			return k, true
		}
		// The run is full, so the slot after it is free.
		k = r.hi
		i++
	}
	if k > last {
		return 0, false
	}
	// Slot k is free: run i, if any, starts after it, run i-1 ends at or
	// before it.
	if i > 0 && c.runs[i-1].hi == k && c.runs[i-1].n == burst {
		c.runs[i-1].hi, c.runs[i-1].n = k+1, 1
		c.mergeIfFull(i-1, burst)
		return k, true
	}
	c.runs = slices.Insert(c.runs, i, run{lo: k, hi: k + 1, n: 1})
	c.mergeIfFull(i, burst)
	return k, true
}

// mergeIfFull merges run i with the next one when run i's last slot is full
// and the next run starts right after it.
func (c *calendar) mergeIfFull(i, burst int) {
	r := &c.runs[i]
	if r.n < burst || i+1 == len(c.runs) || c.runs[i+1].lo != r.hi {
		return
	}
	r.hi, r.n = c.runs[i+1].hi, c.runs[i+1].n
	c.runs = slices.Delete(c.runs, i+1, i+2)
}

// search returns the index of the first run that ends after slot k.
func (c *calendar) search(k int64) int {
	lo, hi := 0, len(c.runs)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if c.runs[m].hi <= k {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// prune forgets the slots before floor, which have ended. It moves the
// remaining runs down instead of reslicing, so that the slice keeps its
// capacity and booking stays allocation-free.
func (c *calendar) prune(floor int64) {
	if i := c.search(floor); i > 0 {
		c.runs = c.runs[:copy(c.runs, c.runs[i:])]
	}
}

// idle reports whether the calendar holds no booking in slot floor or later.
func (c *calendar) idle(floor int64) bool {
	return len(c.runs) == 0 || c.runs[len(c.runs)-1].hi <= floor
}

// floorDiv is ⌊a/b⌋ for b > 0.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// addSaturating returns a+b for a non-negative b, capped at the largest
// int64 (so also at the largest time.Duration).
func addSaturating[T ~int64](a, b T) T {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
