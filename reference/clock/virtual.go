package clock

import (
	"sync"
	"time"
)

// Virtual is a deterministic clock for the simulator and for tests. Time only
// moves when its driver calls Advance, RunUntil or Step; due callbacks then run
// synchronously on the driver's goroutine, one at a time, in (time, sequence)
// order, where the sequence is the order in which AfterFunc was called. A
// callback that schedules another timer for the instant being run gets a
// later sequence, so it runs after every callback already due.
//
// Virtual is safe for concurrent use, and callbacks run without its lock
// held, so a callback may call any method, including AfterFunc and Stop.
type Virtual struct {
	mu   sync.Mutex
	now  time.Time
	seq  uint64
	heap []*virtualTimer
}

var _ Clock = (*Virtual)(nil)

// NewVirtual returns a virtual clock that reads start until it is advanced.
func NewVirtual(start time.Time) *Virtual {
	return &Virtual{now: start}
}

// Now returns the virtual time.
func (v *Virtual) Now() time.Time {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.now
}

// AfterFunc schedules f for d after the current virtual time.
func (v *Virtual) AfterFunc(d time.Duration, f func()) Timer {
	if d < 0 {
		d = 0
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.seq++
	t := &virtualTimer{clock: v, when: v.now.Add(d), seq: v.seq, f: f}
	v.push(t)
	return t
}

// Advance moves the clock forward by d, running every callback due up to and
// including the new time. It returns the number of callbacks run. A negative d
// is treated as zero, which runs the callbacks due now.
func (v *Virtual) Advance(d time.Duration) int {
	if d < 0 {
		d = 0
	}
	return v.RunUntil(v.Now().Add(d))
}

// RunUntil runs every callback due at or before t, each at its own instant,
// then sets the clock to t. Time never moves backwards: a t before Now only
// runs the callbacks already due. It returns the number of callbacks run.
func (v *Virtual) RunUntil(t time.Time) int {
	n := 0
	for {
		v.mu.Lock()
		if len(v.heap) == 0 || v.heap[0].when.After(t) {
			if t.After(v.now) {
				v.now = t
			}
			v.mu.Unlock()
			return n
		}
		f := v.popLocked()
		v.mu.Unlock()
		f()
		n++
	}
}

// Step runs the single earliest pending callback, moving the clock to its
// time first. It reports false, and changes nothing, when no timer is pending.
func (v *Virtual) Step() bool {
	v.mu.Lock()
	if len(v.heap) == 0 {
		v.mu.Unlock()
		return false
	}
	f := v.popLocked()
	v.mu.Unlock()
	f()
	return true
}

// Next returns the time of the earliest pending callback, and false when none
// is pending.
func (v *Virtual) Next() (time.Time, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.heap) == 0 {
		return time.Time{}, false
	}
	return v.heap[0].when, true
}

// Pending returns the number of callbacks scheduled and not yet run or
// stopped.
func (v *Virtual) Pending() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.heap)
}

// popLocked removes the earliest timer, moves the clock to its time and
// returns its callback. The caller holds v.mu and runs the callback after
// releasing it.
func (v *Virtual) popLocked() func() {
	t := v.heap[0]
	v.remove(0)
	if t.when.After(v.now) {
		v.now = t.when
	}
	return t.f
}

// virtualTimer is one pending callback. index is its place in the heap, or -1
// once it has run or been stopped.
type virtualTimer struct {
	clock *Virtual
	when  time.Time
	seq   uint64
	f     func()
	index int
}

// Stop removes the timer from the queue if it is still there.
func (t *virtualTimer) Stop() bool {
	v := t.clock
	v.mu.Lock()
	defer v.mu.Unlock()
	if t.index < 0 {
		return false
	}
	v.remove(t.index)
	return true
}

// The heap is hand-written rather than container/heap so that the hot path
// (the simulator schedules millions of timers) does no interface conversions.

func (a *virtualTimer) before(b *virtualTimer) bool {
	if a.when.Equal(b.when) {
		return a.seq < b.seq
	}
	return a.when.Before(b.when)
}

func (v *Virtual) push(t *virtualTimer) {
	t.index = len(v.heap)
	v.heap = append(v.heap, t)
	v.up(t.index)
}

func (v *Virtual) remove(i int) {
	h := v.heap
	last := len(h) - 1
	removed := h[i]
	if i != last {
		h[i] = h[last]
		h[i].index = i
	}
	h[last] = nil
	v.heap = h[:last]
	if i != last {
		if !v.down(i) {
			v.up(i)
		}
	}
	removed.index = -1
}

func (v *Virtual) up(i int) {
	h := v.heap
	for i > 0 {
		parent := (i - 1) / 2
		if !h[i].before(h[parent]) {
			break
		}
		h[i], h[parent] = h[parent], h[i]
		h[i].index = i
		h[parent].index = parent
		i = parent
	}
}

// down sifts the element at i towards the leaves and reports whether it moved.
func (v *Virtual) down(i int) bool {
	h := v.heap
	start := i
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && h[r].before(h[l]) {
			m = r
		}
		if !h[m].before(h[i]) {
			break
		}
		h[i], h[m] = h[m], h[i]
		h[i].index = i
		h[m].index = m
		i = m
	}
	return i > start
}
