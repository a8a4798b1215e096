package sim_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/oracle"
	"github.com/faultline/faultline/reports"
	"github.com/faultline/faultline/scenarios"
)

// judged runs sc with expectations xs in place of its own and returns how
// each was judged.
func judged(sc scenarios.Scenario, xs ...scenarios.Expectation) []reports.Expectation {
	GinkgoHelper()
	sc.Expect = xs
	res := run(sc)
	return res.Expectations[:len(xs)]
}

var _ = Describe("An attempt's outcome and its lease (issue 15)", func() {
	It("fences a stale failure off while the successor's success is the store's move: both invariants listed and held", func() {
		res := run(builtin("stale-answer-fenced"))
		Expect(res.Verdict).To(Equal(reports.Passed), "%v", res.Violations)
		Expect(res.Invariants).To(ContainElements(
			reports.InvariantResult{Name: oracle.InvOutcomeIsMove, Verdict: reports.Passed},
			reports.InvariantResult{Name: oracle.InvNoLeaseLeftExpired, Verdict: reports.Passed}))
		Expect(res.Ledger.Fenced).To(BeEquivalentTo(1))
	})

	It("holds on a run with crashes and a stall, where every expired lease is recovered", func() {
		res := run(builtin("worker-crash"))
		Expect(res.Violations).To(BeEmpty())
		Expect(res.Ledger.LeaseExpiries).To(BeNumerically(">", 0))
	})
})

var _ = Describe("Expectations on attempts, alerts, the fallback queue, breakers and retry timing (issue 15)", func() {
	It("reads a job's attempts and their spacing, naming when each began", func() {
		got := judged(builtin("stale-answer-fenced"),
			scenarios.JobAttempts{JobID: "ledger-sync", CheckCount: true, Op: scenarios.Exactly, N: 2},
			scenarios.JobAttempts{JobID: "ledger-sync", CheckCount: true, Op: scenarios.AtMost, N: 1},
			scenarios.JobAttempts{JobID: "ledger-sync", MinGap: 15 * time.Second})
		Expect(got[0].Verdict).To(Equal(reports.Passed))
		Expect(got[0].Actual).To(Equal("2 attempts (at +0s, +10s)"))
		Expect(got[1].Verdict).To(Equal(reports.Failed))
		Expect(got[2].Verdict).To(Equal(reports.Failed))
		Expect(got[2].Actual).To(ContainSubstring("attempt 2 began 10s after attempt 1, less than the 15s expected (the backoff or the dependency's Retry-After hint may be shorter than that, or the retry did not wait one out)"))
	})

	It("fails a gap between attempts of a job that was never retried: there is no gap to read", func() {
		sc := builtin("stale-answer-fenced")
		sc.Faults = nil // nothing fails: ledger-sync's one attempt succeeds
		got := judged(sc,
			scenarios.JobAttempts{JobID: "ledger-sync", CheckCount: true, Op: scenarios.Exactly, N: 1},
			scenarios.JobAttempts{JobID: "ledger-sync", MinGap: 30 * time.Second},
			scenarios.JobAttempts{JobID: "ledger-sync", CheckCount: true, Op: scenarios.Exactly, N: 1, MinGap: time.Second})
		Expect(got[0].Verdict).To(Equal(reports.Passed), got[0].Actual)
		for _, g := range got[1:] {
			Expect(g.Verdict).To(Equal(reports.Failed))
			Expect(g.Actual).To(Equal("1 attempts (at +0s): no retry, so no gap between attempts to check (attemptGapsAtLeast needs at least 2 attempts)"))
		}
	})

	It("reads the retries due per window after a recovery, naming the busiest window", func() {
		got := judged(builtin("retry-storm-on-recovery"),
			scenarios.RetryRate{Dependency: "inventory", From: 150 * time.Second, Window: time.Second, Op: scenarios.AtMost, N: 26},
			scenarios.RetryRate{Dependency: "inventory", From: 150 * time.Second, Window: time.Second, Op: scenarios.AtMost, N: 2})
		Expect(got[0].Verdict).To(Equal(reports.Passed))
		Expect(got[1].Verdict).To(Equal(reports.Failed))
		Expect(got[1].Actual).To(MatchRegexp(`^\d+ \(the 1s from \+\S+; \d+ due from \+2m30s on\): the retries came back together`))
	})

	It("reads the fallback queue drained by an offset, breaker transitions at least, and the alerts raised", func() {
		got := judged(builtin("graceful-degradation"),
			scenarios.DrainedBy{At: 5 * time.Minute, Queue: scenarios.QueueFallback},
			scenarios.DrainedBy{At: 90 * time.Second, Queue: scenarios.QueueFallback},
			scenarios.BreakerTransitions{Breaker: "primary", Op: scenarios.AtLeast, N: 2},
			scenarios.BreakerTransitions{Breaker: "primary", Op: scenarios.AtLeast, N: 1000},
			scenarios.BreakerTransitions{Breaker: "primary", AtMost: 1000},
			scenarios.Count{Metric: scenarios.AlertsRaised, Op: scenarios.AtLeast, N: 1})
		Expect(got[0].Verdict).To(Equal(reports.Passed))
		Expect(got[1].Verdict).To(Equal(reports.Failed))
		Expect(got[1].Actual).To(HaveSuffix("jobs: the fallback queue did not drain back once the breaker closed"))
		Expect(got[2].Verdict).To(Equal(reports.Passed))
		Expect(got[3].Verdict).To(Equal(reports.Failed))
		Expect(got[3].Name).To(Equal("breaker primary changes state at least 1000 times"))
		Expect(got[4].Verdict).To(Equal(reports.Passed), "the older AtMost form")
		Expect(got[5].Verdict).To(Equal(reports.Passed))
	})
})
