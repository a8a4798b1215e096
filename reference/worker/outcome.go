package worker

import (
	"fmt"
	"time"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/disposition"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/job"
	"github.com/faultline/faultline/reference/retry"
)

// Action is what becomes of a job after its attempt.
type Action uint8

// The actions. The zero value is no action.
const (
	// Succeed: the attempt succeeded; the job is acked.
	Succeed Action = iota + 1
	// Retry: the job waits in the retry schedule until Outcome.At.
	Retry
	// DeadLetter: the job goes to the DLQ as Outcome.Entry.
	DeadLetter
	// Release: a shutdown stopped the attempt; the job goes back to the
	// head of its queue and the attempt does not count.
	Release
	// Divert: the dependency's breaker refused the call; the job goes to
	// the fallback (batch) queue, its attempt never begun.
	Divert

	maxAction = Divert
)

var actionNames = [...]string{"", "succeed", "retry", "dead-letter", "release", "divert"}

// String returns the action's name, e.g. "dead-letter".
func (a Action) String() string {
	if a >= 1 && a <= maxAction {
		return actionNames[a]
	}
	return fmt.Sprintf("action(%d)", uint8(a))
}

// Outcome is what becomes of a job after one attempt: a value the driver
// carries out with Apply (or Pipeline.Apply).
type Outcome struct {
	Action Action
	// Job is the job to store: Attempts counts this attempt unless the
	// action is Release or Divert. The idempotency key is the one it came
	// with.
	Job job.Job
	// At is when the job is due again for Retry, else the decision's time.
	At time.Time
	// Decision is the retry policy's verdict (zero for Succeed and Divert).
	Decision retry.Decision
	// Verdict is the classifier's verdict on Err (zero on success).
	Verdict classify.Classification
	// Err is the error the handler returned.
	Err error
	// Failure records this attempt's failure, for Retry and DeadLetter; it
	// is the history's newest element.
	Failure dlq.Failure
	// Entry is the DLQ entry to write, for DeadLetter: the job and every
	// failure of its attempts, this one last.
	Entry *dlq.Entry
	// Fingerprint is the alert the failure joined, if an alerter heard it.
	Fingerprint string
	// DivertReason is the breaker's rejection, for Divert.
	DivertReason error
}

// Failed reports whether the outcome records a failed attempt (Retry or
// DeadLetter).
func (o *Outcome) Failed() bool { return o.Action == Retry || o.Action == DeadLetter }

// To returns where the outcome moves the job, and why.
func (o *Outcome) To() (disposition.State, disposition.Reason) {
	switch o.Action {
	case Succeed:
		return disposition.Succeeded, disposition.Acked
	case Retry:
		return disposition.Scheduled, disposition.RetryLater
	case DeadLetter:
		return disposition.DeadLettered, disposition.DeadLetter
	case Release:
		return disposition.Queued, disposition.Released
	case Divert:
		return disposition.Fallback, disposition.Diverted
	}
	return disposition.None, ""
}

// Event returns the move the outcome makes, from in flight, at now.
func (o *Outcome) Event(now time.Time) disposition.Event {
	to, reason := o.To()
	return disposition.Event{
		JobID: o.Job.ID, Task: o.Job.Task,
		From: disposition.InFlight, To: to, Reason: reason,
		At: now, Attempts: o.Job.Attempts,
	}
}
