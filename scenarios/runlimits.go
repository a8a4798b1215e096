package scenarios

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// The default RunLimits.
const (
	// DefaultMaxWorkers bounds the worker slots.
	DefaultMaxWorkers = 10_000
	// DefaultMaxSamples bounds the points of a run's time series.
	DefaultMaxSamples = 100_000
	// DefaultMaxInFlight bounds the jobs a run tracks at once (about
	// 1.3 KB of memory each, so some 1.3 GB at the limit): far more than a
	// 24-hour run at 100 jobs a second keeps unfinished, or a DLQ of
	// 100,000 dead letters.
	DefaultMaxInFlight = 1_000_000
	// DefaultMaxDuration bounds a run's duration: 400 days.
	DefaultMaxDuration = 400 * 24 * time.Hour
)

// RunLimits bound what one run may use, so that a mistaken or hostile
// scenario is refused with an error naming the limit instead of exhausting
// memory. A zero field takes its default. They are not part of the scenario
// file: faultline's --max-workers, --max-samples, --max-in-flight and
// --max-duration set them.
type RunLimits struct {
	// MaxWorkers bounds the worker slots (Workers.Count and a SetWorkers
	// step's); default DefaultMaxWorkers.
	MaxWorkers int
	// MaxSamples bounds the points of the time series, Duration/Sample;
	// default DefaultMaxSamples.
	MaxSamples int
	// MaxInFlight bounds the jobs the run tracks at once: created and not
	// yet succeeded (queued, running, scheduled, in fallback, held or
	// dead-lettered); default DefaultMaxInFlight. A run that would pass it
	// stops with an error matching ErrLimit.
	MaxInFlight int
	// MaxDuration bounds the run's duration (Scenario.Duration); default
	// DefaultMaxDuration, room for a scenario of nights (an auto-retry
	// once a night, say) that a mistaken one of centuries has not.
	MaxDuration time.Duration
}

// WithDefaults returns l with its zero fields set to the defaults.
func (l RunLimits) WithDefaults() RunLimits {
	if l.MaxWorkers == 0 {
		l.MaxWorkers = DefaultMaxWorkers
	}
	if l.MaxSamples == 0 {
		l.MaxSamples = DefaultMaxSamples
	}
	if l.MaxInFlight == 0 {
		l.MaxInFlight = DefaultMaxInFlight
	}
	if l.MaxDuration == 0 {
		l.MaxDuration = DefaultMaxDuration
	}
	return l
}

// LimitError is a limit a run would pass.
type LimitError struct {
	// What is counted ("jobs in flight"), Max the limit, Got what the run
	// would need (at least), Flag the faultline flag that lifts it.
	What, Flag string
	Max, Got   int64
	// Hint says what else to do, e.g. "coarsen the sampling".
	Hint string
	// Duration says Max and Got are durations (time.Duration's
	// nanoseconds), What what lasts them ("a run").
	Duration bool
}

// Error returns e.g. "12000 workers, more than the limit of 10000; lift
// the limit with --max-workers", or for a duration "a run of 2562047h
// (106751 days), more than the limit of 9600h (400 days); …".
func (e *LimitError) Error() string {
	msg := fmt.Sprintf("%d %s, more than the limit of %d; ", e.Got, e.What, e.Max)
	if e.Duration {
		msg = fmt.Sprintf("%s of %s, more than the limit of %s; ", e.What, longDuration(time.Duration(e.Got)), longDuration(time.Duration(e.Max)))
	}
	if e.Hint != "" {
		msg += e.Hint + " or "
	}
	return msg + "lift the limit with " + e.Flag
}

// Is matches ErrLimit.
func (e *LimitError) Is(target error) bool { return target == ErrLimit }

// ErrLimit is matched (errors.Is) by the error that stops a run at one of
// its limits (the jobs in flight, say): like a canceled context, it makes
// the run's verdict reports.Interrupted — its expectations are not
// evaluated, and it is not a pass.
var ErrLimit = errors.New("run limit reached")

// longDuration writes d without its zero minutes and seconds ("9600h"),
// and its whole days from one day on ("9600h (400 days)").
func longDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	if days := d / (24 * time.Hour); days == 1 {
		s += " (1 day)"
	} else if days > 1 {
		s += fmt.Sprintf(" (%d days)", days)
	}
	return s
}
