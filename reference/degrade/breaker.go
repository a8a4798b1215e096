package degrade

import (
	"math/bits"
	"sync"
	"time"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/clock"
	"github.com/faultline/faultline/reference/internal/mutant"
)

// The breaker is written here, on the injected clock, rather than taken from
// a library: gobreaker and failsafe-go read the wall clock (time.Now inside
// their state machines), so they cannot serve the deterministic simulator,
// where time moves only when the driver advances it.

// bucket is one slice of the rolling window: the calls (successes and counted
// failures) recorded while the window index was idx.
type bucket struct {
	idx      int64
	calls    int64
	failures int64
}

// probe is one outstanding half-open probe and its timeout.
type probe struct {
	id    uint64
	timer clock.Timer
}

// numClasses bounds the class lookup tables.
const numClasses = int(classify.Canceled) + 1

// numSources bounds the source lookup table.
const numSources = int(classify.Dependency) + 1

// rampScale is the fixed-point unit of the ramp-up share: parts per million.
const rampScale = 1_000_000

// Breaker is a circuit breaker with hysteresis on an injected clock. It is
// safe for concurrent use: the live runner calls it from worker goroutines and
// real-clock timer callbacks run on goroutines of their own; the simulator
// calls it from one goroutine and gets the same behaviour deterministically.
type Breaker struct {
	// Fixed at construction.
	cfg         BreakerConfig
	clk         clock.Clock
	counted     [numClasses]bool
	force       [numClasses]bool
	countedSrc  [numSources]bool
	epoch       time.Time
	bucketWidth time.Duration
	maxLevel    int

	mu    sync.Mutex
	state State
	gen   uint64
	level int
	// closedAt is when the breaker last closed from HalfOpen; hasClosed says
	// whether it ever did (a first trip is not flapping).
	closedAt  time.Time
	hasClosed bool
	// last is the latest time seen; an edge's reading is raised to it, so
	// that state time never runs backwards when concurrent callers read the
	// clock before taking the lock in a different order.
	last time.Time

	// Closed.
	consecutive int
	buckets     []bucket
	ramping     bool
	rampCredit  uint64

	// Open.
	openFor   time.Duration
	openUntil time.Time
	openTimer clock.Timer

	// HalfOpen.
	probes         []probe
	nextProbe      uint64
	probeSuccesses int

	stats Stats
	// fleet links the breaker to its fleet's (WithFleet), or is nil.
	fleet *fleetLink

	// Listener delivery: transitions are queued under mu and delivered, in
	// order, by whichever call finds no delivery in progress.
	listeners   []func(Transition)
	pending     []Transition
	pendingHead int
	delivering  bool
}

// NewBreaker returns a closed breaker configured by cfg.WithDefaults(), or a
// *ConfigError. It starts no goroutine and schedules no timer.
func NewBreaker(cfg BreakerConfig, clk clock.Clock, opts ...BreakerOption) (*Breaker, error) {
	if clk == nil {
		return nil, cfgErr("clock", nil, "must not be nil")
	}
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	now := clk.Now()
	cfg.CountedClasses = append([]classify.Class(nil), cfg.CountedClasses...)
	cfg.ForceOpenClasses = append([]classify.Class(nil), cfg.ForceOpenClasses...)
	cfg.CountedSources = append([]classify.Source(nil), cfg.CountedSources...)
	b := &Breaker{
		cfg:         cfg,
		clk:         clk,
		epoch:       now,
		last:        now,
		bucketWidth: cfg.Window / time.Duration(cfg.Buckets),
		buckets:     make([]bucket, cfg.Buckets),
		gen:         1,
	}
	for _, c := range cfg.CountedClasses {
		b.counted[c] = true
	}
	for _, c := range cfg.ForceOpenClasses {
		b.force[c] = true
	}
	for _, s := range cfg.CountedSources {
		b.countedSrc[s] = true
	}
	b.maxLevel = levelCap(cfg.OpenDuration, cfg.MaxOpenDuration, cfg.BackoffFactor)
	for _, o := range opts {
		o(b)
	}
	return b, nil
}

// Name returns the name of the dependency the breaker guards.
func (b *Breaker) Name() string { return b.cfg.Name }

// State returns the breaker's state. The move from Open to HalfOpen is made
// by a clock timer when the open duration elapses (or by an Allow that comes
// first), not by State.
func (b *Breaker) State() State {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state
}

// OpenUntil returns when an open breaker goes half-open, or the zero time
// when the breaker is not open.
func (b *Breaker) OpenUntil() time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state != Open {
		return time.Time{}
	}
	return b.openUntil
}

// RampEnd returns when a closed breaker's ramp-up ends, or the zero time when
// it is not ramping up: the time from which it admits every call again.
func (b *Breaker) RampEnd() time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state != Closed || !b.ramping {
		return time.Time{}
	}
	end := b.closedAt.Add(b.cfg.RampUp)
	if !end.After(b.seenLocked(b.clk.Now())) {
		return time.Time{}
	}
	return end
}

// Stats returns a snapshot of the breaker's state and counters.
func (b *Breaker) Stats() Stats {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.stats
	s.State = b.state
	s.Level = b.level
	s.Generation = b.gen
	return s
}

// OnStateChange adds a listener called with every later transition. Listeners
// are called without the breaker's lock held, one transition at a time, in
// the order the transitions happened, so a listener may call the breaker
// (State, Allow, Record) without deadlocking; a transition it causes is
// delivered after it returns. A listener may run on the goroutine of any call
// into the breaker, or of a clock timer: it should be quick and must not wait
// for another caller of the breaker. A nil f is ignored.
func (b *Breaker) OnStateChange(f func(Transition)) {
	if f == nil {
		return
	}
	b.mu.Lock()
	// Copy on write: a delivery in progress keeps ranging over the old slice.
	b.listeners = append(b.listeners[:len(b.listeners):len(b.listeners)], f)
	b.mu.Unlock()
}

// Allow asks leave to make one call. It returns a Permit, or one of ErrOpen,
// ErrProbeLimit and ErrRampUp without allocating. Every permit must be given
// back to Record.
func (b *Breaker) Allow() (Permit, error) {
	now := b.clk.Now()
	b.mu.Lock()
	now = b.seenLocked(now)
	p, err := b.allowLocked(now)
	b.unlockAndDeliver()
	return p, err
}

// Record reports the outcome of a permitted call. A permit from an older
// generation, or a probe already released, is counted as stale and otherwise
// ignored.
//
// In Closed, a success resets the run of consecutive failures, a counted
// failure extends it, and both enter the rolling window. A failure that does
// not count (an uncounted class, such as a declined card, or an uncounted
// source, such as the worker's own host) is neutral: it neither extends nor
// resets the run and does not enter the window, so however many cards are
// declined the breaker neither trips nor forgets real trouble. In HalfOpen
// every outcome releases the probe's slot; a success counts towards closing,
// a counted failure re-opens, and the rest are neutral.
func (b *Breaker) Record(p Permit, o Outcome) {
	now := b.clk.Now()
	b.mu.Lock()
	now = b.seenLocked(now)
	b.recordLocked(now, p, o)
	b.unlockAndDeliver()
}

// freeProbeSlots returns the breaker's state and, when it is HalfOpen, how
// many probe slots are free: what a Fallback may supply from its batch queue.
func (b *Breaker) freeProbeSlots() (State, int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state != HalfOpen {
		return b.state, 0
	}
	return b.state, b.cfg.HalfOpenProbes - len(b.probes)
}

// seenLocked returns now, or the latest time already seen if that is later.
func (b *Breaker) seenLocked(now time.Time) time.Time {
	if now.Before(b.last) {
		return b.last
	}
	b.last = now
	return now
}

// allowLocked is Allow's core; the caller holds b.mu.
func (b *Breaker) allowLocked(now time.Time) (Permit, error) {
	if b.fleet != nil {
		b.syncLocked(now)
	}
	if b.state == Closed {
		if b.ramping && !b.rampAdmitLocked(now) {
			b.stats.RejectedRampUp++
			return Permit{}, ErrRampUp
		}
		b.stats.Admitted++
		return Permit{gen: b.gen}, nil
	}
	if b.state == Open {
		if now.Before(b.openUntil) {
			b.stats.RejectedOpen++
			return Permit{}, ErrOpen
		}
		// The timer is due but has not run yet (it runs on another goroutine
		// on a real clock, or later at this instant on a virtual one). A
		// fleet's breaker probes only if it wins the claim.
		if b.fleet != nil && !b.claimLocked(now) {
			return b.allowLocked(now) // the state it adopted decides
		}
		b.toHalfOpenLocked(now)
	}
	if len(b.probes) >= b.cfg.HalfOpenProbes {
		b.stats.RejectedProbeLimit++
		return Permit{}, ErrProbeLimit
	}
	b.nextProbe++
	gen, id := b.gen, b.nextProbe
	t := b.clk.AfterFunc(b.cfg.ProbeTimeout, func() { b.probeExpired(gen, id) })
	b.probes = append(b.probes, probe{id: id, timer: t})
	b.stats.Probes++
	return Permit{gen: gen, probe: id}, nil
}

// rampAdmitLocked decides one call during ramp-up. The admitted share grows
// linearly from RampStartPercent to 100% over RampUp; admission is a
// deterministic error-diffusion counter: each call adds the current share (in
// parts per million) to a credit, and a call is admitted when the credit
// reaches one whole call. Over any stretch of calls the admitted fraction is
// the average share over that stretch, within one call.
func (b *Breaker) rampAdmitLocked(now time.Time) bool {
	elapsed := now.Sub(b.closedAt)
	if elapsed >= b.cfg.RampUp {
		b.ramping = false
		return true
	}
	if elapsed < 0 {
		elapsed = 0
	}
	start := uint64(b.cfg.RampStartPercent) * (rampScale / 100)
	// (100-start)% * elapsed / RampUp in 128 bits: elapsed < RampUp, so the
	// quotient is below rampScale and Div64 cannot overflow.
	hi, lo := bits.Mul64(rampScale-start, uint64(elapsed))
	grow, _ := bits.Div64(hi, lo, uint64(b.cfg.RampUp))
	b.rampCredit += start + grow
	if b.rampCredit >= rampScale {
		b.rampCredit -= rampScale
		return true
	}
	return false
}

// recordLocked is Record's core; the caller holds b.mu.
func (b *Breaker) recordLocked(now time.Time, p Permit, o Outcome) {
	if p.gen != b.gen || b.state == Open {
		b.stats.Stale++
		return
	}
	if b.state == HalfOpen && !b.releaseProbeLocked(p.probe) {
		b.stats.Stale++
		return
	}
	switch o.kind {
	case outcomeSuccess:
		b.stats.Successes++
		if b.state == HalfOpen {
			b.probeSuccesses++
			if b.probeSuccesses >= b.cfg.SuccessesToClose {
				b.closeLocked(now, ReasonProbesSucceeded)
				if b.fleet != nil {
					b.publishLocked(now)
				}
			}
			return
		}
		b.consecutive = 0
		b.bucketLocked(now).calls++
		if b.fleet != nil {
			b.fleet.note(now, b.bucketWidth, false)
			b.syncLocked(now)
		}
	case outcomeFailure:
		// The source gates both: trouble on the worker's own host or in the
		// job's data neither counts nor forces the breaker open.
		src := int(o.source) < len(b.countedSrc) && b.countedSrc[o.source]
		forced := src && b.classIn(&b.force, o.class)
		if !forced && !(src && b.classIn(&b.counted, o.class)) && !mutant.On("degrade/count-every-failure") {
			b.stats.IgnoredFailures++
			return
		}
		b.stats.CountedFailures++
		if forced {
			b.stats.ForcedOpens++
			b.tripLocked(now, ReasonForced)
			return
		}
		if b.state == HalfOpen {
			if mutant.On("degrade/probe-failure-ignored") {
				return
			}
			b.tripLocked(now, ReasonProbeFailed)
			return
		}
		b.consecutive++
		bk := b.bucketLocked(now)
		bk.calls++
		bk.failures++
		if b.fleet != nil {
			b.fleet.note(now, b.bucketWidth, true)
		}
		if b.consecutive >= b.cfg.ConsecutiveFailures && !mutant.On("degrade/never-trips") {
			b.tripLocked(now, ReasonConsecutiveFailures)
			return
		}
		calls, failures := b.windowLocked(now)
		if calls >= int64(b.cfg.MinThroughput) && failures*100 >= int64(b.cfg.FailureRatePercent)*calls && !mutant.On("degrade/never-trips") {
			b.tripLocked(now, ReasonFailureRate)
			return
		}
		if b.fleet != nil {
			// A failure is news: the fleet's counts hear of it at once
			// (successes wait for the next sync).
			b.fleet.nextSync = time.Time{}
			b.syncLocked(now)
		}
	default:
		b.stats.Canceled++
	}
}

func (b *Breaker) classIn(set *[numClasses]bool, c classify.Class) bool {
	return int(c) < len(set) && set[c]
}

// windowIndex returns the rolling-window index of now. Edges pass now
// through seenLocked, so it is never before epoch and never decreases.
func (b *Breaker) windowIndex(now time.Time) int64 {
	return int64(now.Sub(b.epoch) / b.bucketWidth)
}

// bucketLocked returns the bucket for now, emptied if it last held an
// expired index.
func (b *Breaker) bucketLocked(now time.Time) *bucket {
	idx := b.windowIndex(now)
	bk := &b.buckets[idx%int64(len(b.buckets))]
	if bk.idx != idx {
		*bk = bucket{idx: idx}
	}
	return bk
}

// windowLocked sums the calls and failures of the buckets still in the
// window at now.
func (b *Breaker) windowLocked(now time.Time) (calls, failures int64) {
	cur := b.windowIndex(now)
	oldest := cur - int64(len(b.buckets)) + 1
	for i := range b.buckets {
		if bk := &b.buckets[i]; bk.idx >= oldest && bk.idx <= cur {
			calls += bk.calls
			failures += bk.failures
		}
	}
	return calls, failures
}
