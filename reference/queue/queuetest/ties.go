package queuetest

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/disposition"
	"github.com/faultline/faultline/reference/job"
	"github.com/faultline/faultline/reference/store"
)

// exerciseTies declares the specs of the rule queue.Queue.ForwardDue states
// for every time-ordered move: times count by their Unix millisecond, and
// jobs of the same millisecond go in job ID order, whatever order they
// arrived in. Two backends that broke ties differently (scheduling order in
// one, ID order in another) gave one scenario different outcomes.
func exerciseTies(newHarness func(cfg store.Config) Harness) {
	Describe("times in the same millisecond", func() {
		var f *fixture
		JustBeforeEach(func() { f = build(newHarness, store.Config{}) })

		// in returns T0+base plus us microseconds: base's millisecond for
		// us below 1000.
		in := func(base time.Duration, us int) time.Duration {
			return base + time.Duration(us)*time.Microsecond
		}

		It("forwards retries due in the same millisecond in job ID order, whatever order they were scheduled in, all due once that millisecond is", func() {
			dues := []struct {
				id  string
				due time.Duration
			}{
				{"m", in(time.Minute, 100)},
				{"x", in(time.Minute, 500)},
				{"c", in(time.Minute, 900)},
				{"a", in(time.Minute, 300)},
				{"b", in(time.Minute, 1000)},                 // the next millisecond
				{"z", in(time.Minute-time.Millisecond, 500)}, // the millisecond before
			}
			for _, d := range dues {
				f.enqueue(newJob(d.id), 0)
				j, l := f.dequeueID(job.DefaultQueue, 0, d.id)
				j.Attempts = 1
				Expect(f.q.Retry(f.ctx, l, j, at(d.due), at(time.Second))).To(Succeed())
			}
			f.expectCounts(0, 0, 6, 0)
			f.take()

			// At T0+1m exactly, every retry due within its millisecond is
			// due: the earliest millisecond first, then by ID, at most
			// limit.
			n, err := f.q.ForwardDue(f.ctx, at(time.Minute), 3)
			Expect(err).NotTo(HaveOccurred())
			Expect(n).To(Equal(3))
			Expect(f.take()).To(Equal([]string{
				ev("z", sched, queued, disposition.Due, time.Minute, 1),
				ev("a", sched, queued, disposition.Due, time.Minute, 1),
				ev("c", sched, queued, disposition.Due, time.Minute, 1),
			}))
			n, err = f.q.ForwardDue(f.ctx, at(time.Minute), 10)
			Expect(err).NotTo(HaveOccurred())
			Expect(n).To(Equal(2), "b is due in the next millisecond")
			Expect(f.take()).To(Equal([]string{
				ev("m", sched, queued, disposition.Due, time.Minute, 1),
				ev("x", sched, queued, disposition.Due, time.Minute, 1),
			}))
			f.expectCounts(5, 0, 1, 0)
			Expect(f.drainIDs(job.DefaultQueue, 2*time.Minute)).To(Equal([]string{"z", "a", "c", "m", "x"}))
		})

		It("recovers leases that expire in the same millisecond in job ID order, whatever order they were taken in", func() {
			for _, id := range []string{"m", "x", "c", "a", "b", "w"} {
				f.enqueue(newJob(id), 0)
			}
			f.dequeueID(job.DefaultQueue, in(0, 100), "m") // expires at T0+TTL+100µs
			f.dequeueID(job.DefaultQueue, in(0, 500), "x")
			f.dequeueID(job.DefaultQueue, in(0, 900), "c")
			f.dequeueID(job.DefaultQueue, in(0, 300), "a")
			f.dequeueID(job.DefaultQueue, in(0, 1000), "b") // the next millisecond
			f.take()

			n, err := f.q.RecoverExpired(f.ctx, at(TTL), 10)
			Expect(err).NotTo(HaveOccurred())
			Expect(n).To(Equal(4), "b's lease expires in the next millisecond")
			Expect(f.take()).To(Equal([]string{
				ev("a", inFlight, queued, disposition.LeaseExpired, TTL, 0),
				ev("c", inFlight, queued, disposition.LeaseExpired, TTL, 0),
				ev("m", inFlight, queued, disposition.LeaseExpired, TTL, 0),
				ev("x", inFlight, queued, disposition.LeaseExpired, TTL, 0),
			}))
			f.expectCounts(5, 1, 0, 0)
			Expect(f.drainIDs(job.DefaultQueue, 2*time.Minute)).To(Equal([]string{"a", "c", "m", "x", "w"}))
		})
	})
}
