package retry

import (
	"fmt"
	"time"

	"github.com/faultline/faultline/reference/classify"
)

// Attempt is what the policy needs to know of a job whose attempt just
// failed.
type Attempt struct {
	// JobID, Task and Dependency identify the job, what it does and the
	// service it called. The policy keys its retry budgets by Dependency
	// ("" is a dependency of its own); JobID and Task are carried for the
	// caller's records.
	JobID, Task, Dependency string
	// Attempts is the number of attempts made so far, including the one that
	// just failed, so at least 1. A value below 1 is read as 1.
	Attempts int
	// IdempotencyKey is the key the job sends with its request, if any. An
	// Indeterminate failure is retried only with a key.
	IdempotencyKey string
	// KeyRecordedAt is when the idempotency key was recorded. The key
	// protects a retry only if it was recorded no later than FirstAttemptAt.
	KeyRecordedAt time.Time
	// FirstAttemptAt is when the job's first attempt began.
	FirstAttemptAt time.Time
}

// keyPredatesFirstAttempt reports whether the job carries an idempotency key
// recorded no later than its first attempt began, which makes retrying an
// indeterminate failure safe. Without a FirstAttemptAt that cannot be shown.
func (a *Attempt) keyPredatesFirstAttempt() bool {
	return a.IdempotencyKey != "" && !a.KeyRecordedAt.IsZero() && !a.KeyRecordedAt.After(a.FirstAttemptAt)
}

// Action is what becomes of the job.
type Action uint8

// The actions. The zero value is no action, so that a zero Decision is never
// mistaken for a retry.
const (
	// Retry schedules the job again at Decision.At.
	Retry Action = iota + 1
	// DeadLetter moves the job to the dead-letter queue.
	DeadLetter
	// Release puts the job back on its queue at once, without counting the
	// attempt: the attempt was stopped, it did not fail.
	Release

	maxAction = Release
)

// Actions lists every action, in order.
var Actions = []Action{Retry, DeadLetter, Release}

var actionNames = [...]string{"", "retry", "dead-letter", "release"}

// String returns the action's name, e.g. "dead-letter".
func (a Action) String() string {
	if a >= 1 && a <= maxAction {
		return actionNames[a]
	}
	return fmt.Sprintf("action(%d)", uint8(a))
}

// MarshalText writes the action's name.
func (a Action) MarshalText() ([]byte, error) {
	if a < 1 || a > maxAction {
		return nil, fmt.Errorf("retry: invalid action %d", uint8(a))
	}
	return []byte(actionNames[a]), nil
}

// Reason says why the policy decided as it did: for a retry, what set its
// time; for a dead letter or a release, what caused it.
type Reason uint8

// The reasons. The zero value is no reason.
const (
	// BackoffDelay: the retry is at its jittered exponential backoff.
	BackoffDelay Reason = iota + 1
	// RetryAfterHint: the retry is at the dependency's Retry-After hint,
	// capped at Config.MaxRetryAfter.
	RetryAfterHint
	// BudgetDelay: the dependency's retry budget had no room when the retry
	// was due, and it runs later than its backoff or hint: at the start of
	// the first slot with room, or, past BudgetConfig.MaxWait, MaxWait late
	// and over the budget (see Stats.BudgetExceeded).
	BudgetDelay
	// ExhaustedAttempts: the job has made Config.MaxAttempts attempts.
	ExhaustedAttempts
	// PermanentError: the failure will recur on every attempt.
	PermanentError
	// CriticalError: the failure needs a person.
	CriticalError
	// IndeterminateWithoutKey: the outcome is unknown and the job has no
	// idempotency key recorded before its first attempt, so a retry might
	// repeat a side effect (charge a card twice).
	IndeterminateWithoutKey
	// Unclassified: the classification was None (the classifier was given a
	// nil error, a caller bug) or a class the policy does not know.
	Unclassified
	// Canceled: the attempt was stopped, typically by a shutdown.
	Canceled

	maxReason = Canceled
)

// Reasons lists every reason, in order.
var Reasons = []Reason{
	BackoffDelay, RetryAfterHint, BudgetDelay,
	ExhaustedAttempts, PermanentError, CriticalError, IndeterminateWithoutKey, Unclassified,
	Canceled,
}

var reasonNames = [...]string{
	"", "backoff", "retry-after", "budget",
	"exhausted", "permanent", "critical", "indeterminate-without-key", "unclassified",
	"canceled",
}

// String returns the reason's name, e.g. "retry-after".
func (r Reason) String() string {
	if r >= 1 && r <= maxReason {
		return reasonNames[r]
	}
	return fmt.Sprintf("reason(%d)", uint8(r))
}

// MarshalText writes the reason's name.
func (r Reason) MarshalText() ([]byte, error) {
	if r < 1 || r > maxReason {
		return nil, fmt.Errorf("retry: invalid reason %d", uint8(r))
	}
	return []byte(reasonNames[r]), nil
}

// Decision is the policy's verdict on one failed attempt.
type Decision struct {
	// Action is what becomes of the job.
	Action Action
	// Reason says why.
	Reason Reason
	// At is when the job is due again; set for Retry only.
	At time.Time
	// Delay is At minus the decision's time; set for Retry only.
	Delay time.Duration
	// Backoff is the jittered backoff that was drawn, before the budget had
	// its say: 0 when a Retry-After hint was used, and for other actions.
	Backoff time.Duration
	// Attempts is the number of attempts made, copied from Attempt.
	Attempts int
	// Class is the failure's class, copied from the classification.
	Class classify.Class
}
