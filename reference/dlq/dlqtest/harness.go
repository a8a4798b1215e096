// Package dlqtest is the conformance suite of dlq.Store: one set of Ginkgo
// specs ("shared behaviours", like River's riverdrivertest.Exercise) that
// every DLQ backend runs together with the work queue of its namespace, so
// that the in-memory store the simulator uses and the Redis store a live
// runner uses behave identically, and so that a team can hold its own
// implementation to the same contract. It includes a property over random
// operation sequences that checks, after every step, that no job is lost,
// doubled or in two places at once.
//
// Call Exercise inside a container of a Ginkgo suite:
//
//	var _ = Describe("memstore", func() {
//		dlqtest.Exercise(func(cfg store.Config) dlqtest.Harness {
//			s, err := memstore.New(cfg)
//			Expect(err).NotTo(HaveOccurred())
//			return dlqtest.Harness{Queue: s, DLQ: s, Corrupt: s.PlantRaw}
//		})
//	})
//
// Every spec runs on virtual time: fixed time.Time values derived from T0,
// no sleeps and no wall clock. Times are whole milliseconds, so a backend
// that keeps times as integer milliseconds meets the specs exactly; only the
// specs of the millisecond rule put several failures inside one millisecond.
//
// # The contract beyond the interface's doc comments
//
// The specs pin down what dlq.Store's comments leave open:
//
//   - Add and DeadLetter write Version = dlq.EncodingVersion and Status =
//     Failed, set LastFailedAt to the entry's own when it gives one no
//     later than now, else to now, set FirstFailedAt on a new entry to
//     the entry's own when it gives one no later than now, else to now (an
//     existing entry keeps its own), default SourceQueue to the
//     job's queue, store the entry's Job as given (its latest copy, the
//     idempotency key included), append the entry's History to the
//     existing one, and append one StatusChange{At: now, From: previous
//     status (0 for a new entry), To: Failed}. The entry's job must be
//     valid (job.ErrInvalid, nothing written); for DeadLetter its ID must
//     be the lease's.
//   - Entries whose job is dead-lettered are those Failed, Quarantined or
//     Deleted. A Requeued entry is only a record: its job is back in the
//     queue (or done).
//   - LastFailedAt counts by its Unix millisecond (queue.Queue.ForwardDue's
//     rule): "equal times" below means the same millisecond, and Purge
//     keeps an entry that failed in olderThan's own millisecond.
//   - List orders by LastFailedAt, newest first, and by job ID, descending,
//     among equal times. Next is "" exactly when no matching entry follows
//     the page.
//   - Stats: Total counts every entry, corrupt ones included; BySeverity,
//     ByTask, ByClass and ByStatus count the decodable entries of every
//     status, keyed by the names classify.Severity.String,
//     classify.Class.String and dlq.Status.String give, with no zero counts
//     (a missing key means zero). Oldest and OldestID are those of the
//     Failed entry with the earliest LastFailedAt (the lowest ID among
//     equal times).
//   - Requeue answers, in this order of precedence: OutcomeNotFound (no
//     entry), OutcomeNotRequeueable (corrupt; Deleted; Quarantined when
//     opts.Auto), OutcomeAlreadyRequeued (Requeued), OutcomeBusy (the job
//     ID is queued, in flight, scheduled or in the fallback queue),
//     otherwise OutcomeRequeued: the job goes to the tail of opts.Queue, or
//     of the entry's SourceQueue, with its attempts kept (OneMoreAttempt)
//     or zeroed (ResetAttempts); the entry becomes Requeued with Requeues+1
//     (AutoRetries+1 when Auto) and a StatusChange{At: now, From, To:
//     Requeued, By: opts.By}. A Budget that is neither is an error, and
//     nothing changes.
//   - RequeueMatching picks the entries matching the filter, whose
//     LastFailedAt is before now, and whose status is Failed, or, when the
//     filter's Statuses lists Quarantined and the run is not Auto,
//     Quarantined; it requeues them oldest LastFailedAt first (lowest ID
//     among equal times), in steps of at most Config.BatchSize entries.
//     Matched is how many it picked when it began; Requeued + Skipped =
//     Matched for a run alone on its store.
//   - Delete applies to Failed and Quarantined entries; Restore to Deleted
//     ones, giving back the status they had; Quarantine to Failed ones.
//     Otherwise dlq.ErrWrongStatus (corrupt entries included); an unknown
//     ID gives dlq.ErrNotFound. Each appends a StatusChange (By for Delete
//     and Restore, Reason for Quarantine).
//   - The held set: a DeadLetter the DLQ refuses (Reject) parks the job
//     with its entry in the held set in the same step (AddResult{Held:
//     true}, an in-flight→held event with reason held, an overflow with
//     Held set, Rejected+1), unless Config.HeldCapacity jobs are held
//     already: then dlq.ErrFull and dlq.ErrHeldFull, the job stays in flight
//     under its lease. Hold parks a leased job the same way without asking
//     the DLQ (dlq.ErrHeldFull at the bound; no overflow). A held job counts
//     in queue.Counts.Held and Stats.Held (HeldOldest: the oldest parking
//     time), not in Stats.Total; its lease is dead (heartbeat and
//     completions get queue.ErrLeaseLost); it is never recovered or leased;
//     its ID cannot be enqueued (queue.ErrDuplicate) and a requeue of an
//     older entry of its job answers as for a busy job. FlushHeld writes up
//     to limit held entries oldest parked first, each as a DeadLetter would
//     (merged with an existing entry, evicting by the policy), emitting
//     held→dead-lettered (dead-lettered), and stops at the first the DLQ
//     refuses (FlushResult.Full; not counted or reported again). Entries keep
//     the LastFailedAt they were given when it is not after now. Under
//     Reject, a DeadLetter or Add that needs room never takes it ahead of a
//     held job: held entries are written first (held→dead-lettered events
//     first, oldest first) into the room there is, then the new one if room
//     remains, else it is parked behind them (an Add: dlq.ErrFull).
//   - Capacity counts the decodable entries that are Failed or Quarantined,
//     and also Requeued and Deleted ones with Config.CountInactive. An add
//     that would make the count exceed the capacity either fails with
//     dlq.ErrFull, writing nothing (Reject), or first evicts the counted
//     entries with the oldest LastFailedAt (lowest ID among equal times)
//     until it fits (EvictOldest), returning their IDs oldest first. Either
//     way OnOverflow hears a store.Overflow and Stats counts it (Rejected
//     per refused add, Evicted per evicted entry). An add that extends an
//     entry already counted is no overflow.
//   - Events: a DeadLetter emits in-flight→dead-lettered (dead-lettered);
//     an Add that creates an entry, or revives a Requeued one, emits
//     none→dead-lettered (dead-lettered); a requeue dead-lettered→queued
//     (requeued); an eviction or purge of an entry whose job is
//     dead-lettered emits dead-lettered→none, with reason evicted, or
//     ReasonPurged. Evictions are reported before the add that caused them.
//     Delete, Restore and Quarantine move no job and emit nothing.
//   - Corrupt entries (bytes that do not decode) are listed by the zero
//     Filter, counted in Stats.Corrupt and Stats.Total, never requeued
//     (OutcomeNotRequeueable), refused any status change, and purged like
//     any entry; bytes planted through Harness.Corrupt have no known
//     failure time, so they are treated as failed at the zero time (listed
//     last, removed by every Purge).
//
// # Files
//
//   - harness.go: Harness, the fixture a spec runs on and its helpers.
//   - exercise.go: Exercise, the entry point: it declares the dlq.Store
//     specs, one function per concern in the files below; the states and
//     requeue budgets, short.
//   - entries.go: DeadLetter, Add and Get, and a dead-lettered job's ID.
//   - listing.go: List and Stats, filters and pagination.
//   - requeue.go: Requeue and RequeueMatching.
//   - delete.go: Delete, Restore and Quarantine; Purge.
//   - capacity.go: Hold and the held set, the capacity and its overflow
//     policies, FlushHeld.
//   - corrupt.go: entries whose bytes do not decode.
//   - ties.go: last failures in the same millisecond.
//   - property.go: the property over random operation sequences and the
//     model it checks the store against.
//   - property_actions.go: the property's actions, each applied to the
//     store and the model.
//   - ops.go: ExerciseOps, what the operator tools need beyond dlq.Store.
//   - edit.go: ExercisePayloadEditor.
//   - audit.go: ExerciseAuditor and AuditHarness.
//   - depth.go: ExerciseDepthRecorder and DepthHarness.
//   - plugin.go: ExerciseDeadLetters, the specs of a plugged-in
//     dlq.DeadLetters, with FailNth, PluginEntry and ExpectListed.
//   - mapstore.go: MapStore, a dlq.DeadLetters on a map.
package dlqtest

import (
	"context"
	"fmt"
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

// ReasonPurged is the reason of the event a purge emits for each entry whose
// job was dead-lettered.
const ReasonPurged = disposition.Purged

// Harness is one fresh, empty backend under test: a DLQ and the work queue
// of its namespace.
type Harness struct {
	// Queue is the work queue of the DLQ's namespace.
	Queue queue.Queue
	// DLQ is the dead letter queue under test.
	DLQ dlq.Store
	// Events, if set, returns every event the backend's Observer heard so
	// far, in order. Leave it nil to let the suite record them itself
	// through the Observer it puts in the store.Config it passes to the
	// factory (which must pass cfg through to the backend unchanged, but
	// for the Namespace it may choose to keep specs apart).
	Events func() []disposition.Event
	// Corrupt plants raw as the stored bytes of the entry of job id, the
	// way another writer (or a newer faultline) would have left them, with
	// no known failure time. Required: the corrupt-entry specs fail
	// without it.
	Corrupt func(id string, raw []byte)
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
	d    dlq.Store
	rec  *recorder
	seen int
}

// build makes a fixture from the factory, recording events and overflows.
func build(newHarness func(store.Config) Harness, cfg store.Config) *fixture {
	GinkgoHelper()
	f := &fixture{ctx: context.Background(), rec: &recorder{}}
	cfg.Observer = f.rec.Event
	cfg.OnOverflow = f.rec.Overflow
	f.h = newHarness(cfg)
	Expect(f.h.Queue).NotTo(BeNil(), "the harness has no Queue")
	Expect(f.h.DLQ).NotTo(BeNil(), "the harness has no DLQ")
	f.q, f.d = f.h.Queue, f.h.DLQ
	c, err := f.q.Counts(f.ctx)
	Expect(err).NotTo(HaveOccurred())
	Expect(c).To(Equal(queue.Counts{}), "the factory must build an empty backend")
	Expect(f.stats().Total).To(BeZero(), "the factory must build an empty backend")
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

// corrupt plants raw bytes through the harness, which the corrupt-entry
// specs require.
func (f *fixture) corrupt(id string, raw []byte) {
	GinkgoHelper()
	if f.h.Corrupt == nil {
		Fail("Harness.Corrupt is required: the corrupt-entry specs plant undecodable bytes through it")
	}
	f.h.Corrupt(id, raw)
}

// show formats an event for comparison (conformance.Show).
var show = conformance.Show

// ev is the expected form of an event of a job of task "charge".
func ev(id string, from, to disposition.State, r disposition.Reason, d time.Duration, attempts int) string {
	return evTask(id, "charge", from, to, r, d, attempts)
}

// evTask is ev for a job of another task.
func evTask(id, task string, from, to disposition.State, r disposition.Reason, d time.Duration, attempts int) string {
	return show(disposition.Event{JobID: id, Task: task, From: from, To: to, Reason: r, At: at(d), Attempts: attempts})
}

func (f *fixture) counts() queue.Counts {
	GinkgoHelper()
	c, err := f.q.Counts(f.ctx)
	Expect(err).NotTo(HaveOccurred())
	return c
}

func (f *fixture) stats() dlq.Stats {
	GinkgoHelper()
	s, err := f.d.Stats(f.ctx)
	Expect(err).NotTo(HaveOccurred())
	return s
}

func (f *fixture) get(id string) dlq.Entry {
	GinkgoHelper()
	e, err := f.d.Get(f.ctx, id)
	Expect(err).NotTo(HaveOccurred())
	return e
}

func (f *fixture) expectGone(id string) {
	GinkgoHelper()
	_, err := f.d.Get(f.ctx, id)
	Expect(err).To(MatchError(dlq.ErrNotFound))
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
	return j, l
}

// drainIDs dequeues q until it is empty and returns the IDs in order,
// acking each.
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

// add adds e at T0+d, expecting success.
func (f *fixture) add(e dlq.Entry, d time.Duration) dlq.AddResult {
	GinkgoHelper()
	r, err := f.d.Add(f.ctx, e, at(d))
	Expect(err).NotTo(HaveOccurred())
	return r
}

// kill runs j through the queue and dead-letters it at T0+d with entry e
// (whose job it replaces with the leased one, attempts set to j's).
func (f *fixture) kill(j job.Job, d time.Duration, e dlq.Entry) dlq.AddResult {
	GinkgoHelper()
	f.enqueue(j, d)
	got, l := f.dequeue(j.QueueName(), d)
	got.Attempts = j.Attempts
	e.Job = got
	r, err := f.d.DeadLetter(f.ctx, l, e, at(d))
	Expect(err).NotTo(HaveOccurred())
	return r
}

// requeue requeues id at T0+d and returns the outcome.
func (f *fixture) requeue(id string, opts dlq.RequeueOptions, d time.Duration) dlq.RequeueOutcome {
	GinkgoHelper()
	o, err := f.d.Requeue(f.ctx, id, opts, at(d))
	Expect(err).NotTo(HaveOccurred())
	return o
}

// listIDs pages through the whole listing of filter with page size limit
// and returns the IDs in order; it fails on a repeat.
func (f *fixture) listIDs(filter dlq.Filter, limit int) []string {
	GinkgoHelper()
	var ids []string
	seen := map[string]bool{}
	cursor := ""
	for range 100_000 {
		p, err := f.d.List(f.ctx, filter, cursor, limit)
		Expect(err).NotTo(HaveOccurred())
		Expect(len(p.Entries)).To(BeNumerically("<=", limit))
		for _, e := range p.Entries {
			if seen[e.ID()] {
				Fail(fmt.Sprintf("entry %s listed twice", e.ID()))
			}
			seen[e.ID()] = true
			ids = append(ids, e.ID())
		}
		if p.Next == "" {
			return ids
		}
		Expect(p.Entries).NotTo(BeEmpty(), "a page with a Next cursor must not be empty")
		cursor = p.Next
	}
	Fail("the listing never ended")
	return nil
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

// verdict returns a classification.
func verdict(sev classify.Severity, class classify.Class) classify.Classification {
	return classify.Classification{Class: class, Severity: sev, Source: classify.Dependency, Rule: "rule-" + class.String()}
}

// failing returns an entry for j whose one failure, at t, has the given
// severity, class and error type.
func failing(j job.Job, t time.Time, sev classify.Severity, class classify.Class, errType string) dlq.Entry {
	v := verdict(sev, class)
	return dlq.Entry{
		Job:     j,
		History: []dlq.Failure{{At: t, Attempt: j.Attempts, Error: class.String() + " failure of " + j.ID, ErrorType: errType, Verdict: v}},
		Verdict: v,
		Reason:  class.String(),
	}
}

// deadEntry is failing with a permanent, medium failure of an HTTP error.
func deadEntry(j job.Job, t time.Time) dlq.Entry {
	return failing(j, t, classify.Medium, classify.Permanent, "*failure.HTTPError")
}

// changes formats an entry's status history: "→failed T0+1s",
// "failed→requeued T0+1m".
func changes(e dlq.Entry) []string {
	out := make([]string, 0, len(e.Changes))
	for _, c := range e.Changes {
		from := ""
		if c.From != 0 {
			from = c.From.String()
		}
		out = append(out, fmt.Sprintf("%s→%s T0+%v", from, c.To, c.At.Sub(T0)))
	}
	return out
}

// change is the expected form of a status change.
func change(from, to dlq.Status, d time.Duration) string {
	f := ""
	if from != 0 {
		f = from.String()
	}
	return fmt.Sprintf("%s→%s T0+%v", f, to, d)
}

// normalJob returns j in a canonical form for comparison.
func normalJob(j job.Job) job.Job {
	if len(j.Payload) == 0 {
		j.Payload = nil
	}
	j.KeyRecordedAt = j.KeyRecordedAt.Round(0).UTC()
	j.FirstAttemptAt = j.FirstAttemptAt.Round(0).UTC()
	j.EnqueuedAt = j.EnqueuedAt.Round(0).UTC()
	return j
}

// normalHistory returns h in a canonical form for comparison.
func normalHistory(h []dlq.Failure) []dlq.Failure {
	out := make([]dlq.Failure, len(h))
	for i, x := range h {
		x.At = x.At.Round(0).UTC()
		out[i] = x
	}
	return out
}

func equalJob(got, want job.Job) {
	GinkgoHelper()
	Expect(normalJob(got)).To(Equal(normalJob(want)))
}

func equalHistory(got, want []dlq.Failure) {
	GinkgoHelper()
	Expect(normalHistory(got)).To(Equal(normalHistory(want)))
}

// nonZero returns m without its zero counts, nil when empty.
func nonZero(m map[string]int) map[string]int {
	var out map[string]int
	for k, v := range m {
		if v != 0 {
			if out == nil {
				out = map[string]int{}
			}
			out[k] = v
		}
	}
	return out
}

// expectMap compares a Stats breakdown, a missing key meaning zero.
func expectMap(got, want map[string]int, what string) {
	GinkgoHelper()
	for k, v := range got {
		Expect(v).To(BeNumerically(">", 0), "Stats.%s[%q] is %d; zero counts are left out", what, k, v)
	}
	Expect(nonZero(got)).To(Equal(nonZero(want)), "Stats.%s", what)
}
