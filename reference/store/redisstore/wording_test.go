package redisstore_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/job"
	"github.com/faultline/faultline/reference/queue"
	"github.com/faultline/faultline/reference/store"
	"github.com/faultline/faultline/reference/store/memstore"
	"github.com/faultline/faultline/reference/store/redisstore"
	"github.com/faultline/faultline/reference/store/redisstore/redistest"
)

// The stores a run may use word their refusals alike: a run's report,
// which may quote one, is the same byte for byte on every backend.
var _ = Describe("the memory and Redis stores' refusals of a full held set (issue 28 item 6)", func() {
	// both is the store API the spec uses of each.
	type both interface {
		queue.Queue
		dlq.Store
	}
	t0 := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
	cfg := store.Config{Namespace: "wording", DLQCapacity: 1, HeldCapacity: 1, Overflow: store.Reject}

	// refusals fills s's DLQ and held set (one each), then has one more
	// job dead-lettered and held: both refused.
	refusals := func(s both) (deadLetter, hold error) {
		GinkgoHelper()
		ctx := context.Background()
		var leases []queue.Lease
		var jobs []job.Job
		for _, id := range []string{"a", "b", "c"} {
			Expect(s.Enqueue(ctx, job.Job{ID: id, Task: "charge"}, t0)).To(Succeed())
			j, l, ok, err := s.Dequeue(ctx, job.DefaultQueue, t0, time.Minute)
			Expect(err).NotTo(HaveOccurred())
			Expect(ok).To(BeTrue())
			jobs, leases = append(jobs, j), append(leases, l)
		}
		entry := func(j job.Job) dlq.Entry {
			v := classify.Classification{Class: classify.Permanent, Severity: classify.Medium, Source: classify.Dependency, Rule: "declined"}
			return dlq.Entry{Job: j, History: []dlq.Failure{{At: t0, Error: "declined", Verdict: v}}, Verdict: v, Reason: "permanent"}
		}
		r, err := s.DeadLetter(ctx, leases[0], entry(jobs[0]), t0)
		Expect(err).NotTo(HaveOccurred())
		Expect(r.Held).To(BeFalse())
		r, err = s.DeadLetter(ctx, leases[1], entry(jobs[1]), t0)
		Expect(err).NotTo(HaveOccurred())
		Expect(r.Held).To(BeTrue())
		_, deadLetter = s.DeadLetter(ctx, leases[2], entry(jobs[2]), t0)
		hold = s.Hold(ctx, leases[2], entry(jobs[2]), t0)
		return deadLetter, hold
	}

	It("words them alike: the DLQ and the held set full, and the held set full", func() {
		mem, err := memstore.New(cfg)
		Expect(err).NotTo(HaveOccurred())
		memDeadLetter, memHold := refusals(mem)
		red := newStore(redisstore.NewClient(redistest.Mini(GinkgoRandomSeed()).Addr()), cfg)
		redDeadLetter, redHold := refusals(red)

		Expect(memDeadLetter).To(And(MatchError(dlq.ErrFull), MatchError(dlq.ErrHeldFull)))
		Expect(redDeadLetter).To(And(MatchError(dlq.ErrFull), MatchError(dlq.ErrHeldFull)))
		Expect(memHold).To(MatchError(dlq.ErrHeldFull))
		Expect(redHold).To(MatchError(dlq.ErrHeldFull))
		Expect(redDeadLetter.Error()).To(Equal(memDeadLetter.Error()))
		Expect(redHold.Error()).To(Equal(memHold.Error()))
		Expect(memHold.Error()).To(Equal("hold c: the held set is at its bound of 1: held set is full"))
		Expect(memDeadLetter.Error()).To(Equal("dead-letter c: the DLQ is at its capacity of 1 and the held set at its bound of 1: dlq is full: held set is full"))
	})
})
