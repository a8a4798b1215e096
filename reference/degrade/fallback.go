package degrade

import (
	"context"
	"errors"
	"sync"

	"github.com/faultline/faultline/reference/clock"
)

// Drainer moves jobs from the batch (fallback) queue back to the main queue.
// The queue stores implement it; a Fallback calls it only while its breaker is
// closed.
type Drainer interface {
	// DrainBatch moves up to max jobs and reports how many it moved and
	// whether more are left. An error means the batch may be retried.
	DrainBatch(ctx context.Context, max int) (moved int, more bool, err error)
}

// Route is where a job should go: to the primary, with a Permit to give back
// to the breaker's Record, or to the batch queue, because of Reason (ErrOpen,
// ErrProbeLimit or ErrRampUp).
type Route struct {
	// Primary says the job may call the primary dependency now.
	Primary bool
	// Permit is the breaker's permit when Primary; Record the call's outcome
	// with it.
	Permit Permit
	// Reason is the breaker's rejection when not Primary.
	Reason error
}

// FallbackStats is a snapshot of a fallback's counters.
type FallbackStats struct {
	// Primary counts jobs routed to the primary.
	Primary uint64
	// Diverted counts jobs routed to the batch queue, and the three fields
	// after it split that count by the breaker's reason.
	Diverted                                         uint64
	DivertedOpen, DivertedProbeLimit, DivertedRampUp uint64
	// Drained counts jobs moved back to the main queue, Batches the
	// DrainBatch calls that succeeded, DrainErrors those that failed.
	Drained, Batches, DrainErrors uint64
	// RampWaits counts drain ticks that waited for the breaker's ramp-up to
	// end instead of draining into it.
	RampWaits uint64
	// Draining says whether the drain loop is running.
	Draining bool
}

// Fallback is graceful degradation around a breaker: while the breaker
// rejects, Route sends jobs to the batch queue; when the breaker closes, the
// batch queue is drained back to the main queue on clock timers, one batch of
// at most BatchSize every DrainInterval, starting one DrainInterval after the
// close (or when the breaker's ramp-up ends, if later), while the breaker
// stays closed and the drainer reports more. A drain
// error is counted and the batch is tried again at the next interval.
// Draining stops when the breaker leaves Closed and starts again when it
// closes. Fallback is safe for concurrent use and starts no goroutine of its
// own; drain calls run on the clock's timer callbacks.
type Fallback struct {
	b   *Breaker
	d   Drainer
	cfg FallbackConfig
	clk clock.Clock

	mu       sync.Mutex
	stats    FallbackStats
	draining bool
	// session identifies the current closed spell; a drain callback from an
	// older one does nothing.
	session  uint64
	timer    clock.Timer
	inFlight bool
}

// NewFallback returns a fallback routing through b and draining through d,
// configured by cfg.WithDefaults(), or a *ConfigError. It listens to b's
// transitions; it schedules nothing until the breaker next closes (see
// StartDraining for a batch queue left over from an earlier run).
func NewFallback(b *Breaker, d Drainer, cfg FallbackConfig, clk clock.Clock) (*Fallback, error) {
	switch {
	case b == nil:
		return nil, cfgErr("breaker", nil, "must not be nil")
	case d == nil:
		return nil, cfgErr("drainer", nil, "must not be nil")
	case clk == nil:
		return nil, cfgErr("clock", nil, "must not be nil")
	}
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	f := &Fallback{b: b, d: d, cfg: cfg, clk: clk}
	b.OnStateChange(f.onTransition)
	return f, nil
}

// Route asks the breaker whether a job may call the primary now. When it may
// not, the caller diverts the job to the batch queue; the diversion is
// counted by reason.
func (f *Fallback) Route() Route {
	p, err := f.b.Allow()
	f.mu.Lock()
	defer f.mu.Unlock()
	if err == nil {
		f.stats.Primary++
		return Route{Primary: true, Permit: p}
	}
	f.stats.Diverted++
	switch {
	case errors.Is(err, ErrOpen):
		f.stats.DivertedOpen++
	case errors.Is(err, ErrProbeLimit):
		f.stats.DivertedProbeLimit++
	case errors.Is(err, ErrRampUp):
		f.stats.DivertedRampUp++
	}
	return Route{Reason: err}
}

// StartDraining starts the drain loop now if the breaker is closed and the
// loop is not already running: for a process that starts with jobs left in
// the batch queue by an earlier run. The first batch is drained one
// DrainInterval from now.
func (f *Fallback) StartDraining() {
	if f.b.State() != Closed {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.draining {
		f.startLocked()
	}
}

// Stats returns a snapshot of the fallback's counters.
func (f *Fallback) Stats() FallbackStats {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.stats
	s.Draining = f.draining
	return s
}

// onTransition is the breaker listener: draining runs exactly while the
// breaker is closed.
func (f *Fallback) onTransition(t Transition) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if t.To == Closed {
		f.startLocked()
		return
	}
	f.session++
	f.draining = false
	f.stopTimerLocked()
}

// startLocked begins a new drain session. If a drain call from an older
// session is still running, its completion schedules the next one, so that
// two drain calls never overlap.
func (f *Fallback) startLocked() {
	f.session++
	f.draining = true
	f.stopTimerLocked()
	if !f.inFlight {
		f.scheduleLocked()
	}
}

func (f *Fallback) scheduleLocked() {
	s := f.session
	f.timer = f.clk.AfterFunc(f.cfg.DrainInterval, func() { f.tick(s) })
}

func (f *Fallback) stopTimerLocked() {
	if f.timer != nil {
		f.timer.Stop()
		f.timer = nil
	}
}

// tick is the drain timer's callback: one DrainBatch call.
func (f *Fallback) tick(session uint64) {
	f.mu.Lock()
	if session != f.session || !f.draining {
		f.mu.Unlock()
		return
	}
	f.timer = nil
	f.mu.Unlock()

	// The listener may not have heard yet of a trip made on another
	// goroutine (delivery is in order, not instant): check the breaker itself.
	if f.b.State() != Closed {
		f.mu.Lock()
		if session == f.session {
			f.draining = false
		}
		f.mu.Unlock()
		return
	}

	// While the breaker ramps up after a close it turns a share of calls
	// away, and a drained job it turns away comes straight back to the batch
	// queue: wait for the ramp to end before draining, so that the backlog
	// meets a primary that takes all of it.
	if end := f.b.RampEnd(); !end.IsZero() {
		f.mu.Lock()
		defer f.mu.Unlock()
		if session == f.session && f.draining {
			f.stats.RampWaits++
			f.timer = f.clk.AfterFunc(max(end.Sub(f.clk.Now()), f.cfg.DrainInterval), func() { f.tick(session) })
		}
		return
	}

	f.mu.Lock()
	f.inFlight = true
	f.mu.Unlock()

	// A timer callback has no caller and so no caller's context: the drain
	// gets a fresh context from Background, bounded by DrainTimeout so that
	// a hung store cannot hold the drain loop for ever. (Its deadline is
	// wall-clock time, as every context deadline is; in the simulator the
	// drainer is in memory and returns at once.)
	ctx, cancel := context.WithTimeout(context.Background(), f.cfg.DrainTimeout)
	moved, more, err := f.d.DrainBatch(ctx, f.cfg.BatchSize)
	cancel()

	f.mu.Lock()
	defer f.mu.Unlock()
	f.inFlight = false
	if err != nil {
		f.stats.DrainErrors++
	} else {
		f.stats.Batches++
	}
	if moved > 0 {
		f.stats.Drained += uint64(moved)
	}
	switch {
	case session != f.session:
		// The breaker tripped (and perhaps closed again) during the call; a
		// new session waits for this call to finish before it schedules.
		if f.draining {
			f.scheduleLocked()
		}
	case err != nil || more:
		f.scheduleLocked()
	default:
		f.draining = false
	}
}
