package worker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"time"

	"github.com/faultline/faultline/reference/alert"
	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/degrade"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/internal/mutant"
	"github.com/faultline/faultline/reference/job"
	"github.com/faultline/faultline/reference/retry"
)

// Classifier says what an error means: *classify.Classifier.
type Classifier interface {
	Classify(err error, scope classify.Scope) classify.Classification
}

// Policy decides the fate of a failed attempt: *retry.Policy.
type Policy interface {
	Decide(a retry.Attempt, c classify.Classification, now time.Time) retry.Decision
}

// contextPolicy is a Policy whose decision may make a round trip (a
// fleet-scoped retry budget booked in the store), bounded by a context:
// *retry.Policy. Complete gives it the attempt's context.
type contextPolicy interface {
	DecideContext(ctx context.Context, a retry.Attempt, c classify.Classification, now time.Time) retry.Decision
}

// Alerter hears of every failed attempt and returns its alert's fingerprint:
// *alert.Alerter.
type Alerter interface {
	JobFailed(f alert.Failure) string
}

// Router decides whether a job may call its dependency now:
// *degrade.Fallback, or BreakerRouter for a breaker without a fallback.
type Router interface {
	Route() degrade.Route
}

// Recorder hears the outcome of a call its router permitted:
// *degrade.Breaker.
type Recorder interface {
	Record(p degrade.Permit, o degrade.Outcome)
}

// Guard protects one dependency: its router gives permits, its breaker
// hears how the permitted calls went. degrade.Fallback routes but does not
// record, so the two are given separately, usually a fallback and the
// breaker it routes through.
type Guard struct {
	Router  Router
	Breaker Recorder
}

// BreakerRouter routes through a breaker alone: a refusal still diverts
// the job to the fallback queue, where it waits until something drains it
// (a degrade.Fallback does; without one, an operator).
type BreakerRouter struct{ Breaker *degrade.Breaker }

// Route asks the breaker for a permit.
func (r BreakerRouter) Route() degrade.Route {
	p, err := r.Breaker.Allow()
	return degrade.Route{Primary: err == nil, Permit: p, Reason: err}
}

// Config configures a Core.
type Config struct {
	// Classifier and Policy are required.
	Classifier Classifier
	Policy     Policy
	// Alerter hears every failed attempt (not successes, not releases);
	// its routes decide who is told. Nil means no alerts: only for tests
	// of other parts.
	Alerter Alerter
	// Guards protect dependencies, by name; a job whose dependency has no
	// guard is never diverted.
	Guards map[string]Guard
	// OnError, if set, is called once per failed or stopped attempt, with
	// the error and its classification, before the retry policy decides.
	OnError func(j job.Job, c classify.Classification, err error)
	// Summary, if set, gives the payload fields an alert shows for a job
	// (redacted by the alerter on the way out). By default none.
	Summary func(j job.Job) map[string]any
}

// ErrInvalidConfig is matched by every *ConfigError of this package.
var ErrInvalidConfig = errors.New("invalid worker config")

// ConfigError names the invalid field of a configuration.
type ConfigError struct {
	Field, Reason string
}

// Error returns "worker config: Field: reason".
func (e *ConfigError) Error() string { return "worker config: " + e.Field + ": " + e.Reason }

// Is matches ErrInvalidConfig.
func (e *ConfigError) Is(target error) bool { return target == ErrInvalidConfig }

// Validate reports the first invalid field of c.
func (c Config) Validate() error {
	switch {
	case c.Classifier == nil:
		return &ConfigError{"Classifier", "is required"}
	case c.Policy == nil:
		return &ConfigError{"Policy", "is required"}
	}
	for _, name := range slices.Sorted(maps.Keys(c.Guards)) {
		if g := c.Guards[name]; g.Router == nil || g.Breaker == nil {
			return &ConfigError{fmt.Sprintf("Guards[%q]", name), "needs a Router and a Breaker"}
		}
	}
	return nil
}

// Core is the worker's decision maker: Begin before the handler runs,
// Complete after. It keeps no state of its own between calls and starts no
// goroutine; it is safe for concurrent use when its collaborators are.
type Core struct {
	cfg Config
}

// NewCore returns a core for cfg, or a *ConfigError.
func NewCore(cfg Config) (*Core, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.Guards = maps.Clone(cfg.Guards)
	return &Core{cfg: cfg}, nil
}

// Attempt is one attempt at a job, from Begin to Complete. Complete it
// exactly once: the breaker's permit is given back then.
type Attempt struct {
	// Job is the job as its attempt began: FirstAttemptAt is set (and
	// KeyRecordedAt, for a key that came without one), Attempts does not
	// count this attempt yet.
	Job job.Job
	// StartedAt is Begin's now.
	StartedAt time.Time
	// Diverted says the dependency's breaker refused the call: the attempt
	// did not begin; the caller applies Divert() instead of running the
	// handler. DivertReason is the breaker's rejection.
	Diverted     bool
	DivertReason error
	// History holds the failures of the job's earlier attempts, oldest
	// first, for the dead-letter entry; the driver fills it from where it
	// keeps them between attempts (Pipeline does, from its History).
	History []dlq.Failure
	// ShuttingDown is set by the driver when the worker's shutdown stopped
	// the attempt: the classifier then reads a cancellation as a release.
	ShuttingDown bool

	// permit is the breaker's, given back to breaker in Complete; breaker
	// is nil for an unguarded dependency.
	permit  degrade.Permit
	breaker Recorder
}

// Begin starts an attempt at j at now. It asks j's dependency for leave to
// call; when the breaker refuses, the attempt is Diverted and the job is
// left as it was. Otherwise it stamps the job's first attempt (and, on the
// first attempt, the time of an idempotency key that came without one: the
// key was there before the attempt began). The counted attempts grow in
// Complete, when the attempt turns out to count. A job without an ID or a
// task is a *job.InvalidError.
func (c *Core) Begin(j job.Job, now time.Time) (a Attempt, err error) {
	err = c.begin(&j, now, &a)
	return a, err
}

// begin is Begin filling in *a, which is zero: an Attempt is large, and
// Pipeline.Start builds it in its own result. *j is changed.
func (c *Core) begin(j *job.Job, now time.Time, a *Attempt) error {
	switch {
	case j.ID == "":
		return &job.InvalidError{Field: "ID", Reason: "is required"}
	case j.Task == "":
		return &job.InvalidError{Field: "Task", Reason: "is required"}
	}
	a.StartedAt = now
	if len(c.cfg.Guards) > 0 && j.Dependency != "" {
		if g, ok := c.cfg.Guards[j.Dependency]; ok {
			r := g.Router.Route()
			if !r.Primary {
				a.Job, a.Diverted, a.DivertReason = *j, true, r.Reason
				if a.DivertReason == nil {
					a.DivertReason = degrade.ErrOpen
				}
				return nil
			}
			a.permit, a.breaker = r.Permit, g.Breaker
		}
	}
	if j.FirstAttemptAt.IsZero() {
		j.FirstAttemptAt = now
		if j.IdempotencyKey != "" && j.KeyRecordedAt.IsZero() {
			j.KeyRecordedAt = now
		}
	}
	a.Job = *j
	return nil
}

// Divert returns the outcome of a diverted attempt: the job, unchanged, to
// the fallback queue.
func (a Attempt) Divert() Outcome {
	return Outcome{Action: Divert, Job: a.Job, At: a.StartedAt, DivertReason: a.DivertReason}
}

// Complete ends attempt a, whose handler returned err, at now, and returns
// what becomes of the job. The whole path of a failure, top to bottom:
//
//  1. classify err in the job's scope (dependency, task, now, shutdown);
//  2. tell the dependency's breaker how the call went;
//  3. call OnError;
//  4. ask the retry policy, counting this attempt;
//  5. record the failure, and for a dead job build its DLQ entry with every
//     failure so far;
//  6. raise the alert.
//
// A release (a shutdown stopped the attempt) is not a failure: it does not
// count as an attempt, is not recorded and raises no alert. Completing a
// Diverted attempt returns its Divert outcome and touches nothing.
func (c *Core) Complete(ctx context.Context, a Attempt, err error, now time.Time) Outcome {
	return c.CompleteAttempt(ctx, &a, err, now)
}

// CompleteAttempt is Complete with the attempt by reference, which it reads
// and does not change: a driver that keeps its attempts (the simulator's
// slots) spares a copy of the job per attempt.
func (c *Core) CompleteAttempt(ctx context.Context, a *Attempt, err error, now time.Time) (o Outcome) {
	if a.Diverted {
		return a.Divert()
	}
	if err == nil {
		// Built in the result: the job is copied once.
		o.Action, o.Job, o.At = Succeed, a.Job, now
		o.Job.Attempts++
		c.record(a, degrade.Success())
		return o
	}
	j := &a.Job

	// 1. What the error means, where it happened.
	verdict := c.cfg.Classifier.Classify(err, classify.Scope{
		Dependency: j.Dependency, Task: j.Task, Now: now, ShuttingDown: a.ShuttingDown,
	})
	// 2. The breaker: a declined card or a shutdown says nothing about the
	// dependency, and degrade.Failure knows which verdicts count.
	c.record(a, degrade.Failure(verdict))
	// 3. The per-error hook.
	if c.cfg.OnError != nil {
		c.cfg.OnError(*j, verdict, err)
	}
	// 4. The retry policy, with this attempt counted.
	counted := j.Attempts + 1
	ra := retry.Attempt{
		JobID: j.ID, Task: j.Task, Dependency: j.Dependency,
		Attempts:       counted,
		IdempotencyKey: j.IdempotencyKey, KeyRecordedAt: j.KeyRecordedAt,
		FirstAttemptAt: j.FirstAttemptAt,
	}
	var d retry.Decision
	if cp, ok := c.cfg.Policy.(contextPolicy); ok {
		d = cp.DecideContext(ctx, ra, verdict, now)
	} else {
		d = c.cfg.Policy.Decide(ra, verdict, now)
	}
	o = Outcome{Job: *j, At: now, Decision: d, Verdict: verdict, Err: err}
	switch d.Action {
	case retry.Release:
		o.Action = Release
		return o
	case retry.Retry:
		o.Action, o.At = Retry, d.At
	default:
		// DeadLetter, or an action a team's policy invented: a job nobody
		// knows what to do with is kept where a person sees it.
		o.Action = DeadLetter
	}
	o.Job.Attempts = counted
	if mutant.On("worker/retry-keeps-attempt-count") && o.Action == Retry {
		o.Job.Attempts = j.Attempts
	}

	// 5. The failure, and the dead job's entry with its whole history.
	o.Failure = dlq.Failure{At: now, Attempt: counted, Error: errorText(err), ErrorType: errorType(err), Verdict: verdict}
	if o.Action == DeadLetter {
		history := make([]dlq.Failure, 0, len(a.History)+1)
		history = append(append(history, a.History...), o.Failure)
		if mutant.On("worker/keep-last-error-only") {
			history = history[len(history)-1:]
		}
		reason := d.Reason.String()
		if d.Action != retry.DeadLetter {
			reason = "unknown-action:" + d.Action.String()
		}
		o.Entry = &dlq.Entry{
			Version:       dlq.EncodingVersion,
			Job:           o.Job,
			History:       history,
			FirstFailedAt: history[0].At,
			LastFailedAt:  now,
			Verdict:       verdict,
			Reason:        reason,
			SourceQueue:   o.Job.QueueName(),
			Status:        dlq.Failed, // the store records the change
		}
	}

	// 6. The alert: the alerter deduplicates, groups and routes by
	// severity; a critical failure pages.
	if c.cfg.Alerter != nil && !(mutant.On("worker/no-alert-on-dead-letter") && o.Action == DeadLetter) {
		f := alert.Failure{
			JobID: j.ID, Task: j.Task, Dependency: j.Dependency,
			Class: verdict.Class, Severity: verdict.Severity, Source: verdict.Source,
			Attempts: counted, Err: o.Failure.Error, DeadLettered: o.Action == DeadLetter,
		}
		if c.cfg.Summary != nil {
			f.Fields = c.cfg.Summary(*j)
		}
		o.Fingerprint = c.cfg.Alerter.JobFailed(f)
	}
	return o
}

// record gives the attempt's permit back to its breaker.
func (c *Core) record(a *Attempt, o degrade.Outcome) {
	if a.breaker != nil {
		a.breaker.Record(a.permit, o)
	}
}

// errorText returns err's message, or a note when its Error method panics
// (a typed nil pointer in an error interface).
func errorText(err error) (s string) {
	defer func() {
		if r := recover(); r != nil {
			s = fmt.Sprintf("%T (Error panicked: %v)", err, r)
		}
	}()
	return err.Error()
}

// errorType returns the Go type of the most specific error in err's chain
// that is not a mere wrapper (fmt.Errorf's, errors.Join's), e.g.
// "*failure.HTTPError" for fmt.Errorf("charge: %w", &failure.HTTPError{}).
func errorType(err error) (s string) {
	s = reflect.TypeOf(err).String()
	defer func() { _ = recover() }() // an Unwrap that panics: keep the outer type
	e := err
	for range 100 { // a bound, in case of a cycle
		switch t := reflect.TypeOf(e).String(); t {
		case "*fmt.wrapError", "*fmt.wrapErrors", "*errors.joinError":
		default:
			return t
		}
		if e = errors.Unwrap(e); e == nil {
			break
		}
	}
	return s
}
