package dlqtest

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/disposition"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/job"
	"github.com/faultline/faultline/reference/queue"
	"github.com/faultline/faultline/reference/store"
)

// exerciseDeadLetter declares the specs of DeadLetter.
func exerciseDeadLetter(newHarness func(cfg store.Config) Harness) {
	Describe("DeadLetter", func() {
		var (
			cfg store.Config
			f   *fixture
		)
		BeforeEach(func() { cfg = store.Config{} })
		JustBeforeEach(func() { f = build(newHarness, cfg) })

		It("moves a leased job into the DLQ in one step, with its history", func() {
			j := newJob("j1")
			j.Attempts = 3
			e := deadEntry(j, at(5*time.Second))
			r := f.kill(j, 5*time.Second, e)
			Expect(r.Created).To(BeTrue())
			Expect(r.Evicted).To(BeEmpty())
			Expect(f.counts()).To(Equal(queue.Counts{}))

			got := f.get("j1")
			Expect(got.Corrupt).To(BeFalse())
			Expect(got.Version).To(Equal(dlq.EncodingVersion))
			equalJob(got.Job, j)
			equalHistory(got.History, e.History)
			Expect(got.FirstFailedAt).To(BeTemporally("==", at(5*time.Second)))
			Expect(got.LastFailedAt).To(BeTemporally("==", at(5*time.Second)))
			Expect(got.Verdict).To(Equal(e.Verdict))
			Expect(got.Reason).To(Equal(e.Reason))
			Expect(got.SourceQueue).To(Equal(job.DefaultQueue))
			Expect(got.Status).To(Equal(dlq.Failed))
			Expect(changes(got)).To(Equal([]string{change(0, dlq.Failed, 5*time.Second)}))
			Expect(got.Requeues).To(BeZero())
			Expect(got.AutoRetries).To(BeZero())
			Expect(got.Severity()).To(Equal(classify.Medium))
			Expect(got.ErrorType()).To(Equal("*failure.HTTPError"))

			Expect(f.take()).To(Equal([]string{
				ev("j1", none, queued, disposition.Enqueued, 5*time.Second, 3),
				ev("j1", queued, inFlight, disposition.Leased, 5*time.Second, 3),
				ev("j1", inFlight, dead, disposition.DeadLetter, 5*time.Second, 3),
			}))
		})

		It("keeps the source queue of a job of another queue", func() {
			j := newJob("e1")
			j.Queue = "emails"
			f.kill(j, 0, deadEntry(j, T0))
			Expect(f.get("e1").SourceQueue).To(Equal("emails"))
		})

		It("is fenced by the lease: a late dead-letter of a job that came back writes nothing", func() {
			f.enqueue(newJob("j1"), 0)
			_, stale := f.dequeue(job.DefaultQueue, 0)
			n, err := f.q.RecoverExpired(f.ctx, stale.Expires, 10)
			Expect(err).NotTo(HaveOccurred())
			Expect(n).To(Equal(1))
			f.take()

			_, err = f.d.DeadLetter(f.ctx, stale, deadEntry(newJob("j1"), at(time.Minute)), at(time.Minute))
			Expect(err).To(MatchError(queue.ErrLeaseLost))
			f.expectGone("j1")
			Expect(f.stats().Total).To(BeZero())
			Expect(f.counts()).To(Equal(queue.Counts{Queued: 1}))
			Expect(f.take()).To(BeEmpty())
		})

		It("extends the history of a job that dies again after a requeue, keeping one entry", func() {
			j := newJob("j1")
			j.Attempts = 3
			e1 := deadEntry(j, at(10*time.Second))
			f.kill(j, 10*time.Second, e1)
			Expect(f.requeue("j1", reset, time.Minute)).To(Equal(dlq.OutcomeRequeued))

			got, l := f.dequeue(job.DefaultQueue, 90*time.Second)
			Expect(got.Attempts).To(BeZero())
			got.Attempts = 1
			e2 := failing(got, at(2*time.Minute), classify.High, classify.Critical, "*failure.AuthError")
			r, err := f.d.DeadLetter(f.ctx, l, e2, at(2*time.Minute))
			Expect(err).NotTo(HaveOccurred())
			Expect(r.Created).To(BeFalse())
			Expect(r.Evicted).To(BeEmpty())

			e := f.get("j1")
			equalHistory(e.History, append(append([]dlq.Failure{}, e1.History...), e2.History...))
			equalJob(e.Job, got)
			Expect(e.FirstFailedAt).To(BeTemporally("==", at(10*time.Second)))
			Expect(e.LastFailedAt).To(BeTemporally("==", at(2*time.Minute)))
			Expect(e.Verdict).To(Equal(e2.Verdict))
			Expect(e.Status).To(Equal(dlq.Failed))
			Expect(e.Requeues).To(Equal(1))
			Expect(changes(e)).To(Equal([]string{
				change(0, dlq.Failed, 10*time.Second),
				change(dlq.Failed, dlq.Requeued, time.Minute),
				change(dlq.Requeued, dlq.Failed, 2*time.Minute),
			}))
			st := f.stats()
			Expect(st.Total).To(Equal(1))
			expectMap(st.ByStatus, map[string]int{"failed": 1}, "ByStatus")
			Expect(f.take()[3:]).To(Equal([]string{
				ev("j1", dead, queued, disposition.Requeued, time.Minute, 0),
				ev("j1", queued, inFlight, disposition.Leased, 90*time.Second, 0),
				ev("j1", inFlight, dead, disposition.DeadLetter, 2*time.Minute, 1),
			}))
		})

		It("refuses an invalid entry job with job.ErrInvalid, leaving the lease in force", func() {
			f.enqueue(newJob("j1"), 0)
			_, l := f.dequeue(job.DefaultQueue, 0)
			f.take()
			_, err := f.d.DeadLetter(f.ctx, l, deadEntry(job.Job{}, T0), T0)
			Expect(err).To(MatchError(job.ErrInvalid))
			_, err = f.d.DeadLetter(f.ctx, l, deadEntry(newJob("j2"), T0), T0)
			Expect(err).To(MatchError(job.ErrInvalid))
			f.expectGone("j1")
			f.expectGone("j2")
			Expect(f.counts()).To(Equal(queue.Counts{InFlight: 1}))
			Expect(f.take()).To(BeEmpty())
			Expect(f.q.Ack(f.ctx, l, newJob("j1"), T0)).To(Succeed())
		})
	})
}

// exerciseAdd declares the specs of Add.
func exerciseAdd(newHarness func(cfg store.Config) Harness) {
	Describe("Add", func() {
		var (
			cfg store.Config
			f   *fixture
		)
		BeforeEach(func() { cfg = store.Config{} })
		JustBeforeEach(func() { f = build(newHarness, cfg) })

		It("creates an entry for a job not in the DLQ", func() {
			j := newJob("imp")
			j.Attempts = 5
			e := deadEntry(j, at(-time.Hour))
			r := f.add(e, time.Second)
			Expect(r).To(Equal(dlq.AddResult{Created: true}))
			got := f.get("imp")
			equalJob(got.Job, j)
			equalHistory(got.History, e.History)
			Expect(got.Status).To(Equal(dlq.Failed))
			Expect(got.SourceQueue).To(Equal(job.DefaultQueue))
			Expect(got.FirstFailedAt).To(BeTemporally("==", at(time.Second)))
			Expect(got.LastFailedAt).To(BeTemporally("==", at(time.Second)))
			Expect(f.take()).To(Equal([]string{ev("imp", none, dead, disposition.DeadLetter, time.Second, 5)}))
		})

		It("keeps the first failure's time the caller gives, never a time after the add", func() {
			e := deadEntry(newJob("first"), at(time.Second))
			e.FirstFailedAt = at(-time.Minute) // the job's first failed attempt
			f.add(e, time.Second)
			Expect(f.get("first").FirstFailedAt).To(BeTemporally("==", at(-time.Minute)))
			f.take()
			late := deadEntry(newJob("late"), at(time.Second))
			late.FirstFailedAt = at(time.Hour)
			f.add(late, 2*time.Second)
			Expect(f.get("late").FirstFailedAt).To(BeTemporally("==", at(2*time.Second)))
			f.take()
		})

		It("is idempotent per job ID: a second add extends the history and creates nothing", func() {
			e1 := deadEntry(newJob("imp"), at(time.Second))
			f.add(e1, time.Second)
			f.take()
			e2 := failing(newJob("imp"), at(time.Minute), classify.Low, classify.Transient, "*net.OpError")
			r := f.add(e2, time.Minute)
			Expect(r.Created).To(BeFalse())
			Expect(r.Evicted).To(BeEmpty())
			got := f.get("imp")
			equalHistory(got.History, append(append([]dlq.Failure{}, e1.History...), e2.History...))
			Expect(got.FirstFailedAt).To(BeTemporally("==", at(time.Second)))
			Expect(got.LastFailedAt).To(BeTemporally("==", at(time.Minute)))
			Expect(got.Verdict).To(Equal(e2.Verdict))
			Expect(got.Status).To(Equal(dlq.Failed))
			Expect(changes(got)).To(Equal([]string{change(0, dlq.Failed, time.Second), change(dlq.Failed, dlq.Failed, time.Minute)}))
			Expect(f.stats().Total).To(Equal(1))
			Expect(f.take()).To(BeEmpty(), "the job was dead-lettered already")
		})

		It("keeps a source queue the entry names", func() {
			e := deadEntry(newJob("imp"), T0)
			e.SourceQueue = "legacy"
			f.add(e, 0)
			Expect(f.get("imp").SourceQueue).To(Equal("legacy"))
			Expect(f.requeue("imp", oneMore, time.Second)).To(Equal(dlq.OutcomeRequeued))
			j, _ := f.dequeue("legacy", 2*time.Second)
			Expect(j.ID).To(Equal("imp"))
		})

		When("MaxPayload is small", func() {
			BeforeEach(func() { cfg.MaxPayload = 8 })

			DescribeTable("refuses an invalid job with job.ErrInvalid and writes nothing",
				func(j job.Job) {
					_, err := f.d.Add(f.ctx, deadEntry(j, T0), T0)
					Expect(err).To(MatchError(job.ErrInvalid))
					st := f.stats()
					Expect(st.Total).To(BeZero())
					p, err := f.d.List(f.ctx, dlq.Filter{}, "", 10)
					Expect(err).NotTo(HaveOccurred())
					Expect(p.Entries).To(BeEmpty())
					Expect(f.take()).To(BeEmpty())
				},
				Entry("the zero job", job.Job{}),
				Entry("an empty ID", job.Job{Task: "charge"}),
				Entry("an empty task", job.Job{ID: "x"}),
				Entry("a payload over MaxPayload", job.Job{ID: "x", Task: "charge", Payload: []byte("123456789")}),
			)
		})
	})
}

// exerciseGet declares the specs of Get.
func exerciseGet(newHarness func(cfg store.Config) Harness) {
	Describe("Get", func() {
		var (
			cfg store.Config
			f   *fixture
		)
		BeforeEach(func() { cfg = store.Config{} })
		JustBeforeEach(func() { f = build(newHarness, cfg) })

		It("reports an unknown ID with ErrNotFound", func() {
			_, err := f.d.Get(f.ctx, "nobody")
			Expect(err).To(MatchError(dlq.ErrNotFound))
		})
	})
}

// exerciseJobID declares the specs of a dead-lettered job's ID.
func exerciseJobID(newHarness func(cfg store.Config) Harness) {
	Describe("a dead-lettered job's ID", func() {
		var (
			cfg store.Config
			f   *fixture
		)
		BeforeEach(func() { cfg = store.Config{} })
		JustBeforeEach(func() { f = build(newHarness, cfg) })

		It("cannot be enqueued anew while its entry holds it, so it is never in two places", func() {
			f.kill(newJob("p"), time.Second, deadEntry(newJob("p"), at(time.Second)))
			f.take()
			Expect(f.q.Enqueue(f.ctx, newJob("p"), at(2*time.Second))).To(MatchError(queue.ErrDeadLettered))
			Expect(f.counts()).To(Equal(queue.Counts{}))
			Expect(f.take()).To(BeEmpty())

			Expect(f.d.Delete(f.ctx, "p", "ops", at(3*time.Second))).To(Succeed())
			Expect(f.q.Enqueue(f.ctx, newJob("p"), at(4*time.Second))).To(MatchError(queue.ErrDeadLettered), "a deleted entry can be restored")

			Expect(f.d.Restore(f.ctx, "p", "ops", at(5*time.Second))).To(Succeed())
			Expect(f.requeue("p", oneMore, 6*time.Second)).To(Equal(dlq.OutcomeRequeued))
			Expect(f.drainIDs(job.DefaultQueue, 7*time.Second)).To(Equal([]string{"p"}))
			f.take()
			Expect(f.q.Enqueue(f.ctx, newJob("p"), at(8*time.Second))).To(Succeed(), "a requeued entry is only a record")
		})
	})
}
