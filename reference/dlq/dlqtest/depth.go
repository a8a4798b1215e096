package dlqtest

import (
	"context"
	"fmt"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/dlq"
)

// DepthHarness is one backend's depth stream for ExerciseDepthRecorder.
type DepthHarness struct {
	// Recorder is the stream under test, empty.
	Recorder dlq.DepthRecorder
	// Slack is how many samples beyond its cap the stream may keep: 0 for
	// a store that trims exactly, about a stream node (100 by default) for
	// Redis's approximate XADD MAXLEN ~.
	Slack int
}

// ExerciseDepthRecorder declares the conformance specs of
// dlq.DepthRecorder. newHarness builds an empty stream capped at limit
// samples. The specs pin down: DepthSamples gives the samples back whole
// (At to the millisecond, in UTC), oldest first; since is inclusive and
// limit keeps the newest; a sample whose At is before the newest one's is
// kept at the newest one's time, so the stream stays in time order; a
// full stream drops its oldest samples first, keeping between limit and
// limit+Slack of the newest; concurrent records are all kept. A limit
// below 1 is dlq.ErrDepthLimit.
func ExerciseDepthRecorder(newHarness func(limit int) DepthHarness) {
	Describe("dlq.DepthRecorder conformance", func() {
		var (
			ctx   = context.Background()
			limit int
			h     DepthHarness
			r     dlq.DepthRecorder
		)
		BeforeEach(func() { limit = 10_000 })
		JustBeforeEach(func() {
			h = newHarness(limit)
			r = h.Recorder
			Expect(r).NotTo(BeNil(), "the harness has no Recorder")
			got, err := r.DepthSamples(ctx, time.Time{}, 10)
			Expect(err).NotTo(HaveOccurred())
			Expect(got).To(BeEmpty(), "the factory must build an empty stream")
		})

		// sample is the n-th sample of a run, taken n minutes after T0.
		sample := func(n int) dlq.DepthSample {
			return dlq.DepthSample{
				At: at(time.Duration(n) * time.Minute), Waiting: n,
				BySeverity: map[string]int{"high": n % 3, "medium": n},
				Oldest:     at(-time.Hour).Add(time.Duration(n) * time.Second),
			}
		}
		recordAll := func(from, to int) {
			GinkgoHelper()
			for n := from; n <= to; n++ {
				Expect(r.RecordDepth(ctx, sample(n))).To(Succeed())
			}
		}
		waiting := func(ds []dlq.DepthSample) []int {
			out := make([]int, len(ds))
			for i, d := range ds {
				out[i] = d.Waiting
			}
			return out
		}
		seq := func(from, to int) []int {
			var out []int
			for n := from; n <= to; n++ {
				out = append(out, n)
			}
			return out
		}

		It("records samples and reads them back whole, oldest first", func() {
			recordAll(1, 3)
			got, err := r.DepthSamples(ctx, time.Time{}, 10)
			Expect(err).NotTo(HaveOccurred())
			Expect(got).To(HaveLen(3))
			for i, d := range got {
				want := sample(i + 1)
				Expect(d.At).To(BeTemporally("==", want.At))
				Expect(d.At.Location()).To(Equal(time.UTC))
				Expect(d.Oldest).To(BeTemporally("==", want.Oldest))
				Expect(d.Waiting).To(Equal(want.Waiting))
				Expect(d.BySeverity).To(Equal(want.BySeverity))
			}
		})

		It("keeps At to the millisecond, and an empty sample as it is", func() {
			Expect(r.RecordDepth(ctx, dlq.DepthSample{At: at(1500 * time.Microsecond)})).To(Succeed())
			got, err := r.DepthSamples(ctx, time.Time{}, 10)
			Expect(err).NotTo(HaveOccurred())
			Expect(got).To(HaveLen(1))
			Expect(got[0].At).To(BeTemporally("==", at(time.Millisecond)))
			Expect(got[0].Waiting).To(BeZero())
			Expect(got[0].BySeverity).To(BeEmpty())
			Expect(got[0].Oldest.IsZero()).To(BeTrue())
		})

		It("selects the samples at or after since, the newest limit of them", func() {
			recordAll(1, 10)
			got, err := r.DepthSamples(ctx, at(4*time.Minute), 100)
			Expect(err).NotTo(HaveOccurred())
			Expect(waiting(got)).To(Equal(seq(4, 10)), "since is inclusive")
			got, err = r.DepthSamples(ctx, at(4*time.Minute+time.Nanosecond), 100)
			Expect(err).NotTo(HaveOccurred())
			Expect(waiting(got)).To(Equal(seq(5, 10)))
			got, err = r.DepthSamples(ctx, at(4*time.Minute), 3)
			Expect(err).NotTo(HaveOccurred())
			Expect(waiting(got)).To(Equal(seq(8, 10)), "the newest 3, oldest first")
			got, err = r.DepthSamples(ctx, at(time.Hour), 3)
			Expect(err).NotTo(HaveOccurred())
			Expect(got).To(BeEmpty())
		})

		It("keeps a sample from a clock behind at the newest sample's time, in order", func() {
			recordAll(1, 3)
			late := sample(4)
			late.At = at(time.Minute) // a monitor whose clock is behind
			Expect(r.RecordDepth(ctx, late)).To(Succeed())
			got, err := r.DepthSamples(ctx, time.Time{}, 10)
			Expect(err).NotTo(HaveOccurred())
			Expect(waiting(got)).To(Equal(seq(1, 4)))
			Expect(got[3].At).To(BeTemporally("==", at(3*time.Minute)))
			got, err = r.DepthSamples(ctx, at(3*time.Minute), 10)
			Expect(err).NotTo(HaveOccurred())
			Expect(waiting(got)).To(Equal(seq(3, 4)))
		})

		It("refuses a limit below 1", func() {
			_, err := r.DepthSamples(ctx, time.Time{}, 0)
			Expect(err).To(MatchError(dlq.ErrDepthLimit))
		})

		When("the stream is full", func() {
			BeforeEach(func() { limit = 10 })

			It("drops the oldest samples first, keeping the newest", func() {
				n := limit + h.Slack + 50
				recordAll(1, n)
				got, err := r.DepthSamples(ctx, time.Time{}, 10*n)
				Expect(err).NotTo(HaveOccurred())
				Expect(len(got)).To(BeNumerically(">=", limit))
				Expect(len(got)).To(BeNumerically("<=", limit+h.Slack))
				Expect(waiting(got)).To(Equal(seq(n-len(got)+1, n)), "the newest samples, none missing between them")
			})
		})

		It("keeps every one of concurrent records", func() {
			const writers, each = 8, 25
			var wg sync.WaitGroup
			for w := range writers {
				wg.Add(1)
				go func() {
					defer GinkgoRecover()
					defer wg.Done()
					for i := range each {
						s := sample(i)
						s.Waiting = w*1000 + i
						Expect(r.RecordDepth(ctx, s)).To(Succeed(), fmt.Sprintf("writer %d", w))
					}
				}()
			}
			wg.Wait()
			got, err := r.DepthSamples(ctx, time.Time{}, 10_000)
			Expect(err).NotTo(HaveOccurred())
			Expect(got).To(HaveLen(writers * each))
			seen := map[int]bool{}
			for i, d := range got {
				seen[d.Waiting] = true
				if i > 0 {
					Expect(d.At).NotTo(BeTemporally("<", got[i-1].At), "samples in time order")
				}
			}
			Expect(seen).To(HaveLen(writers * each))
		})
	})
}
