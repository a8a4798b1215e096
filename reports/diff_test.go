package reports_test

import (
	"bytes"
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reports"
)

// regressions returns the changes of d that are regressions.
func regressions(d reports.DiffResult) []reports.Change {
	var out []reports.Change
	for _, c := range d.Changes {
		if c.Regression {
			out = append(out, c)
		}
	}
	return out
}

var _ = Describe("Diff", func() {
	var old, new *reports.Result

	BeforeEach(func() {
		old, new = passingRun(), passingRun()
	})

	It("finds nothing between two runs that differ only in the tool version", func() {
		old.ToolVersion, new.ToolVersion = "v1.0.0", "v1.1.0"
		d := reports.Diff(old, new)
		Expect(d).To(Equal(reports.DiffResult{Scenario: "dlq-basics"}))
	})

	It("flags an expectation that flipped from passed to failed as a regression, and the way back as none", func() {
		e := &new.Expectations[4]
		e.Actual, e.Verdict = "7", reports.Failed
		new.Verdict = reports.Failed
		d := reports.Diff(old, new)
		Expect(d.Regression).To(BeTrue())
		Expect(d.Changes).To(ContainElement(reports.Change{Kind: reports.ChangeExpectation, What: "retried = 5",
			Old: "passed (actual 5)", New: "failed (actual 7)", Regression: true}))
		Expect(d.Changes).To(ContainElement(reports.Change{Kind: reports.ChangeVerdict, What: "verdict", Old: "passed", New: "failed", Regression: true}))

		back := reports.Diff(new, old)
		Expect(back.Regression).To(BeFalse())
		Expect(back.Changes).To(ContainElement(reports.Change{Kind: reports.ChangeExpectation, What: "retried = 5",
			Old: "failed (actual 7)", New: "passed (actual 5)"}))
		Expect(back.Changes).To(ContainElement(reports.Change{Kind: reports.ChangeVerdict, What: "verdict", Old: "failed", New: "passed"}))
	})

	It("flags a violation that appeared, not one that disappeared", func() {
		fixed, broken := fixedRun(), failingRun()
		d := reports.Diff(fixed, broken)
		Expect(d.Scenario).To(Equal("payment-challenge"))
		Expect(d.Regression).To(BeTrue())
		Expect(regressions(d)).To(ContainElement(SatisfyAll(
			HaveField("Kind", reports.ChangeViolation),
			HaveField("What", "no-retry-of-permanent-or-critical"),
			HaveField("Old", ""),
			HaveField("New", ContainSubstring("job pay-auth: a critical failure")),
		)))
		Expect(regressions(d)).To(ContainElement(HaveField("What", "pages with receiver slack-oncall ≥ 1")))
		Expect(d.Changes).To(ContainElement(reports.Change{Kind: reports.ChangeAlerts, What: "pages", Old: "2", New: "0"}))
		Expect(d.Changes).To(ContainElement(reports.Change{Kind: reports.ChangeVerdict, What: "run ended at", Old: "+10m0s", New: "+3m0.031s of 10m0s"}))

		back := reports.Diff(broken, fixed)
		Expect(back.Regression).To(BeFalse())
		Expect(back.Changes).To(ContainElement(SatisfyAll(
			HaveField("Kind", reports.ChangeViolation), HaveField("Old", ContainSubstring("job pay-auth")), HaveField("New", ""), HaveField("Regression", false),
		)))
	})

	It("lists dispositions that moved, with more lost jobs a regression and more dead letters not one", func() {
		new.Ledger.Succeeded -= 3
		new.Ledger.DeadLettered += 1
		new.Ledger.Lost += 2
		new.Ledger.ByTask[0].Succeeded -= 3
		d := reports.Diff(old, new)
		task := old.Ledger.ByTask[0]
		Expect(d.Changes).To(Equal([]reports.Change{
			{Kind: reports.ChangeDisposition, What: "dead-lettered", Old: "1", New: "2"},
			{Kind: reports.ChangeDisposition, What: "succeeded", Old: "301", New: "298"},
			{Kind: reports.ChangeDisposition, What: "lost", Old: "0", New: "2", Regression: true},
			{Kind: reports.ChangeDisposition, What: "task " + task.Task + ": succeeded", Old: fmt.Sprint(task.Succeeded), New: fmt.Sprint(task.Succeeded - 3)},
		}))
		Expect(d.Regression).To(BeTrue())

		new.Ledger.Lost = 0
		d = reports.Diff(old, new)
		Expect(d.Changes).To(HaveLen(3))
		Expect(d.Regression).To(BeFalse())
	})

	It("flags two different scenarios", func() {
		d := reports.Diff(passingRun(), failingRun())
		Expect(d.Changes[0]).To(Equal(reports.Change{Kind: reports.ChangeScenario, What: "scenario", Old: "dlq-basics", New: "payment-challenge", Regression: true}))
		Expect(d.Regression).To(BeTrue())
	})

	It("notes a different seed or scenario document without calling it a regression", func() {
		new.Seed = 2
		new.ScenarioHash = "sha256:other"
		d := reports.Diff(old, new)
		Expect(d.Changes).To(HaveExactElements(
			HaveField("What", "seed"),
			HaveField("What", "scenario document"),
		))
		Expect(d.Regression).To(BeFalse())
	})

	It("counts an errored run as worse than a failed one, and a new failing expectation as a regression", func() {
		failed, errored := failingRun(), failingRun()
		errored.Verdict = reports.Errored
		Expect(reports.Diff(failed, errored).Regression).To(BeTrue())
		Expect(reports.Diff(errored, failed).Regression).To(BeFalse())

		new.Expectations = append(new.Expectations, reports.Expectation{Name: "pages = 1", Expected: "= 1", Actual: "0", Verdict: reports.Failed})
		Expect(regressions(reports.Diff(old, new))).To(ConsistOf(reports.Change{Kind: reports.ChangeExpectation, What: "pages = 1", New: "failed (actual 0)", Regression: true}))
		Expect(reports.Diff(new, old).Changes).To(ConsistOf(reports.Change{Kind: reports.ChangeExpectation, What: "pages = 1", Old: "failed (actual 0)"}))
	})
})

var _ = Describe("WriteDiff", func() {
	It("writes one line a change, regressions marked, and the outcome", func() {
		old, new := passingRun(), passingRun()
		new.Ledger.Lost = 1
		new.Alerts.Notifications = 3
		var b bytes.Buffer
		Expect(reports.WriteDiff(&b, reports.Diff(old, new))).To(Succeed())
		Expect(b.String()).To(Equal("report diff: dlq-basics\n" +
			"✗ disposition  lost: 0 → 1\n" +
			"  alerts       notifications: 2 → 3\n" +
			"regression: 1 of 2 changes (marked ✗)\n"))

		b.Reset()
		Expect(reports.WriteDiff(&b, reports.Diff(old, old))).To(Succeed())
		Expect(b.String()).To(Equal("report diff: dlq-basics\n  no changes\nno regression\n"))
	})
})
