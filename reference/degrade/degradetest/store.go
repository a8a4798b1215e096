// Package degradetest holds the conformance specs of a degrade.BreakerStore,
// the store of the breakers a fleet shares: the in-memory
// degrade.MemoryBreakerStore and the Redis store both run
// ExerciseBreakerStore, so both keep the same semantics.
package degradetest

import (
	"context"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/degrade"
)

// ExerciseBreakerStore declares the degrade.BreakerStore conformance specs.
// newStore returns a fresh, empty store for each spec.
func ExerciseBreakerStore(newStore func() degrade.BreakerStore) {
	Describe("degrade.BreakerStore conformance", func() {
		ctx := context.Background()
		at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		var s degrade.BreakerStore
		BeforeEach(func() { s = newStore() })

		It("has no state for a breaker until one is swapped in, at generation 0", func() {
			st, err := s.LoadBreaker(ctx, "gateway")
			Expect(err).NotTo(HaveOccurred())
			Expect(st.Gen).To(BeZero())
		})

		It("swaps a state in at the generation it holds, and keeps every field to the millisecond", func() {
			open := degrade.SharedState{Gen: 1, State: degrade.Open, Until: at.Add(1500 * time.Millisecond), Level: 2}
			_, ok, err := s.SwapBreaker(ctx, "gateway", 0, open)
			Expect(err).NotTo(HaveOccurred())
			Expect(ok).To(BeTrue())
			probe := degrade.SharedState{Gen: 2, State: degrade.HalfOpen, Until: at.Add(11 * time.Second), Level: 2, Holder: "w3"}
			_, ok, err = s.SwapBreaker(ctx, "gateway", 1, probe)
			Expect(err).NotTo(HaveOccurred())
			Expect(ok).To(BeTrue())
			st, err := s.LoadBreaker(ctx, "gateway")
			Expect(err).NotTo(HaveOccurred())
			Expect(st.Gen).To(BeEquivalentTo(2))
			Expect(st.State).To(Equal(degrade.HalfOpen))
			Expect(st.Until).To(BeTemporally("==", at.Add(11*time.Second)))
			Expect(st.Level).To(Equal(2))
			Expect(st.Holder).To(Equal("w3"))
		})

		It("refuses a swap at a generation that moved on, and returns the newer state", func() {
			_, ok, err := s.SwapBreaker(ctx, "gateway", 0, degrade.SharedState{Gen: 1, State: degrade.Open, Until: at})
			Expect(err).NotTo(HaveOccurred())
			Expect(ok).To(BeTrue())
			cur, ok, err := s.SwapBreaker(ctx, "gateway", 0, degrade.SharedState{Gen: 1, State: degrade.Closed})
			Expect(err).NotTo(HaveOccurred())
			Expect(ok).To(BeFalse())
			Expect(cur.Gen).To(BeEquivalentTo(1))
			Expect(cur.State).To(Equal(degrade.Open))
			other, err := s.LoadBreaker(ctx, "smtp")
			Expect(err).NotTo(HaveOccurred())
			Expect(other.Gen).To(BeZero(), "breakers are kept apart")
		})

		It("sums a fleet's rolling window over the processes' buckets, and forgets the buckets before the oldest", func() {
			add := func(width time.Duration, oldest int64, bs ...degrade.WindowBucket) []int64 {
				GinkgoHelper()
				sums, err := s.AddWindow(ctx, "gateway", degrade.WindowAdd{Width: width, Oldest: oldest, Buckets: bs})
				Expect(err).NotTo(HaveOccurred())
				return []int64{sums.Calls, sums.Failures}
			}
			w := time.Second
			Expect(add(w, 100, degrade.WindowBucket{Index: 100, Calls: 3, Failures: 1}, degrade.WindowBucket{Index: 101, Calls: 2, Failures: 2})).To(Equal([]int64{5, 3}))
			Expect(add(w, 100, degrade.WindowBucket{Index: 101, Calls: 4}, degrade.WindowBucket{Index: 99, Calls: 50, Failures: 50})).
				To(Equal([]int64{9, 3}), "a bucket older than the window is not added")
			Expect(add(w, 101)).To(Equal([]int64{6, 2}), "bucket 100 left the window")
			Expect(add(2*w, 0)).To(Equal([]int64{0, 0}), "another width is another window")
		})

		It("keeps the fleet's run of consecutive failures: the failures after the latest success any process saw", func() {
			t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
			ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
			run := func(process string, success time.Time, failures ...time.Time) int64 {
				GinkgoHelper()
				sums, err := s.AddWindow(ctx, "gateway", degrade.WindowAdd{Width: time.Second, Failures: failures, LastSuccess: success})
				Expect(err).NotTo(HaveOccurred(), process)
				return sums.Run
			}
			Expect(run("w1", ms(10), ms(20), ms(30))).To(BeEquivalentTo(2))
			Expect(run("w2", ms(5), ms(25))).To(BeEquivalentTo(3), "w2's success came before every failure: the run goes on")
			Expect(run("w3", ms(26))).To(BeEquivalentTo(1), "w3's success at 26ms ends the run before it: 30ms is after")
			Expect(run("w1", time.Time{}, ms(40), ms(41))).To(BeEquivalentTo(3))
			Expect(run("w2", time.Time{}, ms(41))).To(BeEquivalentTo(4), "the same millisecond in two processes: two failures")
			_, ok, err := s.SwapBreaker(ctx, "gateway", 0, degrade.SharedState{Gen: 1, State: degrade.Open})
			Expect(err).NotTo(HaveOccurred())
			Expect(ok).To(BeTrue())
			Expect(run("w1", time.Time{})).To(BeZero(), "a swap restarts the run")
		})

		It("lets exactly one of a fleet's processes win a swap at one generation", func() {
			var wg sync.WaitGroup
			var mu sync.Mutex
			won := 0
			for k := range 8 {
				wg.Go(func() {
					defer GinkgoRecover()
					_, ok, err := s.SwapBreaker(ctx, "gateway", 0, degrade.SharedState{Gen: 1, State: degrade.HalfOpen, Until: at, Holder: string(rune('a' + k))})
					Expect(err).NotTo(HaveOccurred())
					if ok {
						mu.Lock()
						won++
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			Expect(won).To(Equal(1))
		})
	})
}
