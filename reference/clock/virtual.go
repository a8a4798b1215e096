package clock

import (
	"math"
	"math/bits"
	"sync"
	"sync/atomic"
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
	mu sync.Mutex
	// Time is kept as an offset in nanoseconds from base, so that the heap
	// compares integers, not time.Time values.
	base time.Time
	// now is written under mu and read without it: Now is the hottest
	// call of a simulation.
	now  atomic.Int64
	seq  uint64
	heap []entry
	// unstoppable stands in for the timer of every Schedule entry, so
	// that sifting keeps timers' indexes without a branch; its own index
	// is never read.
	unstoppable virtualTimer
}

var _ Clock = (*Virtual)(nil)

// NewVirtual returns a virtual clock that reads start until it is advanced.
// The start is taken in UTC and without a monotonic reading, so that what a
// run prints does not depend on the machine's time zone.
func NewVirtual(start time.Time) *Virtual {
	return &Virtual{base: start.Round(0).UTC()}
}

// Now returns the virtual time.
func (v *Virtual) Now() time.Time {
	return v.base.Add(time.Duration(v.now.Load()))
}

// AfterFunc schedules f for d after the current virtual time.
func (v *Virtual) AfterFunc(d time.Duration, f func()) Timer {
	if d < 0 {
		d = 0
	}
	t := &virtualTimer{clock: v, index: -1}
	v.mu.Lock()
	v.seq++
	v.push(entry{at: addSaturating(v.now.Load(), int64(d)), seq: v.seq, f: f, t: t})
	v.mu.Unlock()
	return t
}

// Schedule is AfterFunc for a callback that is never stopped: it returns no
// Timer and allocates nothing, which is what the simulator's hottest events
// (an attempt's end, a retry's wake) want. The callback runs in the same
// (time, sequence) order as AfterFunc's, taking a sequence number as
// AfterFunc would.
func (v *Virtual) Schedule(d time.Duration, f func()) {
	if d < 0 {
		d = 0
	}
	v.mu.Lock()
	v.seq++
	v.push(entry{at: addSaturating(v.now.Load(), int64(d)), seq: v.seq, f: f, t: &v.unstoppable})
	v.mu.Unlock()
}

// Reset stops t if it is pending and schedules f d from now, as Stop then
// AfterFunc would (the same sequence number, the same order), but reuses t
// when it is one of v's own timers: a caller that alone holds a timer and
// re-arms it for each of its events (a simulated worker's attempt) does not
// allocate one per event. It returns the timer to keep, t itself when it was
// reused; a t that is nil or not v's is left alone and a new timer is
// returned.
func (v *Virtual) Reset(t Timer, d time.Duration, f func()) Timer {
	vt, ok := t.(*virtualTimer)
	if !ok || vt == nil || vt.clock != v {
		return v.AfterFunc(d, f)
	}
	if d < 0 {
		d = 0
	}
	v.mu.Lock()
	if vt.index >= 0 {
		v.remove(vt.index)
	}
	v.seq++
	v.push(entry{at: addSaturating(v.now.Load(), int64(d)), seq: v.seq, f: f, t: vt})
	v.mu.Unlock()
	return vt
}

// Advance moves the clock forward by d, running every callback due up to and
// including the new time. It returns the number of callbacks run. A negative d
// is treated as zero, which runs the callbacks due now.
func (v *Virtual) Advance(d time.Duration) int {
	if d < 0 {
		d = 0
	}
	v.mu.Lock()
	target := addSaturating(v.now.Load(), int64(d))
	v.mu.Unlock()
	return v.runUntil(target)
}

// RunUntil runs every callback due at or before t, each at its own instant,
// then sets the clock to t. Time never moves backwards: a t before Now only
// runs the callbacks already due. It returns the number of callbacks run.
func (v *Virtual) RunUntil(t time.Time) int {
	return v.runUntil(int64(t.Sub(v.base)))
}

func (v *Virtual) runUntil(target int64) int {
	n := 0
	for {
		v.mu.Lock()
		if len(v.heap) == 0 || v.heap[0].at > target {
			if target > v.now.Load() {
				v.now.Store(target)
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

// StepUntil runs the earliest pending callback if it is due at or before t,
// moving the clock to its time first, and reports whether it ran one: a
// simulator's loop in one lock a step instead of Next and Step.
func (v *Virtual) StepUntil(t time.Time) bool { return v.StepUntilElapsed(t.Sub(v.base)) }

// StepUntilElapsed is StepUntil for the time d after the clock's start:
// integer arithmetic only, for a simulation's event loop.
func (v *Virtual) StepUntilElapsed(d time.Duration) bool {
	v.mu.Lock()
	if len(v.heap) == 0 || v.heap[0].at > int64(d) {
		v.mu.Unlock()
		return false
	}
	f := v.popLocked()
	v.mu.Unlock()
	f()
	return true
}

// RunUntilElapsed is RunUntil for the time d after the clock's start.
func (v *Virtual) RunUntilElapsed(d time.Duration) int { return v.runUntil(int64(d)) }

// Elapsed returns how far the clock has moved since its start: Now minus
// the start, without time.Time arithmetic.
func (v *Virtual) Elapsed() time.Duration { return time.Duration(v.now.Load()) }

// Next returns the time of the earliest pending callback, and false when none
// is pending.
func (v *Virtual) Next() (time.Time, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.heap) == 0 {
		return time.Time{}, false
	}
	return v.base.Add(time.Duration(v.heap[0].at)), true
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
	e := v.heap[0]
	v.remove(0)
	if e.at > v.now.Load() {
		v.now.Store(e.at)
	}
	return e.f
}

func addSaturating(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// virtualTimer is the handle of an AfterFunc callback. index is its entry's
// place in the heap, or -1 once it has run or been stopped (or before Reset
// first schedules it).
type virtualTimer struct {
	clock *Virtual
	index int
}

// entry is a heap slot, a value: the ordering key is held inline so that
// sifting compares integers without following pointers, and the callback
// with it, so that firing one reads no timer. t is the handle Stop finds the
// entry by (v.unstoppable for Schedule's).
type entry struct {
	at  int64
	seq uint64
	f   func()
	t   *virtualTimer
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

// before orders entries by (at, seq): a 128-bit comparison, without
// branches (sifting's comparisons are coin tosses a branch predictor
// cannot learn); at's sign bit is flipped to order it as unsigned.
func (a *entry) before(b *entry) bool { return a.beforeBit(b) != 0 }

// beforeBit is before as 1 or 0.
func (a *entry) beforeBit(b *entry) uint64 {
	_, borrow := bits.Sub64(a.seq, b.seq, 0)
	_, borrow = bits.Sub64(uint64(a.at)^1<<63, uint64(b.at)^1<<63, borrow)
	return borrow
}

func (v *Virtual) push(e entry) {
	e.t.index = len(v.heap)
	v.heap = append(v.heap, e)
	v.up(e.t.index)
}

func (v *Virtual) remove(i int) {
	h := v.heap
	last := len(h) - 1
	removed := h[i].t
	if i != last {
		h[i] = h[last]
		h[i].t.index = i
	}
	h[last] = entry{}
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
		if !h[i].before(&h[parent]) {
			break
		}
		h[i], h[parent] = h[parent], h[i]
		h[i].t.index = i
		h[parent].t.index = parent
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
		if r := l + 1; r < n {
			m += int(h[r].beforeBit(&h[l])) // the earlier child, without a branch
		}
		if !h[m].before(&h[i]) {
			break
		}
		h[i], h[m] = h[m], h[i]
		h[i].t.index = i
		h[m].t.index = m
		i = m
	}
	return i > start
}
