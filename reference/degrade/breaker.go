package degrade

import (
	"errors"
	"fmt"
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

// State is a breaker's state.
type State uint8

// The states. The zero value is Closed, the state a breaker starts in.
const (
	// Closed: calls pass, and their outcomes are counted.
	Closed State = iota
	// Open: calls are rejected with ErrOpen until the open duration elapses.
	Open
	// HalfOpen: a few probe calls test the dependency; the rest are rejected
	// with ErrProbeLimit.
	HalfOpen
)

var stateNames = [...]string{"closed", "open", "half-open"}

// String returns "closed", "open" or "half-open".
func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("state(%d)", uint8(s))
}

// Rejections returned by Allow. They are plain sentinels, so a rejection
// allocates nothing; match them with errors.Is.
var (
	// ErrOpen: the breaker is open; the call was not made. Divert the job or
	// fail it fast.
	ErrOpen = errors.New("degrade: circuit breaker is open")
	// ErrProbeLimit: the breaker is half-open and every probe slot is taken.
	ErrProbeLimit = errors.New("degrade: circuit breaker is half-open and all probe slots are taken")
	// ErrRampUp: the breaker has just closed and is ramping traffic back up;
	// this call is over the share admitted at this instant.
	ErrRampUp = errors.New("degrade: circuit breaker is ramping up and this call is over the admitted share")
)

// Reasons given in Transition.Reason. They are constants, so that metrics may
// use them as labels.
const (
	// ReasonConsecutiveFailures: ConsecutiveFailures counted failures in a row.
	ReasonConsecutiveFailures = "consecutive-failures"
	// ReasonFailureRate: the failure rate over the rolling window reached
	// FailureRatePercent with at least MinThroughput calls.
	ReasonFailureRate = "failure-rate"
	// ReasonForced: a failure of one of the ForceOpenClasses from one of the
	// CountedSources.
	ReasonForced = "forced"
	// ReasonProbeFailed: a probe failed with a counted failure.
	ReasonProbeFailed = "probe-failed"
	// ReasonProbeTimeout: a probe was not recorded within ProbeTimeout.
	ReasonProbeTimeout = "probe-timeout"
	// ReasonOpenElapsed: the open duration elapsed.
	ReasonOpenElapsed = "open-elapsed"
	// ReasonProbesSucceeded: SuccessesToClose probes succeeded.
	ReasonProbesSucceeded = "probes-succeeded"
)

// Permit is the breaker's leave to make one call. Report the call's outcome
// with Record, exactly once. A permit remembers the breaker's generation, so a
// result that arrives after the breaker has moved on (a simulated call that
// completes in a later event) is ignored rather than miscounted. The zero
// Permit is never valid.
type Permit struct {
	gen   uint64
	probe uint64
}

// IsProbe reports whether the permit is for a half-open probe call.
func (p Permit) IsProbe() bool { return p.probe != 0 }

type outcomeKind uint8

const (
	outcomeNeutral outcomeKind = iota
	outcomeSuccess
	outcomeFailure
)

// Outcome is the result of a permitted call, made with Success, Failure or
// Canceled. The zero Outcome is neutral, like Canceled.
type Outcome struct {
	kind   outcomeKind
	class  classify.Class
	source classify.Source
}

// Success is the outcome of a call the dependency served.
func Success() Outcome { return Outcome{kind: outcomeSuccess} }

// Failure is the outcome of a failed call, given the classifier's whole
// verdict on its error: what the failure means (its Class) and where it came
// from (its Source). A failure counts against the dependency only if its class
// is one of the breaker's CountedClasses and its source one of its
// CountedSources, and forces the breaker open only if its class is one of the
// ForceOpenClasses and its source is counted: a permission error on a local
// file (critical, from the worker's own system) says nothing about the
// payment gateway. Failures that do not count (a declined card, a handler
// bug, a verdict with no source) are tallied as ignored and are otherwise
// neutral. A verdict of class classify.Canceled gives Canceled().
func Failure(c classify.Classification) Outcome {
	if c.Class == classify.Canceled {
		return Canceled()
	}
	return Outcome{kind: outcomeFailure, class: c.Class, source: c.Source}
}

// Canceled is the outcome of a call that was stopped (a shutdown, a lost
// lease) before it told anything about the dependency. It is neutral: it
// releases a probe slot and counts nothing.
func Canceled() Outcome { return Outcome{kind: outcomeNeutral} }

// String returns "success", "canceled" or "failure(<class>/<source>)".
func (o Outcome) String() string {
	switch o.kind {
	case outcomeSuccess:
		return "success"
	case outcomeFailure:
		return "failure(" + o.class.String() + "/" + o.source.String() + ")"
	default:
		return "canceled"
	}
}

// Transition is one change of a breaker's state, as given to the listeners
// added with OnStateChange.
type Transition struct {
	// Breaker is the breaker's Name.
	Breaker string
	// From and To are the states before and after.
	From, To State
	// At is the clock's time of the change.
	At time.Time
	// Reason is one of the Reason constants.
	Reason string
	// OpenFor is how long the breaker will stay open, when To is Open.
	OpenFor time.Duration
	// Level is the hysteresis level after the change.
	Level int
}

// Stats is a snapshot of a breaker's state and counters, for a metrics
// adapter. The counters only grow.
type Stats struct {
	// State, Level and Generation are the breaker's state, hysteresis level
	// (as of the last transition; decay is applied at the next trip) and
	// generation (incremented by every transition).
	State      State
	Level      int
	Generation uint64

	// Transitions by target state.
	ToOpen, ToHalfOpen, ToClosed uint64

	// Admitted counts permits given in Closed, Probes permits given in
	// HalfOpen.
	Admitted, Probes uint64
	// Rejections by reason: ErrOpen, ErrProbeLimit, ErrRampUp.
	RejectedOpen, RejectedProbeLimit, RejectedRampUp uint64

	// Successes counts recorded successes.
	Successes uint64
	// CountedFailures counts failures that counted against the dependency,
	// probe timeouts included.
	CountedFailures uint64
	// IgnoredFailures counts failures that do not count against the
	// dependency: an uncounted class (a declined card) or an uncounted source
	// (a local permission error, a handler bug).
	IgnoredFailures uint64
	// Canceled counts neutral outcomes.
	Canceled uint64
	// Stale counts results ignored because their permit was from an older
	// generation, or was a probe already released (recorded twice, or after
	// its timeout).
	Stale uint64
	// ProbeTimeouts counts probes released by ProbeTimeout.
	ProbeTimeouts uint64
	// ForcedOpens counts trips caused by one of the ForceOpenClasses (from
	// one of the CountedSources).
	ForcedOpens uint64
	// FleetErrors counts the calls to the fleet's BreakerStore that failed
	// (WithFleet): the breaker worked alone meanwhile.
	FleetErrors uint64
}

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

// tripLocked opens the breaker from Closed or HalfOpen, adjusting the
// hysteresis level first: a re-trip from HalfOpen, or a trip soon after the
// last close, raises it; a trip after n whole stable periods closed lowers it
// by n (decay is computed here, lazily, so that it needs no timer).
func (b *Breaker) tripLocked(now time.Time, reason string) {
	switch b.state {
	case HalfOpen:
		b.raiseLevel()
	case Closed:
		if b.hasClosed {
			since := now.Sub(b.closedAt)
			if since < b.cfg.StablePeriod {
				b.raiseLevel()
			} else if periods := int64(since / b.cfg.StablePeriod); periods >= int64(b.level) {
				b.level = 0
			} else {
				b.level -= int(periods)
			}
		}
	}
	b.openFor = openDuration(b.cfg.OpenDuration, b.cfg.MaxOpenDuration, b.cfg.BackoffFactor, b.level)
	b.openUntil = now.Add(b.openFor)
	b.setStateLocked(now, Open, reason)
	gen := b.gen
	b.openTimer = b.clk.AfterFunc(b.openFor, func() { b.openElapsed(gen) })
	if b.fleet != nil {
		b.publishLocked(now)
	}
}

func (b *Breaker) raiseLevel() {
	if b.level < b.maxLevel && !mutant.On("degrade/no-hysteresis") {
		b.level++
	}
}

// toHalfOpenLocked moves an open breaker to HalfOpen.
func (b *Breaker) toHalfOpenLocked(now time.Time) {
	b.probeSuccesses = 0
	b.setStateLocked(now, HalfOpen, ReasonOpenElapsed)
}

// closeLocked closes a half-open breaker (or, adopting its fleet's close,
// an open one) with a fresh window and, unless it is turned off, starts
// ramp-up.
func (b *Breaker) closeLocked(now time.Time, reason string) {
	b.closedAt = now
	b.hasClosed = true
	b.consecutive = 0
	clear(b.buckets)
	b.ramping = b.cfg.RampUp > 0 && b.cfg.RampStartPercent < 100
	b.rampCredit = 0
	b.setStateLocked(now, Closed, reason)
}

// setStateLocked leaves the current state (stopping its timers), enters to,
// starts a new generation and queues the transition for the listeners.
func (b *Breaker) setStateLocked(now time.Time, to State, reason string) {
	from := b.state
	if b.fleet != nil {
		b.fleet.probing = false
	}
	switch from {
	case Open:
		if b.openTimer != nil {
			b.openTimer.Stop()
			b.openTimer = nil
		}
	case HalfOpen:
		for i := range b.probes {
			b.probes[i].timer.Stop()
			b.probes[i] = probe{}
		}
		b.probes = b.probes[:0]
	case Closed:
		b.ramping = false
	}
	b.state = to
	b.gen++
	t := Transition{Breaker: b.cfg.Name, From: from, To: to, At: now, Reason: reason, Level: b.level}
	switch to {
	case Open:
		b.stats.ToOpen++
		t.OpenFor = b.openFor
	case HalfOpen:
		b.stats.ToHalfOpen++
	case Closed:
		b.stats.ToClosed++
	}
	b.pending = append(b.pending, t)
}

// releaseProbeLocked frees the slot of probe id and stops its timeout. It
// reports false if no such probe is outstanding.
func (b *Breaker) releaseProbeLocked(id uint64) bool {
	for i := range b.probes {
		if b.probes[i].id == id {
			b.probes[i].timer.Stop()
			last := len(b.probes) - 1
			b.probes[i] = b.probes[last]
			b.probes[last] = probe{}
			b.probes = b.probes[:last]
			return true
		}
	}
	return false
}

// openElapsed is the open timer's callback: the edge that reads the clock
// for a transition no caller asked for.
func (b *Breaker) openElapsed(gen uint64) {
	now := b.clk.Now()
	b.mu.Lock()
	now = b.seenLocked(now)
	if b.gen == gen && b.state == Open {
		b.openTimer = nil
		switch {
		case b.fleet != nil && now.Before(b.openUntil):
			// A fleet's breaker waiting for another's probes: a sync.
			b.fleet.nextSync = time.Time{}
			b.syncLocked(now)
			if b.state == Open && b.openTimer == nil {
				b.armLocked(now, b.cfg.SyncInterval)
			}
		case b.fleet == nil || b.claimLocked(now):
			b.toHalfOpenLocked(now)
		}
	}
	b.unlockAndDeliver()
}

// probeExpired is a probe timeout's callback: the probe's slot is released
// and the probe counts as a failure, which re-opens the breaker.
func (b *Breaker) probeExpired(gen, id uint64) {
	now := b.clk.Now()
	b.mu.Lock()
	now = b.seenLocked(now)
	if b.gen == gen && b.state == HalfOpen && b.releaseProbeLocked(id) {
		b.stats.ProbeTimeouts++
		b.stats.CountedFailures++
		b.tripLocked(now, ReasonProbeTimeout)
	}
	b.unlockAndDeliver()
}

// unlockAndDeliver releases b.mu, then delivers the queued transitions unless
// another call is already delivering them (it will deliver these too, in
// order). The caller holds b.mu.
func (b *Breaker) unlockAndDeliver() {
	if b.delivering || b.pendingHead == len(b.pending) {
		b.mu.Unlock()
		return
	}
	b.delivering = true
	for b.pendingHead < len(b.pending) {
		t := b.pending[b.pendingHead]
		b.pending[b.pendingHead] = Transition{}
		b.pendingHead++
		listeners := b.listeners
		b.mu.Unlock()
		b.notify(listeners, t)
		b.mu.Lock()
	}
	b.pending = b.pending[:0]
	b.pendingHead = 0
	b.delivering = false
	b.mu.Unlock()
}

// notify calls the listeners with t, lock not held. If a listener panics, the
// delivery flag is cleared so that the next call delivers what is left, and
// the panic goes on up.
func (b *Breaker) notify(listeners []func(Transition), t Transition) {
	done := false
	defer func() {
		if !done {
			b.mu.Lock()
			b.delivering = false
			b.mu.Unlock()
		}
	}()
	for _, f := range listeners {
		f(t)
	}
	done = true
}

// openDuration returns min(max, base*factor^level) without overflow.
func openDuration(base, max time.Duration, factor, level int) time.Duration {
	d := base
	f := time.Duration(factor)
	for i := 0; i < level && d < max && factor > 1; i++ {
		if d > max/f {
			return max
		}
		d *= f
	}
	if d > max {
		d = max
	}
	return d
}

// levelCap returns the lowest level whose open duration is max: raising the
// level further would change nothing but how long it takes to decay.
func levelCap(base, max time.Duration, factor int) int {
	level := 0
	for factor > 1 && openDuration(base, max, factor, level) < max {
		level++
	}
	return level
}
