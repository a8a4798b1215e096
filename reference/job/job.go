// Package job defines the unit of background work that faultline's queues,
// dead letter queue, worker and simulator pass around.
package job

import (
	"errors"
	"fmt"
	"time"
)

// DefaultQueue is the queue of a job that names none.
const DefaultQueue = "default"

// DefaultMaxPayload is the largest payload a store accepts by default: 1 MiB.
const DefaultMaxPayload = 1 << 20

// Job is one unit of background work. Everything but the payload is plain
// data the failure handling needs; the payload is opaque bytes (JSON by
// convention) that only the handler reads.
type Job struct {
	// ID identifies the job everywhere: in the queue, the DLQ and reports.
	// Required, and unique within a namespace.
	ID string `json:"id"`
	// Task names what the job does, e.g. "charge"; handlers are chosen by it.
	Task string `json:"task"`
	// Queue is the queue the job lives on; "" means DefaultQueue.
	Queue string `json:"queue,omitempty"`
	// Dependency names the service the job's handler calls, if one: the
	// classifier's scope, the breaker and the retry budget are keyed by it.
	Dependency string `json:"dependency,omitempty"`
	// Payload is the job's data.
	Payload []byte `json:"payload,omitempty"`
	// IdempotencyKey, recorded before the first attempt, lets a handler
	// make a non-idempotent call (a charge) at most once across retries,
	// requeues and edits. It travels with the job unchanged.
	IdempotencyKey string    `json:"idempotency_key,omitempty"`
	KeyRecordedAt  time.Time `json:"key_recorded_at,omitzero"`
	// Attempts counts the attempts that used the retry budget (a released
	// or lease-lost attempt does not count).
	Attempts int `json:"attempts,omitempty"`
	// FirstAttemptAt is when the first attempt began.
	FirstAttemptAt time.Time `json:"first_attempt_at,omitzero"`
	// EnqueuedAt is when the job was first enqueued.
	EnqueuedAt time.Time `json:"enqueued_at,omitzero"`
}

// QueueName returns the job's queue, DefaultQueue when unset.
func (j *Job) QueueName() string {
	if j.Queue == "" {
		return DefaultQueue
	}
	return j.Queue
}

// ErrInvalid is matched by every *InvalidError.
var ErrInvalid = errors.New("invalid job")

// InvalidError says which field of a job is unacceptable and why.
type InvalidError struct {
	Field  string
	Reason string
}

// Error returns "invalid job: Field: reason".
func (e *InvalidError) Error() string { return "invalid job: " + e.Field + ": " + e.Reason }

// Is matches ErrInvalid.
func (e *InvalidError) Is(target error) bool { return target == ErrInvalid }

// Validate checks what every store requires of a job: an ID and a task
// without control characters, a payload of at most maxPayload bytes (0 means
// DefaultMaxPayload), and no negative attempt count.
func Validate(j *Job, maxPayload int) error {
	if maxPayload <= 0 {
		maxPayload = DefaultMaxPayload
	}
	switch {
	case j == nil:
		return &InvalidError{Field: "job", Reason: "is nil"}
	case j.ID == "":
		return &InvalidError{Field: "ID", Reason: "is required"}
	case len(j.ID) > 256:
		return &InvalidError{Field: "ID", Reason: fmt.Sprintf("is %d bytes; at most 256", len(j.ID))}
	case hasControl(j.ID):
		return &InvalidError{Field: "ID", Reason: "contains control characters"}
	case j.Task == "":
		return &InvalidError{Field: "Task", Reason: "is required"}
	case hasControl(j.Task) || hasControl(j.Queue):
		return &InvalidError{Field: "Task/Queue", Reason: "contains control characters"}
	case len(j.Payload) > maxPayload:
		return &InvalidError{Field: "Payload", Reason: fmt.Sprintf("is %d bytes; at most %d", len(j.Payload), maxPayload)}
	case j.Attempts < 0:
		return &InvalidError{Field: "Attempts", Reason: "is negative"}
	}
	return nil
}

func hasControl(s string) bool {
	// Bytes, not runes: a control character is one byte in UTF-8, and no
	// byte of a multi-byte sequence is below 0x80, so this finds the same
	// characters without decoding (it runs for every job enqueued).
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f {
			return true
		}
	}
	return false
}
