// Package clock is the seam every faultline component hangs on: the current
// time and timers, injected.
//
// Reference components never read the wall clock. They take a Clock, and the
// same code runs on Real (wall-clock time, for staging drills and the live
// runner) or on Virtual (the simulator's deterministic time). Virtual keeps
// every timer in one queue ordered by (time, sequence) and fires due callbacks
// synchronously on the caller's goroutine when the driver advances it, so that
// queue is also the simulator's event queue.
package clock

import "time"

// Clock tells the time and schedules callbacks.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// AfterFunc calls f once, d from now. A d of zero or less means "as soon
	// as possible": on Virtual, at the current instant, after every callback
	// already due at that instant.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending AfterFunc callback.
type Timer interface {
	// Stop prevents the callback from running. It reports whether this call
	// stopped it: false means it had already run or been stopped.
	Stop() bool
}

// Real is the wall clock. Its callbacks run on goroutines of the time
// package, as with time.AfterFunc; components driven by Real guard their state
// with locks and never call back while holding one.
type Real struct{}

var _ Clock = Real{}

// Now returns the wall-clock time.
func (Real) Now() time.Time { return time.Now() }

// AfterFunc schedules f with time.AfterFunc.
func (Real) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }
