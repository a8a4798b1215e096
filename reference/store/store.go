// Package store holds what the queue-and-DLQ backends of a namespace share:
// their configuration and the overflow report. The backends are its
// sub-packages, one per technology, each implementing queue.Queue and
// dlq.Store on one namespace so that moves between the two are atomic:
// memstore (in memory, one lock) and redisstore (Redis, one hash tag, one
// Lua script per move).
package store

import (
	"errors"
	"fmt"
	"time"

	"github.com/faultline/faultline/reference/disposition"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/job"
)

// Defaults for Config.
const (
	DefaultNamespace   = "default"
	DefaultDLQCapacity = 100_000
	DefaultBatchSize   = 100
)

// OverflowPolicy says what a full DLQ does with one more dead job.
type OverflowPolicy uint8

// The policies. Both report every overflow (a returned value, a counter and
// the OnOverflow callback, which the wiring turns into an alert).
const (
	// Reject refuses the new entry. A dead letter from a worker
	// (dlq.Store.DeadLetter) is parked with its entry in the held set in the
	// same step: its fate is decided, its handler never runs again, and
	// dlq.Store.FlushHeld writes it, oldest first, once there is room (an
	// operator requeues, deletes or purges entries). While any is held, no
	// new dead letter (DeadLetter or Add) takes room ahead of it: the same
	// step first writes the held ones into whatever room there is, oldest
	// first, and the new one only if room remains, else it is parked at the
	// held set's tail (or refused). Past the held set's
	// bound (Config.HeldCapacity) the dead letter is refused with
	// dlq.ErrFull and the worker keeps it in memory, its lease heartbeated
	// and the write retried; only if that process stops does the lease
	// expire and the job run again. An Add (an import) is refused with
	// dlq.ErrFull. Nothing is lost.
	Reject OverflowPolicy = iota + 1
	// EvictOldest deletes the oldest entries, payloads and all, in the same
	// step, and reports their IDs.
	EvictOldest
)

// String returns "reject" or "evict-oldest".
func (p OverflowPolicy) String() string {
	switch p {
	case Reject:
		return "reject"
	case EvictOldest:
		return "evict-oldest"
	}
	return fmt.Sprintf("policy(%d)", uint8(p))
}

// Overflow reports one overflow of a DLQ.
type Overflow struct {
	Namespace string
	Policy    OverflowPolicy
	At        time.Time
	// JobID is the job that did not fit (Reject) or that made room be made
	// (EvictOldest); Evicted lists the entries evicted.
	JobID    string
	Evicted  []string
	Capacity int
	// Held says the refused dead letter was parked in the held set (Reject);
	// false for a refused Add, or a dead letter the held set had no room
	// for either (the worker keeps it leased).
	Held bool
}

// Config configures a backend.
type Config struct {
	// Namespace separates independent sets of queues and DLQ in one store
	// (in Redis, the hash tag {faultline:NAMESPACE}).
	Namespace string
	// MaxPayload bounds a job's payload (default job.DefaultMaxPayload).
	MaxPayload int
	// DLQCapacity bounds the DLQ's entries (default 100,000).
	DLQCapacity int
	// HeldCapacity bounds the held set: the jobs whose dead letters are
	// decided and wait for room in the DLQ or for the DLQ store (default
	// DLQCapacity).
	HeldCapacity int
	// CountInactive makes Requeued and Deleted entries count toward
	// DLQCapacity too; by default only Failed and Quarantined ones do.
	CountInactive bool
	// Overflow is the policy of a full DLQ (default Reject).
	Overflow OverflowPolicy
	// LostLeaseUsesAttempt makes a job recovered from an expired lease
	// count the attempt it lost; by default it does not (the worker died,
	// not the job).
	LostLeaseUsesAttempt bool
	// BatchSize bounds the work of one step of a bulk operation (requeue by
	// filter, purge): asynq's lesson that a long script stalls Redis.
	BatchSize int
	// Observer, if set, hears every move of every job, after it happened.
	Observer disposition.Observer
	// OnOverflow, if set, hears every DLQ overflow, after it happened.
	OnOverflow func(Overflow)
	// EventStream, when above zero, has the Redis backend also append every
	// disposition event to the namespace's event stream
	// ({faultline:NS}:events), inside the script that makes the move, so
	// that a move and its event are one atomic step and a move whose reply
	// was lost is still recorded; the stream is trimmed to about this many
	// entries (XADD MAXLEN ~). Zero (the default) writes no stream. The
	// in-memory backend ignores it (its Observer cannot miss a move).
	EventStream int
}

// WithDefaults returns c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	if c.Namespace == "" {
		c.Namespace = DefaultNamespace
	}
	if c.MaxPayload == 0 {
		c.MaxPayload = job.DefaultMaxPayload
	}
	if c.DLQCapacity == 0 {
		c.DLQCapacity = DefaultDLQCapacity
	}
	if c.HeldCapacity == 0 {
		c.HeldCapacity = c.DLQCapacity
	}
	if c.Overflow == 0 {
		c.Overflow = Reject
	}
	if c.BatchSize == 0 {
		c.BatchSize = DefaultBatchSize
	}
	return c
}

// ErrInvalidConfig is matched by every *ConfigError.
var ErrInvalidConfig = errors.New("invalid store config")

// ConfigError names the invalid field of a Config.
type ConfigError struct {
	Field, Reason string
}

// Error returns "store config: Field: reason".
func (e *ConfigError) Error() string { return "store config: " + e.Field + ": " + e.Reason }

// Is matches ErrInvalidConfig.
func (e *ConfigError) Is(target error) bool { return target == ErrInvalidConfig }

// Validate reports the first invalid field of c with defaults applied.
func (c Config) Validate() error {
	c = c.WithDefaults()
	switch {
	case len(c.Namespace) > 64 || !validName(c.Namespace):
		return &ConfigError{"Namespace", "must be 1-64 characters of letters, digits, '-', '_' and '.'"}
	case c.MaxPayload < 0:
		return &ConfigError{"MaxPayload", "must not be negative"}
	case c.DLQCapacity < 1:
		return &ConfigError{"DLQCapacity", "must be at least 1"}
	case c.HeldCapacity < 1:
		return &ConfigError{"HeldCapacity", "must be at least 1"}
	case c.Overflow != Reject && c.Overflow != EvictOldest:
		return &ConfigError{"Overflow", "must be Reject or EvictOldest"}
	case c.BatchSize < 1 || c.BatchSize > 10_000:
		return &ConfigError{"BatchSize", "must be between 1 and 10,000"}
	case c.EventStream < 0:
		return &ConfigError{"EventStream", "must not be negative (0 turns the stream off)"}
	}
	return nil
}

func validName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
		default:
			return false
		}
	}
	return true
}

// LastFailure is the LastFailedAt a backend stores: the entry's own, when it
// gives one no later than now (the worker sends its failure's time, and a
// dead letter held through a DLQ outage or a full DLQ is written later),
// else now.
func LastFailure(e dlq.Entry, now time.Time) time.Time {
	if e.LastFailedAt.IsZero() || e.LastFailedAt.After(now) {
		return now
	}
	return e.LastFailedAt
}

// FirstFailure is the FirstFailedAt a backend stores for a new DLQ entry: the
// entry's own, when it gives one no later than now (the worker sends its
// first failed attempt's time), else now. An existing entry keeps its own.
func FirstFailure(e dlq.Entry, now time.Time) time.Time {
	if e.FirstFailedAt.IsZero() || e.FirstFailedAt.After(now) {
		return now
	}
	return e.FirstFailedAt
}

// Imported is the entry a backend writes for dlq.Importer.AddIfAbsent: e
// exactly as given — its status, status history, failures, requeue counts
// and failure times (even ones after now: the exporting machine's clock is
// not this one's) — with only what every stored entry must have filled in
// (the source queue; a failure time it lacks) and the decode state of a
// corrupt read cleared. e.Status must be set (an entry without one is added
// like Add's).
func Imported(e dlq.Entry, now time.Time) dlq.Entry {
	if e.SourceQueue == "" {
		e.SourceQueue = e.Job.QueueName()
	}
	if e.LastFailedAt.IsZero() {
		e.LastFailedAt = now
	}
	if e.FirstFailedAt.IsZero() {
		e.FirstFailedAt = e.LastFailedAt
	}
	e.Corrupt, e.Raw, e.DecodeError = false, nil, ""
	return e
}
