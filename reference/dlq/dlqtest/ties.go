package dlqtest

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/disposition"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/job"
	"github.com/faultline/faultline/reference/store"
)

// exerciseTies declares the specs of the order of entries whose last
// failures fall in the same millisecond: LastFailedAt counts by its Unix
// millisecond (a Redis score's resolution), and entries of one millisecond
// go by job ID, whatever their nanoseconds. Listing, the oldest entry,
// RequeueMatching, eviction and Purge all follow it, so that two backends
// list, requeue, evict and purge the same entries in the same order.
func exerciseTies(newHarness func(cfg store.Config) Harness) {
	Describe("last failures in the same millisecond", func() {
		var (
			cfg store.Config
			f   *fixture
		)
		BeforeEach(func() { cfg = store.Config{} })
		JustBeforeEach(func() { f = build(newHarness, cfg) })

		// in returns base plus us microseconds: base's millisecond for us
		// below 1000.
		in := func(base time.Duration, us int) time.Duration {
			return base + time.Duration(us)*time.Microsecond
		}
		// fill adds m, x, c and a, failing within T0+1m's millisecond in
		// neither ID nor time order (by time: m, a, x, c).
		fill := func() {
			GinkgoHelper()
			for _, e := range []struct {
				id string
				us int
			}{{"m", 100}, {"x", 500}, {"c", 900}, {"a", 300}} {
				d := in(time.Minute, e.us)
				f.add(deadEntry(newJob(e.id), at(d)), d)
			}
			f.take()
		}

		It("lists them by job ID, newest first, and names the lowest ID the oldest", func() {
			fill()
			f.add(deadEntry(newJob("b"), at(in(time.Minute, 1000))), in(time.Minute, 1000)) // the next millisecond
			Expect(f.listIDs(dlq.Filter{}, 10)).To(Equal([]string{"b", "x", "m", "c", "a"}))
			Expect(f.listIDs(dlq.Filter{}, 2)).To(Equal([]string{"b", "x", "m", "c", "a"}), "page by page")
			Expect(f.stats().OldestID).To(Equal("a"))
		})

		It("requeues them by job ID", func() {
			fill()
			r, err := f.d.RequeueMatching(f.ctx, dlq.Filter{}, oneMore, at(time.Hour), false)
			Expect(err).NotTo(HaveOccurred())
			Expect(r.Requeued).To(Equal(4))
			Expect(f.take()).To(Equal([]string{
				ev("a", dead, queued, disposition.Requeued, time.Hour, 0),
				ev("c", dead, queued, disposition.Requeued, time.Hour, 0),
				ev("m", dead, queued, disposition.Requeued, time.Hour, 0),
				ev("x", dead, queued, disposition.Requeued, time.Hour, 0),
			}))
			Expect(f.drainIDs(job.DefaultQueue, time.Hour)).To(Equal([]string{"a", "c", "m", "x"}))
		})

		It("purges only the entries of milliseconds before the cut-off's, by job ID", func() {
			fill()
			n, err := f.d.Purge(f.ctx, at(in(time.Minute, 950)), at(time.Hour))
			Expect(err).NotTo(HaveOccurred())
			Expect(n).To(BeZero(), "the cut-off's millisecond is the entries' own")
			n, err = f.d.Purge(f.ctx, at(in(time.Minute, 1000)), at(time.Hour))
			Expect(err).NotTo(HaveOccurred())
			Expect(n).To(Equal(4))
			Expect(f.take()).To(Equal([]string{
				ev("a", dead, none, ReasonPurged, time.Hour, 0),
				ev("c", dead, none, ReasonPurged, time.Hour, 0),
				ev("m", dead, none, ReasonPurged, time.Hour, 0),
				ev("x", dead, none, ReasonPurged, time.Hour, 0),
			}))
		})

		When("a full DLQ evicts the oldest", func() {
			BeforeEach(func() {
				cfg.DLQCapacity = 4
				cfg.Overflow = store.EvictOldest
			})

			It("evicts the lowest job ID of the oldest millisecond", func() {
				fill()
				r := f.add(deadEntry(newJob("z"), at(2*time.Minute)), 2*time.Minute)
				Expect(r.Evicted).To(Equal([]string{"a"}))
			})
		})
	})
}
