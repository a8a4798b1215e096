// Package retrytest holds the conformance specs of a retry.Booker, the
// store of a fleet-scoped retry budget: a store that keeps one for a fleet
// runs ExerciseBooker in its suite (the in-memory retry.MemoryBudget and
// the Redis store both do), so both keep the same semantics.
package retrytest

import (
	"context"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"pgregory.net/rapid"

	"github.com/faultline/faultline/reference/retry"
)

// ExerciseBooker declares the retry.Booker conformance specs. newBooker
// returns a fresh, empty budget store for each spec (and for each case of
// the property).
func ExerciseBooker(newBooker func() retry.Booker) {
	Describe("retry.Booker conformance", func() {
		ctx := context.Background()
		key := retry.BudgetKey{Dependency: "gateway", Width: time.Second}
		var b retry.Booker
		BeforeEach(func() { b = newBooker() })
		book := func(floor, first, last int64, burst int) (int64, bool) {
			GinkgoHelper()
			k, ok, err := b.Book(ctx, key, floor, first, last, burst)
			Expect(err).NotTo(HaveOccurred())
			return k, ok
		}
		slot := func(floor, first, last int64, burst int) int64 {
			GinkgoHelper()
			k, ok := book(floor, first, last, burst)
			Expect(ok).To(BeTrue(), "a booking in [%d, %d]", first, last)
			return k
		}

		It("books burst retries in a slot, then the first later slot with room", func() {
			for range 3 {
				Expect(slot(100, 100, 110, 3)).To(BeEquivalentTo(100))
			}
			Expect(slot(100, 100, 110, 3)).To(BeEquivalentTo(101))
			Expect(slot(100, 102, 110, 3)).To(BeEquivalentTo(102), "a retry due later takes its own slot, not the first one with room")
		})

		It("books nothing and says so when every slot in the range is full", func() {
			for range 4 {
				_, ok := book(10, 10, 11, 2)
				Expect(ok).To(BeTrue())
			}
			_, ok := book(10, 10, 11, 2)
			Expect(ok).To(BeFalse(), "two slots of two hold four")
			Expect(slot(10, 10, 12, 2)).To(BeEquivalentTo(12), "the refused booking took no room")
		})

		It("skips a run of full slots and finds the room before and after it", func() {
			for _, k := range []int64{5, 5, 3, 3, 4, 4} {
				Expect(slot(0, k, k, 2)).To(BeEquivalentTo(k))
			}
			Expect(slot(0, 3, 20, 2)).To(BeEquivalentTo(6))
			Expect(slot(0, 0, 20, 2)).To(BeEquivalentTo(0))
			Expect(slot(0, 4, 20, 2)).To(BeEquivalentTo(6))
			Expect(slot(0, 4, 20, 2)).To(BeEquivalentTo(7))
		})

		It("keeps dependencies and slot widths apart", func() {
			Expect(slot(0, 1, 1, 1)).To(BeEquivalentTo(1))
			for _, other := range []retry.BudgetKey{{Dependency: "ledger", Width: time.Second}, {Dependency: "gateway", Width: 2 * time.Second}} {
				k, ok, err := b.Book(ctx, other, 0, 1, 1, 1)
				Expect(err).NotTo(HaveOccurred())
				Expect(ok).To(BeTrue(), "%v has its own budget", other)
				Expect(k).To(BeEquivalentTo(1))
			}
		})

		It("never books a slot past burst when a fleet books at once", func() {
			const procs, each, burst = 8, 40, 10
			var mu sync.Mutex
			per := map[int64]int{}
			var wg sync.WaitGroup
			for range procs {
				wg.Go(func() {
					defer GinkgoRecover()
					for range each {
						k, ok, err := b.Book(ctx, key, 1000, 1000, 1000+procs*each, burst)
						Expect(err).NotTo(HaveOccurred())
						Expect(ok).To(BeTrue())
						mu.Lock()
						per[k]++
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			Expect(per).To(HaveLen(procs * each / burst))
			for k, n := range per {
				Expect(n).To(Equal(burst), "slot %d", k)
				Expect(k).To(BeNumerically("<", 1000+procs*each/burst), "the slots fill in order")
			}
		})

		It("agrees with a model of slots and counts over random bookings", func() {
			rapid.Check(GinkgoT(), func(t *rapid.T) {
				b := newBooker()
				burst := rapid.IntRange(1, 4).Draw(t, "burst")
				model := map[int64]int{}
				floor := int64(rapid.IntRange(0, 1_000_000).Draw(t, "start"))
				for i := range rapid.IntRange(1, 60).Draw(t, "n") {
					floor += int64(rapid.IntRange(0, 3).Draw(t, "advance"))
					first := floor + int64(rapid.IntRange(0, 6).Draw(t, "first"))
					last := first + int64(rapid.IntRange(0, 6).Draw(t, "span"))
					k, ok, err := b.Book(ctx, key, floor, first, last, burst)
					if err != nil {
						t.Fatalf("booking %d: %v", i, err)
					}
					want, wantOK := int64(0), false
					for s := first; s <= last; s++ {
						if model[s] < burst {
							want, wantOK = s, true
							break
						}
					}
					if ok != wantOK || ok && k != want {
						t.Fatalf("booking %d in [%d, %d] (floor %d, burst %d): got slot %d ok=%v, the model says %d ok=%v", i, first, last, floor, burst, k, ok, want, wantOK)
					}
					if ok {
						model[k]++
					}
				}
			})
		})
	})
}
