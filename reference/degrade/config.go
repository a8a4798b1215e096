package degrade

import (
	"errors"
	"fmt"
	"time"

	"github.com/faultline/faultline/reference/classify"
)

// Defaults for BreakerConfig. WithDefaults puts them in every zero field.
const (
	// DefaultConsecutiveFailures is how many counted failures in a row trip a
	// closed breaker.
	DefaultConsecutiveFailures = 5
	// DefaultFailureRatePercent is the share of counted failures among the
	// calls in the rolling window that trips a closed breaker.
	DefaultFailureRatePercent = 50
	// DefaultMinThroughput is how many calls the rolling window must hold
	// before the failure rate may trip the breaker, so that two failures out
	// of three calls at night do not.
	DefaultMinThroughput = 20
	// DefaultWindow is the length of the rolling window.
	DefaultWindow = 10 * time.Second
	// DefaultBuckets is how many buckets the rolling window is split into.
	DefaultBuckets = 10
	// DefaultOpenDuration is how long the breaker stays open at hysteresis
	// level 0.
	DefaultOpenDuration = 5 * time.Second
	// DefaultMaxOpenDuration caps the open duration however high the
	// hysteresis level climbs.
	DefaultMaxOpenDuration = 5 * time.Minute
	// DefaultBackoffFactor multiplies the open duration at each hysteresis
	// level.
	DefaultBackoffFactor = 2
	// DefaultStablePeriod is how long the breaker must stay closed for the
	// hysteresis level to decay one step, and the shortest closed spell after
	// which a trip does not count as flapping.
	DefaultStablePeriod = time.Minute
	// DefaultHalfOpenProbes is how many probe calls may be in flight at once
	// in half-open.
	DefaultHalfOpenProbes = 1
	// DefaultSuccessesToClose is how many probe successes close the breaker.
	DefaultSuccessesToClose = 3
	// DefaultProbeTimeout is how long a probe may stay unrecorded before its
	// slot is released and it counts as a failure.
	DefaultProbeTimeout = 10 * time.Second
	// DefaultRampUp is how long the admitted share of traffic takes to grow
	// back to 100% after the breaker closes.
	DefaultRampUp = 30 * time.Second
	// DefaultRampStartPercent is the share of calls admitted just after the
	// breaker closes.
	DefaultRampStartPercent = 10
	// DefaultSyncInterval is how often a fleet's breaker loads the fleet's
	// state when asked for calls.
	DefaultSyncInterval = 250 * time.Millisecond

	// NoRampUp, as BreakerConfig.RampUp, turns ramp-up off: a closing breaker
	// admits every call at once. (RampStartPercent 100 has the same effect.)
	NoRampUp time.Duration = -1

	// MaxBuckets bounds BreakerConfig.Buckets; the buckets are allocated when
	// the breaker is made.
	MaxBuckets = 10000
)

// DefaultCountedClasses are the failure classes that mean trouble with the
// dependency itself. It is a function so that no caller can change the
// default for everyone.
func DefaultCountedClasses() []classify.Class {
	return []classify.Class{classify.Transient, classify.RateLimited, classify.Indeterminate, classify.Critical}
}

// DefaultForceOpenClasses are the failure classes that open the breaker at
// once: bad credentials will not get better by being tried four more times.
func DefaultForceOpenClasses() []classify.Class {
	return []classify.Class{classify.Critical}
}

// DefaultCountedSources are the failure sources that mean trouble at the
// dependency or on the way to it: the network, the dependency's own answers,
// and its verdict on our credentials. System (the worker's own process, host
// or configuration) and Data (the job's payload) say nothing about the
// dependency and can never be counted.
func DefaultCountedSources() []classify.Source {
	return []classify.Source{classify.Network, classify.Dependency, classify.Auth}
}

// BreakerConfig configures a Breaker. The zero value of a field means its
// default (see WithDefaults); Validate checks the result.
type BreakerConfig struct {
	// Name is the dependency the breaker guards ("payment-gateway"). It
	// labels transitions and metrics and must not be empty.
	Name string

	// ConsecutiveFailures trips a closed breaker after this many counted
	// failures in a row. Successes reset the run; failures that do not count
	// (an uncounted class or source: a declined card, a local permission
	// error) and cancellations leave it as it is.
	ConsecutiveFailures int
	// FailureRatePercent (1-100) trips a closed breaker when counted failures
	// are at least this share of the calls in the rolling window...
	FailureRatePercent int
	// ...but only once the window holds at least MinThroughput calls
	// (successes plus counted failures).
	MinThroughput int
	// Window is the length of the rolling window, split into Buckets buckets
	// of Window/Buckets each; the oldest bucket expires as a whole.
	Window time.Duration
	// Buckets is the number of buckets in the window (1-MaxBuckets).
	Buckets int

	// OpenDuration is how long the breaker stays open at hysteresis level 0.
	OpenDuration time.Duration
	// MaxOpenDuration caps the open duration; it must be at least
	// OpenDuration.
	MaxOpenDuration time.Duration
	// BackoffFactor multiplies the open duration for each hysteresis level:
	// the breaker stays open min(MaxOpenDuration, OpenDuration*BackoffFactor^L).
	// 1 turns the backoff off.
	BackoffFactor int
	// StablePeriod: a trip less than StablePeriod after the breaker closed
	// counts as flapping and raises the hysteresis level by one; a closed
	// spell of n whole periods lowers it by n.
	StablePeriod time.Duration

	// HalfOpenProbes is the most probe calls in flight at once in half-open.
	HalfOpenProbes int
	// SuccessesToClose is how many probe successes close the breaker.
	SuccessesToClose int
	// ProbeTimeout releases a probe slot that has not been recorded within
	// this long, and counts the probe as a failure (which re-opens).
	ProbeTimeout time.Duration

	// RampUp: after closing, the share of calls admitted grows linearly from
	// RampStartPercent to 100% over RampUp; calls over the share are rejected
	// with ErrRampUp. NoRampUp (any negative value) turns ramp-up off.
	RampUp time.Duration
	// RampStartPercent (1-100) is the share admitted just after closing.
	RampStartPercent int

	// SyncInterval is how often a breaker its fleet shares (WithFleet)
	// loads the fleet's state when asked for calls: it learns of a trip
	// elsewhere at most this late. Unused by a breaker of its own.
	SyncInterval time.Duration

	// CountedClasses are the failure classes that count against the
	// dependency (when their source is one of the CountedSources). A nil
	// slice means DefaultCountedClasses. Permanent (a
	// declined card, bad data) and Canceled never count, and Validate rejects
	// them here, as it rejects an empty non-nil slice (the breaker could then
	// never trip on failures).
	CountedClasses []classify.Class
	// ForceOpenClasses open the breaker at once, from Closed or HalfOpen,
	// whatever the counts, when the failure's source is one of the
	// CountedSources. A nil slice means DefaultForceOpenClasses; an empty
	// non-nil slice ([]classify.Class{}) turns forced opening off.
	ForceOpenClasses []classify.Class
	// CountedSources are the failure sources that count against the
	// dependency: a failure counts only if both its class and its source are
	// counted, and forces the breaker open only if its source is counted. A
	// nil slice means DefaultCountedSources (Network, Dependency, Auth).
	// System (a permission error on a local file, a bug in the handler) and
	// Data (the job's payload) never count, and Validate rejects them here,
	// as it rejects classify.SourceNone, unknown sources and an empty non-nil
	// slice (the breaker could then never trip on failures).
	CountedSources []classify.Source
}

// WithDefaults returns a copy of c with every zero field set to its default.
// The class and source slices it fills are fresh copies.
func (c BreakerConfig) WithDefaults() BreakerConfig {
	setInt(&c.ConsecutiveFailures, DefaultConsecutiveFailures)
	setInt(&c.FailureRatePercent, DefaultFailureRatePercent)
	setInt(&c.MinThroughput, DefaultMinThroughput)
	setDur(&c.Window, DefaultWindow)
	setInt(&c.Buckets, DefaultBuckets)
	setDur(&c.OpenDuration, DefaultOpenDuration)
	setDur(&c.MaxOpenDuration, DefaultMaxOpenDuration)
	setInt(&c.BackoffFactor, DefaultBackoffFactor)
	setDur(&c.StablePeriod, DefaultStablePeriod)
	setInt(&c.HalfOpenProbes, DefaultHalfOpenProbes)
	setInt(&c.SuccessesToClose, DefaultSuccessesToClose)
	setDur(&c.ProbeTimeout, DefaultProbeTimeout)
	setDur(&c.RampUp, DefaultRampUp)
	setInt(&c.RampStartPercent, DefaultRampStartPercent)
	setDur(&c.SyncInterval, DefaultSyncInterval)
	if c.CountedClasses == nil {
		c.CountedClasses = DefaultCountedClasses()
	}
	if c.ForceOpenClasses == nil {
		c.ForceOpenClasses = DefaultForceOpenClasses()
	}
	if c.CountedSources == nil {
		c.CountedSources = DefaultCountedSources()
	}
	return c
}

// Validate reports the first field that is out of range, as a *ConfigError.
// It checks c as it is: call it on c.WithDefaults() (NewBreaker does) unless
// every field is set.
func (c BreakerConfig) Validate() error {
	switch {
	case c.Name == "":
		return cfgErr("Name", c.Name, "must name the dependency the breaker guards")
	case c.ConsecutiveFailures < 1:
		return cfgErr("ConsecutiveFailures", c.ConsecutiveFailures, "must be at least 1")
	case c.FailureRatePercent < 1 || c.FailureRatePercent > 100:
		return cfgErr("FailureRatePercent", c.FailureRatePercent, "must be between 1 and 100")
	case c.MinThroughput < 1:
		return cfgErr("MinThroughput", c.MinThroughput, "must be at least 1")
	case c.Window <= 0:
		return cfgErr("Window", c.Window, "must be positive")
	case c.Buckets < 1 || c.Buckets > MaxBuckets:
		return cfgErr("Buckets", c.Buckets, fmt.Sprintf("must be between 1 and %d", MaxBuckets))
	case c.Window/time.Duration(c.Buckets) <= 0:
		return cfgErr("Buckets", c.Buckets, "must not exceed Window in nanoseconds (each bucket needs a positive width)")
	case c.OpenDuration <= 0:
		return cfgErr("OpenDuration", c.OpenDuration, "must be positive")
	case c.MaxOpenDuration < c.OpenDuration:
		return cfgErr("MaxOpenDuration", c.MaxOpenDuration, "must be at least OpenDuration")
	case c.BackoffFactor < 1:
		return cfgErr("BackoffFactor", c.BackoffFactor, "must be at least 1 (1 turns the backoff off)")
	case c.StablePeriod <= 0:
		return cfgErr("StablePeriod", c.StablePeriod, "must be positive")
	case c.HalfOpenProbes < 1:
		return cfgErr("HalfOpenProbes", c.HalfOpenProbes, "must be at least 1")
	case c.SuccessesToClose < 1:
		return cfgErr("SuccessesToClose", c.SuccessesToClose, "must be at least 1")
	case c.ProbeTimeout <= 0:
		return cfgErr("ProbeTimeout", c.ProbeTimeout, "must be positive")
	case c.RampUp == 0:
		return cfgErr("RampUp", c.RampUp, "must be positive, or NoRampUp to turn ramp-up off")
	case c.SyncInterval < 0:
		return cfgErr("SyncInterval", c.SyncInterval, "must not be negative")
	case c.RampStartPercent < 1 || c.RampStartPercent > 100:
		return cfgErr("RampStartPercent", c.RampStartPercent, "must be between 1 and 100")
	case c.CountedClasses != nil && len(c.CountedClasses) == 0:
		return cfgErr("CountedClasses", "[]", "must not be empty (nil means the default)")
	case c.CountedSources != nil && len(c.CountedSources) == 0:
		return cfgErr("CountedSources", "[]", "must not be empty (nil means the default)")
	}
	for i, cl := range c.CountedClasses {
		if err := checkClass("CountedClasses", i, cl); err != nil {
			return err
		}
	}
	for i, cl := range c.ForceOpenClasses {
		if err := checkClass("ForceOpenClasses", i, cl); err != nil {
			return err
		}
	}
	for i, s := range c.CountedSources {
		if err := checkSource("CountedSources", i, s); err != nil {
			return err
		}
	}
	return nil
}

// checkClass rejects classes that can never mean trouble with the dependency.
func checkClass(field string, i int, cl classify.Class) error {
	f := fmt.Sprintf("%s[%d]", field, i)
	switch cl {
	case classify.Transient, classify.RateLimited, classify.Indeterminate, classify.Critical:
		return nil
	case classify.Permanent:
		return cfgErr(f, cl, "a permanent failure (a declined card, bad data) says nothing about the dependency's health")
	case classify.Canceled:
		return cfgErr(f, cl, "a cancellation is not a failure")
	case classify.None:
		return cfgErr(f, cl, "none is not a failure class")
	default:
		return cfgErr(f, cl, "unknown class")
	}
}

// checkSource rejects sources that can never mean trouble with the
// dependency.
func checkSource(field string, i int, s classify.Source) error {
	f := fmt.Sprintf("%s[%d]", field, i)
	switch s {
	case classify.Network, classify.Dependency, classify.Auth:
		return nil
	case classify.System:
		return cfgErr(f, s, "a failure of the worker's own process, host or configuration says nothing about the dependency's health")
	case classify.Data:
		return cfgErr(f, s, "a failure of the job's own data says nothing about the dependency's health")
	case classify.SourceNone:
		return cfgErr(f, s, "none is not a failure source")
	default:
		return cfgErr(f, s, "unknown source")
	}
}

// Defaults for FallbackConfig.
const (
	// DefaultBatchSize is the most jobs one drain call moves back to the main
	// queue (asynq moves at most 100 per forwarding call for the same reason:
	// a short, bounded step).
	DefaultBatchSize = 100
	// DefaultDrainInterval is the time between drain calls.
	DefaultDrainInterval = time.Second
	// DefaultDrainTimeout bounds one drain call.
	DefaultDrainTimeout = 5 * time.Second
)

// FallbackConfig configures a Fallback. The zero value of a field means its
// default.
type FallbackConfig struct {
	// BatchSize is the most jobs one DrainBatch call may move.
	BatchSize int
	// DrainInterval is the time from the breaker closing, or going half-open,
	// to the first drain call, and between drain calls.
	DrainInterval time.Duration
	// DrainTimeout bounds one DrainBatch call (its context's deadline).
	DrainTimeout time.Duration
}

// WithDefaults returns a copy of c with every zero field set to its default.
func (c FallbackConfig) WithDefaults() FallbackConfig {
	setInt(&c.BatchSize, DefaultBatchSize)
	setDur(&c.DrainInterval, DefaultDrainInterval)
	setDur(&c.DrainTimeout, DefaultDrainTimeout)
	return c
}

// Validate reports the first field that is out of range, as a *ConfigError.
func (c FallbackConfig) Validate() error {
	switch {
	case c.BatchSize < 1:
		return cfgErr("BatchSize", c.BatchSize, "must be at least 1")
	case c.DrainInterval <= 0:
		return cfgErr("DrainInterval", c.DrainInterval, "must be positive")
	case c.DrainTimeout <= 0:
		return cfgErr("DrainTimeout", c.DrainTimeout, "must be positive")
	}
	return nil
}

// ErrInvalidConfig is what every *ConfigError unwraps to, for callers that
// only need to know that a configuration was rejected.
var ErrInvalidConfig = errors.New("degrade: invalid configuration")

// ConfigError reports a configuration field that is out of range.
type ConfigError struct {
	// Field names the field, as spelt in the config struct
	// ("MaxOpenDuration", "CountedClasses[2]").
	Field string
	// Value is the rejected value.
	Value any
	// Reason says what the field must be.
	Reason string
}

// Error names the field, its value and what it must be.
func (e *ConfigError) Error() string {
	return fmt.Sprintf("degrade: invalid %s %v: %s", e.Field, e.Value, e.Reason)
}

// Unwrap returns ErrInvalidConfig.
func (e *ConfigError) Unwrap() error { return ErrInvalidConfig }

func cfgErr(field string, value any, reason string) error {
	return &ConfigError{Field: field, Value: value, Reason: reason}
}

func setInt(p *int, def int) {
	if *p == 0 {
		*p = def
	}
}

func setDur(p *time.Duration, def time.Duration) {
	if *p == 0 {
		*p = def
	}
}
