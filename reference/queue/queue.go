// Package queue defines the work queue: where jobs wait, how a worker leases
// one, and how a job moves on after its attempt — succeeded, scheduled for a
// retry, released, or diverted to the fallback (batch) queue.
//
// Implementations live beside it, one per technology, and share a namespace
// with a DLQ so that moves between them are atomic: memstore (in memory, one
// lock) and redisstore (Redis, one hash tag, one Lua script per move). The
// conformance suite in queuetest holds every implementation to the same
// semantics; a team runs it against its own.
//
// Time enters only as arguments taken from the caller's clock (a lease's
// expiry, a retry's due time), so the same store runs under the simulator's
// virtual time and the live runner's wall clock. Nothing blocks: Dequeue
// returns a job or reports there is none.
package queue

import (
	"context"
	"errors"
	"time"

	"github.com/faultline/faultline/reference/job"
)

// Errors returned by queues.
var (
	// ErrDuplicate: a job with this ID is already queued, in flight,
	// scheduled, in the fallback queue or held (its dead letter waiting
	// for room in the DLQ).
	ErrDuplicate = errors.New("job already in the queue")
	// ErrLeaseLost: the lease is not the job's current one (it expired and
	// the job was recovered, perhaps leased again): the completion is
	// refused, so that it is never applied twice.
	ErrLeaseLost = errors.New("lease lost")
	// ErrNotFound: no such job.
	ErrNotFound = errors.New("job not found")
	// ErrDeadLettered: the job is in the DLQ (its entry failed, quarantined
	// or deleted); it goes back through a DLQ requeue, not a new enqueue,
	// so it is never in two places.
	ErrDeadLettered = errors.New("job is in the dead letter queue")
)

// Lease is a worker's claim on a job. Its Token fences: a completion carrying
// an older token than the job's current one is refused with ErrLeaseLost.
type Lease struct {
	JobID   string
	Queue   string
	Token   uint64
	Expires time.Time
}

// Counts are how many jobs are where, for the ledger and for metrics.
// Held counts the jobs parked in the held set with their decided dead
// letters (see dlq.Store.Hold): in no queue, waiting for room in the DLQ.
type Counts struct {
	Queued, InFlight, Scheduled, Fallback, Held int
}

// Queue is the work queue of one namespace.
type Queue interface {
	// Enqueue puts a new job at the tail of its queue. A job whose ID is
	// anywhere in the queue's structures is refused with ErrDuplicate, one
	// in the DLQ with ErrDeadLettered; an invalid job with job.ErrInvalid,
	// and nothing is written.
	Enqueue(ctx context.Context, j job.Job, now time.Time) error
	// Dequeue leases the job at the head of the named queue until now+ttl.
	// It reports false when the queue is empty; it never blocks.
	Dequeue(ctx context.Context, queue string, now time.Time, ttl time.Duration) (job.Job, Lease, bool, error)
	// Heartbeat extends a lease to now+ttl and returns the new lease.
	Heartbeat(ctx context.Context, l Lease, now time.Time, ttl time.Duration) (Lease, error)
	// Ack removes a job whose attempt succeeded; j is the job as the
	// worker ends it (its attempts counted), checked like the other
	// completions (job.Validate, ID = the lease's), and the succeeded
	// event carries j.Attempts.
	Ack(ctx context.Context, l Lease, j job.Job, now time.Time) error
	// Retry moves a leased job to the retry schedule, due at `at`, storing j
	// (its attempt count updated) in place of the leased copy.
	Retry(ctx context.Context, l Lease, j job.Job, at time.Time, now time.Time) error
	// Release puts a leased job back at the head of its queue at once,
	// storing j (whose attempt, stopped by a shutdown, did not count).
	Release(ctx context.Context, l Lease, j job.Job, now time.Time) error
	// Divert moves a leased job to the fallback (batch) queue.
	Divert(ctx context.Context, l Lease, j job.Job, now time.Time) error
	// ForwardDue moves up to limit scheduled retries due at or before now to
	// the tails of their queues, oldest due first, and returns how many.
	//
	// The order of time is one rule for every store, a team's own too
	// (queuetest and dlqtest check it): a time counts by its Unix
	// millisecond (time.Time.UnixMilli), so a retry due at 10.7 ms is due
	// at now = 10 ms; and retries due in the same millisecond go in job ID
	// order (bytewise), whatever order they were scheduled in. Expired
	// leases (RecoverExpired) and DLQ entries (by LastFailedAt: listing,
	// the oldest entry, requeue by filter, eviction, purge) follow the same
	// rule.
	//
	// Why (due millisecond, job ID) and not scheduling order: it is what a
	// Redis sorted set of job IDs scored by millisecond gives by itself
	// (members of equal score sort bytewise), so the Redis store takes the
	// due jobs with one ZRANGEBYSCORE inside the script that moves them,
	// atomic and bounded, and any other store with an index on (due, id).
	// Scheduling order would need a per-namespace counter and, in Redis,
	// either that counter encoded in every member (each removal then a
	// lookup) or an unbounded read of one millisecond's ties; and it is not
	// in the data, so two stores holding the same jobs could order them
	// differently. The ID rule depends on the data alone: the same jobs go
	// in the same order on every backend, and one scenario gives one result
	// on all of them. (Retries are jittered: ties are rare outside
	// synchronised waves, and ID order among them is as fair as any.)
	ForwardDue(ctx context.Context, now time.Time, limit int) (int, error)
	// RecoverExpired puts up to limit jobs whose lease expired at or before
	// now back at the heads of their queues, the earliest-expired first
	// (ForwardDue's rule: by expiry millisecond, then job ID); whether that
	// uses an attempt is the store's configuration (by default it does not:
	// the worker died, not the job). It returns how many.
	RecoverExpired(ctx context.Context, now time.Time, limit int) (int, error)
	// DrainBatch moves up to max jobs from the fallback queue back to the
	// tails of their queues, oldest diverted first (degrade.Drainer).
	DrainBatch(ctx context.Context, now time.Time, max int) (moved int, more bool, err error)
	// Counts reports how many jobs are where.
	Counts(ctx context.Context) (Counts, error)
}

// AckDequeuer is a Queue that acks a job and leases the next in one atomic
// step: a worker whose attempts succeed pays one store call a job, not two.
// The Redis store implements it (one script); a worker uses it when its
// queue does, and Ack and Dequeue otherwise.
type AckDequeuer interface {
	// AckDequeue acks l's job as Ack does (j as Ack takes it), then leases
	// the head of the first of queues that has a job, as Dequeue does, until
	// now+ttl, in one step: the store applies both or neither. ack is the
	// ack's answer as Ack gives it (nil, or an error matching ErrLeaseLost,
	// and ErrNotFound when the job is gone): the lease is made whatever it
	// says. ok reports a job leased, from queues[i]. err is the store's
	// failure: when the reply was lost, whether the step happened is
	// unknown (a lease whose reply was lost expires and its job is
	// recovered, as with Dequeue) and ack is err too; a leased job that
	// does not decode is reported in err beside the ack's answer (its
	// lease expires likewise). An invalid j is refused in ack and nothing
	// is written or leased.
	AckDequeue(ctx context.Context, l Lease, j job.Job, queues []string, now time.Time, ttl time.Duration) (ack error, next job.Job, nl Lease, i int, ok bool, err error)
}
