package retry

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/faultline/faultline/reference/classify"
)

// Policy decides the fate of failed attempts. It holds the random stream the
// backoff is drawn from, a retry budget per dependency, and counters.
//
// A Policy is safe for concurrent use; its decisions then depend on the order
// in which the calls take its lock. Driven from one goroutine with a seeded
// *rand.Rand, as the simulator drives it, it is deterministic.
type Policy struct {
	cfg Config
	// emission is the budget's emission interval T (one token per Refill),
	// and tolerance its burst tolerance tau = T·(Burst-1).
	emission, tolerance time.Duration

	mu  sync.Mutex
	rng *rand.Rand
	// tat is the theoretical arrival time of each dependency's next token,
	// the whole state of the generic cell rate algorithm. An entry at or
	// before now is a full bucket, the same as no entry.
	tat map[string]time.Time
	// sweepAt is the number of entries at which the next insertion first
	// drops the entries of idle dependencies.
	sweepAt int
	stats   Stats
}

// minSweep is the fewest budget entries worth sweeping.
const minSweep = 64

// New returns a policy for cfg (defaults applied) drawing its backoff from
// rng. It fails with a *ConfigError if cfg is invalid, and with ErrNilRand if
// rng is nil. The policy owns rng from then on: share it with nothing else,
// or the draws, and so the decisions, depend on the other user.
func New(cfg Config, rng *rand.Rand) (*Policy, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("new retry policy: %w", err)
	}
	if rng == nil {
		return nil, fmt.Errorf("new retry policy: %w", ErrNilRand)
	}
	return &Policy{
		cfg:       cfg,
		emission:  cfg.Budget.Refill,
		tolerance: cfg.Budget.Refill * time.Duration(cfg.Budget.Burst-1),
		rng:       rng,
		tat:       make(map[string]time.Time),
		sweepAt:   minSweep,
	}, nil
}

// Config returns the policy's configuration, defaults applied.
func (p *Policy) Config() Config { return p.cfg }

// Decide returns what becomes of a job whose attempt a failed with the
// classification c, at time now. The rules are listed in the package
// documentation. A Retry spends a token of the dependency's budget, and a
// Release must not be counted as an attempt by the caller.
func (p *Policy) Decide(a Attempt, c classify.Classification, now time.Time) Decision {
	d := Decision{Attempts: a.Attempts, Class: c.Class}
	switch c.Class {
	case classify.Canceled:
		d.Action, d.Reason = Release, Canceled
	case classify.Transient, classify.RateLimited:
		// Retryable.
	case classify.Indeterminate:
		if !a.keyPredatesFirstAttempt() {
			d.Action, d.Reason = DeadLetter, IndeterminateWithoutKey
		}
	case classify.Permanent:
		d.Action, d.Reason = DeadLetter, PermanentError
	case classify.Critical:
		d.Action, d.Reason = DeadLetter, CriticalError
	default: // None, or a class this policy predates.
		d.Action, d.Reason = DeadLetter, Unclassified
	}
	if d.Action == 0 && a.Attempts >= p.cfg.MaxAttempts {
		d.Action, d.Reason = DeadLetter, ExhaustedAttempts
	}

	p.mu.Lock()
	defer p.mu.Unlock()
	if d.Action == 0 {
		p.scheduleLocked(&d, &a, &c, now)
	}
	p.stats.Decisions++
	p.stats.ByAction[d.Action]++
	p.stats.ByReason[d.Reason]++
	return d
}

// scheduleLocked fills in a retry: its backoff or hint, then its turn in the
// dependency's budget. The caller holds p.mu.
func (p *Policy) scheduleLocked(d *Decision, a *Attempt, c *classify.Classification, now time.Time) {
	d.Action = Retry
	if c.RetryAfter > 0 {
		d.Reason = RetryAfterHint
		d.Delay = min(c.RetryAfter, p.cfg.MaxRetryAfter)
	} else {
		d.Reason = BackoffDelay
		// Full jitter: uniform in [0, ceiling]. Uint64N(ceiling+1) draws as
		// Int64N(ceiling+1) would, and cannot overflow at MaxInt64.
		limit := ceiling(p.cfg.BaseDelay, p.cfg.MaxDelay, max(a.Attempts, 1)-1)
		d.Backoff = time.Duration(p.rng.Uint64N(uint64(limit) + 1))
		d.Delay = d.Backoff
	}
	d.At = now.Add(d.Delay)
	if p.cfg.Budget.Disabled {
		return
	}
	// The token is taken now, when the failure happens, and the wait for it
	// is added to the delay. Taking it at the retry's own time instead lets a
	// retry booked far ahead (a 60s Retry-After) hold back every retry
	// decided after it that is due sooner; taking it now keeps reservations
	// in time order, and a storm of failures still pushes its retries out at
	// the refill rate, on top of their jitter, even when they all carry the
	// same Retry-After.
	if wait := p.reserveLocked(a.Dependency, now); wait > 0 {
		d.Reason = BudgetDelay
		d.At = d.At.Add(wait)
		d.Delay += wait
		p.stats.BudgetDelayed++
		p.stats.BudgetDelay = addSaturating(p.stats.BudgetDelay, wait)
	}
}

// reserveLocked takes a token of dep's budget at time now and returns how
// long until it is available: zero while the bucket holds tokens. It is the
// generic cell rate algorithm: the bucket is full when the theoretical
// arrival time (TAT) is at or before now, each token moves the TAT on by the
// emission interval T, and a token is available once the TAT is within the
// tolerance tau = T·(Burst-1) of the time. The caller holds p.mu.
func (p *Policy) reserveLocked(dep string, now time.Time) time.Duration {
	tat, ok := p.tat[dep]
	if !ok {
		p.sweepLocked(now)
	}
	if tat.Before(now) {
		tat = now
	}
	p.tat[dep] = tat.Add(p.emission)
	p.stats.Dependencies = len(p.tat)
	return max(tat.Add(-p.tolerance).Sub(now), 0)
}

// sweepLocked drops the budget entries of idle dependencies (a TAT at or
// before now: a full bucket) once the map has grown to sweepAt, so that a
// stream of distinct dependency names cannot grow it without bound. The
// threshold doubles with the live entries, which keeps sweeping amortised
// O(1) per decision. The caller holds p.mu.
func (p *Policy) sweepLocked(now time.Time) {
	if len(p.tat) < p.sweepAt {
		return
	}
	for dep, tat := range p.tat {
		if !tat.After(now) {
			delete(p.tat, dep)
		}
	}
	p.sweepAt = max(minSweep, 2*len(p.tat))
}

// addSaturating returns a+b for non-negative durations, capped at the
// largest duration.
func addSaturating(a, b time.Duration) time.Duration {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
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
	// their backoff or hint.
	BudgetDelayed uint64
	// BudgetDelay is the total time the budget added to those retries,
	// capped at the largest duration.
	BudgetDelay time.Duration
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
