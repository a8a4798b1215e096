package dlqtest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/disposition"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/job"
	"github.com/faultline/faultline/reference/queue"
	"github.com/faultline/faultline/reference/store"
)

// exerciseHold declares the specs of Hold.
func exerciseHold(newHarness func(cfg store.Config) Harness) {
	Describe("Hold", func() {
		var (
			cfg store.Config
			f   *fixture
		)
		BeforeEach(func() { cfg = store.Config{} })
		JustBeforeEach(func() { f = build(newHarness, cfg) })

		It("parks a leased job with its decided dead letter, fenced by the lease, and FlushHeld writes it with its failure time", func() {
			j := newJob("j1")
			f.enqueue(j, 0)
			got, l := f.dequeue(job.DefaultQueue, time.Second)
			got.Attempts = 1
			e := deadEntry(got, at(time.Second))
			e.LastFailedAt = at(time.Second)
			f.take()
			Expect(f.d.Hold(f.ctx, l, e, at(2*time.Second))).To(Succeed())
			Expect(f.counts()).To(Equal(queue.Counts{Held: 1}))
			Expect(f.take()).To(Equal([]string{ev("j1", inFlight, disposition.Held, disposition.HeldBack, 2*time.Second, 1)}))
			f.expectGone("j1")
			Expect(f.d.Hold(f.ctx, l, e, at(2*time.Second))).To(MatchError(queue.ErrLeaseLost), "a retried hold is fenced")
			_, err := f.d.DeadLetter(f.ctx, l, e, at(2*time.Second))
			Expect(err).To(MatchError(queue.ErrLeaseLost))
			Expect(f.stats().Rejected).To(BeZero(), "a hold is no overflow")

			res, err := f.d.FlushHeld(f.ctx, at(time.Minute), 100)
			Expect(err).NotTo(HaveOccurred())
			Expect(res).To(Equal(dlq.FlushResult{Written: []string{"j1"}}))
			Expect(f.take()).To(Equal([]string{ev("j1", disposition.Held, dead, disposition.DeadLetter, time.Minute, 1)}))
			Expect(f.counts()).To(Equal(queue.Counts{}))
			stored := f.get("j1")
			Expect(stored.LastFailedAt).To(BeTemporally("==", at(time.Second)), "the failure's time, not the write's")
			Expect(stored.Status).To(Equal(dlq.Failed))
			Expect(changes(stored)).To(Equal([]string{change(0, dlq.Failed, time.Minute)}))
			res, err = f.d.FlushHeld(f.ctx, at(time.Minute), 100)
			Expect(err).NotTo(HaveOccurred())
			Expect(res).To(Equal(dlq.FlushResult{}))
		})

		It("refuses a stale lease and writes nothing", func() {
			f.enqueue(newJob("j1"), 0)
			j, l := f.dequeue(job.DefaultQueue, 0)
			Expect(f.q.Ack(f.ctx, l, j, at(time.Second))).To(Succeed())
			Expect(f.d.Hold(f.ctx, l, deadEntry(j, at(time.Second)), at(time.Second))).To(MatchError(queue.ErrLeaseLost))
			Expect(f.counts()).To(Equal(queue.Counts{}))
		})

		It("merges a held dead letter with the entry its job had from an earlier death", func() {
			j := newJob("j1")
			f.kill(j, 0, deadEntry(j, at(0)))
			Expect(f.requeue("j1", oneMore, time.Second)).To(Equal(dlq.OutcomeRequeued))
			got, l := f.dequeue(job.DefaultQueue, 2*time.Second)
			got.Attempts = 1
			e := deadEntry(got, at(2*time.Second))
			e.LastFailedAt = at(2 * time.Second)
			Expect(f.d.Hold(f.ctx, l, e, at(2*time.Second))).To(Succeed())
			Expect(f.requeue("j1", oneMore, 3*time.Second)).To(Equal(dlq.OutcomeAlreadyRequeued), "held: not requeued twice")
			_, err := f.d.FlushHeld(f.ctx, at(time.Minute), 10)
			Expect(err).NotTo(HaveOccurred())
			stored := f.get("j1")
			Expect(stored.History).To(HaveLen(2))
			Expect(stored.Status).To(Equal(dlq.Failed))
			Expect(stored.LastFailedAt).To(BeTemporally("==", at(2*time.Second)))
		})

		When("the policy is EvictOldest", func() {
			BeforeEach(func() {
				cfg.DLQCapacity = 1
				cfg.Overflow = store.EvictOldest
			})

			It("evicts to make room for a held dead letter as it writes it", func() {
				f.kill(newJob("a"), 0, deadEntry(newJob("a"), at(0)))
				f.enqueue(newJob("b"), time.Second)
				j, l := f.dequeue(job.DefaultQueue, time.Second)
				Expect(f.d.Hold(f.ctx, l, deadEntry(j, at(time.Second)), at(time.Second))).To(Succeed())
				res, err := f.d.FlushHeld(f.ctx, at(time.Minute), 10)
				Expect(err).NotTo(HaveOccurred())
				Expect(res).To(Equal(dlq.FlushResult{Written: []string{"b"}, Evicted: []string{"a"}}))
				f.expectGone("a")
				Expect(f.stats().Evicted).To(Equal(1))
			})
		})
	})
}

// exerciseCapacity declares the specs of capacity.
func exerciseCapacity(newHarness func(cfg store.Config) Harness) {
	Describe("capacity", func() {
		var (
			cfg store.Config
			f   *fixture
		)
		BeforeEach(func() { cfg = store.Config{} })
		JustBeforeEach(func() { f = build(newHarness, cfg) })

		// fill adds n entries, i failing at T0+i minutes.
		fill := func(ids ...string) {
			GinkgoHelper()
			for i, id := range ids {
				d := time.Duration(i) * time.Minute
				f.add(deadEntry(newJob(id), at(d)), d)
			}
		}

		When("the policy is Reject", func() {
			BeforeEach(func() {
				cfg.DLQCapacity = 2
				cfg.Overflow = store.Reject
			})

			It("refuses a new entry with ErrFull, writes nothing, and reports the overflow", func() {
				fill("a", "b")
				f.take()
				_, err := f.d.Add(f.ctx, deadEntry(newJob("c"), at(time.Hour)), at(time.Hour))
				Expect(err).To(MatchError(dlq.ErrFull))
				f.expectGone("c")
				st := f.stats()
				Expect(st.Total).To(Equal(2))
				Expect(st.Rejected).To(Equal(1))
				Expect(st.Evicted).To(BeZero())
				Expect(f.take()).To(BeEmpty())
				ov := f.rec.Overflows()
				Expect(ov).To(HaveLen(1))
				Expect(ov[0].Policy).To(Equal(store.Reject))
				Expect(ov[0].JobID).To(Equal("c"))
				Expect(ov[0].Capacity).To(Equal(2))
				Expect(ov[0].At).To(BeTemporally("==", at(time.Hour)))
				Expect(ov[0].Evicted).To(BeEmpty())
				Expect(ov[0].Namespace).NotTo(BeEmpty())
			})

			It("parks a dead letter it refuses in the held set in the same step, with its entry, and reports the overflow", func() {
				fill("a", "b")
				j := newJob("c")
				f.enqueue(j, time.Hour)
				got, l := f.dequeue(job.DefaultQueue, time.Hour)
				f.take()
				got.Attempts = 1
				e := deadEntry(got, at(time.Hour))
				e.LastFailedAt = at(time.Hour)
				r, err := f.d.DeadLetter(f.ctx, l, e, at(time.Hour))
				Expect(err).NotTo(HaveOccurred())
				Expect(r).To(Equal(dlq.AddResult{Held: true}))
				f.expectGone("c")
				Expect(f.counts()).To(Equal(queue.Counts{Held: 1}), "held, no longer in flight: it can never be recovered and run again")
				Expect(f.take()).To(Equal([]string{ev("c", inFlight, disposition.Held, disposition.HeldBack, time.Hour, 1)}))
				st := f.stats()
				Expect(st.Rejected).To(Equal(1))
				Expect(st.Held).To(Equal(1))
				Expect(st.HeldOldest).To(BeTemporally("==", at(time.Hour)))
				Expect(st.Total).To(Equal(2), "a held job is not in the DLQ")
				ov := f.rec.Overflows()
				Expect(ov).To(HaveLen(1))
				Expect(ov[0].JobID).To(Equal("c"))
				Expect(ov[0].Held).To(BeTrue())

				By("the old lease is dead: no heartbeat, no completion, no recovery")
				_, err = f.q.Heartbeat(f.ctx, l, at(time.Hour), TTL)
				Expect(err).To(MatchError(queue.ErrLeaseLost))
				Expect(f.q.Ack(f.ctx, l, got, at(time.Hour))).To(MatchError(queue.ErrLeaseLost))
				n, err := f.q.RecoverExpired(f.ctx, at(time.Hour+2*TTL), 100)
				Expect(err).NotTo(HaveOccurred())
				Expect(n).To(BeZero())
				Expect(f.q.Enqueue(f.ctx, newJob("c"), at(time.Hour))).To(MatchError(queue.ErrDuplicate))
				_, ok, err := dequeueAny(f, time.Hour+2*TTL)
				Expect(err).NotTo(HaveOccurred())
				Expect(ok).To(BeFalse(), "a held job is never leased again")
			})

			It("refuses a dead letter with ErrFull and ErrHeldFull, leaving it in flight, once the held set is at its bound", func() {
				fill("a", "b")
				for _, id := range []string{"c", "d", "e"} {
					f.enqueue(newJob(id), time.Hour)
				}
				for range 2 {
					j, l := f.dequeue(job.DefaultQueue, time.Hour)
					e := deadEntry(j, at(time.Hour))
					e.LastFailedAt = at(time.Hour)
					r, err := f.d.DeadLetter(f.ctx, l, e, at(time.Hour))
					Expect(err).NotTo(HaveOccurred())
					Expect(r.Held).To(BeTrue())
				}
				je, le := f.dequeue(job.DefaultQueue, time.Hour)
				f.take()
				_, err := f.d.DeadLetter(f.ctx, le, deadEntry(je, at(time.Hour)), at(time.Hour))
				Expect(err).To(MatchError(dlq.ErrFull))
				Expect(err).To(MatchError(dlq.ErrHeldFull))
				Expect(f.counts()).To(Equal(queue.Counts{InFlight: 1, Held: 2}), "the held set is bounded by the DLQ's capacity by default")
				Expect(f.take()).To(BeEmpty())
				Expect(f.stats().Rejected).To(Equal(3))
				ov := f.rec.Overflows()
				Expect(ov).To(HaveLen(3))
				Expect(ov[2].Held).To(BeFalse())
				Expect(f.d.Hold(f.ctx, le, deadEntry(je, at(time.Hour)), at(time.Hour))).To(MatchError(dlq.ErrHeldFull))
				je.Attempts++
				Expect(f.q.Ack(f.ctx, le, je, at(time.Hour))).To(Succeed(), "the lease is still the job's")
			})

			It("writes held dead letters once there is room, oldest first, with their failure times, and not before", func() {
				fill("a", "b")
				for i, id := range []string{"c", "d"} {
					d := time.Hour + time.Duration(i)*time.Second
					f.enqueue(newJob(id), d)
					j, l := f.dequeue(job.DefaultQueue, d)
					j.Attempts = 2
					e := deadEntry(j, at(d))
					e.LastFailedAt = at(d)
					r, err := f.d.DeadLetter(f.ctx, l, e, at(d))
					Expect(err).NotTo(HaveOccurred())
					Expect(r.Held).To(BeTrue())
				}
				f.take()
				res, err := f.d.FlushHeld(f.ctx, at(2*time.Hour), 10)
				Expect(err).NotTo(HaveOccurred())
				Expect(res).To(Equal(dlq.FlushResult{Left: 2, Full: true}), "no room yet")
				Expect(f.stats().Rejected).To(Equal(2), "a held entry the DLQ still refuses is not counted again")
				Expect(f.rec.Overflows()).To(HaveLen(2))

				Expect(f.requeue("a", oneMore, 2*time.Hour)).To(Equal(dlq.OutcomeRequeued))
				f.take()
				res, err = f.d.FlushHeld(f.ctx, at(3*time.Hour), 10)
				Expect(err).NotTo(HaveOccurred())
				Expect(res).To(Equal(dlq.FlushResult{Written: []string{"c"}, Left: 1, Full: true}))
				Expect(f.take()).To(Equal([]string{ev("c", disposition.Held, dead, disposition.DeadLetter, 3*time.Hour, 2)}))
				c := f.get("c")
				Expect(c.Status).To(Equal(dlq.Failed))
				Expect(c.LastFailedAt).To(BeTemporally("==", at(time.Hour)), "the failure's time, not the write's")
				Expect(c.Job.Attempts).To(Equal(2))
				Expect(f.counts()).To(Equal(queue.Counts{Queued: 1, Held: 1}))
				st := f.stats()
				Expect(st.Held).To(Equal(1))
				Expect(st.HeldOldest).To(BeTemporally("==", at(time.Hour+time.Second)))

				Expect(f.d.Delete(f.ctx, "b", "ops", at(3*time.Hour))).To(Succeed())
				res, err = f.d.FlushHeld(f.ctx, at(4*time.Hour), 10)
				Expect(err).NotTo(HaveOccurred())
				Expect(res).To(Equal(dlq.FlushResult{Written: []string{"d"}}))
				Expect(f.get("d").LastFailedAt).To(BeTemporally("==", at(time.Hour+time.Second)))
				Expect(f.counts()).To(Equal(queue.Counts{Queued: 1}))
			})

			It("flushes a bounded batch", func() {
				fill("a", "b")
				for _, id := range []string{"c", "d"} {
					f.enqueue(newJob(id), time.Hour)
					j, l := f.dequeue(job.DefaultQueue, time.Hour)
					_, err := f.d.DeadLetter(f.ctx, l, deadEntry(j, at(time.Hour)), at(time.Hour))
					Expect(err).NotTo(HaveOccurred())
				}
				Expect(f.d.Delete(f.ctx, "a", "ops", at(time.Hour))).To(Succeed())
				Expect(f.d.Delete(f.ctx, "b", "ops", at(time.Hour))).To(Succeed())
				res, err := f.d.FlushHeld(f.ctx, at(time.Hour), 1)
				Expect(err).NotTo(HaveOccurred())
				Expect(res).To(Equal(dlq.FlushResult{Written: []string{"c"}, Left: 1}))
				res, err = f.d.FlushHeld(f.ctx, at(time.Hour), 0)
				Expect(err).NotTo(HaveOccurred())
				Expect(res).To(Equal(dlq.FlushResult{Left: 1}))
			})

			Describe("a new dead letter while dead letters are held", func() {
				// holdC fills the DLQ and parks c's dead letter in the
				// held set, failed at T0+1h.
				holdC := func() {
					GinkgoHelper()
					fill("a", "b")
					f.enqueue(newJob("c"), time.Hour)
					j, l := f.dequeue(job.DefaultQueue, time.Hour)
					e := deadEntry(j, at(time.Hour))
					e.LastFailedAt = at(time.Hour)
					r, err := f.d.DeadLetter(f.ctx, l, e, at(time.Hour))
					Expect(err).NotTo(HaveOccurred())
					Expect(r.Held).To(BeTrue())
				}

				It("does not take a freed slot ahead of them: the held ones are written first, oldest first, and it is parked behind them", func() {
					holdC()
					Expect(f.requeue("a", oneMore, 2*time.Hour)).To(Equal(dlq.OutcomeRequeued))
					ja, _ := f.dequeue(job.DefaultQueue, 2*time.Hour)
					Expect(ja.ID).To(Equal("a"), "the requeued job, leased again")
					f.enqueue(newJob("d"), 2*time.Hour)
					jd, ld := f.dequeue(job.DefaultQueue, 2*time.Hour)
					Expect(jd.ID).To(Equal("d"))
					f.take()

					r, err := f.d.DeadLetter(f.ctx, ld, deadEntry(jd, at(3*time.Hour)), at(3*time.Hour))
					Expect(err).NotTo(HaveOccurred())
					Expect(r).To(Equal(dlq.AddResult{Held: true}), "the slot was c's: d waits behind it")
					Expect(f.take()).To(Equal([]string{
						ev("c", disposition.Held, dead, disposition.DeadLetter, 3*time.Hour, 0),
						ev("d", inFlight, disposition.Held, disposition.HeldBack, 3*time.Hour, 0),
					}), "c's move first, as FlushHeld makes it")
					Expect(f.get("c").LastFailedAt).To(BeTemporally("==", at(time.Hour)))
					f.expectGone("d")
					st := f.stats()
					Expect(st.Held).To(Equal(1))
					Expect(st.HeldOldest).To(BeTemporally("==", at(3*time.Hour)))
					Expect(f.counts()).To(Equal(queue.Counts{InFlight: 1, Held: 1}))

					By("the next room is d's, not that of a dead letter after it")
					Expect(f.d.Delete(f.ctx, "b", "ops", at(4*time.Hour))).To(Succeed())
					_, err = f.d.Add(f.ctx, deadEntry(newJob("e"), at(4*time.Hour)), at(4*time.Hour))
					Expect(err).To(MatchError(dlq.ErrFull), "d took the room first")
					Expect(f.take()).To(Equal([]string{ev("d", disposition.Held, dead, disposition.DeadLetter, 4*time.Hour, 0)}))
					Expect(f.stats().Held).To(BeZero())
					f.expectGone("e")
				})

				It("is written after them when there is room for all, and an add waits the same way", func() {
					holdC()
					Expect(f.d.Delete(f.ctx, "a", "ops", at(2*time.Hour))).To(Succeed())
					Expect(f.d.Delete(f.ctx, "b", "ops", at(2*time.Hour))).To(Succeed())
					f.take()
					r := f.add(deadEntry(newJob("d"), at(3*time.Hour)), 3*time.Hour)
					Expect(r.Held).To(BeFalse())
					Expect(f.take()).To(Equal([]string{
						ev("c", disposition.Held, dead, disposition.DeadLetter, 3*time.Hour, 0),
						ev("d", disposition.None, dead, disposition.DeadLetter, 3*time.Hour, 0),
					}))
					Expect(f.get("d").Status).To(Equal(dlq.Failed))
					st := f.stats()
					Expect(st.Held).To(BeZero())
					Expect(st.Rejected).To(Equal(1), "c's refusal only")
					res, err := f.d.FlushHeld(f.ctx, at(3*time.Hour), 10)
					Expect(err).NotTo(HaveOccurred())
					Expect(res).To(Equal(dlq.FlushResult{}))
				})
			})

			It("parks or loses each of 200 dead letters racing their leases' recovery, never both: every job in exactly one place", func() {
				fill("a", "b")
				const n = 200
				leases := make([]queue.Lease, n)
				jobs := make([]job.Job, n)
				for i := range n {
					f.enqueue(newJob(fmt.Sprintf("r%03d", i)), time.Hour)
					jobs[i], leases[i] = f.dequeue(job.DefaultQueue, time.Hour)
				}
				f.take()
				late := at(time.Hour + 2*TTL) // every lease has expired
				var (
					wg     sync.WaitGroup
					parked atomic.Int64
					full   atomic.Int64
					lost   atomic.Int64
				)
				for i := range n {
					wg.Go(func() {
						defer GinkgoRecover()
						r, err := f.d.DeadLetter(context.Background(), leases[i], deadEntry(jobs[i], late), late)
						switch {
						case err == nil && r.Held:
							parked.Add(1)
						case errors.Is(err, dlq.ErrHeldFull):
							full.Add(1)
						case errors.Is(err, queue.ErrLeaseLost):
							lost.Add(1)
						default:
							Fail(fmt.Sprintf("DeadLetter(%s) = %+v, %v", jobs[i].ID, r, err))
						}
					})
				}
				wg.Go(func() {
					defer GinkgoRecover()
					for range n {
						_, err := f.q.RecoverExpired(context.Background(), late, 7)
						Expect(err).NotTo(HaveOccurred())
					}
				})
				wg.Wait()
				Expect(parked.Load()).To(BeNumerically("<=", 2), "the held set's bound")
				Expect(parked.Load() + full.Load() + lost.Load()).To(BeEquivalentTo(n))
				c := f.counts()
				Expect(c.Held).To(BeEquivalentTo(parked.Load()))
				Expect(c.Held+c.Queued+c.InFlight).To(Equal(n), "%+v", c)
				where := map[string]disposition.State{}
				for _, e := range f.allEvents()[f.seen:] {
					Expect(e.From).To(Equal(cmp.Or(where[e.JobID], inFlight)), "event %v: the job was elsewhere", e)
					where[e.JobID] = e.To
				}
				held := 0
				for _, st := range where {
					if st == disposition.Held {
						held++
					}
				}
				Expect(held).To(Equal(c.Held))
			})

			When("requeued and deleted entries count toward the capacity", func() {
				BeforeEach(func() { cfg.CountInactive = true })

				It("writes the oldest held dead letter first when its own entry already counts (it takes no room), then parks the new one", func() {
					fill("a", "b")
					Expect(f.requeue("a", oneMore, time.Hour)).To(Equal(dlq.OutcomeRequeued), "a's entry stays, and counts")
					ja, la := f.dequeue(job.DefaultQueue, time.Hour)
					Expect(ja.ID).To(Equal("a"))
					ja.Attempts = 1
					Expect(f.d.Hold(f.ctx, la, deadEntry(ja, at(time.Hour)), at(time.Hour))).To(Succeed())
					f.enqueue(newJob("d"), 2*time.Hour)
					jd, ld := f.dequeue(job.DefaultQueue, 2*time.Hour)
					f.take()

					r, err := f.d.DeadLetter(f.ctx, ld, deadEntry(jd, at(2*time.Hour)), at(2*time.Hour))
					Expect(err).NotTo(HaveOccurred())
					Expect(r).To(Equal(dlq.AddResult{Held: true}), "no room for d")
					Expect(f.take()).To(Equal([]string{
						ev("a", disposition.Held, dead, disposition.DeadLetter, 2*time.Hour, 1),
						ev("d", inFlight, disposition.Held, disposition.HeldBack, 2*time.Hour, 0),
					}), "a, written over its own entry, before d is parked")
					Expect(f.get("a").Status).To(Equal(dlq.Failed))
					Expect(f.counts()).To(Equal(queue.Counts{Held: 1}))
				})
			})

			When("HeldCapacity is 3", func() {
				BeforeEach(func() { cfg.HeldCapacity = 3 })

				It("bounds the held set by it instead of the DLQ's capacity", func() {
					fill("a", "b")
					held := 0
					for _, id := range []string{"c", "d", "e", "f"} {
						f.enqueue(newJob(id), time.Hour)
						j, l := f.dequeue(job.DefaultQueue, time.Hour)
						r, err := f.d.DeadLetter(f.ctx, l, deadEntry(j, at(time.Hour)), at(time.Hour))
						if err == nil && r.Held {
							held++
						}
					}
					Expect(held).To(Equal(3))
					Expect(f.counts()).To(Equal(queue.Counts{InFlight: 1, Held: 3}))
				})
			})
			It("extends an entry already counted without an overflow", func() {
				fill("a", "b")
				r := f.add(deadEntry(newJob("a"), at(time.Hour)), time.Hour)
				Expect(r.Created).To(BeFalse())
				Expect(f.stats().Rejected).To(BeZero())
				Expect(f.rec.Overflows()).To(BeEmpty())
			})

			It("does not count requeued and deleted entries by default", func() {
				fill("a", "b")
				Expect(f.requeue("a", oneMore, time.Hour)).To(Equal(dlq.OutcomeRequeued))
				f.add(deadEntry(newJob("c"), at(time.Hour)), time.Hour)
				Expect(f.d.Delete(f.ctx, "b", "ops", at(time.Hour))).To(Succeed())
				f.add(deadEntry(newJob("d"), at(time.Hour)), time.Hour)
				_, err := f.d.Add(f.ctx, deadEntry(newJob("e"), at(time.Hour)), at(time.Hour))
				Expect(err).To(MatchError(dlq.ErrFull))
				_, err = f.d.Add(f.ctx, deadEntry(newJob("a"), at(time.Hour)), at(time.Hour))
				Expect(err).To(MatchError(dlq.ErrFull), "a requeued entry that dies again needs room")
				Expect(f.get("a").Status).To(Equal(dlq.Requeued))
				Expect(f.stats().Total).To(Equal(4))
				Expect(f.stats().Rejected).To(Equal(2))
			})

			When("CountInactive is set", func() {
				BeforeEach(func() { cfg.CountInactive = true })

				It("counts requeued and deleted entries too", func() {
					fill("a", "b")
					Expect(f.requeue("a", oneMore, time.Hour)).To(Equal(dlq.OutcomeRequeued))
					_, err := f.d.Add(f.ctx, deadEntry(newJob("c"), at(time.Hour)), at(time.Hour))
					Expect(err).To(MatchError(dlq.ErrFull))
					Expect(f.d.Delete(f.ctx, "b", "ops", at(time.Hour))).To(Succeed())
					_, err = f.d.Add(f.ctx, deadEntry(newJob("c"), at(time.Hour)), at(time.Hour))
					Expect(err).To(MatchError(dlq.ErrFull))
					r := f.add(deadEntry(newJob("a"), at(time.Hour)), time.Hour)
					Expect(r.Created).To(BeFalse(), "a requeued entry that dies again is counted already")
					Expect(f.stats().Rejected).To(Equal(2))
				})
			})
		})

		When("the policy is EvictOldest", func() {
			BeforeEach(func() {
				cfg.DLQCapacity = 2
				cfg.Overflow = store.EvictOldest
			})

			It("evicts the oldest entry in the same step, and reports it", func() {
				fill("a", "b")
				f.take()
				r := f.add(deadEntry(newJob("c"), at(time.Hour)), time.Hour)
				Expect(r.Created).To(BeTrue())
				Expect(r.Evicted).To(Equal([]string{"a"}))
				f.expectGone("a")
				f.get("b")
				f.get("c")
				st := f.stats()
				Expect(st.Total).To(Equal(2))
				Expect(st.Evicted).To(Equal(1))
				Expect(st.Rejected).To(BeZero())
				Expect(f.take()).To(Equal([]string{
					ev("a", dead, none, disposition.Evicted, time.Hour, 0),
					ev("c", none, dead, disposition.DeadLetter, time.Hour, 0),
				}))
				ov := f.rec.Overflows()
				Expect(ov).To(HaveLen(1))
				Expect(ov[0].Policy).To(Equal(store.EvictOldest))
				Expect(ov[0].JobID).To(Equal("c"))
				Expect(ov[0].Evicted).To(Equal([]string{"a"}))
				Expect(ov[0].Capacity).To(Equal(2))
				Expect(ov[0].At).To(BeTemporally("==", at(time.Hour)))
			})

			It("evicts to make room for a dead-lettered job", func() {
				fill("a", "b")
				f.take()
				r := f.kill(newJob("c"), time.Hour, deadEntry(newJob("c"), at(time.Hour)))
				Expect(r.Evicted).To(Equal([]string{"a"}))
				Expect(f.take()).To(Equal([]string{
					ev("c", none, queued, disposition.Enqueued, time.Hour, 0),
					ev("c", queued, inFlight, disposition.Leased, time.Hour, 0),
					ev("a", dead, none, disposition.Evicted, time.Hour, 0),
					ev("c", inFlight, dead, disposition.DeadLetter, time.Hour, 0),
				}))
				Expect(f.counts()).To(Equal(queue.Counts{}))
				Expect(f.stats().Evicted).To(Equal(1))
			})

			It("judges age by the last failure, the lowest ID first among equal times", func() {
				fill("a", "b")
				f.add(deadEntry(newJob("a"), at(2*time.Hour)), 2*time.Hour) // a is now the newest
				r := f.add(deadEntry(newJob("c"), at(3*time.Hour)), 3*time.Hour)
				Expect(r.Evicted).To(Equal([]string{"b"}))
				f.add(deadEntry(newJob("y"), at(3*time.Hour)), 3*time.Hour) // evicts a
				r = f.add(deadEntry(newJob("z"), at(3*time.Hour)), 3*time.Hour)
				Expect(r.Evicted).To(Equal([]string{"c"}), "c and y failed at the same time")
				Expect(f.stats().Evicted).To(Equal(3))
			})

			It("evicts only counted entries, leaving requeued records alone by default", func() {
				fill("a", "b")
				Expect(f.requeue("a", oneMore, time.Hour)).To(Equal(dlq.OutcomeRequeued))
				r := f.add(deadEntry(newJob("c"), at(time.Hour)), time.Hour)
				Expect(r.Evicted).To(BeEmpty())
				r = f.add(deadEntry(newJob("d"), at(time.Hour)), time.Hour)
				Expect(r.Evicted).To(Equal([]string{"b"}))
				Expect(f.get("a").Status).To(Equal(dlq.Requeued))
			})

			When("CountInactive is set", func() {
				BeforeEach(func() { cfg.CountInactive = true })

				It("evicts a requeued record, which moves no job", func() {
					fill("a", "b")
					Expect(f.requeue("a", oneMore, time.Hour)).To(Equal(dlq.OutcomeRequeued))
					f.take()
					r := f.add(deadEntry(newJob("c"), at(time.Hour)), time.Hour)
					Expect(r.Evicted).To(Equal([]string{"a"}))
					Expect(f.take()).To(Equal([]string{ev("c", none, dead, disposition.DeadLetter, time.Hour, 0)}))
					Expect(f.counts()).To(Equal(queue.Counts{Queued: 1}), "the requeued job is untouched")
					Expect(f.stats().Evicted).To(Equal(1))
				})
			})
		})
	})
}
