package retry

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// The defaults WithDefaults puts in the zero fields of a Config.
const (
	// DefaultMaxAttempts is the total number of attempts, the first one
	// included: three retries, then the dead-letter queue.
	DefaultMaxAttempts = 4
	// DefaultBaseDelay is the backoff ceiling of the first retry.
	DefaultBaseDelay = time.Second
	// DefaultMaxDelay caps the backoff ceiling.
	DefaultMaxDelay = 5 * time.Minute
	// DefaultMaxRetryAfter caps a dependency's Retry-After hint, so that a
	// broken or hostile dependency cannot park a job for days.
	DefaultMaxRetryAfter = time.Hour
	// DefaultBudgetBurst is the number of retries a dependency's budget lets
	// through at once.
	DefaultBudgetBurst = 10
	// DefaultBudgetRefill is the time the budget takes to earn back one
	// retry: ten retries a second per dependency once the burst is spent.
	DefaultBudgetRefill = 100 * time.Millisecond
)

// Config tunes a Policy. The zero value is usable: every zero field takes its
// default (see WithDefaults).
type Config struct {
	// MaxAttempts is the total number of attempts, the first one included.
	// 1 means never retry. Default DefaultMaxAttempts.
	MaxAttempts int
	// BaseDelay is the backoff ceiling of the first retry; it doubles with
	// every retry after that. Default DefaultBaseDelay.
	BaseDelay time.Duration
	// MaxDelay caps the backoff ceiling. It must not be less than BaseDelay.
	// Default DefaultMaxDelay.
	MaxDelay time.Duration
	// MaxRetryAfter caps a dependency's Retry-After hint. Default
	// DefaultMaxRetryAfter.
	MaxRetryAfter time.Duration
	// Budget is the retry budget each dependency gets.
	Budget BudgetConfig
}

// BudgetConfig tunes the per-dependency retry budget. It has a token
// bucket's rate and burst, Burst retries at once and one per Refill on
// average, and caps the times retries run, not the times they are decided:
// time is cut into aligned slots of width Window() = Burst·Refill, and at
// most Burst retries of one dependency run in any one slot, besides those
// over the budget (see MaxWait). A window of length Window() that straddles
// two slots can so see 2·Burst retries, and any window of length w at most
// Burst·(1+⌈w/Window()⌉). A retry due in a full slot runs at an instant
// drawn within the first later slot with room, at most MaxWait late.
type BudgetConfig struct {
	// Disabled turns the budget off: retries run at their backoff or hint
	// time however many there are. The other fields are still validated.
	Disabled bool
	// Burst is the number of retries of one dependency that may run in one
	// slot. Default DefaultBudgetBurst.
	Burst int
	// Refill is the average time between retries the budget lets through,
	// once a burst is spent: one slot is Burst·Refill long. Default
	// DefaultBudgetRefill.
	Refill time.Duration
	// MaxWait bounds the budget's delay. A retry that finds no slot with
	// room within MaxWait after its backoff or hint time runs MaxWait late
	// anyway, over the budget, and is counted in Stats.BudgetExceeded:
	// sustained overload shows as a counter, not as retries scheduled hours
	// out, and never as a dead letter. The default, for a zero MaxWait, is
	// MaxDelay (after its own default), the longest a backoff waits.
	MaxWait time.Duration
	// Scope is whose budget it is: ScopeProcess (the zero value), one
	// budget per policy, so a fleet of N processes lets N times the
	// retries through; or ScopeFleet, one budget shared by every policy
	// booking through the same Booker (New's WithBooker), so the
	// configured budget bounds the whole fleet.
	Scope Scope
}

// Scope is whose retry budget a policy books in.
type Scope uint8

const (
	// ScopeProcess is a budget per policy, kept in its memory: a fleet of
	// N processes has N budgets.
	ScopeProcess Scope = iota
	// ScopeFleet is one budget for every policy sharing a Booker (on
	// Redis, the store's), its slots aligned to the Unix epoch so every
	// process cuts time the same way.
	ScopeFleet
)

// String names the scope as a scenario writes it: "process" or "fleet".
func (s Scope) String() string {
	if s == ScopeFleet {
		return "fleet"
	}
	return "process"
}

// Window returns the width of the budget's slots, Burst·Refill. It is only
// meaningful for a valid config, defaults applied.
func (b BudgetConfig) Window() time.Duration {
	return time.Duration(b.Burst) * b.Refill
}

// WithDefaults returns c with every zero field set to its default. Negative
// values are kept, for Validate to reject.
func (c Config) WithDefaults() Config {
	if c.MaxAttempts == 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	if c.BaseDelay == 0 {
		c.BaseDelay = DefaultBaseDelay
	}
	if c.MaxDelay == 0 {
		c.MaxDelay = DefaultMaxDelay
	}
	if c.MaxRetryAfter == 0 {
		c.MaxRetryAfter = DefaultMaxRetryAfter
	}
	if c.Budget.Burst == 0 {
		c.Budget.Burst = DefaultBudgetBurst
	}
	if c.Budget.Refill == 0 {
		c.Budget.Refill = DefaultBudgetRefill
	}
	if c.Budget.MaxWait == 0 {
		c.Budget.MaxWait = c.MaxDelay
	}
	return c
}

// Validate reports the first field of c that New would reject, as a
// *ConfigError. It checks c with defaults applied, so a zero field is always
// valid; the error's Value is the value after defaults. It never panics.
func (c Config) Validate() error {
	c = c.WithDefaults()
	switch {
	case c.MaxAttempts < 1:
		return &ConfigError{Field: "MaxAttempts", Value: c.MaxAttempts, Reason: "must be at least 1"}
	case c.BaseDelay < 0:
		return &ConfigError{Field: "BaseDelay", Value: c.BaseDelay, Reason: "must not be negative"}
	case c.MaxDelay < 0:
		return &ConfigError{Field: "MaxDelay", Value: c.MaxDelay, Reason: "must not be negative"}
	case c.MaxDelay < c.BaseDelay:
		return &ConfigError{Field: "MaxDelay", Value: c.MaxDelay,
			Reason: "must not be less than BaseDelay (" + c.BaseDelay.String() + "); a zero MaxDelay means " + DefaultMaxDelay.String()}
	case c.MaxRetryAfter < 0:
		return &ConfigError{Field: "MaxRetryAfter", Value: c.MaxRetryAfter, Reason: "must not be negative"}
	case c.Budget.Burst < 1:
		return &ConfigError{Field: "Budget.Burst", Value: c.Budget.Burst, Reason: "must be at least 1"}
	case c.Budget.Refill <= 0:
		return &ConfigError{Field: "Budget.Refill", Value: c.Budget.Refill, Reason: "must be positive"}
	case int64(c.Budget.Burst) > math.MaxInt64/int64(c.Budget.Refill):
		return &ConfigError{Field: "Budget.Burst", Value: c.Budget.Burst,
			Reason: "times Budget.Refill (" + c.Budget.Refill.String() + ") overflows a time.Duration"}
	case c.Budget.MaxWait < 0:
		return &ConfigError{Field: "Budget.MaxWait", Value: c.Budget.MaxWait, Reason: "must not be negative"}
	case c.Budget.Scope == ScopeFleet && c.Budget.Window() < time.Microsecond && !c.Budget.Disabled:
		return &ConfigError{Field: "Budget.Refill", Value: c.Budget.Refill,
			Reason: "times Budget.Burst must be at least 1µs for a fleet-scoped budget (its slots are numbered from the Unix epoch, and a store script holds the number exactly only below 2^53)"}
	case c.Budget.Scope > ScopeFleet:
		return &ConfigError{Field: "Budget.Scope", Value: c.Budget.Scope, Reason: "must be ScopeProcess or ScopeFleet"}
	}
	return nil
}

// ErrInvalidConfig is matched, with errors.Is, by every *ConfigError.
var ErrInvalidConfig = errors.New("invalid retry config")

// ErrNilRand is returned by New when it is given no random source: the policy
// never falls back to the global one, which would make the simulator's runs
// irreproducible.
var ErrNilRand = errors.New("nil *rand.Rand")

// ConfigError names a Config field that New rejects, with its value and why.
type ConfigError struct {
	// Field is the field's path in Config, e.g. "MaxDelay" or
	// "Budget.Refill".
	Field string
	// Value is the rejected value, after defaults.
	Value any
	// Reason says what the value must be.
	Reason string
}

// Error says which field is wrong and why.
func (e *ConfigError) Error() string {
	return fmt.Sprintf("%v: %s = %v: %s", ErrInvalidConfig, e.Field, e.Value, e.Reason)
}

// Unwrap returns ErrInvalidConfig.
func (e *ConfigError) Unwrap() error { return ErrInvalidConfig }

// Backoff returns the backoff ceiling of the retry-th retry (0 for the first):
// min(MaxDelay, BaseDelay·2^retry), with cfg's defaults applied. The delay a
// Policy draws is uniform in [0, Backoff(cfg, retry)]. It never overflows,
// however large retry is; a negative retry counts as 0, and an invalid cfg
// gives a result in [0, max(0, MaxDelay)].
func Backoff(cfg Config, retry int) time.Duration {
	cfg = cfg.WithDefaults()
	return ceiling(cfg.BaseDelay, cfg.MaxDelay, retry)
}

// ceiling is min(limit, base·2^n), computed without overflow, and never
// negative.
func ceiling(base, limit time.Duration, n int) time.Duration {
	if base <= 0 || limit <= 0 {
		return 0
	}
	if n < 0 {
		n = 0
	}
	// base·2^n > limit exactly when base > ⌊limit/2^n⌋, and a duration has
	// fewer than 63 value bits.
	if n >= 63 || base > limit>>uint(n) {
		return limit
	}
	return base << uint(n)
}
