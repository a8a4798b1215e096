package dlqtest

import (
	"time"

	. "github.com/onsi/ginkgo/v2"

	"github.com/faultline/faultline/reference/disposition"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/job"
	"github.com/faultline/faultline/reference/store"
)

// The states, short.
const (
	none     = disposition.None
	queued   = disposition.Queued
	inFlight = disposition.InFlight
	dead     = disposition.DeadLettered
)

// oneMore and reset are the two budgets of an operator's requeue.
var (
	oneMore = dlq.RequeueOptions{Budget: dlq.OneMoreAttempt, By: "ops"}
	reset   = dlq.RequeueOptions{Budget: dlq.ResetAttempts, By: "ops"}
)

// dequeueAny tries to lease a job from each of the default and "emails"
// queues at T0+d.
func dequeueAny(f *fixture, d time.Duration) (job.Job, bool, error) {
	for _, q := range []string{job.DefaultQueue, "emails"} {
		j, _, ok, err := f.q.Dequeue(f.ctx, q, at(d), TTL)
		if err != nil || ok {
			return j, ok, err
		}
	}
	return job.Job{}, false, nil
}

// Exercise declares the dlq.Store conformance specs, including a property
// over random operation sequences. newHarness builds a fresh, empty backend
// from cfg for each spec (and may be called many times in one spec: the
// property builds one per run); the suite sets cfg.Observer and
// cfg.OnOverflow to record what the backend reports, so the factory must
// pass cfg through.
func Exercise(newHarness func(cfg store.Config) Harness) {
	Describe("dlq.Store conformance", func() {
		exerciseDeadLetter(newHarness)
		exerciseAdd(newHarness)
		exerciseGet(newHarness)
		exerciseListing(newHarness)
		exercisePagination(newHarness)
		exerciseJobID(newHarness)
		exerciseRequeue(newHarness)
		exerciseRequeueMatching(newHarness)
		exerciseStatusChanges(newHarness)
		exercisePurge(newHarness)
		exerciseHold(newHarness)
		exerciseCapacity(newHarness)
		exerciseCorrupt(newHarness)
		describeConservation(newHarness)
		exerciseTies(newHarness)
	})
}

// mustEncode encodes e as a store would, Failed.
func mustEncode(e dlq.Entry) []byte {
	e.Status = dlq.Failed
	e.LastFailedAt, e.FirstFailedAt = T0, T0
	b, err := dlq.Encode(e)
	if err != nil {
		panic(err)
	}
	return b
}
