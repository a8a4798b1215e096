package reports_test

import (
	"bytes"
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reports"
)

func textOf(r *reports.Result, o reports.TextOptions) string {
	GinkgoHelper()
	var b bytes.Buffer
	Expect(reports.WriteText(&b, r, o)).To(Succeed())
	return b.String()
}

var _ = Describe("WriteText", func() {
	It("writes a passing run as a verdict line and its totals", func() {
		r := passingRun()
		out := textOf(r, reports.TextOptions{})
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		Expect(lines).To(HaveLen(2))
		Expect(lines[0]).To(Equal("PASS  dlq-basics  seed 1"))
		Expect(lines[1]).To(ContainSubstring("0 lost"))
		Expect(lines[1]).To(HaveSuffix(fmt.Sprintf("%d expectations held", len(r.Expectations))))
	})

	It("writes a failed run's violation with its trail, its failed expectations and the reproduce command", func() {
		out := textOf(failingRun(), reports.TextOptions{})
		Expect(out).To(HavePrefix("FAIL  payment-challenge  seed 1\n"))
		Expect(out).NotTo(ContainSubstring("stopped at"), "a violation no longer stops the run")
		Expect(out).To(ContainSubstring("✗ invariant no-retry-of-permanent-or-critical at +3m0.061s, job pay-auth (seed 1)"))
		Expect(out).To(ContainSubstring("✗ invariant critical-failure-paged at +8m0.061s, job pay-auth (seed 1)"))
		Expect(out).To(ContainSubstring("      trail:\n        +3m0s  none → queued (enqueued), attempts 0\n"))
		Expect(out).To(ContainSubstring("  ✗ a page within 1m0s of the first critical failure\n      expected ≤ 1m0s, got no page for a critical failure\n"))
		Expect(out).To(HaveSuffix("  reproduce: faultline run payment-challenge --seed 1\n"))
		Expect(out).NotTo(ContainSubstring("ledger"))
	})

	It("shows a failed operator step even when the run passes", func() {
		r := passingRun()
		r.Steps = append(r.Steps, reports.Step{AtMs: 90_000, Kind: "requeue", Detail: "matched 0", Error: "dlq store: connection refused"})
		out := textOf(r, reports.TextOptions{})
		Expect(out).To(HavePrefix("PASS  dlq-basics  seed 1\n"))
		Expect(out).To(ContainSubstring("\n  ⚠ operator step failed: requeue (matched 0) at +1m30s: dlq store: connection refused\n"))
		Expect(textOf(r, reports.TextOptions{Verbose: true})).To(ContainSubstring("⚠ operator step failed: requeue"))
	})

	It("writes an errored run's error", func() {
		out := textOf(erroredRun(), reports.TextOptions{})
		Expect(out).To(HavePrefix("ERROR  dlq-basics  seed 1\n"))
		Expect(out).To(ContainSubstring("error: requeue: dlq store: dial tcp"))
	})

	It("adds the ledger, the DLQ, the alerts, the classifier, the breakers and the faults when verbose", func() {
		out := textOf(failingRun(), reports.TextOptions{Verbose: true})
		for _, s := range []string{
			"✗ no-retry-of-permanent-or-critical: violated 1 time\n",
			"✓ conservation: held\n",
			"created 2872 = queued 0 + in flight 0 + scheduled 0",
			"DLQ at the end: 37 entries",
			"pay-declined",
			"alerts: 4 notifications, 1 page, 0 rejected",
			"critical       1    said transient 1",
			"breaker transitions: 36",
			"revoked-key            dependency/payment-gateway  auth-failure     1 hit (+3m0s … +3m0s)",
		} {
			Expect(out).To(ContainSubstring(s))
		}
		Expect(textOf(passingRun(), reports.TextOptions{Verbose: true})).To(ContainSubstring("reproduce: faultline run dlq-basics --seed 1"))
	})

	It("lists the breaker transitions and marks pages when verbose", func() {
		out := textOf(fixedRun(), reports.TextOptions{Verbose: true})
		Expect(out).To(MatchRegexp(`\+\S+\s+payment-gateway \(w\d\)\s+closed → open`), "each process's breaker, named")
		Expect(out).To(MatchRegexp(`slack-oncall\s+high\s+firing\s+\S+\s+×\d+\s+PAGE`))
	})

	It("colours only when asked", func() {
		for _, verbose := range []bool{false, true} {
			Expect(textOf(failingRun(), reports.TextOptions{Verbose: verbose})).NotTo(ContainSubstring("\x1b["))
		}
		out := textOf(failingRun(), reports.TextOptions{Color: true})
		Expect(out).To(HavePrefix("\x1b[1m\x1b[31mFAIL\x1b[0m  payment-challenge"))
		Expect(out).To(ContainSubstring("\x1b[31m✗ invariant no-retry-of-permanent-or-critical\x1b[0m"))
		Expect(textOf(passingRun(), reports.TextOptions{Color: true})).To(HavePrefix("\x1b[1m\x1b[32mPASS\x1b[0m"))
	})

	It("writes an interrupted run as such: why it stopped, its expectations not evaluated, not listed as failed", func() {
		r := interruptedRun()
		n := len(r.Expectations)
		out := textOf(r, reports.TextOptions{})
		Expect(out).To(HavePrefix("INTERRUPTED  dlq-basics  seed 1\n"))
		Expect(out).To(ContainSubstring(fmt.Sprintf("; %d of %d expectations not evaluated\n  stopped at +1m0s of 5m0s\n", n, n)))
		Expect(out).To(ContainSubstring(fmt.Sprintf("  interrupted: run stopped at +1m0s: context canceled\n    %d expectations not evaluated: a run that did not reach its end proves nothing either way\n", n)))
		Expect(out).NotTo(ContainSubstring("✗"))
		Expect(textOf(interruptedRun(), reports.TextOptions{Verbose: true})).To(ContainSubstring(
			"    – conservation: not checked: not checked to the end: the run was interrupted at +1m0s\n"))
	})

	It("lists a turned-off invariant as not checked, never as held", func() {
		r := passingRun()
		r.Invariants[7] = reports.InvariantResult{Name: "critical-failure-paged", Verdict: reports.Skipped, Note: "turned off (invariants.pageWithin: off)"}
		Expect(textOf(r, reports.TextOptions{Verbose: true})).To(ContainSubstring("    – critical-failure-paged: not checked: turned off (invariants.pageWithin: off)\n"))
	})

	It("shows the first violation of an invariant with its trail, a few more on a line each, and how many in all", func() {
		out := textOf(manyViolations(), reports.TextOptions{})
		Expect(out).To(ContainSubstring("  ✗ invariant no-double-charge at +0s, job charge-0 (seed 1)\n"))
		Expect(out).To(ContainSubstring("      also at +1s, job charge-1: the payment of job charge-1 was charged 2 times: the job has no idempotency key\n"))
		Expect(out).To(ContainSubstring("      also at +5s, job charge-5: "))
		Expect(out).NotTo(ContainSubstring("charge-6"))
		Expect(out).To(ContainSubstring("      … and 244 more violations of no-double-charge (250 in all)\n"))
		Expect(strings.Count(out, "trail:")).To(Equal(3), "one trail per violated invariant")
	})

	It("warns of a fault that never hit", func() {
		r := passingRun()
		r.Warnings = []string{"fault late (outage on dependency/smtp) never hit"}
		Expect(textOf(r, reports.TextOptions{})).To(ContainSubstring("\n  ⚠ warning: fault late (outage on dependency/smtp) never hit\n"))
	})

	It("makes a reproduce command from the scenario file when the run has none", func() {
		r := failingRun()
		r.Reproduce = ""
		r.ScenarioFile = "my scenarios/pay.yaml"
		Expect(textOf(r, reports.TextOptions{})).To(HaveSuffix("reproduce: faultline run 'my scenarios/pay.yaml' --seed 1\n"))
		r.ScenarioFile = "builtin:payment-challenge"
		Expect(textOf(r, reports.TextOptions{})).To(HaveSuffix("reproduce: faultline run payment-challenge --seed 1\n"))
	})
})

var _ = Describe("The writers", func() {
	It("refuse a nil result with ErrNilResult", func() {
		var b bytes.Buffer
		Expect(reports.WriteJSON(&b, nil)).To(MatchError(reports.ErrNilResult))
		Expect(reports.WriteText(&b, nil, reports.TextOptions{})).To(MatchError(reports.ErrNilResult))
		Expect(reports.WriteJUnit(&b, []*reports.Result{passingRun(), nil})).To(MatchError(reports.ErrNilResult))
		Expect(reports.WriteMarkdown(&b, []*reports.Result{nil})).To(MatchError(reports.ErrNilResult))
		Expect(b.Len()).To(BeZero())
	})
})
