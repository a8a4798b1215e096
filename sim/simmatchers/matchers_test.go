package simmatchers_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/types"

	"github.com/faultline/faultline/faults"
	"github.com/faultline/faultline/oracle"
	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/disposition"
	"github.com/faultline/faultline/reference/retry"
	"github.com/faultline/faultline/reports"
	"github.com/faultline/faultline/scenarios"
	"github.com/faultline/faultline/sim"
	. "github.com/faultline/faultline/sim/simmatchers"
)

// healthy is a hand-built result of a run that passed.
func healthy() *reports.Result {
	return &reports.Result{
		Scenario: "payments", Seed: 1, Verdict: reports.Passed,
		Expectations: []reports.Expectation{{Name: "lost = 0", Expected: "= 0", Actual: "0", Verdict: reports.Passed}},
		Violations:   []reports.Violation{},
		Ledger:       reports.Ledger{Created: 10, Queued: 1, Succeeded: 7, DeadLettered: 2},
		Fates: []reports.JobFate{
			{JobID: "pay-auth", Task: "charge", State: "dead-lettered", LastMove: "dead-lettered", Severity: "high", Class: "critical", EverDeadLettered: true},
			{JobID: "pay-ok", Task: "charge", State: "succeeded", LastMove: "succeeded"},
		},
		DLQ: reports.DLQ{Total: 3, Entries: []reports.DLQEntry{
			{JobID: "charge-3", Task: "charge", Status: "requeued", Class: "transient", Severity: "medium", Rule: "http-5xx", Attempts: 4, Reason: "exhausted"},
			{JobID: "charge-7", Task: "charge", Status: "failed", Class: "permanent", Severity: "low", Rule: "card-declined", Attempts: 1, Reason: "permanent"},
			{JobID: "pay-auth", Task: "charge", Status: "failed", Class: "critical", Severity: "high", Rule: "auth-status", Attempts: 1, Reason: "critical"},
		}},
		Alerts: reports.Alerts{Deliveries: []reports.Delivery{
			{AtMs: 210_050, Receiver: "on-call", Fingerprint: "fp-auth", Name: "job-failed", Severity: "high", Status: "firing", Count: 1, Summary: "charge failed: critical"},
			{AtMs: 215_000, Receiver: "team", Fingerprint: "fp-smtp", Name: "job-failed", Severity: "medium", Status: "firing", Count: 3, Summary: "send-receipt failed: transient"},
			{AtMs: 510_050, Receiver: "on-call", Fingerprint: "fp-auth", Name: "job-failed", Severity: "high", Status: "resolved", Count: 1, Summary: "charge failed: critical"},
		}},
		Breakers: []reports.Transition{
			{AtMs: 240_500, Breaker: "payment-gateway", From: "closed", To: "open", Reason: "consecutive-failures"},
			{AtMs: 250_500, Breaker: "payment-gateway", From: "open", To: "half-open", Reason: "open-elapsed"},
			{AtMs: 251_000, Breaker: "payment-gateway", From: "half-open", To: "closed", Reason: "probes-succeeded"},
		},
	}
}

// broken is a hand-built result of a run that failed an expectation and
// stopped on a violation.
func broken() *reports.Result {
	r := healthy()
	r.Verdict = reports.Failed
	r.Expectations = append(r.Expectations, reports.Expectation{Name: "job pay-auth ends dead-lettered with severity high",
		Expected: "dead-lettered with severity high", Actual: "scheduled (retry) with severity medium", Verdict: reports.Failed})
	r.Violations = []reports.Violation{{Invariant: oracle.InvNoRetryOfFinal, AtMs: 180_050, Seed: 1, JobID: "pay-auth",
		Message: `job pay-auth: a critical failure (fault revoked-key) was scheduled for a retry: the classifier said transient by rule "auth-status"`,
		Trail: []string{
			"+3m0s  none → queued (enqueued), attempts 0",
			"+3m0s  queued → in-flight (leased), attempts 0",
			`+3m0.05s  attempt failed: injected critical (fault revoked-key); classifier said transient by rule "auth-status" → retry`,
		}}}
	r.Fates[0] = reports.JobFate{JobID: "pay-auth", Task: "charge", State: "scheduled", LastMove: "retry", Severity: "medium", Class: "transient"}
	r.Fates[1].State, r.Fates[1].LastMove = "in-flight", "leased"
	r.Ledger.Succeeded = 6
	return r
}

// failure checks that m refuses actual and returns its failure message.
func failure(m types.GomegaMatcher, actual any) string {
	GinkgoHelper()
	ok, err := m.Match(actual)
	Expect(err).NotTo(HaveOccurred())
	Expect(ok).To(BeFalse(), "the matcher accepted the result")
	return m.FailureMessage(actual)
}

// negated checks that m accepts actual and returns its negated failure
// message.
func negated(m types.GomegaMatcher, actual any) string {
	GinkgoHelper()
	ok, err := m.Match(actual)
	Expect(err).NotTo(HaveOccurred())
	Expect(ok).To(BeTrue(), "the matcher refused the result")
	return m.NegatedFailureMessage(actual)
}

var _ = Describe("simmatchers", func() {
	It("refuses a nil result with ErrNilResult", func() {
		for _, m := range []types.GomegaMatcher{Pass(), LoseNoJob(), HaveDeadLettered("x", classify.High), HaveSucceeded("x"),
			HavePages(1, ""), HaveDrainedDLQ(), HaveViolated(oracle.InvAttempts), HaveBreakerTransitionsAtMost("b", 1)} {
			_, err := m.Match((*reports.Result)(nil))
			Expect(err).To(MatchError(ErrNilResult))
		}
	})

	It("refuses what is not a *reports.Result", func() {
		_, err := Pass().Match(reports.Result{})
		Expect(err).To(MatchError(ContainSubstring("Matcher expected actual of type <*reports.Result>")))
	})

	Describe("Pass", func() {
		It("accepts a passed run", func() {
			Expect(healthy()).To(Pass())
			Expect(negated(Pass(), healthy())).To(Equal(`Expected scenario "payments" (seed 1) not to pass, but it passed: 1 expectation held and no invariant was violated`))
		})

		It("lists the failed expectations and the violation with its trail", func() {
			Expect(failure(Pass(), broken())).To(Equal(`Expected scenario "payments" (seed 1) to pass, but its verdict is failed:
  expectation failed: job pay-auth ends dead-lettered with severity high: expected dead-lettered with severity high, got scheduled (retry) with severity medium
  invariant no-retry-of-permanent-or-critical violated at +3m0.05s by job pay-auth: job pay-auth: a critical failure (fault revoked-key) was scheduled for a retry: the classifier said transient by rule "auth-status"
      +3m0s  none → queued (enqueued), attempts 0
      +3m0s  queued → in-flight (leased), attempts 0
      +3m0.05s  attempt failed: injected critical (fault revoked-key); classifier said transient by rule "auth-status" → retry`))
		})

		It("gives the error of a run that errored", func() {
			r := healthy()
			r.Verdict, r.Error = reports.Errored, "dequeue from payments: connection refused"
			Expect(failure(Pass(), r)).To(Equal(`Expected scenario "payments" (seed 1) to pass, but its verdict is errored:
  the run errored: dequeue from payments: connection refused`))
		})
	})

	Describe("LoseNoJob", func() {
		It("accepts a ledger that adds up", func() {
			Expect(healthy()).To(LoseNoJob())
			Expect(negated(LoseNoJob(), healthy())).To(Equal(`Expected scenario "payments" (seed 1) to lose a job, but all 10 created jobs are accounted for: queued 1 + in flight 0 + scheduled 0 + in fallback 0 + dead-lettered 2 + succeeded 7 + removed 0 = 10`))
		})

		It("spells out a ledger that does not add up", func() {
			Expect(failure(LoseNoJob(), broken())).To(Equal(`Expected scenario "payments" (seed 1) to lose no job, but its ledger accounts for 9 of its 10 created jobs (queued 1 + in flight 0 + scheduled 0 + in fallback 0 + dead-lettered 2 + succeeded 6 + removed 0 = 9)`))
		})

		It("gives the conservation violation", func() {
			r := healthy()
			r.Violations = []reports.Violation{{Invariant: oracle.InvConservation, AtMs: 12_000, JobID: "work-17",
				Message: "job work-17 was dead-lettered, but the DLQ store has no entry for it: it was dropped without an event (5 entries held, 6 dead-lettered)",
				Trail:   []string{"+11.5s  in-flight → dead-lettered (dead-lettered), attempts 1"}}}
			Expect(failure(LoseNoJob(), r)).To(Equal(`Expected scenario "payments" (seed 1) to lose no job, but invariant conservation violated at +12s by job work-17: job work-17 was dead-lettered, but the DLQ store has no entry for it: it was dropped without an event (5 entries held, 6 dead-lettered)
      +11.5s  in-flight → dead-lettered (dead-lettered), attempts 1`))
		})
	})

	Describe("HaveDeadLettered", func() {
		It("reads the job's fate", func() {
			Expect(healthy()).To(HaveDeadLettered("pay-auth", classify.High))
			Expect(healthy()).To(HaveDeadLettered("pay-auth", classify.SeverityNone))
			Expect(failure(HaveDeadLettered("pay-auth", classify.Medium), healthy())).To(Equal(
				`Expected job pay-auth of scenario "payments" (seed 1) to be dead-lettered with severity medium, but it ended dead-lettered (last move dead-lettered) with severity high, class critical`))
			Expect(failure(HaveDeadLettered("pay-auth", classify.High), broken())).To(Equal(
				`Expected job pay-auth of scenario "payments" (seed 1) to be dead-lettered with severity high, but it ended scheduled (last move retry) with severity medium, class transient`))
			Expect(negated(HaveDeadLettered("pay-auth", classify.High), healthy())).To(Equal(
				`Expected job pay-auth of scenario "payments" (seed 1) not to be dead-lettered with severity high, but it ended dead-lettered (last move dead-lettered) with severity high, class critical`))
		})

		It("reads the DLQ entry of a job without a fate", func() {
			Expect(healthy()).To(HaveDeadLettered("charge-7", classify.Low))
			Expect(failure(HaveDeadLettered("charge-3", classify.SeverityNone), healthy())).To(Equal(
				`Expected job charge-3 of scenario "payments" (seed 1) to be dead-lettered, but its DLQ entry is requeued with severity medium, class transient by rule "http-5xx", after 4 attempts (exhausted)`))
		})

		It("says when the report does not know the job", func() {
			r := healthy()
			r.DLQ.Truncated = true
			Expect(failure(HaveDeadLettered("charge-9", classify.Low), r)).To(Equal(
				`Expected job charge-9 of scenario "payments" (seed 1) to be dead-lettered with severity low, but the report has neither a fate nor a DLQ entry for it (a run keeps the fates of its explicit jobs and of the jobs an expectation names; it lists only the first 3 DLQ entries)`))
		})
	})

	Describe("HaveSucceeded", func() {
		It("reads the job's fate", func() {
			Expect(healthy()).To(HaveSucceeded("pay-ok"))
			Expect(failure(HaveSucceeded("pay-ok"), broken())).To(Equal(
				`Expected job pay-ok of scenario "payments" (seed 1) to succeed, but it ended in-flight (last move leased)`))
			Expect(negated(HaveSucceeded("pay-ok"), healthy())).To(Equal(
				`Expected job pay-ok of scenario "payments" (seed 1) not to succeed, but it ended succeeded (last move succeeded)`))
			Expect(failure(HaveSucceeded("charge-1"), healthy())).To(Equal(
				`Expected job charge-1 of scenario "payments" (seed 1) to succeed, but the report has neither a fate nor a DLQ entry for it (a run keeps the fates of its explicit jobs and of the jobs an expectation names)`))
		})
	})

	Describe("HavePages", func() {
		It("counts the firing high-severity deliveries", func() {
			Expect(healthy()).To(HavePages(1, ""))
			Expect(healthy()).To(HavePages(1, "fp-auth"))
			Expect(healthy()).To(HavePages(0, "fp-smtp"))
		})

		It("lists the pages sent", func() {
			r := healthy()
			r.Alerts.Deliveries = append(r.Alerts.Deliveries, reports.Delivery{AtMs: 211_000, Receiver: "on-call", Fingerprint: "fp-auth",
				Severity: "high", Status: "firing", Count: 2, Summary: "charge failed: critical"})
			Expect(failure(HavePages(1, "fp-auth"), r)).To(Equal(`Expected scenario "payments" (seed 1) to send 1 page for fingerprint fp-auth, but receivers got 2:
  +3m30.05s to on-call: "charge failed: critical" (fingerprint fp-auth, count 1)
  +3m31s to on-call: "charge failed: critical" (fingerprint fp-auth, count 2)`))
			Expect(failure(HavePages(2, "fp-smtp"), r)).To(Equal(`Expected scenario "payments" (seed 1) to send 2 pages for fingerprint fp-smtp, but receivers got 0`))
			Expect(negated(HavePages(1, ""), healthy())).To(Equal(`Expected scenario "payments" (seed 1) not to send 1 page, but receivers got 1:
  +3m30.05s to on-call: "charge failed: critical" (fingerprint fp-auth, count 1)`))
		})

		It("counts from the uncapped per-fingerprint counts and says when the list is cut short", func() {
			r := healthy()
			r.Alerts.Truncated = true
			r.Alerts.PagesByFingerprint = map[string]int64{"fp-auth": 5, "fp-breaker": 1}
			Expect(failure(HavePages(2, ""), r)).To(HavePrefix(`Expected scenario "payments" (seed 1) to send 2 pages, but receivers got 6 (the report lists the first 3 deliveries):`))
			Expect(r).To(HavePages(5, "fp-auth"))
		})
	})

	Describe("HaveDrainedDLQ", func() {
		It("accepts a DLQ without dead jobs", func() {
			r := healthy()
			r.Ledger.DeadLettered, r.Ledger.Succeeded = 0, 9
			r.DLQ.Entries = r.DLQ.Entries[:1] // the requeued one
			Expect(r).To(HaveDrainedDLQ())
			Expect(negated(HaveDrainedDLQ(), r)).To(Equal(`Expected the DLQ of scenario "payments" (seed 1) not to be drained at the end, but it holds no dead-lettered job`))
		})

		It("lists the entries left", func() {
			Expect(failure(HaveDrainedDLQ(), healthy())).To(Equal(`Expected the DLQ of scenario "payments" (seed 1) to be drained at the end, but it holds 2 dead-lettered jobs:
  job charge-7 (charge): failed, severity low, class permanent, rule "card-declined", permanent
  job pay-auth (charge): failed, severity high, class critical, rule "auth-status", critical`))
		})
	})

	Describe("HaveViolated", func() {
		It("finds the invariant", func() {
			Expect(broken()).To(HaveViolated(oracle.InvNoRetryOfFinal))
			Expect(negated(HaveViolated(oracle.InvNoRetryOfFinal), broken())).To(Equal(`Expected scenario "payments" (seed 1) not to violate invariant no-retry-of-permanent-or-critical, but it did: invariant no-retry-of-permanent-or-critical violated at +3m0.05s by job pay-auth: job pay-auth: a critical failure (fault revoked-key) was scheduled for a retry: the classifier said transient by rule "auth-status"
      +3m0s  none → queued (enqueued), attempts 0
      +3m0s  queued → in-flight (leased), attempts 0
      +3m0.05s  attempt failed: injected critical (fault revoked-key); classifier said transient by rule "auth-status" → retry`))
		})

		It("names what was violated instead", func() {
			Expect(failure(HaveViolated(oracle.InvAttempts), healthy())).To(Equal(`Expected scenario "payments" (seed 1) to violate invariant attempts-within-policy, but it violated none`))
			Expect(failure(HaveViolated(oracle.InvAttempts), broken())).To(Equal(`Expected scenario "payments" (seed 1) to violate invariant attempts-within-policy, but it violated another: invariant no-retry-of-permanent-or-critical violated at +3m0.05s by job pay-auth: job pay-auth: a critical failure (fault revoked-key) was scheduled for a retry: the classifier said transient by rule "auth-status"`))
		})
	})

	Describe("HaveBreakerTransitionsAtMost", func() {
		It("counts the breaker's transitions", func() {
			Expect(healthy()).To(HaveBreakerTransitionsAtMost("payment-gateway", 3))
			Expect(healthy()).To(HaveBreakerTransitionsAtMost("smtp", 0))
			Expect(negated(HaveBreakerTransitionsAtMost("smtp", 0), healthy())).To(Equal(
				`Expected breaker smtp of scenario "payments" (seed 1) to change state more than 0 times, but it changed 0 times`))
		})

		It("lists the first transitions of a flapping breaker", func() {
			r := healthy()
			for i := range int64(12) {
				r.Breakers = append(r.Breakers, reports.Transition{AtMs: 300_000 + i*1000, Breaker: "payment-gateway", From: "half-open", To: "open", Reason: "probe-failed"})
			}
			Expect(failure(HaveBreakerTransitionsAtMost("payment-gateway", 4), r)).To(Equal(`Expected breaker payment-gateway of scenario "payments" (seed 1) to change state at most 4 times, but it changed 15 times:
  +4m0.5s closed → open (consecutive-failures)
  +4m10.5s open → half-open (open-elapsed)
  +4m11s half-open → closed (probes-succeeded)
  +5m0s half-open → open (probe-failed)
  +5m1s half-open → open (probe-failed)
  +5m2s half-open → open (probe-failed)
  +5m3s half-open → open (probe-failed)
  +5m4s half-open → open (probe-failed)
  +5m5s half-open → open (probe-failed)
  +5m6s half-open → open (probe-failed)
  ... and 5 more`))
		})
	})

	It("reads a result of sim.Run", func() {
		sc := scenarios.Scenario{
			Name: "doomed-sync", Seed: 5, Duration: time.Minute,
			Workload: scenarios.WorkloadSpec{
				Tasks: []scenarios.TaskSpec{
					{Name: "sync", Dependency: "warehouse", Service: 10 * time.Millisecond},
					{Name: "ping", Service: time.Millisecond},
				},
				Arrivals: scenarios.ArrivalsSpec{Kind: scenarios.Constant, Rate: 2},
				Jobs:     []scenarios.PlannedJobSpec{{At: time.Second, ID: "sync-stock", Task: "sync"}, {At: time.Second, ID: "ping-first", Task: "ping"}},
			},
			System: scenarios.SystemSpec{Retry: retry.Config{MaxAttempts: 3, BaseDelay: 100 * time.Millisecond, MaxDelay: time.Second}},
			Faults: []faults.Fault{{Name: "warehouse-down", Target: faults.Target{Kind: faults.Dependency, Name: "warehouse"},
				Model: faults.HTTPStatus{Code: 503}}},
			Expect: []scenarios.Expectation{scenarios.JobFate{JobID: "sync-stock", State: disposition.DeadLettered}},
		}
		res, err := sim.Run(context.Background(), sc)
		Expect(err).NotTo(HaveOccurred())
		Expect(res).To(Pass())
		Expect(res).To(LoseNoJob())
		Expect(res).To(HaveDeadLettered("sync-stock", classify.Medium))
		Expect(res).To(HaveSucceeded("ping-first"))
		Expect(res).NotTo(HaveDrainedDLQ())
		Expect(res).To(HavePages(0, ""))
		Expect(res).NotTo(HaveViolated(oracle.InvAttempts))
		Expect(res).To(HaveBreakerTransitionsAtMost("warehouse", 0))
	})
})
