package dlqtest

import (
	"context"
	"fmt"
	"sync"
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

// exerciseRequeue declares the specs of Requeue.
func exerciseRequeue(newHarness func(cfg store.Config) Harness) {
	Describe("Requeue", func() {
		var (
			cfg store.Config
			f   *fixture
		)
		BeforeEach(func() { cfg = store.Config{} })
		JustBeforeEach(func() { f = build(newHarness, cfg) })

		It("sends the job back to the tail of its source queue with one more attempt", func() {
			j := newJob("j1")
			j.Attempts = 3
			f.kill(j, time.Second, deadEntry(j, at(time.Second)))
			f.enqueue(newJob("waiting"), 2*time.Second)
			f.take()

			Expect(f.requeue("j1", oneMore, time.Minute)).To(Equal(dlq.OutcomeRequeued))
			Expect(f.counts()).To(Equal(queue.Counts{Queued: 2}))
			e := f.get("j1")
			Expect(e.Status).To(Equal(dlq.Requeued))
			Expect(e.Requeues).To(Equal(1))
			Expect(e.AutoRetries).To(BeZero())
			Expect(changes(e)).To(Equal([]string{change(0, dlq.Failed, time.Second), change(dlq.Failed, dlq.Requeued, time.Minute)}))
			Expect(e.Changes[1].By).To(Equal("ops"))
			Expect(f.take()).To(Equal([]string{ev("j1", dead, queued, disposition.Requeued, time.Minute, 3)}))

			w, _ := f.dequeue(job.DefaultQueue, 2*time.Minute)
			Expect(w.ID).To(Equal("waiting"))
			got, _ := f.dequeue(job.DefaultQueue, 2*time.Minute)
			equalJob(got, j)
		})

		It("resets the attempts when asked to", func() {
			j := newJob("j1")
			j.Attempts = 3
			f.kill(j, time.Second, deadEntry(j, at(time.Second)))
			f.take()
			Expect(f.requeue("j1", reset, time.Minute)).To(Equal(dlq.OutcomeRequeued))
			Expect(f.take()).To(Equal([]string{ev("j1", dead, queued, disposition.Requeued, time.Minute, 0)}))
			got, _ := f.dequeue(job.DefaultQueue, 2*time.Minute)
			want := j
			want.Attempts = 0
			equalJob(got, want)
		})

		It("sends the job to another queue of the namespace", func() {
			f.kill(newJob("j1"), time.Second, deadEntry(newJob("j1"), at(time.Second)))
			o, err := f.d.Requeue(f.ctx, "j1", dlq.RequeueOptions{Queue: "manual", Budget: dlq.ResetAttempts}, at(time.Minute))
			Expect(err).NotTo(HaveOccurred())
			Expect(o).To(Equal(dlq.OutcomeRequeued))
			_, _, ok, err := f.q.Dequeue(f.ctx, job.DefaultQueue, at(time.Minute), TTL)
			Expect(err).NotTo(HaveOccurred())
			Expect(ok).To(BeFalse())
			got, l := f.dequeue("manual", time.Minute)
			Expect(got.ID).To(Equal("j1"))
			Expect(got.QueueName()).To(Equal("manual"))
			Expect(l.Queue).To(Equal("manual"))
			Expect(f.get("j1").SourceQueue).To(Equal(job.DefaultQueue))
		})

		It("answers a retried requeue with AlreadyRequeued and changes nothing", func() {
			f.kill(newJob("j1"), time.Second, deadEntry(newJob("j1"), at(time.Second)))
			Expect(f.requeue("j1", oneMore, time.Minute)).To(Equal(dlq.OutcomeRequeued))
			f.take()
			Expect(f.requeue("j1", oneMore, 2*time.Minute)).To(Equal(dlq.OutcomeAlreadyRequeued))
			Expect(f.requeue("j1", reset, 2*time.Minute)).To(Equal(dlq.OutcomeAlreadyRequeued))
			Expect(f.counts()).To(Equal(queue.Counts{Queued: 1}))
			Expect(f.get("j1").Requeues).To(Equal(1))
			Expect(f.take()).To(BeEmpty())
			// Still AlreadyRequeued after the job succeeded: a retried
			// call must not run it twice.
			j, l := f.dequeue(job.DefaultQueue, 3*time.Minute)
			j.Attempts++ // the extra attempt, which succeeded
			Expect(f.q.Ack(f.ctx, l, j, at(3*time.Minute))).To(Succeed())
			Expect(f.requeue("j1", oneMore, 4*time.Minute)).To(Equal(dlq.OutcomeAlreadyRequeued))
			Expect(f.counts()).To(Equal(queue.Counts{}))
		})

		It("answers NotFound for an unknown ID", func() {
			Expect(f.requeue("nobody", oneMore, 0)).To(Equal(dlq.OutcomeNotFound))
			Expect(f.counts()).To(Equal(queue.Counts{}))
			Expect(f.take()).To(BeEmpty())
		})

		It("answers Busy while a job with that ID is queued or in flight, and requeues it once it is gone", func() {
			f.enqueue(newJob("j1"), 0)
			f.add(deadEntry(newJob("j1"), T0), 0) // an import of a job that is live
			f.take()
			Expect(f.requeue("j1", oneMore, time.Second)).To(Equal(dlq.OutcomeBusy))
			j, l := f.dequeue(job.DefaultQueue, 2*time.Second)
			Expect(f.requeue("j1", oneMore, 3*time.Second)).To(Equal(dlq.OutcomeBusy))
			Expect(f.get("j1").Status).To(Equal(dlq.Failed))
			Expect(f.counts()).To(Equal(queue.Counts{InFlight: 1}))
			j.Attempts++
			Expect(f.q.Ack(f.ctx, l, j, at(4*time.Second))).To(Succeed())
			f.take()
			Expect(f.requeue("j1", oneMore, 5*time.Second)).To(Equal(dlq.OutcomeRequeued))
			Expect(f.counts()).To(Equal(queue.Counts{Queued: 1}))
		})

		It("answers Busy while the job waits for a retry or in the fallback queue", func() {
			f.enqueue(newJob("s1"), 0)
			f.enqueue(newJob("f1"), 0)
			j, l := f.dequeue(job.DefaultQueue, 0)
			Expect(f.q.Retry(f.ctx, l, j, at(time.Hour), T0)).To(Succeed())
			j, l = f.dequeue(job.DefaultQueue, 0)
			Expect(f.q.Divert(f.ctx, l, j, T0)).To(Succeed())
			f.add(deadEntry(newJob("s1"), T0), 0)
			f.add(deadEntry(newJob("f1"), T0), 0)
			Expect(f.requeue("s1", oneMore, time.Second)).To(Equal(dlq.OutcomeBusy))
			Expect(f.requeue("f1", oneMore, time.Second)).To(Equal(dlq.OutcomeBusy))
			Expect(f.counts()).To(Equal(queue.Counts{Scheduled: 1, Fallback: 1}))
		})

		It("answers NotRequeueable for a deleted entry until it is restored", func() {
			f.kill(newJob("j1"), time.Second, deadEntry(newJob("j1"), at(time.Second)))
			Expect(f.d.Delete(f.ctx, "j1", "ops", at(time.Minute))).To(Succeed())
			f.take()
			Expect(f.requeue("j1", oneMore, 2*time.Minute)).To(Equal(dlq.OutcomeNotRequeueable))
			Expect(f.counts()).To(Equal(queue.Counts{}))
			Expect(f.take()).To(BeEmpty())
			Expect(f.d.Restore(f.ctx, "j1", "ops", at(3*time.Minute))).To(Succeed())
			Expect(f.requeue("j1", oneMore, 4*time.Minute)).To(Equal(dlq.OutcomeRequeued))
		})

		It("lets only an operator requeue a quarantined entry", func() {
			f.kill(newJob("j1"), time.Second, deadEntry(newJob("j1"), at(time.Second)))
			Expect(f.d.Quarantine(f.ctx, "j1", "poison", at(time.Minute))).To(Succeed())
			auto := dlq.RequeueOptions{Budget: dlq.OneMoreAttempt, By: "auto-retry", Auto: true}
			Expect(f.requeue("j1", auto, 2*time.Minute)).To(Equal(dlq.OutcomeNotRequeueable))
			Expect(f.get("j1").Status).To(Equal(dlq.Quarantined))
			Expect(f.requeue("j1", oneMore, 3*time.Minute)).To(Equal(dlq.OutcomeRequeued))
			e := f.get("j1")
			Expect(e.Status).To(Equal(dlq.Requeued))
			Expect(changes(e)[2:]).To(Equal([]string{change(dlq.Quarantined, dlq.Requeued, 3*time.Minute)}))
		})

		It("counts the auto-retry's requeues", func() {
			f.kill(newJob("j1"), time.Second, deadEntry(newJob("j1"), at(time.Second)))
			auto := dlq.RequeueOptions{Budget: dlq.OneMoreAttempt, By: "auto-retry", Auto: true}
			Expect(f.requeue("j1", auto, time.Minute)).To(Equal(dlq.OutcomeRequeued))
			e := f.get("j1")
			Expect(e.Requeues).To(Equal(1))
			Expect(e.AutoRetries).To(Equal(1))
			Expect(e.Changes[len(e.Changes)-1].By).To(Equal("auto-retry"))
		})

		It("refuses a requeue that states no budget, changing nothing", func() {
			f.kill(newJob("j1"), time.Second, deadEntry(newJob("j1"), at(time.Second)))
			f.take()
			_, err := f.d.Requeue(f.ctx, "j1", dlq.RequeueOptions{By: "ops"}, at(time.Minute))
			Expect(err).To(HaveOccurred())
			_, err = f.d.RequeueMatching(f.ctx, dlq.Filter{}, dlq.RequeueOptions{By: "ops"}, at(time.Minute), false)
			Expect(err).To(HaveOccurred())
			Expect(f.get("j1").Status).To(Equal(dlq.Failed))
			Expect(f.counts()).To(Equal(queue.Counts{}))
			Expect(f.take()).To(BeEmpty())
		})

		It("carries the idempotency key from the first attempt through dead-letter, requeue and dequeue", func() {
			j := newJob("pay-1")
			j.IdempotencyKey = "charge-7f3a"
			j.KeyRecordedAt = at(-time.Second)
			f.enqueue(j, 0)
			got, l := f.dequeue(job.DefaultQueue, 0)
			got.Attempts = 1
			got.FirstAttemptAt = T0
			_, err := f.d.DeadLetter(f.ctx, l, deadEntry(got, at(time.Second)), at(time.Second))
			Expect(err).NotTo(HaveOccurred())
			Expect(f.get("pay-1").Job.IdempotencyKey).To(Equal("charge-7f3a"))
			Expect(f.requeue("pay-1", reset, time.Minute)).To(Equal(dlq.OutcomeRequeued))
			again, l := f.dequeue(job.DefaultQueue, 2*time.Minute)
			Expect(again.IdempotencyKey).To(Equal("charge-7f3a"))
			Expect(again.KeyRecordedAt).To(BeTemporally("==", j.KeyRecordedAt))
			Expect(again.FirstAttemptAt).To(BeTemporally("==", T0))
			again.Attempts = 1
			_, err = f.d.DeadLetter(f.ctx, l, deadEntry(again, at(3*time.Minute)), at(3*time.Minute))
			Expect(err).NotTo(HaveOccurred())
			Expect(f.requeue("pay-1", dlq.RequeueOptions{Queue: "manual", Budget: dlq.OneMoreAttempt}, 4*time.Minute)).To(Equal(dlq.OutcomeRequeued))
			third, _ := f.dequeue("manual", 5*time.Minute)
			Expect(third.IdempotencyKey).To(Equal("charge-7f3a"))
			Expect(third.KeyRecordedAt).To(BeTemporally("==", j.KeyRecordedAt))
		})
	})
}

// exerciseRequeueMatching declares the specs of RequeueMatching.
func exerciseRequeueMatching(newHarness func(cfg store.Config) Harness) {
	Describe("RequeueMatching", func() {
		var (
			cfg store.Config
			f   *fixture
		)
		BeforeEach(func() { cfg = store.Config{} })
		JustBeforeEach(func() { f = build(newHarness, cfg) })

		// addAt adds a failed entry for id of the given severity at T0+d.
		addAt := func(id string, sev classify.Severity, d time.Duration) {
			GinkgoHelper()
			j := newJob(id)
			j.Attempts = 2
			f.add(failing(j, at(d), sev, classify.Transient, "*net.OpError"), d)
		}

		It("requeues every Failed entry matching the filter, oldest first, and says so", func() {
			addAt("m3", classify.Low, 3*time.Minute)
			addAt("m1", classify.Medium, time.Minute)
			addAt("m2", classify.High, 2*time.Minute)
			addAt("m0", classify.Low, time.Minute) // ties with m1: the lower ID first
			addAt("gone", classify.Low, 0)
			Expect(f.d.Delete(f.ctx, "gone", "ops", at(4*time.Minute))).To(Succeed())
			f.take()

			r, err := f.d.RequeueMatching(f.ctx, dlq.Filter{}, oneMore, at(time.Hour), false)
			Expect(err).NotTo(HaveOccurred())
			Expect(r.DryRun).To(BeFalse())
			Expect(r.Matched).To(Equal(4))
			Expect(r.Requeued).To(Equal(4))
			Expect(r.Skipped).To(BeZero())
			Expect(r.Batches).To(BeNumerically(">=", 1))
			Expect(f.take()).To(Equal([]string{
				ev("m0", dead, queued, disposition.Requeued, time.Hour, 2),
				ev("m1", dead, queued, disposition.Requeued, time.Hour, 2),
				ev("m2", dead, queued, disposition.Requeued, time.Hour, 2),
				ev("m3", dead, queued, disposition.Requeued, time.Hour, 2),
			}))
			Expect(f.drainIDs(job.DefaultQueue, time.Hour)).To(Equal([]string{"m0", "m1", "m2", "m3"}))
			Expect(f.get("m1").Status).To(Equal(dlq.Requeued))
			Expect(f.get("gone").Status).To(Equal(dlq.Deleted))

			r, err = f.d.RequeueMatching(f.ctx, dlq.Filter{}, oneMore, at(2*time.Hour), false)
			Expect(err).NotTo(HaveOccurred())
			Expect(r.Matched).To(BeZero())
			Expect(r.Requeued).To(BeZero())
		})

		It("requeues by filter: reprocessed 1 medium-severity job", func() {
			addAt("low", classify.Low, time.Minute)
			addAt("medium", classify.Medium, time.Minute)
			addAt("high", classify.High, time.Minute)
			r, err := f.d.RequeueMatching(f.ctx, dlq.Filter{Severities: []classify.Severity{classify.Medium}}, reset, at(time.Hour), false)
			Expect(err).NotTo(HaveOccurred())
			Expect(r.Matched).To(Equal(1))
			Expect(r.Requeued).To(Equal(1))
			j, _ := f.dequeue(job.DefaultQueue, time.Hour)
			Expect(j.ID).To(Equal("medium"))
			Expect(j.Attempts).To(BeZero())
			expectMap(f.stats().ByStatus, map[string]int{"failed": 2, "requeued": 1}, "ByStatus")
		})

		It("counts on a dry run and changes nothing", func() {
			addAt("a", classify.Low, time.Minute)
			addAt("b", classify.Medium, 2*time.Minute)
			addAt("c", classify.Medium, 3*time.Minute)
			f.take()
			r, err := f.d.RequeueMatching(f.ctx, dlq.Filter{Severities: []classify.Severity{classify.Medium}}, oneMore, at(time.Hour), true)
			Expect(err).NotTo(HaveOccurred())
			Expect(r.DryRun).To(BeTrue())
			Expect(r.Matched).To(Equal(2))
			Expect(r.Requeued).To(BeZero())
			Expect(f.counts()).To(Equal(queue.Counts{}))
			expectMap(f.stats().ByStatus, map[string]int{"failed": 3}, "ByStatus")
			Expect(f.take()).To(BeEmpty())
		})

		It("leaves entries whose last failure is not before the cut-off", func() {
			addAt("before", classify.Low, time.Minute-time.Millisecond)
			addAt("at", classify.Low, time.Minute)
			addAt("after", classify.Low, 2*time.Minute)
			r, err := f.d.RequeueMatching(f.ctx, dlq.Filter{}, oneMore, at(time.Minute), true)
			Expect(err).NotTo(HaveOccurred())
			Expect(r.Matched).To(Equal(1))
			r, err = f.d.RequeueMatching(f.ctx, dlq.Filter{}, oneMore, at(time.Minute), false)
			Expect(err).NotTo(HaveOccurred())
			Expect(r.Matched).To(Equal(1))
			Expect(r.Requeued).To(Equal(1))
			Expect(f.get("before").Status).To(Equal(dlq.Requeued))
			Expect(f.get("at").Status).To(Equal(dlq.Failed))
			Expect(f.get("after").Status).To(Equal(dlq.Failed))
		})

		It("skips an entry whose job is busy and counts it", func() {
			addAt("free", classify.Low, time.Minute)
			f.enqueue(newJob("busy"), 0)
			addAt("busy", classify.Low, time.Minute)
			r, err := f.d.RequeueMatching(f.ctx, dlq.Filter{}, oneMore, at(time.Hour), false)
			Expect(err).NotTo(HaveOccurred())
			Expect(r.Matched).To(Equal(2))
			Expect(r.Requeued).To(Equal(1))
			Expect(r.Skipped).To(Equal(1))
			Expect(f.get("busy").Status).To(Equal(dlq.Failed))
			Expect(f.counts()).To(Equal(queue.Counts{Queued: 2}))
		})

		It("picks quarantined entries only when the filter asks for them and an operator runs it", func() {
			addAt("failed", classify.Low, time.Minute)
			addAt("poison", classify.Low, time.Minute)
			Expect(f.d.Quarantine(f.ctx, "poison", "poison", at(2*time.Minute))).To(Succeed())
			both := dlq.Filter{Statuses: []dlq.Status{dlq.Failed, dlq.Quarantined}}
			auto := dlq.RequeueOptions{Budget: dlq.OneMoreAttempt, By: "auto-retry", Auto: true}

			r, err := f.d.RequeueMatching(f.ctx, dlq.Filter{}, oneMore, at(time.Hour), true)
			Expect(err).NotTo(HaveOccurred())
			Expect(r.Matched).To(Equal(1), "the zero filter picks Failed entries only")
			r, err = f.d.RequeueMatching(f.ctx, both, auto, at(time.Hour), true)
			Expect(err).NotTo(HaveOccurred())
			Expect(r.Matched).To(Equal(1), "the auto-retry never picks quarantined entries")
			r, err = f.d.RequeueMatching(f.ctx, dlq.Filter{Statuses: []dlq.Status{dlq.Quarantined}}, oneMore, at(time.Hour), false)
			Expect(err).NotTo(HaveOccurred())
			Expect(r.Matched).To(Equal(1))
			Expect(r.Requeued).To(Equal(1))
			Expect(f.get("poison").Status).To(Equal(dlq.Requeued))
			Expect(f.get("failed").Status).To(Equal(dlq.Failed))
		})

		When("BatchSize is 10", func() {
			BeforeEach(func() { cfg.BatchSize = 10 })

			It("requeues 25 entries in at least 3 bounded steps", func() {
				for i := range 25 {
					addAt(fmt.Sprintf("b%02d", i), classify.Low, time.Duration(i)*time.Second)
				}
				r, err := f.d.RequeueMatching(f.ctx, dlq.Filter{}, oneMore, at(time.Hour), false)
				Expect(err).NotTo(HaveOccurred())
				Expect(r.Matched).To(Equal(25))
				Expect(r.Requeued).To(Equal(25))
				Expect(r.Batches).To(BeNumerically(">=", 3))
				Expect(f.counts()).To(Equal(queue.Counts{Queued: 25}))
			})
		})

		It("requeues each of 10,000 entries exactly once when two runs race over them", Label("slow"), func() {
			const n = 10_000
			for i := range n {
				j := newJob(fmt.Sprintf("race-%05d", i))
				f.add(deadEntry(j, at(time.Duration(i)*time.Millisecond)), time.Duration(i)*time.Millisecond)
			}
			f.take()
			before := len(f.allEvents())
			var (
				wg      sync.WaitGroup
				results [2]dlq.BulkResult
				errs    [2]error
			)
			for g := range 2 {
				wg.Go(func() {
					defer GinkgoRecover()
					results[g], errs[g] = f.d.RequeueMatching(context.Background(), dlq.Filter{}, oneMore, at(time.Hour), false)
				})
			}
			wg.Wait()
			Expect(errs[0]).NotTo(HaveOccurred())
			Expect(errs[1]).NotTo(HaveOccurred())
			Expect(results[0].Requeued+results[1].Requeued).To(Equal(n), "%+v", results)
			for _, r := range results {
				Expect(r.Matched).To(BeNumerically("<=", n))
				Expect(r.Requeued + r.Skipped).To(BeNumerically("<=", r.Matched))
			}
			Expect(f.counts()).To(Equal(queue.Counts{Queued: n}))
			st := f.stats()
			expectMap(st.ByStatus, map[string]int{"requeued": n}, "ByStatus")

			events := f.allEvents()[before:]
			Expect(events).To(HaveLen(n))
			ids := map[string]bool{}
			for _, e := range events {
				if e.Reason != disposition.Requeued || ids[e.JobID] {
					Fail(fmt.Sprintf("event %v: want each job requeued once", e))
				}
				ids[e.JobID] = true
			}
			dequeued := map[string]bool{}
			for {
				j, _, ok, err := f.q.Dequeue(f.ctx, job.DefaultQueue, at(2*time.Hour), TTL)
				Expect(err).NotTo(HaveOccurred())
				if !ok {
					break
				}
				if dequeued[j.ID] {
					Fail(fmt.Sprintf("job %s dequeued twice: it was requeued twice", j.ID))
				}
				dequeued[j.ID] = true
			}
			Expect(dequeued).To(HaveLen(n))
		})
	})
}
