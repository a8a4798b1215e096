package dlqtest

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/queue"
	"github.com/faultline/faultline/reference/store"
)

// exerciseStatusChanges declares the specs of Delete, Restore and Quarantine.
func exerciseStatusChanges(newHarness func(cfg store.Config) Harness) {
	Describe("Delete, Restore and Quarantine", func() {
		var (
			cfg store.Config
			f   *fixture
		)
		BeforeEach(func() { cfg = store.Config{} })
		JustBeforeEach(func() { f = build(newHarness, cfg) })

		JustBeforeEach(func() {
			f.kill(newJob("j1"), time.Second, deadEntry(newJob("j1"), at(time.Second)))
			f.take()
		})

		It("soft-deletes an entry and restores it to Failed", func() {
			Expect(f.d.Delete(f.ctx, "j1", "alice", at(time.Minute))).To(Succeed())
			e := f.get("j1")
			Expect(e.Status).To(Equal(dlq.Deleted))
			Expect(e.Changes[len(e.Changes)-1].By).To(Equal("alice"))
			Expect(f.d.Delete(f.ctx, "j1", "alice", at(2*time.Minute))).To(MatchError(dlq.ErrWrongStatus))
			Expect(f.d.Restore(f.ctx, "j1", "bob", at(3*time.Minute))).To(Succeed())
			e = f.get("j1")
			Expect(e.Status).To(Equal(dlq.Failed))
			Expect(changes(e)).To(Equal([]string{
				change(0, dlq.Failed, time.Second),
				change(dlq.Failed, dlq.Deleted, time.Minute),
				change(dlq.Deleted, dlq.Failed, 3*time.Minute),
			}))
			Expect(e.Changes[2].By).To(Equal("bob"))
			Expect(f.d.Restore(f.ctx, "j1", "bob", at(4*time.Minute))).To(MatchError(dlq.ErrWrongStatus))
			Expect(f.take()).To(BeEmpty(), "no job moved")
		})

		It("restores a deleted quarantined entry to Quarantined", func() {
			Expect(f.d.Quarantine(f.ctx, "j1", "poison", at(time.Minute))).To(Succeed())
			Expect(f.d.Delete(f.ctx, "j1", "alice", at(2*time.Minute))).To(Succeed())
			Expect(f.d.Restore(f.ctx, "j1", "alice", at(3*time.Minute))).To(Succeed())
			Expect(f.get("j1").Status).To(Equal(dlq.Quarantined))
		})

		It("quarantines a Failed entry with its reason", func() {
			Expect(f.d.Quarantine(f.ctx, "j1", "failed 3 auto-retries", at(time.Minute))).To(Succeed())
			e := f.get("j1")
			Expect(e.Status).To(Equal(dlq.Quarantined))
			Expect(e.Changes[len(e.Changes)-1].Reason).To(Equal("failed 3 auto-retries"))
			Expect(changes(e)[1]).To(Equal(change(dlq.Failed, dlq.Quarantined, time.Minute)))
			Expect(f.d.Quarantine(f.ctx, "j1", "again", at(2*time.Minute))).To(MatchError(dlq.ErrWrongStatus))
			st := f.stats()
			expectMap(st.ByStatus, map[string]int{"quarantined": 1}, "ByStatus")
			Expect(st.Oldest.IsZero()).To(BeTrue(), "Oldest looks at Failed entries only")
			Expect(f.take()).To(BeEmpty())
		})

		It("refuses every status change of a requeued entry with ErrWrongStatus", func() {
			Expect(f.requeue("j1", oneMore, time.Minute)).To(Equal(dlq.OutcomeRequeued))
			Expect(f.d.Delete(f.ctx, "j1", "ops", at(2*time.Minute))).To(MatchError(dlq.ErrWrongStatus))
			Expect(f.d.Restore(f.ctx, "j1", "ops", at(2*time.Minute))).To(MatchError(dlq.ErrWrongStatus))
			Expect(f.d.Quarantine(f.ctx, "j1", "x", at(2*time.Minute))).To(MatchError(dlq.ErrWrongStatus))
			Expect(f.get("j1").Status).To(Equal(dlq.Requeued))
		})

		It("reports an unknown ID with ErrNotFound", func() {
			Expect(f.d.Delete(f.ctx, "nobody", "ops", T0)).To(MatchError(dlq.ErrNotFound))
			Expect(f.d.Restore(f.ctx, "nobody", "ops", T0)).To(MatchError(dlq.ErrNotFound))
			Expect(f.d.Quarantine(f.ctx, "nobody", "x", T0)).To(MatchError(dlq.ErrNotFound))
		})
	})
}

// exercisePurge declares the specs of Purge.
func exercisePurge(newHarness func(cfg store.Config) Harness) {
	Describe("Purge", func() {
		var (
			cfg store.Config
			f   *fixture
		)
		BeforeEach(func() { cfg = store.Config{} })
		JustBeforeEach(func() { f = build(newHarness, cfg) })

		JustBeforeEach(func() {
			for i, id := range []string{"a", "b", "c", "d", "e", "f"} {
				d := time.Duration(i+1) * time.Minute
				f.add(deadEntry(newJob(id), at(d)), d)
			}
			Expect(f.requeue("d", oneMore, 10*time.Minute)).To(Equal(dlq.OutcomeRequeued))
			Expect(f.d.Delete(f.ctx, "e", "ops", at(10*time.Minute))).To(Succeed())
			Expect(f.d.Quarantine(f.ctx, "f", "poison", at(10*time.Minute))).To(Succeed())
			f.take()
		})

		It("removes the entries of every status that last failed before the age, and reports the dead jobs leaving", func() {
			n, err := f.d.Purge(f.ctx, at(3*time.Minute), at(time.Hour))
			Expect(err).NotTo(HaveOccurred())
			Expect(n).To(Equal(2), "a and b; c failed at the bound, not before it")
			f.expectGone("a")
			f.expectGone("b")
			f.get("c")

			n, err = f.d.Purge(f.ctx, at(5*time.Minute), at(2*time.Hour))
			Expect(err).NotTo(HaveOccurred())
			Expect(n).To(Equal(2), "c, and d (requeued)")
			n, err = f.d.Purge(f.ctx, at(time.Hour), at(3*time.Hour))
			Expect(err).NotTo(HaveOccurred())
			Expect(n).To(Equal(2), "e (deleted) and f (quarantined)")
			Expect(f.stats().Total).To(BeZero())
			Expect(f.take()).To(Equal([]string{
				ev("a", dead, none, ReasonPurged, time.Hour, 0),
				ev("b", dead, none, ReasonPurged, time.Hour, 0),
				ev("c", dead, none, ReasonPurged, 2*time.Hour, 0),
				ev("e", dead, none, ReasonPurged, 3*time.Hour, 0),
				ev("f", dead, none, ReasonPurged, 3*time.Hour, 0),
			}))
			Expect(f.counts()).To(Equal(queue.Counts{Queued: 1}), "the requeued job is untouched")
		})

		It("purges nothing when nothing is that old", func() {
			n, err := f.d.Purge(f.ctx, at(time.Minute), at(time.Hour))
			Expect(err).NotTo(HaveOccurred())
			Expect(n).To(BeZero())
			Expect(f.stats().Total).To(Equal(6))
		})

		When("BatchSize is 4", func() {
			BeforeEach(func() { cfg.BatchSize = 4 })

			It("purges more entries than a batch", func() {
				for i := range 20 {
					f.add(deadEntry(newJob(fmt.Sprintf("x%02d", i)), T0), 0)
				}
				n, err := f.d.Purge(f.ctx, at(time.Hour), at(time.Hour))
				Expect(err).NotTo(HaveOccurred())
				Expect(n).To(Equal(26))
				Expect(f.stats().Total).To(BeZero())
			})
		})
	})
}
