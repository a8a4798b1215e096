package retry_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/types"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/retry"
)

// failure is a classification of the given class, as the classifier would
// return it.
func failure(class classify.Class) classify.Classification {
	return classify.Classification{Class: class, Severity: classify.Medium, Source: classify.Dependency, Rule: "spec"}
}

// hinted is a rate-limited classification carrying a Retry-After hint.
func hinted(after time.Duration) classify.Classification {
	c := failure(classify.RateLimited)
	c.RetryAfter = after
	return c
}

// attempt is a job of the payments dependency that has made n attempts.
func attempt(n int) retry.Attempt {
	return retry.Attempt{
		JobID: "job-1", Task: "charge", Dependency: "payments", Attempts: n,
		FirstAttemptAt: epoch.Add(-time.Minute),
	}
}

var _ = Describe("Policy.Decide", func() {
	var p *retry.Policy

	BeforeEach(func() {
		p = newPolicy(retry.Config{}, 1)
	})

	Describe("the decision rules", func() {
		It("releases a canceled attempt at any attempt count, even past MaxAttempts", func() {
			for _, n := range []int{1, 3, 4, 5, 1000} {
				d := p.Decide(attempt(n), failure(classify.Canceled), epoch)
				Expect(d).To(BeDecision(retry.Release, retry.Canceled), "attempt %d", n)
				Expect(d.At.IsZero()).To(BeTrue())
				Expect(d.Delay).To(BeZero())
				Expect(d.Attempts).To(Equal(n))
			}
		})

		It("dead-letters a None classification (a nil error) and unknown classes as unclassified", func() {
			for _, class := range []classify.Class{classify.None, classify.Class(200)} {
				for _, n := range []int{1, 2, 10} {
					Expect(p.Decide(attempt(n), failure(class), epoch)).To(BeDecision(retry.DeadLetter, retry.Unclassified))
				}
			}
		})

		It("never retries permanent or critical failures, whatever the attempt count or hint", func() {
			for n := 1; n <= 10; n++ {
				perm := failure(classify.Permanent)
				perm.RetryAfter = time.Second
				crit := failure(classify.Critical)
				crit.RetryAfter = time.Second
				Expect(p.Decide(attempt(n), perm, epoch)).To(BeDecision(retry.DeadLetter, retry.PermanentError))
				Expect(p.Decide(attempt(n), crit, epoch)).To(BeDecision(retry.DeadLetter, retry.CriticalError))
			}
		})

		It("retries transient and rate-limited failures", func() {
			Expect(p.Decide(attempt(1), failure(classify.Transient), epoch)).To(BeDecision(retry.Retry, retry.BackoffDelay))
			Expect(p.Decide(attempt(1), failure(classify.RateLimited), epoch)).To(BeDecision(retry.Retry, retry.BackoffDelay))
		})

		Describe("an indeterminate failure", func() {
			var a retry.Attempt
			indeterminate := failure(classify.Indeterminate)

			BeforeEach(func() {
				a = attempt(1)
				a.IdempotencyKey = "charge-job-1"
				a.FirstAttemptAt = epoch.Add(-time.Minute)
			})

			It("is retried when the key was recorded before the first attempt", func() {
				a.KeyRecordedAt = a.FirstAttemptAt.Add(-time.Millisecond)
				Expect(p.Decide(a, indeterminate, epoch)).To(BeDecision(retry.Retry, retry.BackoffDelay))
			})

			It("is retried when the key was recorded at the instant of the first attempt", func() {
				a.KeyRecordedAt = a.FirstAttemptAt
				Expect(p.Decide(a, indeterminate, epoch)).To(BeDecision(retry.Retry, retry.BackoffDelay))
			})

			It("is dead-lettered when the key was recorded after the first attempt began", func() {
				a.KeyRecordedAt = a.FirstAttemptAt.Add(time.Nanosecond)
				Expect(p.Decide(a, indeterminate, epoch)).To(BeDecision(retry.DeadLetter, retry.IndeterminateWithoutKey))
			})

			It("is dead-lettered without a key", func() {
				a.IdempotencyKey = ""
				a.KeyRecordedAt = a.FirstAttemptAt.Add(-time.Second)
				Expect(p.Decide(a, indeterminate, epoch)).To(BeDecision(retry.DeadLetter, retry.IndeterminateWithoutKey))
			})

			It("is dead-lettered when the key's recording time is unknown", func() {
				a.KeyRecordedAt = time.Time{}
				Expect(p.Decide(a, indeterminate, epoch)).To(BeDecision(retry.DeadLetter, retry.IndeterminateWithoutKey))
			})

			It("is dead-lettered when the first attempt's time is unknown", func() {
				a.KeyRecordedAt = epoch.Add(-time.Hour)
				a.FirstAttemptAt = time.Time{}
				Expect(p.Decide(a, indeterminate, epoch)).To(BeDecision(retry.DeadLetter, retry.IndeterminateWithoutKey))
			})

			It("still runs out of attempts with a key", func() {
				a.KeyRecordedAt = a.FirstAttemptAt.Add(-time.Second)
				a.Attempts = retry.DefaultMaxAttempts
				Expect(p.Decide(a, indeterminate, epoch)).To(BeDecision(retry.DeadLetter, retry.ExhaustedAttempts))
			})
		})

		It("dead-letters after 3 retries with the default config: attempts 1-3 retry, attempt 4 does not", func() {
			for n := 1; n <= 3; n++ {
				Expect(p.Decide(attempt(n), failure(classify.Transient), epoch)).To(BeDecision(retry.Retry, retry.BackoffDelay), "attempt %d", n)
			}
			for _, n := range []int{4, 5, 1 << 40} {
				Expect(p.Decide(attempt(n), failure(classify.Transient), epoch)).To(BeDecision(retry.DeadLetter, retry.ExhaustedAttempts), "attempt %d", n)
			}
		})

		It("never retries with MaxAttempts 1, even with a Retry-After hint", func() {
			p = newPolicy(retry.Config{MaxAttempts: 1}, 1)
			Expect(p.Decide(attempt(1), failure(classify.Transient), epoch)).To(BeDecision(retry.DeadLetter, retry.ExhaustedAttempts))
			Expect(p.Decide(attempt(1), hinted(time.Second), epoch)).To(BeDecision(retry.DeadLetter, retry.ExhaustedAttempts))
		})

		It("reads an attempt count below 1 as a first attempt", func() {
			d := p.Decide(attempt(0), failure(classify.Transient), epoch)
			Expect(d).To(BeDecision(retry.Retry, retry.BackoffDelay))
			Expect(d.Backoff).To(BeNumerically("<=", retry.DefaultBaseDelay))
		})

		It("copies the attempt count and class, and sets At and Delay only on a retry", func() {
			d := p.Decide(attempt(2), failure(classify.Transient), epoch)
			Expect(d.Attempts).To(Equal(2))
			Expect(d.Class).To(Equal(classify.Transient))
			Expect(d.At).To(Equal(epoch.Add(d.Delay)))
			Expect(d.Delay).To(Equal(d.Backoff))

			d = p.Decide(attempt(2), failure(classify.Permanent), epoch)
			Expect(d.Class).To(Equal(classify.Permanent))
			Expect(d.At.IsZero()).To(BeTrue())
			Expect(d.Delay).To(BeZero())
			Expect(d.Backoff).To(BeZero())
		})
	})

	Describe("backoff", func() {
		BeforeEach(func() {
			p = newPolicy(retry.Config{MaxAttempts: 20, Budget: retry.BudgetConfig{Disabled: true}}, 7)
		})

		It("draws the n-th retry's delay within [0, min(MaxDelay, BaseDelay·2^n)]", func() {
			cfg := p.Config()
			for n := 1; n < cfg.MaxAttempts; n++ {
				limit := retry.Backoff(cfg, n-1)
				for range 200 {
					d := p.Decide(attempt(n), failure(classify.Transient), epoch)
					Expect(d).To(BeDecision(retry.Retry, retry.BackoffDelay))
					Expect(d.Backoff).To(And(BeNumerically(">=", 0), BeNumerically("<=", limit)), "attempt %d", n)
					Expect(d.Delay).To(Equal(d.Backoff))
				}
			}
		})

		It("spreads with full jitter over the whole range", func() {
			const draws = 10000
			var deciles [10]int
			lo, hi := time.Duration(1<<62), time.Duration(0)
			for range draws {
				b := p.Decide(attempt(1), failure(classify.Transient), epoch).Backoff
				lo, hi = min(lo, b), max(hi, b)
				deciles[min(9, int(b*10/time.Second))]++
			}
			Expect(lo).To(BeNumerically("<", 10*time.Millisecond))
			Expect(hi).To(BeNumerically(">", 990*time.Millisecond))
			for i, n := range deciles {
				Expect(n).To(BeNumerically("~", draws/10, draws/50), "decile %d of [0, 1s]", i)
			}
		})

		DescribeTable("Backoff gives the ceiling of each retry",
			func(cfg retry.Config, n int, want time.Duration) {
				Expect(retry.Backoff(cfg, n)).To(Equal(want))
			},
			Entry("first retry, defaults", retry.Config{}, 0, time.Second),
			Entry("second retry, defaults", retry.Config{}, 1, 2*time.Second),
			Entry("third retry, defaults", retry.Config{}, 2, 4*time.Second),
			Entry("capped at MaxDelay", retry.Config{}, 9, 5*time.Minute),
			Entry("negative retry counts as the first", retry.Config{}, -3, time.Second),
			Entry("retry 62 of 1ns", retry.Config{BaseDelay: 1, MaxDelay: 1 << 62}, 62, time.Duration(1<<62)),
			Entry("retry 63 does not overflow", retry.Config{BaseDelay: 1, MaxDelay: 1<<63 - 1}, 63, time.Duration(1<<63-1)),
			Entry("huge retry does not overflow", retry.Config{}, int(^uint(0)>>1), 5*time.Minute),
			Entry("invalid negative base", retry.Config{BaseDelay: -time.Second}, 3, time.Duration(0)),
		)
	})

	Describe("a Retry-After hint", func() {
		BeforeEach(func() {
			p = newPolicy(retry.Config{MaxRetryAfter: 10 * time.Second, Budget: retry.BudgetConfig{Disabled: true}}, 1)
		})

		It("wins over the backoff, shorter or longer", func() {
			for _, h := range []time.Duration{time.Nanosecond, time.Millisecond, 7 * time.Second} {
				d := p.Decide(attempt(3), hinted(h), epoch)
				Expect(d).To(BeDecision(retry.Retry, retry.RetryAfterHint))
				Expect(d.Delay).To(Equal(h))
				Expect(d.At).To(Equal(epoch.Add(h)))
				Expect(d.Backoff).To(BeZero())
			}
		})

		It("is capped at MaxRetryAfter", func() {
			d := p.Decide(attempt(1), hinted(72*time.Hour), epoch)
			Expect(d).To(BeDecision(retry.Retry, retry.RetryAfterHint))
			Expect(d.Delay).To(Equal(10 * time.Second))
		})

		It("is capped at an hour by default", func() {
			p = newPolicy(retry.Config{}, 1)
			Expect(p.Decide(attempt(1), hinted(1<<62), epoch).Delay).To(Equal(time.Hour))
		})

		It("is honoured on transient failures too, and ignored when not positive", func() {
			c := failure(classify.Transient)
			c.RetryAfter = 3 * time.Second
			Expect(p.Decide(attempt(1), c, epoch).Delay).To(Equal(3 * time.Second))
			c.RetryAfter = -time.Second
			Expect(p.Decide(attempt(1), c, epoch)).To(BeDecision(retry.Retry, retry.BackoffDelay))
		})
	})

	Describe("the retry budget", func() {
		const (
			storm = 100
			burst = retry.DefaultBudgetBurst
			// slot is the default budget's slot width, Burst·Refill = 1s.
			slot = burst * retry.DefaultBudgetRefill
		)
		var hint time.Duration

		BeforeEach(func() {
			p = newPolicy(retry.Config{}, 3) // burst 10 per 1s slot, MaxWait 5m
			hint = 2 * time.Second
		})

		// decideStorm decides n failures of dep at the same instant.
		decideStorm := func(n int, dep string, c classify.Classification, now time.Time) []retry.Decision {
			GinkgoHelper()
			ds := make([]retry.Decision, n)
			for i := range ds {
				a := attempt(1)
				a.JobID = fmt.Sprintf("job-%d", i)
				a.Dependency = dep
				ds[i] = p.Decide(a, c, now)
			}
			return ds
		}

		// inSlot matches a run time within the slot [start, start+width).
		inSlot := func(start time.Time, width time.Duration) types.GomegaMatcher {
			return And(BeTemporally(">=", start), BeTemporally("<", start.Add(width)))
		}

		// runTimes returns the run times of ds.
		runTimes := func(ds []retry.Decision) []time.Time {
			ats := make([]time.Time, len(ds))
			for i, d := range ds {
				ats[i] = d.At
			}
			return ats
		}

		It("lets a burst run at its own time, then Burst more spread over each later slot, without dead-lettering", func() {
			due := epoch.Add(hint)
			var delays time.Duration
			for i, d := range decideStorm(storm, "payments", hinted(hint), epoch) {
				if i < burst {
					Expect(d).To(BeDecision(retry.Retry, retry.RetryAfterHint), "retry %d", i)
					Expect(d.At).To(Equal(due), "retry %d", i)
					continue
				}
				// Retries 10-19 run in [3s, 4s), 20-29 in [4s, 5s), ..., 90-99
				// in [11s, 12s), each at an instant drawn in its slot.
				Expect(d).To(BeDecision(retry.Retry, retry.BudgetDelay), "retry %d", i)
				pushed := time.Duration(i/burst) * slot
				Expect(d.At).To(inSlot(due.Add(pushed), slot), "retry %d", i)
				Expect(d.Delay).To(Equal(d.At.Sub(epoch)))
				delays += d.At.Sub(due)
			}
			s := p.Stats()
			Expect(s.ByAction[retry.Retry]).To(BeEquivalentTo(storm))
			Expect(s.ByAction[retry.DeadLetter]).To(BeZero())
			Expect(s.BudgetDelayed).To(BeEquivalentTo(storm - burst))
			Expect(s.ByReason[retry.BudgetDelay]).To(Equal(s.BudgetDelayed))
			Expect(s.BudgetExceeded).To(BeZero())
			// 10 retries pushed into each of the slots 1s, 2s, ..., 9s later.
			Expect(s.BudgetDelay).To(Equal(delays))
			Expect(s.BudgetDelay).To(And(BeNumerically(">=", burst*45*slot), BeNumerically("<", burst*54*slot)))
		})

		It("spreads a storm of jittered backoffs too, pushing only past full slots", func() {
			ds := decideStorm(storm, "payments", failure(classify.Transient), epoch)
			delayed := 0
			for _, d := range ds {
				Expect(d.Action).To(Equal(retry.Retry))
				Expect(d.At).To(Equal(epoch.Add(d.Delay)))
				Expect(d.Backoff).To(BeNumerically("<=", time.Second), "all due in slot 0")
				if d.Reason == retry.BudgetDelay {
					delayed++
					Expect(d.Delay).To(BeNumerically(">", d.Backoff))
					Expect(d.Delay).To(BeNumerically(">=", slot), "a pushed retry runs in a later slot")
				} else {
					Expect(d.Reason).To(Equal(retry.BackoffDelay))
					Expect(d.Delay).To(Equal(d.Backoff))
				}
			}
			Expect(delayed).To(Equal(storm - burst))
			expectWithinBudget(runTimes(ds), epoch, slot, burst)
			Expect(slices.MaxFunc(runTimes(ds), time.Time.Compare)).To(inSlot(epoch.Add((storm/burst-1)*slot), slot))
		})

		It("caps the retries that run in a slot, whenever they were decided (the reviewer's wave at t=10s)", func() {
			// Ten failures at t=0 carry a 10s Retry-After, ten more at t=9.9s
			// a 0.1s one: all twenty are due at t=10s.
			first := decideStorm(burst, "payments", hinted(10*time.Second), epoch)
			second := decideStorm(burst, "payments", hinted(100*time.Millisecond), epoch.Add(9900*time.Millisecond))
			ds := slices.Concat(first, second)
			Expect(ds).To(HaveEach(HaveField("Action", retry.Retry)))
			at10 := epoch.Add(10 * time.Second)
			n := 0
			for _, d := range ds {
				if !d.At.Before(at10) && d.At.Before(at10.Add(slot)) {
					n++
				}
			}
			Expect(n).To(Equal(burst), "retries in the slot [10s, 11s)")
			Expect(runTimes(first)).To(HaveEach(at10))
			Expect(second).To(HaveEach(BeDecision(retry.Retry, retry.BudgetDelay)))
			Expect(runTimes(second)).To(HaveEach(inSlot(at10.Add(slot), slot)))
			expectWithinBudget(runTimes(ds), epoch, slot, burst)
		})

		It("bounds the delay under sustained overload, counts the excess, and keeps its memory bounded (the reviewer's hour at 30/s)", func() {
			// 30 failures a second for an hour against a budget of 10 a
			// second: two in three retries cannot fit.
			const rate, hour = 30, time.Hour
			maxWait := p.Config().Budget.MaxWait
			Expect(maxWait).To(Equal(retry.DefaultMaxDelay))
			// The calendar never holds more slots than lie between now and
			// the farthest a retry can run: its backoff (at most 4s for
			// attempts 1-3) plus MaxWait.
			maxRuns := int((retry.Backoff(p.Config(), 2)+maxWait)/slot) + 2
			var ats []time.Time
			var exceeded uint64
			mostRuns := 0
			for i := range int(hour.Seconds()) * rate {
				now := epoch.Add(time.Duration(i) * time.Second / rate)
				before := p.Stats().BudgetExceeded
				a := attempt(1 + i%3)
				d := p.Decide(a, failure(classify.Transient), now)
				Expect(d.Action).To(Equal(retry.Retry))
				extra := d.Delay - d.Backoff
				Expect(extra).To(And(BeNumerically(">=", 0), BeNumerically("<=", maxWait)), "retry %d at %v", i, now)
				if p.Stats().BudgetExceeded > before {
					exceeded++
					Expect(extra).To(Equal(maxWait), "an over-budget retry runs MaxWait late")
				} else {
					ats = append(ats, d.At)
				}
				mostRuns = max(mostRuns, p.CalendarLen("payments"))
				Expect(p.CalendarLen("payments")).To(BeNumerically("<=", maxRuns), "retry %d at %v", i, now)
			}
			s := p.Stats()
			Expect(s.ByAction[retry.DeadLetter]).To(BeZero())
			Expect(s.BudgetExceeded).To(Equal(exceeded))
			// The budget let through 10 a second: every slot of the hour full,
			// and some of those after it, up to the last a retry can reach.
			// The rest ran over it.
			total := int(hour.Seconds()) * rate
			Expect(len(ats) + int(exceeded)).To(Equal(total))
			Expect(len(ats)).To(BeNumerically(">=", int(hour/slot)*burst))
			Expect(len(ats)).To(BeNumerically("<=", int((hour+retry.Backoff(p.Config(), 2)+maxWait)/slot+1)*burst))
			expectWithinBudget(ats, epoch, slot, burst)
			// The full slots collapse into one run; the only others are the
			// partly booked slots a backoff can still reach.
			Expect(mostRuns).To(BeNumerically("<=", int(retry.Backoff(p.Config(), 2)/slot)+2))
			GinkgoWriter.Printf("calendar runs at most %d (bound %d); %d over budget\n", mostRuns, maxRuns, exceeded)

			// Once the storm is over and its slots have passed, a burst runs
			// at its own time again.
			later := epoch.Add(hour + maxWait + 10*time.Second)
			Expect(decideStorm(burst, "payments", hinted(hint), later)).To(HaveEach(BeDecision(retry.Retry, retry.RetryAfterHint)))
			Expect(p.CalendarLen("payments")).To(Equal(1))
		})

		It("runs over the budget at MaxWait when no slot within it has room, and counts it", func() {
			p = newPolicy(retry.Config{Budget: retry.BudgetConfig{Burst: 1, Refill: time.Second, MaxWait: 3 * time.Second}}, 3)
			ds := decideStorm(10, "payments", hinted(hint), epoch)
			// One retry in each of the slots starting at 2s, 3s and 4s, one at
			// 5s = 2s + MaxWait (the last instant MaxWait allows of its slot);
			// the other six run at 5s over the budget.
			Expect(ds[0].At).To(Equal(epoch.Add(2 * time.Second)))
			for i, want := range []time.Duration{3, 4} {
				Expect(ds[i+1].At).To(inSlot(epoch.Add(want*time.Second), slot), "retry %d", i+1)
			}
			for i := 3; i < 10; i++ {
				Expect(ds[i].At).To(Equal(epoch.Add(5*time.Second)), "retry %d", i)
			}
			Expect(ds[0]).To(BeDecision(retry.Retry, retry.RetryAfterHint))
			Expect(ds[1:]).To(HaveEach(BeDecision(retry.Retry, retry.BudgetDelay)))
			s := p.Stats()
			Expect(s.BudgetExceeded).To(BeEquivalentTo(6))
			Expect(s.BudgetDelayed).To(BeEquivalentTo(9))
			Expect(s.ByAction[retry.DeadLetter]).To(BeZero())
		})

		It("refills: once the booked slots have passed, a burst is again not delayed", func() {
			decideStorm(storm, "payments", hinted(hint), epoch)
			// The storm booked the slots from 2s to 11s full. A retry due at
			// 7s runs in the slot [12s, 13s).
			d := p.Decide(attempt(1), hinted(hint), epoch.Add(5*time.Second))
			Expect(d).To(BeDecision(retry.Retry, retry.BudgetDelay))
			Expect(d.At).To(inSlot(epoch.Add(12*time.Second), slot))

			later := epoch.Add(time.Minute)
			ds := decideStorm(burst+1, "payments", hinted(hint), later)
			for _, d := range ds[:burst] {
				Expect(d).To(BeDecision(retry.Retry, retry.RetryAfterHint))
				Expect(d.At).To(Equal(later.Add(hint)))
			}
			Expect(ds[burst]).To(BeDecision(retry.Retry, retry.BudgetDelay))
			Expect(ds[burst].At).To(inSlot(later.Add(hint+slot), slot))
			Expect(p.CalendarLen("payments")).To(Equal(1), "the passed slots are forgotten")
		})

		It("gives each slot Burst places, and a pushed retry an instant of the next slot with room", func() {
			p = newPolicy(retry.Config{Budget: retry.BudgetConfig{Burst: 2, Refill: 500 * time.Millisecond}}, 3)
			// Slots are 1s wide; all five are due at 2.5s, in the slot [2s, 3s).
			ds := decideStorm(5, "payments", hinted(2500*time.Millisecond), epoch)
			Expect(ds[0].At).To(Equal(epoch.Add(2500 * time.Millisecond)))
			Expect(ds[1].At).To(Equal(epoch.Add(2500 * time.Millisecond)))
			for i, want := range []time.Duration{3000, 3000, 4000} {
				Expect(ds[i+2].At).To(inSlot(epoch.Add(want*time.Millisecond), time.Second), "retry %d", i+2)
			}
			// A retry due at 4.2s shares the slot of the one pushed into
			// [4s, 5s); the next is pushed into [5s, 6s).
			Expect(p.Decide(attempt(1), hinted(4200*time.Millisecond), epoch).At).To(Equal(epoch.Add(4200 * time.Millisecond)))
			Expect(p.Decide(attempt(1), hinted(4200*time.Millisecond), epoch).At).To(inSlot(epoch.Add(5*time.Second), time.Second))
		})

		It("keeps the budgets of two dependencies independent", func() {
			decideStorm(storm, "payments", hinted(hint), epoch)
			for i, d := range decideStorm(burst, "email", hinted(hint), epoch) {
				Expect(d).To(BeDecision(retry.Retry, retry.RetryAfterHint), "email retry %d", i)
			}
			Expect(decideStorm(1, "email", hinted(hint), epoch)[0]).To(BeDecision(retry.Retry, retry.BudgetDelay))
		})

		It("gives the empty dependency name a budget of its own", func() {
			decideStorm(storm, "payments", hinted(hint), epoch)
			Expect(decideStorm(1, "", hinted(hint), epoch)[0]).To(BeDecision(retry.Retry, retry.RetryAfterHint))
		})

		It("books where a retry runs, so a retry booked far ahead does not hold back one due sooner", func() {
			ahead := decideStorm(burst, "payments", hinted(time.Minute), epoch)
			Expect(runTimes(ahead)).To(HaveEach(epoch.Add(time.Minute)))
			soon := decideStorm(burst, "payments", hinted(time.Second), epoch)
			Expect(soon).To(HaveEach(BeDecision(retry.Retry, retry.RetryAfterHint)))
			Expect(runTimes(soon)).To(HaveEach(epoch.Add(time.Second)))
		})

		It("spreads a wave of retries that all carry the same Retry-After", func() {
			ds := decideStorm(3*burst, "payments", hinted(time.Minute), epoch)
			bySlot, instants := map[time.Duration]int{}, map[time.Time]bool{}
			for _, d := range ds {
				bySlot[d.At.Sub(epoch.Add(time.Minute)).Truncate(slot)]++
				instants[d.At] = true
			}
			Expect(bySlot).To(Equal(map[time.Duration]int{0: burst, slot: burst, 2 * slot: burst}),
				"only a burst comes back at the hinted instant, the rest a burst per slot")
			Expect(instants).To(HaveLen(1+2*burst), "the pushed ones each at an instant of its own, not a slot's first")
		})

		It("is skipped when disabled", func() {
			p = newPolicy(retry.Config{Budget: retry.BudgetConfig{Disabled: true}}, 3)
			for _, d := range decideStorm(storm, "payments", hinted(hint), epoch) {
				Expect(d).To(BeDecision(retry.Retry, retry.RetryAfterHint))
				Expect(d.At).To(Equal(epoch.Add(hint)))
			}
			Expect(p.Stats().BudgetDelayed).To(BeZero())
			Expect(p.Stats().Dependencies).To(BeZero())
			Expect(p.CalendarLen("payments")).To(BeZero())
		})

		It("is not spent by dead letters and releases", func() {
			for range storm {
				p.Decide(attempt(1), failure(classify.Permanent), epoch)
				p.Decide(attempt(1), failure(classify.Canceled), epoch)
				p.Decide(attempt(retry.DefaultMaxAttempts), failure(classify.Transient), epoch)
			}
			Expect(p.CalendarLen("payments")).To(BeZero())
			Expect(decideStorm(burst, "payments", hinted(hint), epoch)).To(HaveEach(BeDecision(retry.Retry, retry.RetryAfterHint)))
		})

		It("pushes a retry decided with an earlier now than the latest into the latest slot, and counts it there", func() {
			decideStorm(1, "payments", hinted(time.Millisecond), epoch.Add(3*time.Second))
			// A racing caller still on t=0: its retry due at 1s is in a slot
			// that has ended, so it runs in the current one.
			ds := decideStorm(burst, "payments", hinted(time.Second), epoch)
			Expect(ds).To(HaveEach(BeDecision(retry.Retry, retry.BudgetDelay)))
			Expect(runTimes(ds[:burst-1])).To(HaveEach(inSlot(epoch.Add(3*time.Second), slot)))
			Expect(ds[burst-1].At).To(inSlot(epoch.Add(4*time.Second), slot))
		})

		It("forgets idle dependencies, so distinct names cannot grow it without bound", func() {
			const wave = 1000
			for w := range 10 {
				now := epoch.Add(time.Duration(w) * time.Hour)
				for i := range wave {
					decideStorm(1, fmt.Sprintf("tenant-%d-%d", w, i), hinted(hint), now)
				}
			}
			Expect(p.Stats().Dependencies).To(And(BeNumerically(">=", wave), BeNumerically("<=", 2*wave+64)))
		})

		It("decides without allocating once its calendars have grown, in a storm or not", func() {
			p = newPolicy(retry.Config{Budget: retry.BudgetConfig{MaxWait: 10 * time.Second}}, 3)
			deps := []string{"payments", "email", "search"}
			now, i := epoch, 0
			decide := func(step time.Duration) func() {
				return func() {
					c := failure(classify.Transient)
					if i%3 == 0 {
						c = hinted(hint)
					}
					p.Decide(retry.Attempt{Dependency: deps[i%3], Attempts: 1 + i%2}, c, now)
					now = now.Add(step)
					i++
				}
			}
			for _, step := range []time.Duration{time.Millisecond, 30 * time.Millisecond} {
				warm := decide(step)
				for range 50_000 {
					warm()
				}
				Expect(testing.AllocsPerRun(10_000, decide(step))).To(BeZero(), "a failure every %v", step)
			}
			Expect(p.Stats().BudgetExceeded).NotTo(BeZero(), "the storm overflowed the budget")
		})

		It("schedules a storm identically whether it comes from one goroutine or many", func() {
			const workers, each = 8, 250
			var wg sync.WaitGroup
			ats := make([][]time.Time, workers)
			for w := range workers {
				wg.Go(func() {
					defer GinkgoRecover()
					for range each {
						ats[w] = append(ats[w], p.Decide(attempt(1), hinted(hint), epoch).At)
					}
				})
			}
			wg.Wait()
			all := slices.Concat(ats...)
			slices.SortFunc(all, time.Time.Compare)
			Expect(all).To(HaveLen(workers * each))
			// The same times as one goroutine's decisions of the same seed.
			q := newPolicy(retry.Config{}, 3)
			var want []time.Time
			for range workers * each {
				want = append(want, q.Decide(attempt(1), hinted(hint), epoch).At)
			}
			slices.SortFunc(want, time.Time.Compare)
			Expect(all).To(Equal(want))
			for i, at := range all {
				Expect(at).To(inSlot(epoch.Add(hint+time.Duration(i/burst)*slot), slot), "retry %d in time order", i)
			}
			Expect(p.Stats().Decisions).To(BeEquivalentTo(workers * each))
			Expect(p.Stats().BudgetExceeded).To(BeZero())
		})
	})

	Describe("determinism", func() {
		// script decides a fixed mix of failures, drawn from its own seeded
		// stream, with p.
		script := func(p *retry.Policy) []retry.Decision {
			GinkgoHelper()
			gen := newScriptRand()
			classes := []classify.Class{classify.Transient, classify.Transient, classify.RateLimited, classify.Indeterminate, classify.Permanent, classify.Canceled}
			deps := []string{"payments", "email", ""}
			now := epoch
			var ds []retry.Decision
			for i := range 2000 {
				c := failure(classes[gen.IntN(len(classes))])
				if gen.IntN(5) == 0 {
					c.RetryAfter = time.Duration(gen.Int64N(int64(time.Minute)))
				}
				a := attempt(1 + gen.IntN(5))
				a.JobID = fmt.Sprint("job-", i)
				a.Dependency = deps[gen.IntN(len(deps))]
				a.IdempotencyKey = "key"
				a.KeyRecordedAt = a.FirstAttemptAt.Add(time.Duration(gen.IntN(3)-1) * time.Second)
				now = now.Add(time.Duration(gen.Int64N(int64(5 * time.Millisecond))))
				ds = append(ds, p.Decide(a, c, now))
			}
			return ds
		}

		It("gives identical decisions for the same seed", func() {
			first, second := script(newPolicy(retry.Config{}, 42)), script(newPolicy(retry.Config{}, 42))
			Expect(second).To(Equal(first))
			Expect(first).To(ContainElement(BeDecision(retry.Retry, retry.BudgetDelay)))
		})

		It("draws different backoffs for a different seed", func() {
			Expect(script(newPolicy(retry.Config{}, 43))).NotTo(Equal(script(newPolicy(retry.Config{}, 42))))
		})
	})

	It("counts every decision by action and reason", func() {
		p.Decide(attempt(1), failure(classify.Transient), epoch)
		p.Decide(attempt(1), hinted(time.Second), epoch)
		p.Decide(attempt(4), failure(classify.Transient), epoch)
		p.Decide(attempt(1), failure(classify.Permanent), epoch)
		p.Decide(attempt(1), failure(classify.Canceled), epoch)
		s := p.Stats()
		Expect(s.Decisions).To(BeEquivalentTo(5))
		Expect(s.ByAction[retry.Retry]).To(BeEquivalentTo(2))
		Expect(s.ByAction[retry.DeadLetter]).To(BeEquivalentTo(2))
		Expect(s.ByAction[retry.Release]).To(BeEquivalentTo(1))
		Expect(s.ByReason[retry.BackoffDelay]).To(BeEquivalentTo(1))
		Expect(s.ByReason[retry.RetryAfterHint]).To(BeEquivalentTo(1))
		Expect(s.ByReason[retry.ExhaustedAttempts]).To(BeEquivalentTo(1))
		Expect(s.ByReason[retry.PermanentError]).To(BeEquivalentTo(1))
		Expect(s.ByReason[retry.Canceled]).To(BeEquivalentTo(1))
		Expect(s.Dependencies).To(Equal(1))
	})
})

// expectWithinBudget checks the budget's guarantee on the run times of one
// dependency's retries: at most burst in any slot of width, aligned to
// origin.
func expectWithinBudget(ats []time.Time, origin time.Time, width time.Duration, burst int) {
	GinkgoHelper()
	Expect(slotViolation(ats, origin, width, burst)).To(BeEmpty())
}
