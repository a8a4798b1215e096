package degrade

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/faultline/faultline/reference/clock"
	"github.com/faultline/faultline/reference/internal/mutant"
)

// Drainer moves jobs from the batch (fallback) queue back to the main queue.
// The queue stores implement it; a Fallback calls it while its breaker is
// closed, to drain the backlog, and while it is half-open, to supply probes.
type Drainer interface {
	// DrainBatch moves up to max jobs at time now (from the fallback's
	// clock) and reports how many it moved and whether more are left. An
	// error means the batch may be retried.
	DrainBatch(ctx context.Context, now time.Time, max int) (moved int, more bool, err error)
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
	// DrainBatch calls that succeeded, DrainErrors those that failed; all
	// three include the probe drains below.
	Drained, Batches, DrainErrors uint64
	// ProbeDrained counts the jobs moved back while the breaker was
	// half-open, to be its probes, and ProbeBatches the successful DrainBatch
	// calls that moved them (a share of Drained and Batches).
	ProbeDrained, ProbeBatches uint64
	// RampWaits counts drain ticks that waited for the breaker's ramp-up to
	// end instead of draining into it.
	RampWaits uint64
	// Draining says whether the drain loop is running (the breaker is
	// closed and the batch queue not yet empty); Probing whether the fallback
	// is supplying probes to a half-open breaker.
	Draining, Probing bool
}

// Fallback is graceful degradation around a breaker: while the breaker
// rejects, Route sends jobs to the batch queue, and the Fallback brings them
// back to the main queue through a Drainer, on clock timers.
//
// When the breaker goes half-open, the batch queue supplies its probes, so
// that a backlog is not stranded once new traffic stops (half-open is left
// only by probe outcomes, and draining waits for Closed). One DrainInterval
// after the transition the Fallback drains as many jobs as the breaker has
// free probe slots (HalfOpenProbes, unless live calls have taken some); they
// go back to the main queue and become the probes when workers route them.
// The interval, rather than at once, is the same wait as before the first
// batch after a close, and it gives live traffic, if any, the first claim on
// the slots. Once Route has seen those jobs in half-open, and a slot is free
// again (looked at every DrainInterval, so for at most ProbeTimeout per
// probe), it drains the next few, until their successes close the breaker
// (SuccessesToClose may exceed HalfOpenProbes), a counted failure re-opens it
// (the next half-open supplies probes again), or the batch queue is empty. A
// job that meets a full probe slot is diverted again (ErrProbeLimit), so at
// most HalfOpenProbes jobs make that round trip per drain.
//
// When the breaker closes, the batch queue is drained in batches of at most
// BatchSize every DrainInterval, starting one DrainInterval after the close
// (or when the breaker's ramp-up ends, if later), while the breaker stays
// closed and the drainer reports more.
//
// A drain error is counted and the call is tried again at the next interval,
// while the breaker stays in the state that made it. Draining stops when the
// breaker opens. At most one DrainBatch call runs at a time: a call that
// outlasts the breaker's state delays the next state's first call until it
// returns. Fallback is safe for concurrent use and starts no goroutine of its
// own; drain calls run on the clock's timer callbacks.
type Fallback struct {
	b   *Breaker
	d   Drainer
	cfg FallbackConfig
	clk clock.Clock

	mu    sync.Mutex
	stats FallbackStats
	// session identifies the breaker's current closed or half-open spell,
	// and mode what the Fallback does in it; a drain callback from an older
	// session does nothing. At most one timer is pending at a time.
	session  uint64
	mode     drainMode
	timer    clock.Timer
	inFlight bool

	// Probe supply, in modeProbe. unrouted counts the jobs of the last probe
	// drain that Route has not yet seen in half-open; routedDuring counts the
	// half-open routes seen while a probe drain call ran (its jobs, picked up
	// before it returned, or live calls: either way slots are being used);
	// probesDone says that the batch queue ran out in this half-open spell.
	unrouted     int
	routedDuring int
	probesDone   bool
}

// drainMode is what a Fallback's drain timer does in the current session.
type drainMode uint8

const (
	// modeIdle: the breaker is open, or the drain loop has finished.
	modeIdle drainMode = iota
	// modeDrain: the breaker is closed; drain the backlog in batches.
	modeDrain
	// modeProbe: the breaker is half-open; supply its probes.
	modeProbe
)

// NewFallback returns a fallback routing through b and draining through d,
// configured by cfg.WithDefaults(), or a *ConfigError. It listens to b's
// transitions; it schedules nothing until the breaker next goes half-open or
// closes (see StartDraining for a batch queue left over from an earlier run).
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
// counted by reason. Workers route the jobs drained back from the batch queue
// like any other: in half-open, that makes them the breaker's probes.
func (f *Fallback) Route() Route {
	p, err := f.b.Allow()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.mode == modeProbe && (p.IsProbe() || errors.Is(err, ErrProbeLimit)) {
		f.probeSeenLocked()
	}
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
	if f.mode != modeDrain {
		f.startLocked(modeDrain)
	}
}

// Stats returns a snapshot of the fallback's counters.
func (f *Fallback) Stats() FallbackStats {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.stats
	s.Draining = f.mode == modeDrain
	s.Probing = f.mode == modeProbe && !f.probesDone
	return s
}

// onTransition is the breaker listener: the backlog is drained while the
// breaker is closed, probes are supplied while it is half-open, and nothing
// moves while it is open.
func (f *Fallback) onTransition(t Transition) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch t.To {
	case Closed:
		f.startLocked(modeDrain)
	case HalfOpen:
		f.startLocked(modeProbe)
	default:
		f.session++
		f.mode = modeIdle
		f.stopTimerLocked()
		f.resetProbesLocked()
	}
}

// startLocked begins a new session in mode m. If a drain call from an older
// session is still running, its completion schedules the first tick, so that
// two drain calls never overlap.
func (f *Fallback) startLocked(m drainMode) {
	f.session++
	f.mode = m
	f.stopTimerLocked()
	f.resetProbesLocked()
	if !f.inFlight {
		f.scheduleLocked()
	}
}

func (f *Fallback) resetProbesLocked() {
	f.unrouted = 0
	f.routedDuring = 0
	f.probesDone = false
}

// scheduleLocked schedules the current session's next tick one DrainInterval
// from now, replacing any pending one.
func (f *Fallback) scheduleLocked() {
	f.scheduleInLocked(f.cfg.DrainInterval)
}

func (f *Fallback) scheduleInLocked(d time.Duration) {
	f.stopTimerLocked()
	s := f.session
	f.timer = f.clk.AfterFunc(d, func() { f.tick(s) })
}

func (f *Fallback) stopTimerLocked() {
	if f.timer != nil {
		f.timer.Stop()
		f.timer = nil
	}
}

// tick is the drain timer's callback.
func (f *Fallback) tick(session uint64) {
	f.mu.Lock()
	if session != f.session {
		f.mu.Unlock()
		return
	}
	f.timer = nil
	mode := f.mode
	f.mu.Unlock()
	switch mode {
	case modeDrain:
		f.drainTick(session)
	case modeProbe:
		f.probeTick(session)
	}
}

// drainTick drains one batch of the backlog into a closed breaker.
func (f *Fallback) drainTick(session uint64) {
	// The listener may not have heard yet of a trip made on another
	// goroutine (delivery is in order, not instant): check the breaker itself.
	if f.b.State() != Closed {
		f.idleIfCurrent(session)
		return
	}

	// While the breaker ramps up after a close it turns a share of calls
	// away, and a drained job it turns away comes straight back to the batch
	// queue: wait for the ramp to end before draining, so that the backlog
	// meets a primary that takes all of it.
	if end := f.b.RampEnd(); !end.IsZero() {
		f.mu.Lock()
		defer f.mu.Unlock()
		if session == f.session && f.mode == modeDrain {
			f.stats.RampWaits++
			f.scheduleInLocked(max(end.Sub(f.clk.Now()), f.cfg.DrainInterval))
		}
		return
	}

	if !f.beginCall(session) {
		return
	}
	moved, more, err := f.drain(f.cfg.BatchSize)

	f.mu.Lock()
	defer f.mu.Unlock()
	f.endCallLocked(moved, err)
	switch {
	case session != f.session:
		f.resumeLocked()
	case (err != nil || more) && !mutant.On("degrade/drain-one-batch"):
		f.scheduleLocked()
	default:
		f.mode = modeIdle
	}
}

// probeTick supplies probes to a half-open breaker: as many jobs as it has
// free probe slots, once the jobs of the last probe drain have been routed.
func (f *Fallback) probeTick(session uint64) {
	f.mu.Lock()
	waiting := f.unrouted > 0 || f.probesDone
	f.mu.Unlock()
	if waiting {
		// Defensive: no tick is scheduled in either case. Route wakes the
		// supply when it has seen the last drained job, and with the batch
		// queue empty there is nothing left to supply.
		return
	}

	state, free := f.b.freeProbeSlots()
	if state != HalfOpen {
		f.idleIfCurrent(session)
		return
	}
	if free <= 0 {
		// Every slot is taken, by the probes supplied or by live calls. Look
		// again in one interval: each probe ends within ProbeTimeout.
		f.mu.Lock()
		if session == f.session && f.timer == nil && !f.inFlight {
			f.scheduleLocked()
		}
		f.mu.Unlock()
		return
	}

	if !f.beginCall(session) {
		return
	}
	moved, more, err := f.drain(free)

	f.mu.Lock()
	defer f.mu.Unlock()
	f.endCallLocked(moved, err)
	if err == nil {
		f.stats.ProbeBatches++
	}
	if moved > 0 {
		f.stats.ProbeDrained += uint64(moved)
	}
	switch {
	case session != f.session:
		// The probes closed or re-opened the breaker during the call.
		f.resumeLocked()
	case err != nil:
		f.scheduleLocked()
	case !more:
		// The batch queue is empty: the breaker's fate is up to the jobs
		// just drained, if any, and to live traffic.
		f.probesDone = true
	default:
		// Jobs picked up and routed before the call returned are already
		// probing (or were turned away): wait only for the others.
		f.unrouted = max(0, moved-f.routedDuring)
		if f.unrouted == 0 {
			f.scheduleLocked()
		}
	}
}

// probeSeenLocked notes a half-open answer from Route: one of the drained
// probe jobs has been routed (or a live call has come; the supply need not
// tell them apart, since a probe slot is used either way). When the last
// drained job has been seen, the next tick looks for a free slot.
func (f *Fallback) probeSeenLocked() {
	switch {
	case f.unrouted > 0:
		f.unrouted--
		if f.unrouted == 0 && !f.probesDone && f.timer == nil && !f.inFlight {
			f.scheduleLocked()
		}
	case f.inFlight:
		f.routedDuring++
	}
}

// beginCall marks a drain call in flight for session, unless the session has
// ended or another call is running (whose completion schedules the next
// tick).
func (f *Fallback) beginCall(session uint64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if session != f.session || f.inFlight {
		return false
	}
	f.inFlight = true
	f.routedDuring = 0
	return true
}

// drain makes one DrainBatch call. A timer callback has no caller and so no
// caller's context: the call gets a fresh context from Background, bounded by
// DrainTimeout so that a hung store cannot hold the drain loop for ever. (Its
// deadline is wall-clock time, as every context deadline is; in the
// simulator the drainer is in memory and returns at once.)
func (f *Fallback) drain(n int) (moved int, more bool, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), f.cfg.DrainTimeout)
	defer cancel()
	return f.d.DrainBatch(ctx, f.clk.Now(), n)
}

// endCallLocked clears the in-flight mark and counts a drain call's result.
func (f *Fallback) endCallLocked(moved int, err error) {
	f.inFlight = false
	if err != nil {
		f.stats.DrainErrors++
	} else {
		f.stats.Batches++
	}
	if moved > 0 {
		f.stats.Drained += uint64(moved)
	}
}

// resumeLocked schedules the first tick of a session that began while a call
// from an older one was running.
func (f *Fallback) resumeLocked() {
	if f.mode != modeIdle {
		f.scheduleLocked()
	}
}

// idleIfCurrent stops session's work when the breaker has already left the
// state it was for; the listener will start the next session.
func (f *Fallback) idleIfCurrent(session uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if session == f.session {
		f.mode = modeIdle
		f.stopTimerLocked()
	}
}
