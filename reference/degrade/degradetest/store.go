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
