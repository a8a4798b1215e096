package retry

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/internal/mutant"
)

// Policy decides the fate of failed attempts. It holds the random stream the
// backoff is drawn from, a retry budget per dependency, and counters.
//
// A Policy is safe for concurrent use; its decisions then depend on the order
// in which the calls take its lock. Driven from one goroutine with a seeded
// *rand.Rand, as the simulator drives it, it is deterministic.
type Policy struct {
	cfg Config
	// width is the budget's slot width W = Burst·Refill.
	width time.Duration

	mu  sync.Mutex
	rng *rand.Rand
	// epoch is the start of slot 0 of every budget: the first decision time
	// the budget saw, once started. latest is the latest decision time it
	// has seen; the slots before latest's have ended.
	epoch, latest time.Time
	started       bool
	// calendars holds each dependency's booked slots. A dependency with no
	// booking in a slot that has not ended is the same as no entry.
	calendars map[string]*calendar
	// sweepAt is the number of entries at which the next insertion first
	// drops the entries of idle dependencies.
	sweepAt int
	stats   Stats
	// booker keeps a fleet-scoped budget (Budget.Scope == ScopeFleet).
	booker Booker
}

// minSweep is the fewest budget entries worth sweeping.
const minSweep = 64

// New returns a policy for cfg (defaults applied) drawing its backoff from
// rng. It fails with a *ConfigError if cfg is invalid, and with ErrNilRand if
// rng is nil, and with ErrNoBooker for a fleet-scoped budget without
// WithBooker. The policy owns rng from then on: share it with nothing else,
// or the draws, and so the decisions, depend on the other user.
func New(cfg Config, rng *rand.Rand, opts ...Option) (*Policy, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("new retry policy: %w", err)
	}
	if rng == nil {
		return nil, fmt.Errorf("new retry policy: %w", ErrNilRand)
	}
	p := &Policy{
		cfg:       cfg,
		width:     cfg.Budget.Window(),
		rng:       rng,
		calendars: make(map[string]*calendar),
		sweepAt:   minSweep,
	}
	for _, o := range opts {
		o(p)
	}
	if cfg.Budget.Scope == ScopeFleet && p.booker == nil && !mutant.On("retry/budget-per-process") {
		return nil, fmt.Errorf("new retry policy: %w", ErrNoBooker)
	}
	if cfg.Budget.Scope != ScopeFleet || mutant.On("retry/budget-per-process") {
		p.booker = nil
	}
	return p, nil
}

// Config returns the policy's configuration, defaults applied.
func (p *Policy) Config() Config { return p.cfg }

// Decide returns what becomes of a job whose attempt a failed with the
// classification c, at time now. The rules are listed in the package
// documentation. A Retry books its run time in the dependency's budget, and
// a Release must not be counted as an attempt by the caller. Decisions whose
// now goes backwards are still safe; see the package documentation.
// A fleet-scoped budget is booked with no deadline; DecideContext bounds it.
func (p *Policy) Decide(a Attempt, c classify.Classification, now time.Time) Decision {
	return p.DecideContext(context.Background(), a, c, now)
}

// DecideContext is Decide, with ctx bounding the booking of a fleet-scoped
// budget in its Booker (a round trip to the store). A booking that fails
// or is cut short lets the retry run as due: the budget fails open.
func (p *Policy) DecideContext(ctx context.Context, a Attempt, c classify.Classification, now time.Time) Decision {
	d := Decision{Attempts: a.Attempts, Class: c.Class}
	switch c.Class {
	case classify.Canceled:
		if mutant.On("retry/canceled-uses-attempt") {
			break
		}
		d.Action, d.Reason = Release, Canceled
	case classify.Transient, classify.RateLimited:
		// Retryable.
	case classify.Indeterminate:
		if !a.keyPredatesFirstAttempt() && !mutant.On("retry/indeterminate-without-key") {
			d.Action, d.Reason = DeadLetter, IndeterminateWithoutKey
		}
	case classify.Permanent:
		if mutant.On("retry/permanent-retried") {
			break
		}
		d.Action, d.Reason = DeadLetter, PermanentError
	case classify.Critical:
		d.Action, d.Reason = DeadLetter, CriticalError
	default: // None, or a class this policy predates.
		d.Action, d.Reason = DeadLetter, Unclassified
	}
	if d.Action == 0 && (a.Attempts >= p.cfg.MaxAttempts && !mutant.On("retry/max-attempts-off-by-one") || a.Attempts > p.cfg.MaxAttempts) {
		d.Action, d.Reason = DeadLetter, ExhaustedAttempts
	}

	p.mu.Lock()
	defer p.mu.Unlock()
	if d.Action == 0 {
		p.scheduleLocked(ctx, &d, &a, &c, now)
	}
	p.stats.Decisions++
	p.stats.ByAction[d.Action]++
	p.stats.ByReason[d.Reason]++
	return d
}

// scheduleLocked fills in a retry: its backoff or hint, then its slot in the
// dependency's budget. The caller holds p.mu, which a fleet-scoped
// booking gives up for its round trip.
func (p *Policy) scheduleLocked(ctx context.Context, d *Decision, a *Attempt, c *classify.Classification, now time.Time) {
	d.Action = Retry
	if c.RetryAfter > 0 && !mutant.On("retry/ignore-retry-after") {
		d.Reason = RetryAfterHint
		d.Delay = min(c.RetryAfter, p.cfg.MaxRetryAfter)
	} else {
		d.Reason = BackoffDelay
		// Full jitter: uniform in [0, ceiling]. Uint64N(ceiling+1) draws as
		// Int64N(ceiling+1) would, and cannot overflow at MaxInt64.
		limit := ceiling(p.cfg.BaseDelay, p.cfg.MaxDelay, max(a.Attempts, 1)-1)
		d.Backoff = time.Duration(p.rng.Uint64N(uint64(limit) + 1))
		d.Delay = d.Backoff
		if mutant.On("retry/no-jitter") {
			d.Backoff, d.Delay = limit, limit
		}
	}
	d.At = now.Add(d.Delay)
	if p.cfg.Budget.Disabled || mutant.On("retry/no-budget") {
		return
	}
	// The budget books the time the retry will reach the dependency, not the
	// time of the failure: failures decided apart but due together share one
	// slot's room, and a retry booked far ahead takes room only where it
	// runs, so it holds back nothing due sooner.
	var at time.Time
	var exceeded bool
	if p.booker != nil {
		at, exceeded = p.bookSharedLocked(ctx, a.Dependency, now, d.At)
	} else {
		at, exceeded = p.bookLocked(a.Dependency, now, d.At)
	}
	if exceeded {
		p.stats.BudgetExceeded++
	}
	if wait := at.Sub(d.At); wait > 0 {
		d.Reason = BudgetDelay
		d.At = at
		d.Delay = addSaturating(d.Delay, wait)
		p.stats.BudgetDelayed++
		p.stats.BudgetDelay = addSaturating(p.stats.BudgetDelay, wait)
	}
}

// bookLocked books a retry of dep due at due, decided at now, in dep's
// budget, and returns when it runs: at due if due's slot has room, else at
// an instant drawn uniformly in the first later slot with room (never past
// due+MaxWait). If there is none within MaxWait after due, the retry runs
// at due+MaxWait over the budget, without a booking, and exceeded is true.
// A retry due outside the calendar's horizon (about 292 years, the range of a time.Duration, either side of
// the epoch) is not budgeted. The caller holds p.mu.
func (p *Policy) bookLocked(dep string, now, due time.Time) (at time.Time, exceeded bool) {
	if !p.started {
		p.epoch, p.latest, p.started = now, now, true
	}
	if now.After(p.latest) {
		p.latest = now
	}
	w := int64(p.width)
	off := int64(due.Sub(p.epoch))
	if off < math.MinInt64+w || off > math.MaxInt64-w {
		return due, false
	}
	// The slots before floor have ended. A retry due in one (decided with a
	// now behind the latest) runs no earlier than the start of floor, where
	// its booking can still be counted.
	floor := floorDiv(int64(p.latest.Sub(p.epoch)), w)
	first := max(floorDiv(off, w), floor)
	last := floorDiv(min(addSaturating(off, int64(p.cfg.Budget.MaxWait)), math.MaxInt64-w), w)

	c := p.calendars[dep]
	if c == nil {
		p.sweepLocked(floor)
		c = new(calendar)
		p.calendars[dep] = c
		p.stats.Dependencies = len(p.calendars)
	}
	c.prune(floor)
	k, ok := c.book(first, last, p.cfg.Budget.Burst)
	if !ok {
		return due.Add(p.cfg.Budget.MaxWait), true
	}
	return p.spreadLocked(p.epoch.Add(time.Duration(k*w)), due), false
}

// spreadLocked returns when a retry due at due and booked in the slot that
// starts at start runs: at due if the slot holds it, else at an instant
// drawn in the slot. The caller holds p.mu.
func (p *Policy) spreadLocked(start, due time.Time) time.Time {
	if !start.After(due) {
		return due
	}
	// Spread over the slot: the retries pushed into one slot would
	// otherwise all run at its first instant, a synchronized wave of up to
	// Burst, which is what the jitter is there to prevent. The slot still
	// holds at most Burst, and none runs past MaxWait.
	span := min(int64(p.width), int64(due.Add(p.cfg.Budget.MaxWait).Sub(start))+1)
	return start.Add(time.Duration(p.rng.Int64N(max(span, 1))))
}

// bookSharedLocked is bookLocked for a fleet-scoped budget: the slots are
// the Booker's, numbered from the Unix epoch, and the slots before now's
// have ended. It gives up p.mu for the booking's round trip. A booking that
// fails lets the retry run at due, unbudgeted, counted in
// Stats.BudgetUnavailable (the budget fails open: a store outage must not
// hold back or dead-letter retries, and the breakers still guard the
// dependency). A retry due outside the years 1678–2262 is not budgeted.
func (p *Policy) bookSharedLocked(ctx context.Context, dep string, now, due time.Time) (time.Time, bool) {
	w := int64(p.width)
	lo, hi := time.Unix(0, math.MinInt64+w), time.Unix(0, math.MaxInt64-w)
	if due.Before(lo) || due.After(hi) || now.Before(lo) || now.After(hi) {
		return due, false
	}
	off := due.UnixNano()
	floor := floorDiv(now.UnixNano(), w)
	first := max(floorDiv(off, w), floor)
	last := floorDiv(min(addSaturating(off, int64(p.cfg.Budget.MaxWait)), math.MaxInt64-w), w)
	last = min(last, first+MaxScan-1)
	key := BudgetKey{Dependency: dep, Width: p.width}
	p.mu.Unlock()
	k, ok, err := p.booker.Book(ctx, key, floor, first, last, p.cfg.Budget.Burst)
	p.mu.Lock()
	switch {
	case err != nil:
		p.stats.BudgetUnavailable++
		return due, false
	case !ok:
		return due.Add(p.cfg.Budget.MaxWait), true
	}
	return p.spreadLocked(time.Unix(0, k*w), due), false
}

// sweepLocked drops the budgets of idle dependencies (no booking in slot
// floor or later) once the map has grown to sweepAt, so that a stream of
// distinct dependency names cannot grow it without bound. The threshold
// doubles with the live entries, which keeps sweeping amortised O(1) per
// decision. The caller holds p.mu.
func (p *Policy) sweepLocked(floor int64) {
	if len(p.calendars) < p.sweepAt {
		return
	}
	for dep, c := range p.calendars {
		if c.idle(floor) {
			delete(p.calendars, dep)
		}
	}
	p.sweepAt = max(minSweep, 2*len(p.calendars))
}

// Stats is a snapshot of a policy's counters, for a metrics adapter.
type Stats struct {
	// Decisions is the number of decisions made.
	Decisions uint64
	// ByAction counts decisions by action: ByAction[Retry] is the number of
	// retries. Index 0 is unused.
	ByAction [maxAction + 1]uint64
	// ByReason counts decisions by reason: ByReason[BudgetDelay] is the
	// number of retries the budget delayed. Index 0 is unused.
	ByReason [maxReason + 1]uint64
	// BudgetDelayed is the number of retries the budget pushed later than
	// their backoff or hint, BudgetExceeded ones included.
	BudgetDelayed uint64
	// BudgetDelay is the total time the budget added to those retries,
	// capped at the largest duration.
	BudgetDelay time.Duration
	// BudgetExceeded is the number of retries that found no room in their
	// dependency's budget within Budget.MaxWait and run MaxWait late, over
	// the budget. A count that keeps growing means the retries a dependency
	// gets exceed its budget for longer than MaxWait: sustained overload.
	BudgetExceeded uint64
	// BudgetUnavailable is the number of retries a fleet-scoped budget
	// could not book (its Booker failed: the store unreachable) and that
	// ran as due, unbudgeted: the budget fails open.
	BudgetUnavailable uint64
	// Dependencies is the number of dependencies whose budget the policy
	// tracks; idle ones are dropped from time to time.
	Dependencies int
}

// Stats returns a snapshot of the policy's counters.
func (p *Policy) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}
