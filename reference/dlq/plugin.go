package dlq

import (
	"context"
	"errors"

	"github.com/faultline/faultline/reference/job"
)

// ErrNotDeclared: the operation needs a capability the DeadLetters store
// does not declare (see Caps). A run or a conformance spec that meets it
// reports the check as not done, never as passed or failed.
var ErrNotDeclared = errors.New("the DLQ store does not declare that capability")

// DeadLetters is the minimal DLQ a team plugs in when it keeps its own dead
// letters but uses faultline's work queue (the simulator's DLQ-only mode,
// sim.WithDLQ). It only stores entries: faultline moves the jobs, emits
// their disposition events and checks conservation by reading the store, so
// the store owes no events, leases or held set.
//
// The contract (dlqtest.ExerciseDeadLetters checks it):
//   - Add stores e under its job ID. One entry per job ID: an Add for an ID
//     that has one replaces it (a retried Add, whose first try landed but
//     whose answer was lost, must not make a second). An invalid job is
//     refused with an error matching job.ErrInvalid, nothing written. A
//     store declaring Capacity refuses an Add when full with an error
//     matching ErrFull, nothing written.
//   - List returns every entry (any order); Count how many there are.
//   - Requeue removes the entry of jobID and returns its job, or an error
//     matching ErrNotFound (nothing changed).
//   - A failed call leaves the entry either fully there or not there.
type DeadLetters interface {
	Add(ctx context.Context, e Entry) error
	List(ctx context.Context) ([]Entry, error)
	Count(ctx context.Context) (int, error)
	Requeue(ctx context.Context, jobID string) (job.Job, error)
}

// Deleter is a DeadLetters store that deletes: Delete removes the entry of
// jobID for good (an operator's decision: the job is given up), or answers
// an error matching ErrNotFound.
type Deleter interface {
	Delete(ctx context.Context, jobID string) error
}

// RequeueMatcher is a DeadLetters store that requeues by filter itself (in
// one query, say): RequeueMatching removes up to limit entries matching f,
// oldest LastFailedAt first, and returns their jobs. A store without it is
// requeued by filter one Requeue at a time.
type RequeueMatcher interface {
	RequeueMatching(ctx context.Context, f Filter, limit int) ([]job.Job, error)
}

// Quarantiner is a DeadLetters store that marks poison entries: Quarantine
// sets the entry's Status to Quarantined (listed so from then on), or
// answers an error matching ErrNotFound.
type Quarantiner interface {
	Quarantine(ctx context.Context, jobID, reason string) error
}

// Caps are the capabilities a DeadLetters store declares. What it does not
// declare is not asked of it: the simulator answers ErrNotDeclared for it
// and reports the checks that need it as not done, and the conformance
// suite skips (and reports) the specs of it.
type Caps struct {
	// Delete: it implements Deleter.
	Delete bool
	// RequeueMatching: it implements RequeueMatcher.
	RequeueMatching bool
	// Quarantine: it implements Quarantiner.
	Quarantine bool
	// Capacity: it is bounded, and refuses an Add when full with ErrFull.
	Capacity bool
}

// Declarer is a DeadLetters store that declares its capabilities.
type Declarer interface {
	Capabilities() Caps
}

// CapsOf returns what d declares: its Capabilities, each kept only when d
// implements the interface it needs; nothing when it declares nothing.
func CapsOf(d DeadLetters) Caps {
	dec, ok := d.(Declarer)
	if !ok {
		return Caps{}
	}
	c := dec.Capabilities()
	_, del := d.(Deleter)
	_, rm := d.(RequeueMatcher)
	_, q := d.(Quarantiner)
	c.Delete = c.Delete && del
	c.RequeueMatching = c.RequeueMatching && rm
	c.Quarantine = c.Quarantine && q
	return c
}
