package redisstore_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/redis/go-redis/v9"

	"github.com/faultline/faultline/reference/disposition"
	"github.com/faultline/faultline/reference/job"
	"github.com/faultline/faultline/reference/queue"
	"github.com/faultline/faultline/reference/store"
	"github.com/faultline/faultline/reference/store/redisstore"
)

// AckDequeue is Ack then Dequeue in one script: the same moves, the same
// events, the same fencing, one round trip.
var _ = Describe("redisstore, AckDequeue (an ack and the next lease in one step)", func() {
	for _, ln := range lanes {
		Describe(ln.name, func() {
			var (
				ctx context.Context
				c   *redis.Client
				ev  *events
				s   *redisstore.Store
			)
			at := func(d time.Duration) time.Time { return t0.Add(d) }
			BeforeEach(func() {
				ctx = context.Background()
				c = ln.connect()
				ev = &events{}
				s = newStore(c, store.Config{Observer: ev.hear, EventStream: streamLen})
			})
			lease := func(q string) (job.Job, queue.Lease) {
				GinkgoHelper()
				j, l, ok, err := s.Dequeue(ctx, q, at(time.Second), time.Minute)
				Expect(err).NotTo(HaveOccurred())
				Expect(ok).To(BeTrue())
				return j, l
			}
			succeeded := func(j job.Job) job.Job {
				j.Attempts++
				return j
			}

			It("acks the job and leases the head of the first queue that has one, its moves and events as Ack's and Dequeue's", func() {
				for _, j := range []job.Job{{ID: "a", Task: "charge", Queue: "x"}, {ID: "b", Task: "charge", Queue: "x"}, {ID: "c", Task: "mail", Queue: "y"}} {
					Expect(s.Enqueue(ctx, j, t0)).To(Succeed())
				}
				j, l := lease("x")
				ack, next, nl, i, ok, err := s.AckDequeue(ctx, l, succeeded(j), []string{"empty", "x", "y"}, at(2*time.Second), time.Minute)
				Expect(err).NotTo(HaveOccurred())
				Expect(ack).NotTo(HaveOccurred())
				Expect(ok).To(BeTrue())
				Expect(i).To(Equal(1))
				Expect(next.ID).To(Equal("b"))
				Expect(nl).To(Equal(queue.Lease{JobID: "b", Queue: "x", Token: l.Token + 1, Expires: at(2 * time.Second).Add(time.Minute)}))

				// the next queue once the first are empty
				ack, next, nl2, i, ok, err := s.AckDequeue(ctx, nl, succeeded(next), []string{"x", "y"}, at(3*time.Second), time.Minute)
				Expect(err).NotTo(HaveOccurred())
				Expect(ack).NotTo(HaveOccurred())
				Expect(ok).To(BeTrue())
				Expect([]any{i, next.ID, next.Task, nl2.Queue}).To(Equal([]any{1, "c", "mail", "y"}))

				// nothing left: the ack alone
				ack, _, _, _, ok, err = s.AckDequeue(ctx, nl2, succeeded(next), []string{"x", "y"}, at(4*time.Second), time.Minute)
				Expect(err).NotTo(HaveOccurred())
				Expect(ack).NotTo(HaveOccurred())
				Expect(ok).To(BeFalse())
				cn, err := s.Counts(ctx)
				Expect(err).NotTo(HaveOccurred())
				Expect(cn).To(Equal(queue.Counts{}))

				Expect(ev.count(disposition.Acked)).To(Equal(3))
				Expect(ev.count(disposition.Leased)).To(Equal(3))
				Expect(readAll(s)).To(Equal(ev.heard()), "the stream carries the moves in the order the observer heard them")
				var order []disposition.Reason
				for _, e := range ev.heard()[3:] {
					order = append(order, e.Reason)
				}
				Expect(order).To(Equal([]disposition.Reason{disposition.Leased, disposition.Acked, disposition.Leased,
					disposition.Acked, disposition.Leased, disposition.Acked}))
			})

			It("fences off an ack from a lost lease, writing nothing for it, and leases all the same", func() {
				Expect(s.Enqueue(ctx, job.Job{ID: "a", Task: "charge"}, t0)).To(Succeed())
				j, old := lease(job.DefaultQueue)
				n, err := s.RecoverExpired(ctx, at(2*time.Minute), 10)
				Expect(err).NotTo(HaveOccurred())
				Expect(n).To(Equal(1))

				ack, next, nl, _, ok, err := s.AckDequeue(ctx, old, succeeded(j), []string{job.DefaultQueue}, at(3*time.Minute), time.Minute)
				Expect(err).NotTo(HaveOccurred())
				Expect(ack).To(MatchError(queue.ErrLeaseLost))
				Expect(ack).NotTo(MatchError(queue.ErrNotFound))
				Expect(ok).To(BeTrue())
				Expect(next.ID).To(Equal("a"), "the recovered job, leased again")
				Expect(nl.Token).To(BeNumerically(">", old.Token))
				Expect(ev.count(disposition.Acked)).To(Equal(0))

				// the job is gone once acked: a second ack says so
				ack, _, _, _, ok, err = s.AckDequeue(ctx, nl, succeeded(next), []string{job.DefaultQueue}, at(4*time.Minute), time.Minute)
				Expect(err).NotTo(HaveOccurred())
				Expect(ack).NotTo(HaveOccurred())
				Expect(ok).To(BeFalse())
				ack, _, _, _, _, err = s.AckDequeue(ctx, nl, succeeded(next), []string{job.DefaultQueue}, at(5*time.Minute), time.Minute)
				Expect(err).NotTo(HaveOccurred())
				Expect(ack).To(MatchError(queue.ErrLeaseLost))
				Expect(ack).To(MatchError(queue.ErrNotFound))
				Expect(ev.count(disposition.Acked)).To(Equal(1))
				Expect(readAll(s)).To(Equal(ev.heard()))
			})

			It("applies the whole step when its reply is lost: the ack once, the lease expires and its job comes back", func() {
				h := &liar{}
				c.AddHook(h)
				Expect(s.Load(ctx)).To(Succeed()) // EVALSHA finds every script: one call per move
				for _, id := range []string{"a", "b"} {
					Expect(s.Enqueue(ctx, job.Job{ID: id, Task: "charge"}, t0)).To(Succeed())
				}
				j, l := lease(job.DefaultQueue)
				h.armed = true
				ack, _, _, _, ok, err := s.AckDequeue(ctx, l, succeeded(j), []string{job.DefaultQueue}, at(2*time.Second), time.Minute)
				Expect(err).To(MatchError(errLost))
				Expect(ack).To(MatchError(errLost))
				Expect(ok).To(BeFalse())

				// the caller's retry of the ack gets the guarded answer
				Expect(s.Ack(ctx, l, succeeded(j), at(3*time.Second))).To(MatchError(queue.ErrLeaseLost))
				cn, err := s.Counts(ctx)
				Expect(err).NotTo(HaveOccurred())
				Expect(cn).To(Equal(queue.Counts{InFlight: 1}), "b is leased, its reply lost")
				n, err := s.RecoverExpired(ctx, at(2*time.Minute), 10)
				Expect(err).NotTo(HaveOccurred())
				Expect(n).To(Equal(1))
				next, _ := lease(job.DefaultQueue)
				Expect(next.ID).To(Equal("b"))

				var reasons []disposition.Reason
				for _, e := range readAll(s) {
					reasons = append(reasons, e.Reason)
				}
				Expect(reasons).To(Equal([]disposition.Reason{disposition.Enqueued, disposition.Enqueued, disposition.Leased,
					disposition.Acked, disposition.Leased, disposition.LeaseExpired, disposition.Leased}),
					"each move in the stream once, though the caller never heard of two of them")
			})

			It("refuses an invalid job or another job than the lease's, writing and leasing nothing", func() {
				for _, id := range []string{"a", "b"} {
					Expect(s.Enqueue(ctx, job.Job{ID: id, Task: "charge"}, t0)).To(Succeed())
				}
				j, l := lease(job.DefaultQueue)
				other := succeeded(j)
				other.ID = "b"
				for _, bad := range []job.Job{other, {ID: "a"}} {
					ack, _, _, _, ok, err := s.AckDequeue(ctx, l, bad, []string{job.DefaultQueue}, at(2*time.Second), time.Minute)
					Expect(err).NotTo(HaveOccurred())
					Expect(ack).To(MatchError(job.ErrInvalid))
					Expect(ok).To(BeFalse())
				}
				cn, err := s.Counts(ctx)
				Expect(err).NotTo(HaveOccurred())
				Expect(cn).To(Equal(queue.Counts{Queued: 1, InFlight: 1}))
				_, _, _, _, _, err = s.AckDequeue(ctx, l, succeeded(j), []string{job.DefaultQueue}, at(2*time.Second), 0)
				Expect(err).To(HaveOccurred(), "a lease ttl that is not positive")
			})
		})
	}
})
