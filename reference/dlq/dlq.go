// Package dlq defines the dead letter queue: where a job goes when its
// failure handling gives up on it, with everything an operator needs to
// decide what to do, and the moves that send it back.
//
// An Entry keeps the job, the full history of its failed attempts, its
// classification, its source queue and a status with its own history. The
// store is bounded, and an overflow is never silent. Every move (dead-letter
// from a lease, requeue, delete, restore, quarantine, purge, eviction) is one
// atomic step guarded like a compare-and-set: when the entry is not where the
// caller expects, the answer says so (RequeueOutcome), so a retried call
// answers "already requeued" instead of requeueing twice, and a crash between
// two steps cannot lose or double a job.
//
// Implementations share a namespace with a queue.Queue (memstore,
// redisstore). The conformance suite in dlqtest holds them, and a team's
// own, to the same semantics.
package dlq

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/internal/mutant"
	"github.com/faultline/faultline/reference/job"
	"github.com/faultline/faultline/reference/queue"
)

// EncodingVersion is written in every encoded entry; a store refuses to
// decode a newer one (it is listed as corrupt, never dropped).
const EncodingVersion = 1

// Errors returned by stores.
var (
	// ErrNotFound: no entry for that job ID.
	ErrNotFound = errors.New("dlq entry not found")
	// ErrFull: the store is at capacity and its policy is to reject. From
	// DeadLetter it means the held set is at its bound too (ErrHeldFull is
	// matched as well): the job is left in flight under its lease.
	ErrFull = errors.New("dlq is full")
	// ErrHeldFull: the held set is at its bound (store.Config.HeldCapacity);
	// nothing was parked and the job is left in flight under its lease.
	ErrHeldFull = errors.New("held set is full")
	// ErrWrongStatus: the entry's status does not allow the move (restore
	// of an entry that is not deleted, say).
	ErrWrongStatus = errors.New("dlq entry has the wrong status for that")
	// ErrInvalidOptions: a requeue's options are incomplete (no Budget).
	ErrInvalidOptions = errors.New("invalid requeue options")
)

// HeldFullError is a store's refusal of job id's dead letter when its held
// set is at its bound of heldCapacity: from Hold (op "hold", dlqCapacity
// 0) it matches ErrHeldFull; from DeadLetter under the reject policy, the
// DLQ at its capacity of dlqCapacity too (op "dead-letter"), it matches
// ErrFull and ErrHeldFull. Every store words the refusal with it, so that a
// report that quotes one is the same, byte for byte, on every store.
func HeldFullError(op, id string, dlqCapacity, heldCapacity int) error {
	if dlqCapacity > 0 {
		return fmt.Errorf("%s %s: the DLQ is at its capacity of %d and the held set at its bound of %d: %w: %w", op, id, dlqCapacity, heldCapacity, ErrFull, ErrHeldFull)
	}
	return fmt.Errorf("%s %s: the held set is at its bound of %d: %w", op, id, heldCapacity, ErrHeldFull)
}

// Status is an entry's state in the DLQ.
type Status uint8

// The statuses.
const (
	// Failed: dead-lettered and waiting for a decision.
	Failed Status = iota + 1
	// Requeued: sent back to a queue; kept for the record until purged.
	Requeued
	// Deleted: soft-deleted by an operator; can be restored.
	Deleted
	// Quarantined: a poison job that failed its automatic retries; only an
	// operator may requeue it.
	Quarantined
)

var statusNames = [...]string{"", "failed", "requeued", "deleted", "quarantined"}

// Statuses lists every status.
var Statuses = []Status{Failed, Requeued, Deleted, Quarantined}

// String returns the status's name.
func (s Status) String() string {
	if s >= Failed && int(s) < len(statusNames) {
		return statusNames[s]
	}
	return fmt.Sprintf("status(%d)", uint8(s))
}

// MarshalText writes the status's name; the zero Status writes "".
func (s Status) MarshalText() ([]byte, error) {
	if s == 0 {
		return []byte{}, nil
	}
	if int(s) >= len(statusNames) {
		return nil, fmt.Errorf("dlq: invalid status %d", uint8(s))
	}
	return []byte(s.String()), nil
}

// UnmarshalText reads a status's name; "" is the zero Status.
func (s *Status) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*s = 0
		return nil
	}
	v, err := ParseStatus(string(b))
	if err == nil {
		*s = v
	}
	return err
}

// ParseStatus reads "failed", "requeued", "deleted" or "quarantined".
func ParseStatus(s string) (Status, error) {
	for i := Failed; int(i) < len(statusNames); i++ {
		if strings.EqualFold(s, statusNames[i]) {
			return i, nil
		}
	}
	return 0, fmt.Errorf("unknown DLQ status %q (allowed: failed, requeued, deleted, quarantined)", s)
}

// Failure is one failed attempt in an entry's history.
type Failure struct {
	At      time.Time `json:"at"`
	Attempt int       `json:"attempt"`
	Error   string    `json:"error"`
	// ErrorType is the Go type of the error, e.g. "*failure.HTTPError".
	ErrorType string                  `json:"error_type,omitempty"`
	Verdict   classify.Classification `json:"verdict"`
}

// StatusChange is one change of an entry's status.
type StatusChange struct {
	At   time.Time `json:"at"`
	From Status    `json:"from,omitempty"`
	To   Status    `json:"to"`
	// By names who made the change: an operator, "auto-retry", "worker".
	By     string `json:"by,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// Entry is one job in the DLQ.
type Entry struct {
	Version int     `json:"version"`
	Job     job.Job `json:"job"`
	// History is every failed attempt, oldest first; a job that dies again
	// after a requeue extends it.
	History       []Failure `json:"history"`
	FirstFailedAt time.Time `json:"first_failed_at"`
	LastFailedAt  time.Time `json:"last_failed_at"`
	// Verdict is the classification of the last failure, and Reason why the
	// job was dead-lettered (the retry policy's reason).
	Verdict     classify.Classification `json:"verdict"`
	Reason      string                  `json:"reason"`
	SourceQueue string                  `json:"source_queue"`
	Status      Status                  `json:"status"`
	Changes     []StatusChange          `json:"changes"`
	// Requeues counts requeues by anyone; AutoRetries those of the off-peak
	// auto-retry, which quarantines the entry past its limit.
	Requeues    int `json:"requeues,omitempty"`
	AutoRetries int `json:"auto_retries,omitempty"`
	// Superseded holds the bytes of an undecodable entry this one replaced
	// when its job died again: never dropped, still there to inspect.
	Superseded []byte `json:"superseded,omitempty"`

	// Corrupt is set on an entry read back from bytes that could not be
	// decoded (written by something else, or by a newer version): Raw holds
	// them and DecodeError says why. Corrupt entries are listed, counted and
	// purgeable, never dropped and never crashed on.
	Corrupt     bool   `json:"-"`
	Raw         []byte `json:"-"`
	DecodeError string `json:"-"`
}

// ID returns the entry's job ID.
func (e *Entry) ID() string { return e.Job.ID }

// Severity is the last failure's severity.
func (e *Entry) Severity() classify.Severity { return e.Verdict.Severity }

// ErrorType is the last failure's error type, or "".
func (e *Entry) ErrorType() string {
	if len(e.History) == 0 {
		return ""
	}
	return e.History[len(e.History)-1].ErrorType
}

// Filter selects entries. Every field set must hold; within a list, any
// element may match. The zero Filter selects every entry.
type Filter struct {
	Severities []classify.Severity
	Tasks      []string
	Classes    []classify.Class
	ErrorTypes []string
	Statuses   []Status
	// Since and Until bound LastFailedAt (Since inclusive, Until exclusive);
	// zero means unbounded.
	Since, Until time.Time
	// ErrorText, when set, must occur in the error text of the entry's last
	// failure, compared case-insensitively (Unicode simple folding); it
	// never matches a corrupt entry.
	ErrorText string
}

// Page is one page of a listing, newest first; Next is the cursor of the
// next page, "" after the last.
type Page struct {
	Entries []Entry
	Next    string
}

// Stats summarises the store.
type Stats struct {
	Total      int
	BySeverity map[string]int
	ByTask     map[string]int
	ByClass    map[string]int
	ByStatus   map[string]int
	Corrupt    int
	// Oldest is the earliest LastFailedAt among entries still Failed, and
	// OldestID its job; zero when there is none.
	Oldest   time.Time
	OldestID string
	// Newest is the latest LastFailedAt among entries still Failed, and
	// NewestID its job; zero when there is none.
	Newest   time.Time
	NewestID string
	// Evicted and Rejected count overflows since the store was opened
	// (Rejected counts refusals, so one job refused twice counts twice).
	Evicted, Rejected int
	// Held counts the jobs in the held set: their dead letters are decided
	// and wait for room in the DLQ (or for the DLQ store); they are not in
	// Total. HeldOldest is when the longest-held of them was parked.
	Held       int
	HeldOldest time.Time
}

// Budget is the attempt budget a manual requeue gives the job.
type Budget uint8

// The budgets.
const (
	// OneMoreAttempt keeps the job's attempt count, so the retry policy
	// allows it one more attempt before dead-lettering it again.
	OneMoreAttempt Budget = iota + 1
	// ResetAttempts sets the attempt count to zero: a full retry budget.
	ResetAttempts
)

// RequeueOptions says where a requeue sends the job and with what budget.
type RequeueOptions struct {
	// Queue is the target queue; "" means the entry's source queue.
	Queue string
	// Budget is required: the caller decides.
	Budget Budget
	// By names who asked, for the status history.
	By string
	// Auto marks a requeue by the off-peak auto-retry (counted in
	// AutoRetries).
	Auto bool
}

// RequeueOutcome is what a requeue of one entry did.
type RequeueOutcome uint8

// The outcomes. Only OutcomeRequeued changed anything.
const (
	// OutcomeRequeued: the job is on its queue again and the entry says so.
	OutcomeRequeued RequeueOutcome = iota + 1
	// OutcomeAlreadyRequeued: the entry was requeued before (a retried
	// call).
	OutcomeAlreadyRequeued
	// OutcomeNotFound: no entry with that ID.
	OutcomeNotFound
	// OutcomeBusy: a job with that ID is queued or in flight already.
	OutcomeBusy
	// OutcomeNotRequeueable: the entry is deleted (restore it first) or
	// corrupt.
	OutcomeNotRequeueable
)

var outcomeNames = [...]string{"", "requeued", "already-requeued", "not-found", "busy", "not-requeueable"}

// String returns the outcome's name.
func (o RequeueOutcome) String() string {
	if o >= OutcomeRequeued && int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return fmt.Sprintf("outcome(%d)", uint8(o))
}

// BulkResult is what a requeue by filter did (or, on a dry run, would do).
type BulkResult struct {
	DryRun bool
	// Matched entries were Failed (or Quarantined) and matched the filter
	// when the run began; Requeued of them were requeued (for DeleteMatching:
	// deleted); Skipped were not, for the reasons counted below.
	Matched, Requeued, Skipped int
	// The reasons of Skipped, which they sum to: Changed entries changed
	// under the run (failed again, edited, moved by another operator or
	// run: their revision is not the one read); Gone ones were removed
	// (purged) before their batch; Busy ones have a job of their ID queued
	// or in flight; Invalid ones could not be moved as they are (a payload
	// over the store's limit).
	Changed, Gone, Busy, Invalid int
	// Batches is the number of bounded steps the run took.
	Batches int
}

// AddResult says what an add did.
type AddResult struct {
	// Created is false when the job already had an entry, whose history
	// was extended.
	Created bool
	// Evicted lists the job IDs pushed out to make room (evict-oldest
	// policy); their payloads are gone with them, and the store raised its
	// overflow report.
	Evicted []string
	// Held says DeadLetter found the DLQ full under the reject policy and
	// parked the job with its entry in the held set, in the same step: its
	// fate is decided, FlushHeld writes the entry when there is room. No
	// entry was written yet; the store raised its overflow report.
	Held bool
}

// FlushResult says what a FlushHeld did.
type FlushResult struct {
	// Written lists the jobs moved from the held set into the DLQ, oldest
	// held first.
	Written []string
	// Evicted lists the entries evicted to make room (evict-oldest).
	Evicted []string
	// Left is how many jobs are still held after the call; Full says the
	// DLQ refused the oldest of them (reject policy), so the call stopped.
	Left int
	Full bool
}

// Store is the DLQ of one namespace.
type Store interface {
	// Add records a dead job: a new entry, or the history of an existing one
	// extended (idempotent per job ID). Used for imports and by the
	// simulator; the worker uses DeadLetter.
	Add(ctx context.Context, e Entry, now time.Time) (AddResult, error)
	// DeadLetter moves a leased job into the DLQ in one step: fenced by the
	// lease like queue.Queue.Ack (queue.ErrLeaseLost), so a late completion
	// cannot dead-letter a job that came back. When the DLQ is full under
	// the reject policy, the same step parks the job with its entry in the
	// held set instead (AddResult.Held; see Hold); when the held set is at
	// its bound too, nothing moves and the error matches ErrFull and
	// ErrHeldFull. Under the reject policy a dead letter (DeadLetter or Add)
	// that needs room never takes it ahead of the held ones: first the held
	// entries are written into whatever room there is, oldest first, each
	// as FlushHeld writes it (with its held→dead-lettered event), and the
	// new one takes room only if some remains; else it is parked at the held
	// set's tail (an Add is refused with ErrFull).
	DeadLetter(ctx context.Context, l queue.Lease, e Entry, now time.Time) (AddResult, error)
	// Hold parks a leased job whose dead letter is decided, with its entry,
	// in the held set, in one step fenced by the lease: for a worker whose
	// DeadLetter could not reach the DLQ. A held job is in no queue, has no
	// lease (a heartbeat or completion of the old one is refused with
	// queue.ErrLeaseLost), is never recovered or leased again, and blocks
	// an enqueue of its ID (queue.ErrDuplicate); the entry keeps the
	// failure's times. ErrHeldFull when the held set is at its bound.
	Hold(ctx context.Context, l queue.Lease, e Entry, now time.Time) error
	// FlushHeld moves up to limit held jobs into the DLQ, oldest held first,
	// each as DeadLetter would write its entry (evicting by the policy), and
	// stops at the first the DLQ refuses (reject policy: a refusal of a held
	// entry is not counted or reported again). The entries keep their
	// failure times (LastFailedAt is the failure's, not the write's). A held
	// entry whose stored bytes do not decode (a store that keeps bytes, like
	// redisstore) never blocks the ones behind it: its job is dead-lettered
	// in its turn with an entry made from the job, its Superseded holding
	// the undecodable bytes (see the store's documentation).
	FlushHeld(ctx context.Context, now time.Time, limit int) (FlushResult, error)
	// Get returns one entry (ErrNotFound), possibly Corrupt.
	Get(ctx context.Context, id string) (Entry, error)
	// List returns up to limit matching entries, newest LastFailedAt first
	// (by millisecond, then job ID, descending: queue.Queue.ForwardDue's
	// rule), from cursor ("" for the first page).
	List(ctx context.Context, f Filter, cursor string, limit int) (Page, error)
	// Stats summarises the store.
	Stats(ctx context.Context) (Stats, error)
	// Requeue sends one entry's job back to a queue.
	Requeue(ctx context.Context, id string, opts RequeueOptions, now time.Time) (RequeueOutcome, error)
	// RequeueMatching requeues every Failed entry matching f whose last
	// failure is before now (the cut-off: an entry that fails again during
	// the run is not picked up twice), in bounded batches. A dry run counts.
	RequeueMatching(ctx context.Context, f Filter, opts RequeueOptions, now time.Time, dryRun bool) (BulkResult, error)
	// Delete soft-deletes an entry; Restore undoes it.
	Delete(ctx context.Context, id, by string, now time.Time) error
	Restore(ctx context.Context, id, by string, now time.Time) error
	// Quarantine marks an entry as poison.
	Quarantine(ctx context.Context, id, reason string, now time.Time) error
	// Purge removes entries (any status, corrupt ones too) whose last
	// failure is before olderThan, and returns how many. Times count by
	// their Unix millisecond (queue.Queue.ForwardDue's rule): an entry that
	// failed in olderThan's own millisecond stays.
	Purge(ctx context.Context, olderThan time.Time, now time.Time) (int, error)
}

// MergeHistory returns old with the failures of add that it does not hold
// yet (the same time, attempt and error): a retried add, whose first try
// landed but whose answer was lost, does not record a failure twice.
func MergeHistory(old, add []Failure) []Failure {
	out := slices.Clip(old)
	if mutant.On("dlq/merge-drops-new-failures") {
		return out
	}
	for _, f := range add {
		if !slices.ContainsFunc(old, func(o Failure) bool {
			return o.At.Equal(f.At) && o.Attempt == f.Attempt && o.Error == f.Error
		}) {
			out = append(out, f)
		}
	}
	return out
}
