// Package disposition names where a job is at any instant and the event that
// moves it. Every store move and worker decision emits one Event; the
// simulator's ledger and the reports are built from these events only, so
// that every job is accounted for: created jobs = queued + in flight +
// waiting to retry + in fallback + held + in the DLQ + succeeded.
package disposition

import (
	"fmt"
	"time"
)

// State is where a job is.
type State uint8

// The states. None is "not in the system" (before its enqueue).
const (
	None State = iota
	// Queued: waiting on its queue.
	Queued
	// InFlight: leased by a worker.
	InFlight
	// Scheduled: waiting in the retry schedule for its due time.
	Scheduled
	// Fallback: diverted to the batch queue while its dependency is down.
	Fallback
	// DeadLettered: in the DLQ (failed, deleted or quarantined there).
	DeadLettered
	// Succeeded: done; terminal.
	Succeeded
	// Held: its dead letter is decided, but the DLQ refused it (full, under
	// the reject policy) or could not be reached: the job is parked with
	// its entry in the store's held set, and only the DLQ write is retried
	// (its handler never runs again). It moves on to DeadLettered.
	Held
)

var stateNames = [...]string{"none", "queued", "in-flight", "scheduled", "fallback", "dead-lettered", "succeeded", "held"}

// String returns the state's name.
func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("state(%d)", uint8(s))
}

// MarshalText writes the state's name.
func (s State) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Reason says why a job moved.
type Reason string

// The reasons stores and the worker give.
const (
	Enqueued     Reason = "enqueued"
	Leased       Reason = "leased"
	Acked        Reason = "succeeded"
	RetryLater   Reason = "retry"
	Released     Reason = "released"      // shutdown: the attempt did not count
	LeaseExpired Reason = "lease-expired" // its worker died or stalled
	Due          Reason = "due"           // a scheduled retry came due
	Diverted     Reason = "diverted"      // breaker open: to the batch queue
	Drained      Reason = "drained"       // batch queue back to its queue
	DeadLetter   Reason = "dead-lettered"
	HeldBack     Reason = "held"     // dead letter decided; the DLQ refused it or was away
	Requeued     Reason = "requeued" // from the DLQ, by an operator or the auto-retry
	Evicted      Reason = "evicted"  // pushed out of a full DLQ (reported, never silent)
	Purged       Reason = "purged"   // removed from the DLQ by age
)

// Event is one move of one job.
type Event struct {
	JobID    string
	Task     string
	From, To State
	Reason   Reason
	At       time.Time
	// Attempts is the job's counted attempts after the move.
	Attempts int
}

// String returns e.g. "job-1 queued→in-flight (leased) at 2026-01-01T00:00:00Z".
func (e Event) String() string {
	return fmt.Sprintf("%s %s→%s (%s) at %s", e.JobID, e.From, e.To, e.Reason, e.At.UTC().Format(time.RFC3339Nano))
}

// Observer receives events. Stores call it after a move has happened (after
// the Redis script returned, after the in-memory lock was released), in the
// order the moves happened on that store.
type Observer func(Event)
