package queuetest

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/disposition"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/job"
	"github.com/faultline/faultline/reference/queue"
	"github.com/faultline/faultline/reference/store"
)

// Exercise declares the queue.Queue conformance specs. newHarness builds a
// fresh, empty backend from cfg for each spec (and may be called more than
// once in one spec); the suite sets cfg.Observer and cfg.OnOverflow to record
// what the backend reports, so the factory must pass cfg through.
func Exercise(newHarness func(cfg store.Config) Harness) {
	Describe("queue.Queue conformance", func() {
		var (
			cfg store.Config
			f   *fixture
		)
		BeforeEach(func() { cfg = store.Config{} })
		JustBeforeEach(func() { f = build(newHarness, cfg) })

		Describe("Enqueue and Dequeue", func() {
			It("hands out the jobs of a queue in FIFO order, each with a lease", func() {
				for i, id := range []string{"j1", "j2", "j3"} {
					f.enqueue(newJob(id), time.Duration(i)*time.Second)
				}
				f.expectCounts(3, 0, 0, 0)

				j, l := f.dequeue(job.DefaultQueue, 10*time.Second)
				equalJob(j, newJob("j1"))
				Expect(l.JobID).To(Equal("j1"))
				Expect(l.Queue).To(Equal(job.DefaultQueue))
				Expect(l.Token).NotTo(BeZero())
				Expect(l.Expires).To(BeTemporally("==", at(10*time.Second+TTL)))
				f.expectCounts(2, 1, 0, 0)

				j2, _ := f.dequeue(job.DefaultQueue, 11*time.Second)
				equalJob(j2, newJob("j2"))
				j3, _ := f.dequeue("", 12*time.Second) // "" is the default queue
				equalJob(j3, newJob("j3"))
				f.expectCounts(0, 3, 0, 0)
				f.expectEmpty(job.DefaultQueue, 13*time.Second)

				Expect(f.take()).To(Equal([]string{
					ev("j1", none, queued, disposition.Enqueued, 0, 0),
					ev("j2", none, queued, disposition.Enqueued, time.Second, 0),
					ev("j3", none, queued, disposition.Enqueued, 2*time.Second, 0),
					ev("j1", queued, inFlight, disposition.Leased, 10*time.Second, 0),
					ev("j2", queued, inFlight, disposition.Leased, 11*time.Second, 0),
					ev("j3", queued, inFlight, disposition.Leased, 12*time.Second, 0),
				}))
			})

			It("keeps every field of the job, the idempotency key included, as given", func() {
				j := newJob("full")
				j.Queue = "payments"
				j.Attempts = 2
				j.FirstAttemptAt = at(-time.Hour)
				j.EnqueuedAt = at(-2 * time.Hour)
				j.KeyRecordedAt = at(-3 * time.Hour)
				j.Payload = []byte(strings.Repeat("x", 4096))
				f.enqueue(j, 0)
				got, l := f.dequeue("payments", 0)
				equalJob(got, j)
				Expect(l.Queue).To(Equal("payments"))
			})

			It("keeps queues independent", func() {
				f.enqueue(onQueue("e1", "emails"), 0)
				f.enqueue(newJob("d1"), time.Second)
				f.enqueue(onQueue("p1", "payments"), 2*time.Second)
				f.enqueue(onQueue("e2", "emails"), 3*time.Second)
				f.expectCounts(4, 0, 0, 0)

				f.expectEmpty("reports", 4*time.Second)
				f.dequeueID("payments", 4*time.Second, "p1")
				f.expectEmpty("payments", 4*time.Second)
				f.dequeueID("emails", 4*time.Second, "e1")
				f.dequeueID(job.DefaultQueue, 4*time.Second, "d1")
				f.dequeueID("emails", 4*time.Second, "e2")
				f.expectEmpty("emails", 4*time.Second)
				f.expectCounts(0, 4, 0, 0)
			})

			It("reports an empty queue with false, a zero lease and no event", func() {
				f.expectEmpty(job.DefaultQueue, 0)
				f.expectEmpty("nowhere", 0)
				Expect(f.take()).To(BeEmpty())
				f.expectCounts(0, 0, 0, 0)
			})

			It("gives a new lease of the same job a new token", func() {
				f.enqueue(newJob("j1"), 0)
				_, l1 := f.dequeue(job.DefaultQueue, 0)
				Expect(f.q.Release(f.ctx, l1, newJob("j1"), at(time.Second))).To(Succeed())
				_, l2 := f.dequeue(job.DefaultQueue, 2*time.Second)
				Expect(l2.Token).NotTo(BeZero())
				Expect(l2.Token).NotTo(Equal(l1.Token))
				Expect(f.q.Ack(f.ctx, l1, newJob("j1"), at(3*time.Second))).To(MatchError(queue.ErrLeaseLost))
				Expect(f.q.Ack(f.ctx, l2, newJob("j1"), at(3*time.Second))).To(Succeed())
			})

			It("refuses a call whose context is canceled and writes nothing", func() {
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				Expect(f.q.Enqueue(ctx, newJob("j1"), T0)).To(MatchError(context.Canceled))
				f.expectCounts(0, 0, 0, 0)
				Expect(f.take()).To(BeEmpty())
			})
		})

		Describe("duplicate IDs", func() {
			// place puts job "dup" where the entry says; the job on the
			// queue behind it, "other", shows nothing else moved.
			type placement func(f *fixture)
			DescribeTable("refuses a job whose ID is already in the queue's structures with ErrDuplicate, writing nothing",
				func(place placement, want queue.Counts) {
					place(f)
					Expect(f.counts()).To(Equal(want))
					f.take()

					dup := newJob("dup")
					dup.Task = "another-task"
					err := f.q.Enqueue(f.ctx, dup, at(time.Minute))
					Expect(err).To(MatchError(queue.ErrDuplicate))
					Expect(f.counts()).To(Equal(want))
					Expect(f.take()).To(BeEmpty())
				},
				Entry("queued", placement(func(f *fixture) {
					f.enqueue(newJob("dup"), 0)
				}), queue.Counts{Queued: 1}),
				Entry("in flight", placement(func(f *fixture) {
					f.enqueue(newJob("dup"), 0)
					f.dequeue(job.DefaultQueue, 0)
				}), queue.Counts{InFlight: 1}),
				Entry("scheduled for a retry", placement(func(f *fixture) {
					f.enqueue(newJob("dup"), 0)
					j, l := f.dequeue(job.DefaultQueue, 0)
					j.Attempts = 1
					Expect(f.q.Retry(f.ctx, l, j, at(time.Hour), at(time.Second))).To(Succeed())
				}), queue.Counts{Scheduled: 1}),
				Entry("in the fallback queue", placement(func(f *fixture) {
					f.enqueue(newJob("dup"), 0)
					j, l := f.dequeue(job.DefaultQueue, 0)
					Expect(f.q.Divert(f.ctx, l, j, at(time.Second))).To(Succeed())
				}), queue.Counts{Fallback: 1}),
				Entry("queued on another queue", placement(func(f *fixture) {
					f.enqueue(onQueue("dup", "emails"), 0)
				}), queue.Counts{Queued: 1}),
			)

			It("accepts the ID again once the job succeeded", func() {
				f.enqueue(newJob("j1"), 0)
				j, l := f.dequeue(job.DefaultQueue, 0)
				j.Attempts = 1
				Expect(f.q.Ack(f.ctx, l, j, at(time.Second))).To(Succeed())
				f.enqueue(newJob("j1"), 2*time.Second)
				f.expectCounts(1, 0, 0, 0)
			})
		})

		Describe("invalid jobs", func() {
			BeforeEach(func() { cfg.MaxPayload = 16 })

			DescribeTable("are refused with job.ErrInvalid and nothing is written",
				func(mutate func(*job.Job)) {
					j := newJob("bad")
					j.Payload = []byte("0123456789abcdef") // exactly MaxPayload
					mutate(&j)
					err := f.q.Enqueue(f.ctx, j, T0)
					Expect(err).To(MatchError(job.ErrInvalid))
					f.expectCounts(0, 0, 0, 0)
					Expect(f.take()).To(BeEmpty())
					f.expectEmpty(job.DefaultQueue, 0)
					f.expectEmpty(j.QueueName(), 0)
				},
				Entry("the zero job", func(j *job.Job) { *j = job.Job{} }),
				Entry("an empty ID", func(j *job.Job) { j.ID = "" }),
				Entry("an empty task", func(j *job.Job) { j.Task = "" }),
				Entry("a payload over MaxPayload", func(j *job.Job) { j.Payload = append(j.Payload, '!') }),
				Entry("a control character in the ID", func(j *job.Job) { j.ID = "bad\nid" }),
				Entry("a control character in the queue", func(j *job.Job) { j.Queue = "q\x00" }),
				Entry("an ID over 256 bytes", func(j *job.Job) { j.ID = strings.Repeat("i", 257) }),
				Entry("negative attempts", func(j *job.Job) { j.Attempts = -1 }),
			)

			It("accepts a payload of exactly MaxPayload bytes", func() {
				j := newJob("ok")
				j.Payload = []byte("0123456789abcdef")
				f.enqueue(j, 0)
				got, _ := f.dequeue(job.DefaultQueue, 0)
				equalJob(got, j)
			})

			It("applies the default MaxPayload of 1 MiB when the config leaves it zero", func() {
				g := build(newHarness, store.Config{})
				j := newJob("big")
				j.Payload = make([]byte, job.DefaultMaxPayload)
				Expect(g.q.Enqueue(g.ctx, j, T0)).To(Succeed())
				j.ID, j.Payload = "bigger", make([]byte, job.DefaultMaxPayload+1)
				Expect(g.q.Enqueue(g.ctx, j, T0)).To(MatchError(job.ErrInvalid))
				g.expectCounts(1, 0, 0, 0)
			})

		})

		Describe("completions carrying the wrong job", func() {
			DescribeTable("a completion carrying a job that is not the lease's is refused with job.ErrInvalid, changing nothing",
				func(complete func(f *fixture, l queue.Lease, j job.Job) error) {
					f.enqueue(newJob("j1"), 0)
					_, l := f.dequeue(job.DefaultQueue, 0)
					f.take()
					Expect(complete(f, l, newJob("someone-else"))).To(MatchError(job.ErrInvalid))
					bad := newJob("j1")
					bad.Task = ""
					Expect(complete(f, l, bad)).To(MatchError(job.ErrInvalid))
					f.expectCounts(0, 1, 0, 0)
					Expect(f.take()).To(BeEmpty())
					Expect(f.q.Ack(f.ctx, l, newJob("j1"), at(time.Second))).To(Succeed(), "the lease still works")
				},
				Entry("Ack", func(f *fixture, l queue.Lease, j job.Job) error {
					return f.q.Ack(f.ctx, l, j, at(time.Second))
				}),
				Entry("Retry", func(f *fixture, l queue.Lease, j job.Job) error {
					return f.q.Retry(f.ctx, l, j, at(time.Minute), at(time.Second))
				}),
				Entry("Release", func(f *fixture, l queue.Lease, j job.Job) error {
					return f.q.Release(f.ctx, l, j, at(time.Second))
				}),
				Entry("Divert", func(f *fixture, l queue.Lease, j job.Job) error {
					return f.q.Divert(f.ctx, l, j, at(time.Second))
				}),
				Entry("DeadLetter", func(f *fixture, l queue.Lease, j job.Job) error {
					_, err := f.h.DLQ.DeadLetter(f.ctx, l, deadEntry(j, at(time.Second)), at(time.Second))
					return err
				}),
			)
		})

		It("keeps a job on the queue it was leased from when a completion's copy names another", func() {
			f.enqueue(newJob("j1"), 0)
			_, l := f.dequeue(job.DefaultQueue, 0)
			moved := newJob("j1")
			moved.Queue = "elsewhere"
			Expect(f.q.Release(f.ctx, l, moved, at(time.Second))).To(Succeed())
			got, _ := f.dequeue(job.DefaultQueue, 2*time.Second)
			Expect(got.ID).To(Equal("j1"))
			Expect(got.QueueName()).To(Equal(job.DefaultQueue))
		})

		Describe("Ack", func() {
			It("removes the job for good", func() {
				f.enqueue(newJob("j1"), 0)
				f.enqueue(newJob("j2"), 0)
				j, l := f.dequeue(job.DefaultQueue, time.Second)
				f.expectCounts(1, 1, 0, 0)
				j.Attempts = 1 // the successful attempt counts
				Expect(f.q.Ack(f.ctx, l, j, at(2*time.Second))).To(Succeed())
				f.expectCounts(1, 0, 0, 0)
				n, err := f.q.RecoverExpired(f.ctx, at(time.Hour), 100)
				Expect(err).NotTo(HaveOccurred())
				Expect(n).To(BeZero())
				Expect(f.drainIDs(job.DefaultQueue, time.Hour)).To(Equal([]string{"j2"}))
				Expect(f.take()[:4]).To(Equal([]string{
					ev("j1", none, queued, disposition.Enqueued, 0, 0),
					ev("j2", none, queued, disposition.Enqueued, 0, 0),
					ev("j1", queued, inFlight, disposition.Leased, time.Second, 0),
					ev("j1", inFlight, done, disposition.Acked, 2*time.Second, 1),
				}))
			})

			It("reports the attempts of the job passed to Ack in the succeeded event, not the stored ones", func() {
				stored := newJob("j1")
				stored.Attempts = 2
				f.enqueue(stored, 0)
				j, l := f.dequeue(job.DefaultQueue, time.Second)
				Expect(j.Attempts).To(Equal(2))
				f.take()
				j.Attempts = 3 // the worker counted the attempt that succeeded
				Expect(f.q.Ack(f.ctx, l, j, at(2*time.Second))).To(Succeed())
				Expect(f.take()).To(Equal([]string{
					ev("j1", inFlight, done, disposition.Acked, 2*time.Second, 3),
				}))
				f.expectCounts(0, 0, 0, 0)
			})

			It("refuses a second ack of the same lease with ErrLeaseLost", func() {
				f.enqueue(newJob("j1"), 0)
				j, l := f.dequeue(job.DefaultQueue, 0)
				j.Attempts = 1
				Expect(f.q.Ack(f.ctx, l, j, at(time.Second))).To(Succeed())
				f.take()
				Expect(f.q.Ack(f.ctx, l, j, at(2*time.Second))).To(MatchError(queue.ErrLeaseLost))
				Expect(f.take()).To(BeEmpty())
				f.expectCounts(0, 0, 0, 0)
			})
		})

		Describe("leases", func() {
			It("recovers an expired lease to the head of its queue, not before it expires", func() {
				f.enqueue(newJob("j1"), 0)
				f.enqueue(newJob("j2"), 0)
				_, l := f.dequeue(job.DefaultQueue, time.Second)
				Expect(l.Expires).To(BeTemporally("==", at(time.Second+TTL)))
				f.take()

				n, err := f.q.RecoverExpired(f.ctx, l.Expires.Add(-time.Millisecond), 100)
				Expect(err).NotTo(HaveOccurred())
				Expect(n).To(BeZero())
				f.expectCounts(1, 1, 0, 0)

				n, err = f.q.RecoverExpired(f.ctx, l.Expires, 100) // at or before now
				Expect(err).NotTo(HaveOccurred())
				Expect(n).To(Equal(1))
				f.expectCounts(2, 0, 0, 0)
				Expect(f.take()).To(Equal([]string{
					ev("j1", inFlight, queued, disposition.LeaseExpired, time.Second+TTL, 0),
				}))

				j, _ := f.dequeueID(job.DefaultQueue, time.Minute, "j1")
				Expect(j.Attempts).To(BeZero(), "a lost lease does not use an attempt by default")
				f.dequeueID(job.DefaultQueue, time.Minute, "j2")
			})

			It("recovers the earliest-expired leases first, at most limit, and puts them at the head in that order", func() {
				for _, id := range []string{"a", "b", "c", "w"} {
					f.enqueue(newJob(id), 0)
				}
				f.dequeueID(job.DefaultQueue, 0, "a")             // expires T0+30s
				f.dequeueID(job.DefaultQueue, time.Second, "b")   // T0+31s
				f.dequeueID(job.DefaultQueue, 2*time.Second, "c") // T0+32s
				f.take()

				n, err := f.q.RecoverExpired(f.ctx, at(time.Hour), 2)
				Expect(err).NotTo(HaveOccurred())
				Expect(n).To(Equal(2))
				f.expectCounts(3, 1, 0, 0)
				Expect(f.take()).To(Equal([]string{
					ev("a", inFlight, queued, disposition.LeaseExpired, time.Hour, 0),
					ev("b", inFlight, queued, disposition.LeaseExpired, time.Hour, 0),
				}))

				n, err = f.q.RecoverExpired(f.ctx, at(time.Hour), 2)
				Expect(err).NotTo(HaveOccurred())
				Expect(n).To(Equal(1))
				n, err = f.q.RecoverExpired(f.ctx, at(time.Hour), 2)
				Expect(err).NotTo(HaveOccurred())
				Expect(n).To(BeZero())
				Expect(f.drainIDs(job.DefaultQueue, 2*time.Hour)).To(Equal([]string{"c", "a", "b", "w"}))
			})

			It("recovers leases of several queues, each to its own queue's head", func() {
				f.enqueue(onQueue("e1", "emails"), 0)
				f.enqueue(onQueue("e2", "emails"), 0)
				f.enqueue(newJob("d1"), 0)
				f.enqueue(newJob("d2"), 0)
				f.dequeueID("emails", 0, "e1")
				f.dequeueID(job.DefaultQueue, time.Second, "d1")
				n, err := f.q.RecoverExpired(f.ctx, at(time.Hour), 10)
				Expect(err).NotTo(HaveOccurred())
				Expect(n).To(Equal(2))
				Expect(f.drainIDs("emails", 2*time.Hour)).To(Equal([]string{"e1", "e2"}))
				Expect(f.drainIDs(job.DefaultQueue, 2*time.Hour)).To(Equal([]string{"d1", "d2"}))
			})

			It("moves nothing when the limit is below 1", func() {
				f.enqueue(newJob("j1"), 0)
				f.dequeue(job.DefaultQueue, 0)
				n, err := f.q.RecoverExpired(f.ctx, at(time.Hour), 0)
				Expect(err).NotTo(HaveOccurred())
				Expect(n).To(BeZero())
				f.expectCounts(0, 1, 0, 0)
			})

			It("extends a lease on Heartbeat, keeping its token", func() {
				f.enqueue(newJob("j1"), 0)
				_, l := f.dequeue(job.DefaultQueue, 0)
				f.take()
				l2, err := f.q.Heartbeat(f.ctx, l, at(20*time.Second), TTL)
				Expect(err).NotTo(HaveOccurred())
				Expect(l2.JobID).To(Equal("j1"))
				Expect(l2.Queue).To(Equal(job.DefaultQueue))
				Expect(l2.Token).To(Equal(l.Token))
				Expect(l2.Expires).To(BeTemporally("==", at(50*time.Second)))
				Expect(f.take()).To(BeEmpty(), "a heartbeat moves nothing")

				n, err := f.q.RecoverExpired(f.ctx, l.Expires, 10)
				Expect(err).NotTo(HaveOccurred())
				Expect(n).To(BeZero(), "the old expiry no longer applies")
				n, err = f.q.RecoverExpired(f.ctx, l2.Expires.Add(-time.Millisecond), 10)
				Expect(err).NotTo(HaveOccurred())
				Expect(n).To(BeZero())
				n, err = f.q.RecoverExpired(f.ctx, l2.Expires, 10)
				Expect(err).NotTo(HaveOccurred())
				Expect(n).To(Equal(1))
			})

			It("accepts a completion after the lease's expiry as long as the job was not recovered", func() {
				f.enqueue(newJob("j1"), 0)
				f.enqueue(newJob("j2"), 0)
				_, l1 := f.dequeue(job.DefaultQueue, 0)
				_, l2 := f.dequeue(job.DefaultQueue, 0)
				l2, err := f.q.Heartbeat(f.ctx, l2, at(time.Hour), TTL)
				Expect(err).NotTo(HaveOccurred())
				Expect(l2.Expires).To(BeTemporally("==", at(time.Hour+TTL)))
				Expect(f.q.Ack(f.ctx, l1, newJob("j1"), at(time.Hour))).To(Succeed())
				f.expectCounts(0, 1, 0, 0)
			})

			When("LostLeaseUsesAttempt is set", func() {
				BeforeEach(func() { cfg.LostLeaseUsesAttempt = true })

				It("counts the lost attempt on the recovered job", func() {
					j := newJob("j1")
					j.Attempts = 2
					f.enqueue(j, 0)
					f.dequeue(job.DefaultQueue, 0)
					f.take()
					n, err := f.q.RecoverExpired(f.ctx, at(TTL), 10)
					Expect(err).NotTo(HaveOccurred())
					Expect(n).To(Equal(1))
					Expect(f.take()).To(Equal([]string{
						ev("j1", inFlight, queued, disposition.LeaseExpired, TTL, 3),
					}))
					got, _ := f.dequeue(job.DefaultQueue, time.Minute)
					Expect(got.Attempts).To(Equal(3))
				})
			})
		})

		Describe("fencing", func() {
			type completion func(f *fixture, l queue.Lease, now time.Time) error
			ack := completion(func(f *fixture, l queue.Lease, now time.Time) error {
				j := newJob(l.JobID)
				j.Attempts = 1
				return f.q.Ack(f.ctx, l, j, now)
			})
			retry := completion(func(f *fixture, l queue.Lease, now time.Time) error {
				j := newJob(l.JobID)
				j.Attempts = 1
				return f.q.Retry(f.ctx, l, j, now.Add(time.Minute), now)
			})
			release := completion(func(f *fixture, l queue.Lease, now time.Time) error {
				return f.q.Release(f.ctx, l, newJob(l.JobID), now)
			})
			divert := completion(func(f *fixture, l queue.Lease, now time.Time) error {
				return f.q.Divert(f.ctx, l, newJob(l.JobID), now)
			})
			heartbeat := completion(func(f *fixture, l queue.Lease, now time.Time) error {
				_, err := f.q.Heartbeat(f.ctx, l, now, TTL)
				return err
			})
			deadLetter := completion(func(f *fixture, l queue.Lease, now time.Time) error {
				_, err := f.h.DLQ.DeadLetter(f.ctx, l, deadEntry(newJob(l.JobID), now), now)
				return err
			})
			all := []TableEntry{
				Entry("Ack", ack), Entry("Retry", retry), Entry("Release", release),
				Entry("Divert", divert), Entry("Heartbeat", heartbeat), Entry("DeadLetter", deadLetter),
			}

			// expectUntouched checks that the refused call changed nothing:
			// the job is still in flight under lease cur, no event, no DLQ
			// entry.
			expectUntouched := func(f *fixture, cur queue.Lease) {
				GinkgoHelper()
				f.expectCounts(0, 1, 0, 0)
				Expect(f.take()).To(BeEmpty())
				_, err := f.h.DLQ.Get(f.ctx, cur.JobID)
				Expect(err).To(MatchError(dlq.ErrNotFound))
				n, err := f.q.RecoverExpired(f.ctx, cur.Expires.Add(-time.Millisecond), 10)
				Expect(err).NotTo(HaveOccurred())
				Expect(n).To(BeZero(), "the current lease was not changed")
				Expect(f.q.Ack(f.ctx, cur, newJob(cur.JobID), cur.Expires.Add(-time.Millisecond))).To(Succeed(), "the current lease still works")
			}

			DescribeTable("refuses a completion from a lease that expired and was recovered, after the job was leased again",
				func(op completion) {
					f.enqueue(newJob("j1"), 0)
					_, stale := f.dequeue(job.DefaultQueue, 0)
					n, err := f.q.RecoverExpired(f.ctx, stale.Expires, 10)
					Expect(err).NotTo(HaveOccurred())
					Expect(n).To(Equal(1))
					_, cur := f.dequeue(job.DefaultQueue, TTL+time.Second)
					f.take()

					Expect(op(f, stale, at(TTL+2*time.Second))).To(MatchError(queue.ErrLeaseLost))
					expectUntouched(f, cur)
				}, all)

			DescribeTable("refuses a completion from a lease that expired and was recovered, while the job waits on its queue",
				func(op completion) {
					f.enqueue(newJob("j1"), 0)
					_, stale := f.dequeue(job.DefaultQueue, 0)
					n, err := f.q.RecoverExpired(f.ctx, stale.Expires, 10)
					Expect(err).NotTo(HaveOccurred())
					Expect(n).To(Equal(1))
					f.take()
					Expect(op(f, stale, at(TTL+time.Second))).To(MatchError(queue.ErrLeaseLost))
					f.expectCounts(1, 0, 0, 0)
					Expect(f.take()).To(BeEmpty())
					f.dequeueID(job.DefaultQueue, TTL+2*time.Second, "j1")
				}, all)

			DescribeTable("refuses a forged token",
				func(op completion) {
					f.enqueue(newJob("j1"), 0)
					_, cur := f.dequeue(job.DefaultQueue, 0)
					f.take()
					forged := cur
					forged.Token += 1_000_003
					Expect(op(f, forged, at(time.Second))).To(MatchError(queue.ErrLeaseLost))
					expectUntouched(f, cur)
				}, all)

			DescribeTable("refuses a lease of a job that is no longer in flight",
				func(op completion) {
					f.enqueue(newJob("j1"), 0)
					j, l := f.dequeue(job.DefaultQueue, 0)
					Expect(f.q.Ack(f.ctx, l, j, at(time.Second))).To(Succeed())
					f.take()
					Expect(op(f, l, at(2*time.Second))).To(MatchError(queue.ErrLeaseLost))
					f.expectCounts(0, 0, 0, 0)
					Expect(f.take()).To(BeEmpty())
					_, err := f.h.DLQ.Get(f.ctx, "j1")
					Expect(err).To(MatchError(dlq.ErrNotFound))
				}, all)

			DescribeTable("refuses a lease of a job that never existed",
				func(op completion) {
					Expect(op(f, queue.Lease{JobID: "ghost", Queue: job.DefaultQueue, Token: 1, Expires: at(TTL)}, T0)).
						To(MatchError(queue.ErrLeaseLost))
					f.expectCounts(0, 0, 0, 0)
					Expect(f.take()).To(BeEmpty())
				}, all)
		})

		Describe("Retry and ForwardDue", func() {
			It("schedules the job, storing its new attempt count, and forwards it to its queue's tail once due", func() {
				f.enqueue(newJob("j1"), 0)
				j, l := f.dequeue(job.DefaultQueue, time.Second)
				j.Attempts = 1
				j.FirstAttemptAt = at(time.Second)
				Expect(f.q.Retry(f.ctx, l, j, at(time.Minute), at(2*time.Second))).To(Succeed())
				f.expectCounts(0, 0, 1, 0)
				f.expectEmpty(job.DefaultQueue, 3*time.Second)

				n, err := f.q.ForwardDue(f.ctx, at(time.Minute-time.Millisecond), 10)
				Expect(err).NotTo(HaveOccurred())
				Expect(n).To(BeZero(), "nothing is due before its time")
				f.expectCounts(0, 0, 1, 0)

				f.enqueue(newJob("j2"), 59*time.Second)
				n, err = f.q.ForwardDue(f.ctx, at(time.Minute), 10) // due at or before now
				Expect(err).NotTo(HaveOccurred())
				Expect(n).To(Equal(1))
				f.expectCounts(2, 0, 0, 0)

				f.dequeueID(job.DefaultQueue, 61*time.Second, "j2")
				got, _ := f.dequeueID(job.DefaultQueue, 61*time.Second, "j1")
				equalJob(got, j)

				Expect(f.take()).To(Equal([]string{
					ev("j1", none, queued, disposition.Enqueued, 0, 0),
					ev("j1", queued, inFlight, disposition.Leased, time.Second, 0),
					ev("j1", inFlight, sched, disposition.RetryLater, 2*time.Second, 1),
					ev("j2", none, queued, disposition.Enqueued, 59*time.Second, 0),
					ev("j1", sched, queued, disposition.Due, time.Minute, 1),
					ev("j2", queued, inFlight, disposition.Leased, 61*time.Second, 0),
					ev("j1", queued, inFlight, disposition.Leased, 61*time.Second, 1),
				}))
			})

			It("forwards the oldest due first, at most limit per call, each to its own queue", func() {
				dues := map[string]time.Duration{"r3": 3 * time.Minute, "r1": time.Minute, "r2": 2 * time.Minute, "later": time.Hour}
				for _, id := range []string{"r3", "r1", "r2", "later"} {
					j := newJob(id)
					if id == "r2" {
						j.Queue = "emails"
					}
					f.enqueue(j, 0)
					got, l := f.dequeue(j.QueueName(), 0)
					got.Attempts = 1
					Expect(f.q.Retry(f.ctx, l, got, at(dues[id]), at(time.Second))).To(Succeed())
				}
				f.expectCounts(0, 0, 4, 0)
				f.take()

				n, err := f.q.ForwardDue(f.ctx, at(10*time.Minute), 2)
				Expect(err).NotTo(HaveOccurred())
				Expect(n).To(Equal(2))
				f.expectCounts(2, 0, 2, 0)
				Expect(f.take()).To(Equal([]string{
					ev("r1", sched, queued, disposition.Due, 10*time.Minute, 1),
					ev("r2", sched, queued, disposition.Due, 10*time.Minute, 1),
				}))

				n, err = f.q.ForwardDue(f.ctx, at(10*time.Minute), 2)
				Expect(err).NotTo(HaveOccurred())
				Expect(n).To(Equal(1), "the job due in an hour stays")
				f.expectCounts(3, 0, 1, 0)

				n, err = f.q.ForwardDue(f.ctx, at(10*time.Minute), 0)
				Expect(err).NotTo(HaveOccurred())
				Expect(n).To(BeZero())

				Expect(f.drainIDs(job.DefaultQueue, 11*time.Minute)).To(Equal([]string{"r1", "r3"}))
				Expect(f.drainIDs("emails", 11*time.Minute)).To(Equal([]string{"r2"}))
				f.expectCounts(0, 0, 1, 0)
			})
		})

		Describe("Release", func() {
			It("puts the job back at the head of its queue at once, as given", func() {
				f.enqueue(newJob("j1"), 0)
				f.enqueue(newJob("j2"), 0)
				j, l := f.dequeue(job.DefaultQueue, time.Second)
				j.FirstAttemptAt = at(time.Second)
				Expect(f.q.Release(f.ctx, l, j, at(2*time.Second))).To(Succeed())
				f.expectCounts(2, 0, 0, 0)
				got, _ := f.dequeueID(job.DefaultQueue, 3*time.Second, "j1")
				equalJob(got, j)
				Expect(f.take()[2:]).To(Equal([]string{
					ev("j1", queued, inFlight, disposition.Leased, time.Second, 0),
					ev("j1", inFlight, queued, disposition.Released, 2*time.Second, 0),
					ev("j1", queued, inFlight, disposition.Leased, 3*time.Second, 0),
				}))
			})
		})

		Describe("Divert and DrainBatch", func() {
			It("keeps diverted jobs out of their queues until drained, oldest diverted first, in batches", func() {
				for _, id := range []string{"f1", "f2", "f3", "f4", "f5"} {
					j := newJob(id)
					if id == "f3" {
						j.Queue = "emails"
					}
					f.enqueue(j, 0)
				}
				for i, id := range []string{"f1", "f2", "f4", "f5"} {
					j, l := f.dequeueID(job.DefaultQueue, time.Duration(i)*time.Second, id)
					Expect(f.q.Divert(f.ctx, l, j, at(time.Duration(i)*time.Second))).To(Succeed())
				}
				j, l := f.dequeueID("emails", 10*time.Second, "f3")
				Expect(f.q.Divert(f.ctx, l, j, at(10*time.Second))).To(Succeed())
				f.expectCounts(0, 0, 0, 5)
				f.expectEmpty(job.DefaultQueue, 11*time.Second)
				f.expectEmpty("emails", 11*time.Second)
				f.take()

				f.enqueue(newJob("fresh"), time.Minute)
				moved, more, err := f.q.DrainBatch(f.ctx, at(2*time.Minute), 2)
				Expect(err).NotTo(HaveOccurred())
				Expect(moved).To(Equal(2))
				Expect(more).To(BeTrue())
				f.expectCounts(3, 0, 0, 3)
				moved, more, err = f.q.DrainBatch(f.ctx, at(3*time.Minute), 2)
				Expect(err).NotTo(HaveOccurred())
				Expect(moved).To(Equal(2))
				Expect(more).To(BeTrue())
				moved, more, err = f.q.DrainBatch(f.ctx, at(4*time.Minute), 2)
				Expect(err).NotTo(HaveOccurred())
				Expect(moved).To(Equal(1))
				Expect(more).To(BeFalse())
				f.expectCounts(6, 0, 0, 0)
				moved, more, err = f.q.DrainBatch(f.ctx, at(5*time.Minute), 2)
				Expect(err).NotTo(HaveOccurred())
				Expect(moved).To(BeZero())
				Expect(more).To(BeFalse())

				Expect(f.take()).To(Equal([]string{
					ev("fresh", none, queued, disposition.Enqueued, time.Minute, 0),
					ev("f1", fallback, queued, disposition.Drained, 2*time.Minute, 0),
					ev("f2", fallback, queued, disposition.Drained, 2*time.Minute, 0),
					ev("f4", fallback, queued, disposition.Drained, 3*time.Minute, 0),
					ev("f5", fallback, queued, disposition.Drained, 3*time.Minute, 0),
					ev("f3", fallback, queued, disposition.Drained, 4*time.Minute, 0),
				}))
				Expect(f.drainIDs(job.DefaultQueue, time.Hour)).To(Equal([]string{"fresh", "f1", "f2", "f4", "f5"}))
				Expect(f.drainIDs("emails", time.Hour)).To(Equal([]string{"f3"}))
			})

			It("reports more exactly when a batch leaves jobs behind", func() {
				for _, id := range []string{"a", "b"} {
					f.enqueue(newJob(id), 0)
					j, l := f.dequeue(job.DefaultQueue, 0)
					Expect(f.q.Divert(f.ctx, l, j, at(time.Second))).To(Succeed())
				}
				moved, more, err := f.q.DrainBatch(f.ctx, at(time.Minute), 2)
				Expect(err).NotTo(HaveOccurred())
				Expect(moved).To(Equal(2))
				Expect(more).To(BeFalse())
			})
		})

		Describe("disposition events", func() {
			It("reports every move of a job's whole path, in order, with From, To, Reason, time and attempts", func() {
				f.enqueue(newJob("j1"), 0)
				j, l := f.dequeue(job.DefaultQueue, 1*time.Second)
				j.Attempts = 1
				Expect(f.q.Retry(f.ctx, l, j, at(10*time.Second), at(2*time.Second))).To(Succeed())
				_, err := f.q.ForwardDue(f.ctx, at(10*time.Second), 10)
				Expect(err).NotTo(HaveOccurred())
				j, l = f.dequeue(job.DefaultQueue, 11*time.Second)
				j.Attempts = 2
				Expect(f.q.Divert(f.ctx, l, j, at(12*time.Second))).To(Succeed())
				_, _, err = f.q.DrainBatch(f.ctx, at(20*time.Second), 10)
				Expect(err).NotTo(HaveOccurred())
				j, l = f.dequeue(job.DefaultQueue, 21*time.Second)
				Expect(f.q.Release(f.ctx, l, j, at(22*time.Second))).To(Succeed())
				_, l = f.dequeue(job.DefaultQueue, 23*time.Second)
				_, err = f.q.RecoverExpired(f.ctx, l.Expires, 10)
				Expect(err).NotTo(HaveOccurred())
				j, l = f.dequeue(job.DefaultQueue, time.Minute)
				j.Attempts = 3
				_, err = f.h.DLQ.DeadLetter(f.ctx, l, deadEntry(j, at(61*time.Second)), at(61*time.Second))
				Expect(err).NotTo(HaveOccurred())
				out, err := f.h.DLQ.Requeue(f.ctx, "j1", dlq.RequeueOptions{Budget: dlq.OneMoreAttempt, By: "ops"}, at(2*time.Minute))
				Expect(err).NotTo(HaveOccurred())
				Expect(out).To(Equal(dlq.OutcomeRequeued))
				j, l = f.dequeue(job.DefaultQueue, 3*time.Minute)
				j.Attempts = 4 // the requeued job's extra attempt, which succeeded
				Expect(f.q.Ack(f.ctx, l, j, at(4*time.Minute))).To(Succeed())

				Expect(f.take()).To(Equal([]string{
					ev("j1", none, queued, disposition.Enqueued, 0, 0),
					ev("j1", queued, inFlight, disposition.Leased, time.Second, 0),
					ev("j1", inFlight, sched, disposition.RetryLater, 2*time.Second, 1),
					ev("j1", sched, queued, disposition.Due, 10*time.Second, 1),
					ev("j1", queued, inFlight, disposition.Leased, 11*time.Second, 1),
					ev("j1", inFlight, fallback, disposition.Diverted, 12*time.Second, 2),
					ev("j1", fallback, queued, disposition.Drained, 20*time.Second, 2),
					ev("j1", queued, inFlight, disposition.Leased, 21*time.Second, 2),
					ev("j1", inFlight, queued, disposition.Released, 22*time.Second, 2),
					ev("j1", queued, inFlight, disposition.Leased, 23*time.Second, 2),
					ev("j1", inFlight, queued, disposition.LeaseExpired, 23*time.Second+TTL, 2),
					ev("j1", queued, inFlight, disposition.Leased, time.Minute, 2),
					ev("j1", inFlight, dead, disposition.DeadLetter, 61*time.Second, 3),
					ev("j1", dead, queued, disposition.Requeued, 2*time.Minute, 3),
					ev("j1", queued, inFlight, disposition.Leased, 3*time.Minute, 3),
					ev("j1", inFlight, done, disposition.Acked, 4*time.Minute, 4),
				}))
				f.expectCounts(0, 0, 0, 0)
			})
		})

		Describe("Counts", func() {
			It("are exact at every step of a mixed run", func() {
				for i := range 6 {
					f.enqueue(newJob(string(rune('a'+i))), 0)
				}
				f.expectCounts(6, 0, 0, 0)
				ja, la := f.dequeueID(job.DefaultQueue, time.Second, "a")
				jb, lb := f.dequeueID(job.DefaultQueue, time.Second, "b")
				jc, lc := f.dequeueID(job.DefaultQueue, time.Second, "c")
				jd, ld := f.dequeueID(job.DefaultQueue, time.Second, "d")
				f.expectCounts(2, 4, 0, 0)
				Expect(f.q.Retry(f.ctx, la, ja, at(time.Minute), at(2*time.Second))).To(Succeed())
				f.expectCounts(2, 3, 1, 0)
				Expect(f.q.Divert(f.ctx, lb, jb, at(2*time.Second))).To(Succeed())
				f.expectCounts(2, 2, 1, 1)
				Expect(f.q.Release(f.ctx, lc, jc, at(2*time.Second))).To(Succeed())
				f.expectCounts(3, 1, 1, 1)
				Expect(f.q.Ack(f.ctx, ld, jd, at(2*time.Second))).To(Succeed())
				f.expectCounts(3, 0, 1, 1)
				_, le := f.dequeueID(job.DefaultQueue, 3*time.Second, "c")
				f.expectCounts(2, 1, 1, 1)
				_, err := f.h.DLQ.DeadLetter(f.ctx, le, deadEntry(newJob("c"), at(4*time.Second)), at(4*time.Second))
				Expect(err).NotTo(HaveOccurred())
				f.expectCounts(2, 0, 1, 1)
				_, err = f.q.ForwardDue(f.ctx, at(time.Minute), 10)
				Expect(err).NotTo(HaveOccurred())
				f.expectCounts(3, 0, 0, 1)
				_, _, err = f.q.DrainBatch(f.ctx, at(time.Minute), 10)
				Expect(err).NotTo(HaveOccurred())
				f.expectCounts(4, 0, 0, 0)
				f.dequeue(job.DefaultQueue, time.Minute)
				f.expectCounts(3, 1, 0, 0)
				_, err = f.q.RecoverExpired(f.ctx, at(time.Hour), 10)
				Expect(err).NotTo(HaveOccurred())
				f.expectCounts(4, 0, 0, 0)
				_, err = f.h.DLQ.Requeue(f.ctx, "c", dlq.RequeueOptions{Budget: dlq.ResetAttempts}, at(time.Hour))
				Expect(err).NotTo(HaveOccurred())
				f.expectCounts(5, 0, 0, 0)
			})
		})

		exerciseTies(newHarness)
	})
}
