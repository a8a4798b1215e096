package degrade_test

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/clock"
	"github.com/faultline/faultline/reference/degrade"
)

var _ = Describe("Breaker", func() {
	var (
		clk *clock.Virtual
		cfg degrade.BreakerConfig
		rec *recorder
	)

	BeforeEach(func() {
		clk = clock.NewVirtual(t0)
		cfg = degrade.BreakerConfig{Name: "gateway"}
		rec = &recorder{}
	})

	build := func() *degrade.Breaker {
		GinkgoHelper()
		b := newBreaker(cfg, clk)
		b.OnStateChange(rec.listen)
		return b
	}

	It("starts closed, with no timers", func() {
		b := build()
		Expect(b.State()).To(Equal(degrade.Closed))
		Expect(b.Name()).To(Equal("gateway"))
		Expect(b.OpenUntil()).To(BeZero())
		Expect(clk.Pending()).To(Equal(0))
	})

	Describe("tripping from closed", func() {
		It("trips on ConsecutiveFailures counted failures in a row", func() {
			b := build()
			fail(b, 4, netTimeout)
			Expect(b.State()).To(Equal(degrade.Closed))
			Expect(call(b, degrade.Success())).To(BeTrue()) // resets the run
			fail(b, 4, rateLimited)
			Expect(b.State()).To(Equal(degrade.Closed))
			fail(b, 1, gatewayTimeout)
			Expect(b.State()).To(Equal(degrade.Open))
			Expect(rec.got).To(HaveLen(1))
			Expect(rec.got[0]).To(Equal(degrade.Transition{
				Breaker: "gateway", From: degrade.Closed, To: degrade.Open, At: t0,
				Reason: degrade.ReasonConsecutiveFailures, OpenFor: 5 * time.Second, Level: 0,
			}))
			Expect(b.OpenUntil()).To(Equal(t0.Add(5 * time.Second)))
		})

		It("trips on the failure rate once the window holds MinThroughput calls", func() {
			cfg.ConsecutiveFailures = 1000
			b := build()
			// F S F S ... : 10 failures and 9 successes are 19 calls, under
			// MinThroughput 20, at 53%.
			for i := range 19 {
				o := degrade.Success()
				if i%2 == 0 {
					o = degrade.Failure(netTimeout)
				}
				Expect(call(b, o)).To(BeTrue())
			}
			Expect(b.State()).To(Equal(degrade.Closed))
			// The 20th call, a failure: 11/20 = 55% >= 50%.
			fail(b, 1, netTimeout)
			Expect(b.State()).To(Equal(degrade.Open))
			Expect(rec.got[0].Reason).To(Equal(degrade.ReasonFailureRate))
		})

		It("trips at exactly FailureRatePercent and not below it", func() {
			cfg.ConsecutiveFailures = 1000
			cfg.FailureRatePercent = 40
			b := build()
			// 13 successes then 7 failures: 7/20 = 35% < 40%.
			for range 13 {
				call(b, degrade.Success())
			}
			fail(b, 7, netTimeout)
			Expect(b.State()).To(Equal(degrade.Closed))
			// One more failure: 8/21 = 38%; and another: 9/22 = 40.9%.
			fail(b, 1, netTimeout)
			Expect(b.State()).To(Equal(degrade.Closed))
			fail(b, 1, netTimeout)
			Expect(b.State()).To(Equal(degrade.Open))
		})

		It("forgets calls that have left the rolling window", func() {
			cfg.ConsecutiveFailures = 1000
			b := build()
			// 15 calls at 60% failure, then a whole window later 15 more:
			// never 20 calls in the window at once.
			for round := range 2 {
				for i := range 15 {
					o := degrade.Success()
					if i%5 >= 2 {
						o = degrade.Failure(netTimeout)
					}
					call(b, o)
				}
				Expect(b.State()).To(Equal(degrade.Closed), "round %d", round)
				clk.Advance(10 * time.Second)
			}
			// Within one window, 20 calls at 60% trip it at the 20th.
			for i := range 20 {
				Expect(b.State()).To(Equal(degrade.Closed), "call %d", i)
				o := degrade.Success()
				if i%5 >= 2 {
					o = degrade.Failure(netTimeout)
				}
				call(b, o)
			}
			Expect(b.State()).To(Equal(degrade.Open))
		})

		It("starts each closed spell with an empty window", func() {
			cfg.ConsecutiveFailures = 1000
			cfg.RampUp = degrade.NoRampUp
			b := build()
			for i := range 20 {
				o := degrade.Success()
				if i%2 == 1 {
					o = degrade.Failure(netTimeout)
				}
				call(b, o)
			}
			Expect(b.State()).To(Equal(degrade.Open))
			untilHalfOpen(b, clk) // 5s: the trip's bucket is still inside the 10s window
			probeSucceed(b, 3)
			fail(b, 1, netTimeout)
			Expect(b.State()).To(Equal(degrade.Closed))
		})

		It("never trips on declined cards, however many", func() {
			b := build()
			fail(b, 10_000, declined)
			Expect(b.State()).To(Equal(degrade.Closed))
			s := b.Stats()
			Expect(s.IgnoredFailures).To(Equal(uint64(10_000)))
			Expect(s.CountedFailures).To(BeZero())
			Expect(rec.got).To(BeEmpty())
		})

		It("treats declined cards as neutral: they do not reset a run of counted failures", func() {
			b := build()
			fail(b, 4, netTimeout)
			fail(b, 100, declined)
			Expect(b.State()).To(Equal(degrade.Closed))
			fail(b, 1, netTimeout)
			Expect(b.State()).To(Equal(degrade.Open))
		})

		It("treats a cancellation as neutral", func() {
			b := build()
			fail(b, 4, netTimeout)
			for range 10 {
				call(b, degrade.Canceled())
				call(b, degrade.Failure(shutdown))
				call(b, degrade.Failure(classify.Classification{}))
			}
			Expect(b.State()).To(Equal(degrade.Closed))
			Expect(b.Stats().Canceled).To(Equal(uint64(20)))
			Expect(b.Stats().IgnoredFailures).To(Equal(uint64(10)))
			fail(b, 1, netTimeout)
			Expect(b.State()).To(Equal(degrade.Open))
		})

		It("opens at once on a critical failure", func() {
			b := build()
			fail(b, 1, unauthorized)
			Expect(b.State()).To(Equal(degrade.Open))
			Expect(rec.got[0].Reason).To(Equal(degrade.ReasonForced))
			Expect(b.Stats().ForcedOpens).To(Equal(uint64(1)))
		})

		It("counts a critical failure like any other when forced opening is off", func() {
			cfg.ForceOpenClasses = []classify.Class{}
			b := build()
			fail(b, 4, unauthorized)
			Expect(b.State()).To(Equal(degrade.Closed))
			fail(b, 1, unauthorized)
			Expect(b.State()).To(Equal(degrade.Open))
			Expect(rec.got[0].Reason).To(Equal(degrade.ReasonConsecutiveFailures))
		})

		It("counts only the configured classes", func() {
			cfg.CountedClasses = []classify.Class{classify.Transient}
			b := build()
			fail(b, 50, rateLimited)
			Expect(b.State()).To(Equal(degrade.Closed))
			fail(b, 5, netTimeout)
			Expect(b.State()).To(Equal(degrade.Open))
		})

		It("rejects with ErrOpen while open, allocating nothing", func() {
			b := build()
			fail(b, 1, unauthorized)
			_, err := b.Allow()
			Expect(err).To(MatchError(degrade.ErrOpen))
			allocs := testing.AllocsPerRun(100, func() { _, _ = b.Allow() })
			Expect(allocs).To(BeZero())
			Expect(b.Stats().RejectedOpen).To(Equal(uint64(102)))
		})
	})

	Describe("weighing a failure by its class and its source", func() {
		// succeed makes n successful calls.
		succeed := func(b *degrade.Breaker, n int) {
			GinkgoHelper()
			for range n {
				Expect(call(b, degrade.Success())).To(BeTrue())
			}
		}

		It("does not open on a critical failure from the worker's own system (a local EACCES) after successes", func() {
			b := build()
			succeed(b, 10)
			fail(b, 1, localPermission)
			Expect(b.State()).To(Equal(degrade.Closed))
			Expect(rec.got).To(BeEmpty())
			// Nor does it count toward a trip, however many.
			fail(b, 50, localPermission)
			Expect(b.State()).To(Equal(degrade.Closed))
			s := b.Stats()
			Expect(s.IgnoredFailures).To(Equal(uint64(51)))
			Expect(s.CountedFailures).To(BeZero())
			Expect(s.ForcedOpens).To(BeZero())
		})

		It("opens at once on a critical failure from the dependency's auth (a 401) after successes", func() {
			b := build()
			succeed(b, 10)
			fail(b, 1, unauthorized)
			Expect(b.State()).To(Equal(degrade.Open))
			Expect(rec.got).To(HaveLen(1))
			Expect(rec.got[0].Reason).To(Equal(degrade.ReasonForced))
			Expect(b.Stats().ForcedOpens).To(Equal(uint64(1)))
		})

		It("does not count a transient failure from the worker's own system (a handler bug) toward a trip", func() {
			cfg.ConsecutiveFailures = 3
			cfg.MinThroughput = 5
			b := build()
			fail(b, 2, netTimeout)
			// Neither the run of consecutive failures nor the failure rate
			// (it would be 102/102 calls) sees them...
			fail(b, 100, handlerBug)
			Expect(b.State()).To(Equal(degrade.Closed))
			Expect(b.Stats().IgnoredFailures).To(Equal(uint64(100)))
			// ...and they are neutral: the run of two network failures is
			// still there.
			fail(b, 1, netTimeout)
			Expect(b.State()).To(Equal(degrade.Open))
			Expect(rec.got[0].Reason).To(Equal(degrade.ReasonConsecutiveFailures))
		})

		It("counts a transient failure from the network toward a trip", func() {
			b := build()
			succeed(b, 10)
			fail(b, 4, netTimeout)
			Expect(b.State()).To(Equal(degrade.Closed))
			fail(b, 1, netTimeout)
			Expect(b.State()).To(Equal(degrade.Open))
			Expect(rec.got[0].Reason).To(Equal(degrade.ReasonConsecutiveFailures))
			Expect(b.Stats().CountedFailures).To(Equal(uint64(5)))
		})

		It("counts the dependency's own answers and failures on the way to it alike", func() {
			b := build()
			fail(b, 1, netTimeout)
			fail(b, 1, serverError)
			fail(b, 1, rateLimited)
			fail(b, 1, gatewayTimeout)
			Expect(b.State()).To(Equal(degrade.Closed))
			fail(b, 1, netTimeout)
			Expect(b.State()).To(Equal(degrade.Open))
		})

		It("never counts a failure of the job's data, or one with no source", func() {
			b := build()
			badPayload := netTimeout
			badPayload.Source = classify.Data
			noSource := unauthorized
			noSource.Source = classify.SourceNone
			fail(b, 10, badPayload)
			fail(b, 10, noSource)
			fail(b, 10, classify.Classification{Class: classify.Critical, Source: classify.Source(200)})
			Expect(b.State()).To(Equal(degrade.Closed))
			Expect(b.Stats().IgnoredFailures).To(Equal(uint64(30)))
		})

		It("counts only the configured sources, and forces open only from them", func() {
			cfg.CountedSources = []classify.Source{classify.Network}
			b := build()
			fail(b, 1, unauthorized)
			fail(b, 20, serverError)
			Expect(b.State()).To(Equal(degrade.Closed))
			fail(b, 5, netTimeout)
			Expect(b.State()).To(Equal(degrade.Open))
		})

		It("forces open only on the configured classes from a counted source", func() {
			cfg.ForceOpenClasses = []classify.Class{classify.RateLimited}
			b := build()
			fail(b, 1, unauthorized) // counted, not forced
			Expect(b.State()).To(Equal(degrade.Closed))
			fail(b, 1, rateLimited)
			Expect(b.State()).To(Equal(degrade.Open))
			Expect(rec.got[0].Reason).To(Equal(degrade.ReasonForced))
		})

		It("in half-open, frees the slot of a probe that failed on the worker's own system without re-opening", func() {
			b := build()
			fail(b, 1, unauthorized)
			untilHalfOpen(b, clk)
			p, err := b.Allow()
			Expect(err).NotTo(HaveOccurred())
			b.Record(p, degrade.Failure(localPermission))
			Expect(b.State()).To(Equal(degrade.HalfOpen))
			Expect(b.OutstandingProbes()).To(BeZero())
			p, err = b.Allow()
			Expect(err).NotTo(HaveOccurred())
			b.Record(p, degrade.Failure(unauthorized))
			Expect(b.State()).To(Equal(degrade.Open))
			Expect(rec.got[len(rec.got)-1].Reason).To(Equal(degrade.ReasonForced))
		})

		It("records a failure without allocating", func() {
			cfg.ConsecutiveFailures = 1 << 30
			cfg.MinThroughput = 1 << 30
			b := build()
			allocs := testing.AllocsPerRun(1000, func() {
				p, err := b.Allow()
				if err == nil {
					b.Record(p, degrade.Failure(netTimeout))
				}
				p, err = b.Allow()
				if err == nil {
					b.Record(p, degrade.Failure(localPermission))
				}
			})
			Expect(allocs).To(BeZero())
			Expect(b.State()).To(Equal(degrade.Closed))
		})
	})

	Describe("open to half-open", func() {
		It("happens on the clock's timer, with no calls", func() {
			b := build()
			fail(b, 1, unauthorized)
			clk.Advance(5*time.Second - time.Nanosecond)
			Expect(b.State()).To(Equal(degrade.Open))
			clk.Advance(time.Nanosecond)
			Expect(b.State()).To(Equal(degrade.HalfOpen))
			Expect(rec.got).To(HaveLen(2))
			Expect(rec.got[1]).To(Equal(degrade.Transition{
				Breaker: "gateway", From: degrade.Open, To: degrade.HalfOpen,
				At: t0.Add(5 * time.Second), Reason: degrade.ReasonOpenElapsed,
			}))
			Expect(b.OpenUntil()).To(BeZero())
		})
	})

	Describe("half-open", func() {
		var b *degrade.Breaker

		BeforeEach(func() {
			cfg.HalfOpenProbes = 2
			b = build()
			fail(b, 1, unauthorized)
			untilHalfOpen(b, clk)
		})

		It("admits only HalfOpenProbes probes at once", func() {
			p1, err := b.Allow()
			Expect(err).NotTo(HaveOccurred())
			p2, err := b.Allow()
			Expect(err).NotTo(HaveOccurred())
			Expect(p1.IsProbe() && p2.IsProbe()).To(BeTrue())
			_, err = b.Allow()
			Expect(err).To(MatchError(degrade.ErrProbeLimit))
			Expect(b.OutstandingProbes()).To(Equal(2))
			Expect(b.Stats().RejectedProbeLimit).To(Equal(uint64(1)))
			// A success frees a slot.
			b.Record(p1, degrade.Success())
			_, err = b.Allow()
			Expect(err).NotTo(HaveOccurred())
		})

		It("closes after SuccessesToClose probe successes", func() {
			probeSucceed(b, 2)
			Expect(b.State()).To(Equal(degrade.HalfOpen))
			probeSucceed(b, 1)
			Expect(b.State()).To(Equal(degrade.Closed))
			last := rec.got[len(rec.got)-1]
			Expect(last.From).To(Equal(degrade.HalfOpen))
			Expect(last.Reason).To(Equal(degrade.ReasonProbesSucceeded))
		})

		It("re-opens on a counted probe failure, for longer each time", func() {
			var openFor []time.Duration
			for range 4 {
				p, err := b.Allow()
				Expect(err).NotTo(HaveOccurred())
				b.Record(p, degrade.Failure(netTimeout))
				Expect(b.State()).To(Equal(degrade.Open))
				last := rec.got[len(rec.got)-1]
				Expect(last.Reason).To(Equal(degrade.ReasonProbeFailed))
				Expect(b.OpenUntil()).To(Equal(clk.Now().Add(last.OpenFor)))
				openFor = append(openFor, last.OpenFor)
				untilHalfOpen(b, clk)
			}
			Expect(openFor).To(Equal([]time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second}))
			Expect(b.Stats().Level).To(Equal(4))
		})

		It("re-opens at once on a critical probe failure", func() {
			p, _ := b.Allow()
			b.Record(p, degrade.Failure(unauthorized))
			Expect(b.State()).To(Equal(degrade.Open))
			Expect(rec.got[len(rec.got)-1].Reason).To(Equal(degrade.ReasonForced))
		})

		It("is not re-opened by a declined card, which only frees the slot", func() {
			p, _ := b.Allow()
			b.Record(p, degrade.Failure(declined))
			Expect(b.State()).To(Equal(degrade.HalfOpen))
			Expect(b.OutstandingProbes()).To(BeZero())
		})

		It("releases a slot on Canceled, counting nothing", func() {
			p1, _ := b.Allow()
			p2, _ := b.Allow()
			b.Record(p1, degrade.Success())
			b.Record(p2, degrade.Canceled())
			Expect(b.OutstandingProbes()).To(BeZero())
			Expect(b.State()).To(Equal(degrade.HalfOpen))
			// The cancel did not count as a success: two more are needed.
			probeSucceed(b, 1)
			Expect(b.State()).To(Equal(degrade.HalfOpen))
			probeSucceed(b, 1)
			Expect(b.State()).To(Equal(degrade.Closed))
			Expect(b.Stats().Canceled).To(Equal(uint64(1)))
		})

		It("releases a probe's slot after ProbeTimeout and counts it as a failure", func() {
			p1, _ := b.Allow()
			clk.Advance(4 * time.Second)
			p2, _ := b.Allow()
			Expect(b.OutstandingProbes()).To(Equal(2))
			clk.Advance(6*time.Second - time.Nanosecond)
			Expect(b.State()).To(Equal(degrade.HalfOpen))
			clk.Advance(time.Nanosecond) // p1 is 10s old
			Expect(b.State()).To(Equal(degrade.Open))
			Expect(b.OutstandingProbes()).To(BeZero())
			last := rec.got[len(rec.got)-1]
			Expect(last.Reason).To(Equal(degrade.ReasonProbeTimeout))
			Expect(last.At).To(Equal(t0.Add(15 * time.Second)))
			Expect(last.OpenFor).To(Equal(10 * time.Second))
			s := b.Stats()
			Expect(s.ProbeTimeouts).To(Equal(uint64(1)))
			Expect(s.CountedFailures).To(Equal(uint64(2))) // the critical and the timeout
			// The late results are stale.
			b.Record(p1, degrade.Success())
			b.Record(p2, degrade.Success())
			Expect(b.Stats().Stale).To(Equal(uint64(2)))
			Expect(b.Stats().Successes).To(BeZero())
			// p2's timer was stopped with the transition: nothing else fires.
			Expect(clk.Pending()).To(Equal(1)) // only the open timer
		})

		It("frees a recorded probe's timeout", func() {
			p, _ := b.Allow()
			b.Record(p, degrade.Success())
			clk.Advance(time.Hour)
			Expect(b.State()).To(Equal(degrade.HalfOpen))
			Expect(b.Stats().ProbeTimeouts).To(BeZero())
		})
	})

	Describe("generations", func() {
		It("ignores results from permits of an older generation", func() {
			b := build()
			old, err := b.Allow()
			Expect(err).NotTo(HaveOccurred())
			fail(b, 5, netTimeout)
			Expect(b.State()).To(Equal(degrade.Open))
			gen := b.Stats().Generation

			b.Record(old, degrade.Failure(unauthorized))
			s := b.Stats()
			Expect(s.Stale).To(Equal(uint64(1)))
			Expect(s.ForcedOpens).To(BeZero())
			Expect(s.Generation).To(Equal(gen))

			untilHalfOpen(b, clk)
			probeSucceed(b, 3)
			b.Record(old, degrade.Failure(netTimeout))
			b.Record(degrade.Permit{}, degrade.Failure(netTimeout))
			Expect(b.Stats().Stale).To(Equal(uint64(3)))
			Expect(b.Stats().CountedFailures).To(Equal(uint64(5)))
		})

		It("ignores a probe recorded twice", func() {
			cfg.SuccessesToClose = 2
			b := build()
			fail(b, 1, unauthorized)
			untilHalfOpen(b, clk)
			p, _ := b.Allow()
			b.Record(p, degrade.Success())
			b.Record(p, degrade.Success())
			Expect(b.State()).To(Equal(degrade.HalfOpen))
			Expect(b.Stats().Stale).To(Equal(uint64(1)))
		})
	})

	Describe("hysteresis", func() {
		It("raises the level on a trip soon after closing, and decays it per stable period", func() {
			b := build()
			fail(b, 1, unauthorized) // level 0: 5s
			untilHalfOpen(b, clk)
			p, _ := b.Allow()
			b.Record(p, degrade.Failure(netTimeout)) // level 1: 10s
			untilHalfOpen(b, clk)
			p, _ = b.Allow()
			b.Record(p, degrade.Failure(netTimeout)) // level 2: 20s
			untilHalfOpen(b, clk)
			probeSucceed(b, 3)
			clk.Advance(30 * time.Second)
			fail(b, 1, unauthorized) // 30s < StablePeriod: level 3
			Expect(rec.got[len(rec.got)-1].OpenFor).To(Equal(40 * time.Second))
			untilHalfOpen(b, clk)
			probeSucceed(b, 3)
			clk.Advance(2*time.Minute + 59*time.Second) // two whole stable periods
			fail(b, 1, unauthorized)                    // level 3-2 = 1
			last := rec.got[len(rec.got)-1]
			Expect(last.Level).To(Equal(1))
			Expect(last.OpenFor).To(Equal(10 * time.Second))
			untilHalfOpen(b, clk)
			probeSucceed(b, 3)
			clk.Advance(time.Hour)
			fail(b, 1, unauthorized) // back to 0
			Expect(rec.got[len(rec.got)-1].OpenFor).To(Equal(5 * time.Second))
		})

		It("caps the open duration at MaxOpenDuration", func() {
			cfg.OpenDuration = time.Minute
			cfg.MaxOpenDuration = 3 * time.Minute
			cfg.BackoffFactor = 1000
			b := build()
			fail(b, 1, unauthorized)
			for range 3 {
				untilHalfOpen(b, clk)
				p, _ := b.Allow()
				b.Record(p, degrade.Failure(netTimeout))
				Expect(rec.got[len(rec.got)-1].OpenFor).To(Equal(3 * time.Minute))
			}
			Expect(b.Stats().Level).To(Equal(1)) // the level stops where the cap is reached
		})
	})

	Describe("ramp-up after closing", func() {
		// share admits calls every 10ms over [from, to) after the close and
		// returns the admitted fraction in percent.
		share := func(b *degrade.Breaker, closedAt time.Time, from, to time.Duration) float64 {
			GinkgoHelper()
			clk.RunUntil(closedAt.Add(from))
			admitted, calls := 0, 0
			for clk.Now().Before(closedAt.Add(to)) {
				p, err := b.Allow()
				if err == nil {
					admitted++
					b.Record(p, degrade.Success())
				} else {
					Expect(err).To(MatchError(degrade.ErrRampUp))
				}
				calls++
				clk.Advance(10 * time.Millisecond)
			}
			return 100 * float64(admitted) / float64(calls)
		}

		It("admits a share growing linearly from RampStartPercent to 100% over RampUp", func() {
			b := build()
			fail(b, 1, unauthorized)
			untilHalfOpen(b, clk)
			probeSucceed(b, 3)
			closedAt := clk.Now()
			// Averages of the share 10% + 90%*t/30s over each stretch.
			Expect(share(b, closedAt, 0, time.Second)).To(BeNumerically("~", 11.5, 1))
			Expect(share(b, closedAt, 14500*time.Millisecond, 15500*time.Millisecond)).To(BeNumerically("~", 55, 1))
			Expect(share(b, closedAt, 29*time.Second, 30*time.Second)).To(BeNumerically("~", 98.5, 1))
			Expect(share(b, closedAt, 30*time.Second, 31*time.Second)).To(Equal(100.0))
			Expect(b.Stats().RejectedRampUp).To(BeNumerically(">", 100))
		})

		It("admits the first call after n at a steady 1/n share", func() {
			cfg.RampStartPercent = 25
			b := build()
			fail(b, 1, unauthorized)
			untilHalfOpen(b, clk)
			probeSucceed(b, 3)
			var got []bool
			for range 8 { // all at the instant of closing: share 25%
				_, err := b.Allow()
				got = append(got, err == nil)
			}
			Expect(got).To(Equal([]bool{false, false, false, true, false, false, false, true}))
		})

		It("is off with NoRampUp", func() {
			cfg.RampUp = degrade.NoRampUp
			b := build()
			fail(b, 1, unauthorized)
			untilHalfOpen(b, clk)
			probeSucceed(b, 3)
			for range 100 {
				Expect(call(b, degrade.Success())).To(BeTrue())
			}
		})
	})

	Describe("Stats", func() {
		It("counts every transition, rejection and result", func() {
			cfg.HalfOpenProbes = 1
			cfg.SuccessesToClose = 1
			cfg.RampUp = degrade.NoRampUp
			b := build()
			stale, _ := b.Allow()              // admitted 1
			call(b, degrade.Success())         // admitted 2, success 1
			fail(b, 2, declined)               // admitted 4, ignored 2
			call(b, degrade.Canceled())        // admitted 5, canceled 1
			fail(b, 5, netTimeout)             // admitted 10, counted 5 -> open
			b.Allow()                          // rejected open
			b.Record(stale, degrade.Success()) // stale 1
			untilHalfOpen(b, clk)
			p, _ := b.Allow()             // probe 1
			b.Allow()                     // rejected probe limit
			clk.Advance(10 * time.Second) // probe timeout -> open, counted 6
			untilHalfOpen(b, clk)
			p2, _ := b.Allow()                          // probe 2
			b.Record(p2, degrade.Failure(unauthorized)) // counted 7, forced -> open
			b.Record(p, degrade.Success())              // stale 2
			untilHalfOpen(b, clk)
			probeSucceed(b, 1) // probe 3, success 2 -> closed

			Expect(b.Stats()).To(Equal(degrade.Stats{
				State: degrade.Closed, Level: 2, Generation: 8,
				ToOpen: 3, ToHalfOpen: 3, ToClosed: 1,
				Admitted: 10, Probes: 3,
				RejectedOpen: 1, RejectedProbeLimit: 1,
				Successes: 2, CountedFailures: 7, IgnoredFailures: 2, Canceled: 1,
				Stale: 2, ProbeTimeouts: 1, ForcedOpens: 1,
			}))
			Expect(rec.got).To(HaveLen(7))
		})
	})

	It("names its states and outcomes", func() {
		Expect([]string{degrade.Closed.String(), degrade.Open.String(), degrade.HalfOpen.String(), degrade.State(9).String()}).
			To(Equal([]string{"closed", "open", "half-open", "state(9)"}))
		Expect([]string{degrade.Success().String(), degrade.Failure(rateLimited).String(), degrade.Canceled().String(), degrade.Outcome{}.String()}).
			To(Equal([]string{"success", "failure(rate-limited/dependency)", "canceled", "canceled"}))
	})

	It("keeps the closed hot path free of allocations", func() {
		b := build()
		allocs := testing.AllocsPerRun(1000, func() {
			p, err := b.Allow()
			if err == nil {
				b.Record(p, degrade.Success())
			}
		})
		Expect(allocs).To(BeZero())
	})
})
