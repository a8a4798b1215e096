package reports_test

import (
	"bytes"
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
		out := textOf(passingRun(), reports.TextOptions{})
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		Expect(lines).To(HaveLen(2))
		Expect(lines[0]).To(Equal("PASS  dlq-basics  seed 1"))
		Expect(lines[1]).To(ContainSubstring("0 lost"))
		Expect(lines[1]).To(HaveSuffix("11 expectations held"))
	})

	It("writes a failed run's violation with its trail, its failed expectations and the reproduce command", func() {
		out := textOf(failingRun(), reports.TextOptions{})
		Expect(out).To(HavePrefix("FAIL  payment-challenge  seed 1\n"))
		Expect(out).To(ContainSubstring("stopped at +3m0.031s of 10m0s"))
		Expect(out).To(ContainSubstring("✗ invariant no-retry-of-permanent-or-critical at +3m0.031s, job pay-auth (seed 1)"))
		Expect(out).To(ContainSubstring("      trail:\n        +3m0s  none → queued (enqueued), attempts 0\n"))
		Expect(out).To(ContainSubstring("  ✗ pages with receiver slack-oncall ≥ 1\n      expected ≥ 1, got 0\n"))
		Expect(out).To(HaveSuffix("  reproduce: faultline run payment-challenge --seed 1\n"))
		Expect(out).NotTo(ContainSubstring("ledger"))
	})

	It("writes an errored run's error", func() {
		out := textOf(erroredRun(), reports.TextOptions{})
		Expect(out).To(HavePrefix("ERROR  dlq-basics  seed 1\n"))
		Expect(out).To(ContainSubstring("error: requeue: dlq store: dial tcp"))
	})

	It("adds the ledger, the DLQ, the alerts, the classifier, the breakers and the faults when verbose", func() {
		out := textOf(failingRun(), reports.TextOptions{Verbose: true})
		for _, s := range []string{
			"created 1065 = queued 0 + in flight 1 + scheduled 2",
			"DLQ at the end: 2 entries",
			"pay-declined",
			"alerts: 2 notifications, 0 pages, 0 rejected",
			"critical       1    said transient 1",
			"breaker transitions: 0",
			"revoked-key       dependency/payment-gateway  auth-failure     1 hit (+3m0s … +3m0s)",
		} {
			Expect(out).To(ContainSubstring(s))
		}
		Expect(textOf(passingRun(), reports.TextOptions{Verbose: true})).To(ContainSubstring("reproduce: faultline run dlq-basics --seed 1"))
	})

	It("lists the breaker transitions and marks pages when verbose", func() {
		out := textOf(fixedRun(), reports.TextOptions{Verbose: true})
		Expect(out).To(MatchRegexp(`\+\S+\s+payment-gateway\s+closed → open`))
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
