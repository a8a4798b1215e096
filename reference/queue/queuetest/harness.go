// Package queuetest is the conformance suite of queue.Queue: one set of
// Ginkgo specs ("shared behaviours", like River's riverdrivertest.Exercise)
// that every backend of the work queue runs, so that the in-memory store the
// simulator uses and the Redis store a live runner uses behave identically,
// and so that a team can hold its own implementation to the same contract.
//
// Call Exercise inside a container of a Ginkgo suite:
//
//	var _ = Describe("memstore", func() {
//		queuetest.Exercise(func(cfg store.Config) queuetest.Harness {
//			s, err := memstore.New(cfg)
//			Expect(err).NotTo(HaveOccurred())
//			return queuetest.Harness{Queue: s, DLQ: s}
//		})
//	})
//
// Every spec runs on virtual time: fixed time.Time values derived from T0,
// no sleeps and no wall clock. Times and durations are whole milliseconds,
// so a backend that keeps times as integer milliseconds (Redis sorted-set
// scores) meets the specs exactly; only the specs of the millisecond rule
// (queue.Queue.ForwardDue) put several times inside one millisecond.
//
// # The contract beyond the interface's doc comments
//
// The specs pin down what queue.Queue's comments leave open, so that every
// backend agrees:
//
//   - Dequeue("") is Dequeue(job.DefaultQueue). A lease's Queue is the job's
//     queue name, its Expires is now+ttl, and its Token is non-zero and
//     differs from every earlier lease of the same job.
//   - Fencing is by token alone: a completion (Ack, Retry, Release, Divert,
//     Heartbeat, dlq.Store.DeadLetter) carrying the job's current token is
//     accepted even after the lease's expiry time, as long as RecoverExpired
//     has not taken the job back. Any other lease, including one for a job
//     that is no longer in flight at all, gets queue.ErrLeaseLost and
//     changes nothing. Heartbeat keeps the token.
//   - Ack, Retry, Release, Divert and DeadLetter refuse a job whose ID is
//     not the lease's, or that is invalid, with job.ErrInvalid, and change
//     nothing.
//   - A store keeps a job exactly as given (Enqueue does not set
//     EnqueuedAt; the producer does).
//   - Times order by ForwardDue's rule: by Unix millisecond, then job ID;
//     a retry is due, a lease expired, once now reaches its millisecond.
//   - RecoverExpired takes the leases in order of expiry; jobs recovered
//     onto one queue end up at its head in that order (the earliest-expired
//     first), ahead of the jobs already waiting.
//   - ForwardDue and DrainBatch append to the tails of the jobs' own
//     queues, oldest due (diverted) first. A limit below 1 moves nothing.
//   - Every move emits exactly one disposition.Event, At the call's now,
//     with the job's task and its attempts after the move (for a
//     completion, those of the job it was given: Ack's succeeded event
//     carries the attempts of the job passed to Ack); Heartbeat and
//     refused calls emit none.
//
// Use the Harness's DLQ for the dead-letter move, which must be atomic with
// the queue (one namespace).
//
// # Files
//
//   - harness.go: Harness, the fixture a spec runs on and its helpers.
//   - exercise.go: Exercise: the queue.Queue specs (Enqueue and Dequeue,
//     duplicate and invalid jobs, completions, leases and fencing, Retry and
//     ForwardDue, Release, Divert and DrainBatch, events, Counts).
//   - ties.go: times in the same millisecond.
package queuetest

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/disposition"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/internal/conformance"
	"github.com/faultline/faultline/reference/job"
	"github.com/faultline/faultline/reference/queue"
	"github.com/faultline/faultline/reference/store"
)

// Harness is one fresh, empty backend under test.
type Harness struct {
	// Queue is the work queue under test.
	Queue queue.Queue
	// DLQ is the dead letter queue of the same namespace, so that
	// DeadLetter's move out of the queue is atomic.
	DLQ dlq.Store
	// Events, if set, returns every event the backend's Observer heard so
	// far, in order. Leave it nil to let the suite record them itself
	// through the Observer it puts in the store.Config it passes to the
	// factory (which must pass cfg through to the backend unchanged, but
	// for the Namespace it may choose to keep specs apart).
	Events func() []disposition.Event
}

// T0 is the virtual instant every spec starts at.
var T0 = conformance.T0

// TTL is the lease the specs take.
const TTL = conformance.TTL

// at returns T0+d.
func at(d time.Duration) time.Time { return conformance.At(d) }

// recorder collects what a backend reports through its store.Config
// callbacks.
type recorder = conformance.Recorder

// fixture is one spec's backend with the suite's bookkeeping.
type fixture struct {
	ctx  context.Context
	h    Harness
	q    queue.Queue
	rec  *recorder
	seen int
}

// build makes a fixture from the factory, recording events.
func build(newHarness func(store.Config) Harness, cfg store.Config) *fixture {
	GinkgoHelper()
	f := &fixture{ctx: context.Background(), rec: &recorder{}}
	cfg.Observer = f.rec.Event
	cfg.OnOverflow = f.rec.Overflow
	f.h = newHarness(cfg)
	Expect(f.h.Queue).NotTo(BeNil(), "the harness has no Queue")
	Expect(f.h.DLQ).NotTo(BeNil(), "the harness has no DLQ")
	f.q = f.h.Queue
	Expect(f.counts()).To(Equal(queue.Counts{}), "the factory must build an empty backend")
	Expect(f.allEvents()).To(BeEmpty(), "the factory must build a backend that has heard nothing")
	return f
}

func (f *fixture) allEvents() []disposition.Event {
	if f.h.Events != nil {
		return f.h.Events()
	}
	return f.rec.Events()
}

// take returns the events since the last take, formatted with show.
func (f *fixture) take() []string {
	GinkgoHelper()
	return conformance.Take(f.allEvents(), &f.seen)
}

// show formats an event for comparison (conformance.Show).
var show = conformance.Show

// ev is the expected form of an event of a job of task "charge".
func ev(id string, from, to disposition.State, r disposition.Reason, d time.Duration, attempts int) string {
	return show(disposition.Event{JobID: id, Task: "charge", From: from, To: to, Reason: r, At: at(d), Attempts: attempts})
}

func (f *fixture) counts() queue.Counts {
	GinkgoHelper()
	c, err := f.q.Counts(f.ctx)
	Expect(err).NotTo(HaveOccurred())
	return c
}

func (f *fixture) expectCounts(queued, inFlight, scheduled, fallback int) {
	GinkgoHelper()
	Expect(f.counts()).To(Equal(queue.Counts{Queued: queued, InFlight: inFlight, Scheduled: scheduled, Fallback: fallback}))
}

func (f *fixture) enqueue(j job.Job, d time.Duration) {
	GinkgoHelper()
	Expect(f.q.Enqueue(f.ctx, j, at(d))).To(Succeed())
}

// dequeue leases the head of q at T0+d for TTL, expecting a job.
func (f *fixture) dequeue(q string, d time.Duration) (job.Job, queue.Lease) {
	GinkgoHelper()
	j, l, ok, err := f.q.Dequeue(f.ctx, q, at(d), TTL)
	Expect(err).NotTo(HaveOccurred())
	Expect(ok).To(BeTrue(), "expected a job on queue %q", q)
	Expect(l.JobID).To(Equal(j.ID))
	return j, l
}

// dequeueID leases the head of q and expects it to be job id.
func (f *fixture) dequeueID(q string, d time.Duration, id string) (job.Job, queue.Lease) {
	GinkgoHelper()
	j, l := f.dequeue(q, d)
	Expect(j.ID).To(Equal(id), "the head of queue %q", q)
	return j, l
}

// drainIDs dequeues q until it is empty and returns the IDs in order; the
// leases are acked.
func (f *fixture) drainIDs(q string, d time.Duration) []string {
	GinkgoHelper()
	var ids []string
	for {
		j, l, ok, err := f.q.Dequeue(f.ctx, q, at(d), TTL)
		Expect(err).NotTo(HaveOccurred())
		if !ok {
			return ids
		}
		ids = append(ids, j.ID)
		Expect(f.q.Ack(f.ctx, l, j, at(d))).To(Succeed())
	}
}

func (f *fixture) expectEmpty(q string, d time.Duration) {
	GinkgoHelper()
	j, l, ok, err := f.q.Dequeue(f.ctx, q, at(d), TTL)
	Expect(err).NotTo(HaveOccurred())
	Expect(ok).To(BeFalse(), "expected queue %q to be empty, got %s", q, j.ID)
	Expect(l).To(Equal(queue.Lease{}))
}

// newJob returns a valid job of task "charge" on the default queue.
func newJob(id string) job.Job {
	return job.Job{
		ID:             id,
		Task:           "charge",
		Dependency:     "payment-gateway",
		Payload:        []byte(`{"order":"` + id + `","cents":1299}`),
		IdempotencyKey: "idem-" + id,
		KeyRecordedAt:  T0.Add(-time.Minute),
	}
}

// onQueue returns newJob(id) on queue q.
func onQueue(id, q string) job.Job {
	j := newJob(id)
	j.Queue = q
	return j
}

// normal returns j in a canonical form for comparison: an empty payload is
// nil and times are in UTC without a monotonic reading.
func normal(j job.Job) job.Job {
	if len(j.Payload) == 0 {
		j.Payload = nil
	}
	j.KeyRecordedAt = j.KeyRecordedAt.Round(0).UTC()
	j.FirstAttemptAt = j.FirstAttemptAt.Round(0).UTC()
	j.EnqueuedAt = j.EnqueuedAt.Round(0).UTC()
	return j
}

// equalJob matches a job equal to want once both are normal.
func equalJob(got, want job.Job) {
	GinkgoHelper()
	Expect(normal(got)).To(Equal(normal(want)))
}

// The states and reasons, short.
const (
	none     = disposition.None
	queued   = disposition.Queued
	inFlight = disposition.InFlight
	sched    = disposition.Scheduled
	fallback = disposition.Fallback
	dead     = disposition.DeadLettered
	done     = disposition.Succeeded
)

// deadEntry returns a DLQ entry for j with one failed attempt at t.
func deadEntry(j job.Job, t time.Time) dlq.Entry {
	v := classify.Classification{Class: classify.Permanent, Severity: classify.Medium, Source: classify.Dependency, Rule: "declined"}
	return dlq.Entry{
		Job:     j,
		History: []dlq.Failure{{At: t, Attempt: j.Attempts, Error: "card declined", ErrorType: "*failure.HTTPError", Verdict: v}},
		Verdict: v,
		Reason:  "permanent failure",
	}
}
