package reports_test

import (
	"bytes"
	"fmt"
	"os"

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
		Expect(regressions(d)).To(ContainElement(HaveField("What", "a page within 1m0s of the first critical failure")))
		Expect(d.Changes).To(ContainElement(reports.Change{Kind: reports.ChangeAlerts, What: "pages", Old: "2", New: "1"}))
		Expect(d.Changes).NotTo(ContainElement(HaveField("What", "run ended at")), "a violation no longer stops the run")

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

	It("lists the dead letters still held at the end among the dispositions", func() {
		new.Ledger.DeadLettered -= 1
		new.Ledger.HeldAtEnd += 1
		d := reports.Diff(old, new)
		Expect(d.Changes).To(ContainElement(reports.Change{Kind: reports.ChangeDisposition, What: "held",
			Old: fmt.Sprint(old.Ledger.HeldAtEnd), New: fmt.Sprint(old.Ledger.HeldAtEnd + 1)}))
		Expect(d.Regression).To(BeFalse())
	})

	It("flags two different scenarios, which Comparable refuses", func() {
		d := reports.Diff(passingRun(), failingRun())
		Expect(d.Changes[0]).To(Equal(reports.Change{Kind: reports.ChangeScenario, What: "scenario", Old: "dlq-basics", New: "payment-challenge", Regression: true}))
		Expect(d.Regression).To(BeTrue())

		err := reports.Comparable(passingRun(), failingRun())
		Expect(err).To(MatchError(reports.ErrDifferentScenarios))
		Expect(err.Error()).To(Equal(`the reports are of different scenarios: "dlq-basics" and "payment-challenge"; report diff compares two runs of one scenario (two versions of a team's handler, say)`))
		Expect(reports.Comparable(fixedRun(), failingRun())).To(Succeed())
	})

	It("counts every violation of an invariant when both runs do: more is a regression", func() {
		broken, worse := failingRun(), failingRun()
		for i := range worse.Invariants {
			if worse.Invariants[i].Violations > 0 {
				worse.Invariants[i].Violations += 4
			}
		}
		d := reports.Diff(broken, worse)
		Expect(d.Changes).To(ContainElement(reports.Change{Kind: reports.ChangeViolation, What: "no-retry-of-permanent-or-critical violations", Old: "1", New: "5", Regression: true}))
		Expect(reports.Diff(worse, broken).Regression).To(BeFalse())

		off := failingRun()
		for i := range off.Invariants {
			if off.Invariants[i].Name == "one-page-per-repeat-interval" {
				off.Invariants[i] = reports.InvariantResult{Name: "one-page-per-repeat-interval", Verdict: reports.Skipped, Note: "turned off"}
			}
		}
		Expect(reports.Diff(broken, off).Changes).To(ConsistOf(reports.Change{Kind: reports.ChangeViolation, What: "one-page-per-repeat-interval checked",
			Old: "checked", New: "not checked (turned off)"}))
	})

	It("compares a version-1 report with a version-2 one, counts aside", func() {
		f, err := os.Open("testdata/v1/payment-challenge.failing.json")
		Expect(err).NotTo(HaveOccurred())
		defer f.Close()
		v1, err := reports.Read(f)
		Expect(err).NotTo(HaveOccurred())
		d := reports.Diff(v1, failingRun())
		// Version 1 stopped at the first violation; version 2 ran on and
		// found the page that never came.
		Expect(d.Changes).To(ContainElement(reports.Change{Kind: reports.ChangeVerdict, What: "run ended at", Old: "+3m0.031s of 10m0s", New: "+10m0s"}))
		Expect(d.Changes).To(ContainElement(HaveField("What", "critical-failure-paged")))
		Expect(d.Changes).NotTo(ContainElement(HaveField("What", HaveSuffix(" violations"))))
	})

	It("counts an interrupted run as worse than a failed one", func() {
		failed, interrupted := failingRun(), failingRun()
		interrupted.Verdict = reports.Interrupted
		Expect(reports.Diff(failed, interrupted).Regression).To(BeTrue())
		Expect(reports.Diff(interrupted, failed).Regression).To(BeFalse())
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
