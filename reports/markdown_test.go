package reports_test

import (
	"bytes"
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reports"
)

func markdownOf(rs ...*reports.Result) string {
	GinkgoHelper()
	var b bytes.Buffer
	Expect(reports.WriteMarkdown(&b, rs)).To(Succeed())
	return b.String()
}

// tableRows returns the lines of md that are rows of a table whose first
// cell is not a header or a delimiter.
func tableRows(md string) []string {
	var rows []string
	for _, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(l, "| ") && !strings.HasPrefix(l, "| Scenario") && !strings.HasPrefix(l, "| ---") && !strings.HasPrefix(l, "| Failed expectation") {
			rows = append(rows, l)
		}
	}
	return rows
}

// cells splits a table row on its unescaped pipes.
func cells(row string) []string {
	var out []string
	var cur strings.Builder
	for i := 0; i < len(row); i++ {
		switch {
		case row[i] == '\\' && i+1 < len(row):
			cur.WriteByte(row[i])
			cur.WriteByte(row[i+1])
			i++
		case row[i] == '|':
			out = append(out, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(row[i])
		}
	}
	return out[1:] // before the first pipe
}

var _ = Describe("WriteMarkdown", func() {
	It("summarises every run in a table: scenario, seed, verdict, jobs, lost, DLQ, pages", func() {
		pass, fail := passingRun(), failingRun()
		md := markdownOf(pass, fail)
		Expect(md).To(HavePrefix("## faultline: ❌ 1 of 2 runs failed\n"))
		Expect(md).To(ContainSubstring(fmt.Sprintf("| dlq-basics | 1 | ✅ passed | %d | 0 | %d | %d |", pass.Ledger.Created, pass.DLQ.Total, pass.Alerts.Pages)))
		Expect(md).To(ContainSubstring(fmt.Sprintf("| payment-challenge | 1 | ❌ failed | %d | 0 | %d | %d |", fail.Ledger.Created, fail.DLQ.Total, fail.Alerts.Pages)))
	})

	It("details only the failed runs: failed expectations, the violation with its trail, the reproduce command", func() {
		fail := failingRun()
		md := markdownOf(passingRun(), fail)
		Expect(md).NotTo(ContainSubstring("### ✅"))
		Expect(md).To(ContainSubstring("### ❌ payment-challenge (seed 1)"))
		Expect(tableRows(md)).To(HaveLen(2 + failedExpectations(fail)))
		Expect(md).To(ContainSubstring("| a page within 1m0s of the first critical failure | ≤ 1m0s | no page for a critical failure |"))
		Expect(md).To(ContainSubstring("**Invariant violated: critical-failure-paged** at +8m0.061s, job pay-auth:"))
		Expect(md).To(ContainSubstring("**Invariant violated: no-retry-of-permanent-or-critical** at +3m0.061s, job pay-auth:"))
		Expect(md).To(ContainSubstring("```text\n+3m0s  none → queued (enqueued), attempts 0\n"))
		Expect(md).To(ContainSubstring("Reproduce:\n\n```sh\nfaultline run payment-challenge --seed 1\n```\n"))
	})

	It("says all passed when they did", func() {
		md := markdownOf(passingRun(), fixedRun())
		Expect(md).To(HavePrefix("## faultline: ✅ 2 runs passed\n"))
		Expect(md).NotTo(ContainSubstring("###"))
	})

	It("escapes pipes, backticks and HTML, so a message cannot break the table or inject markup", func() {
		r := failingRun()
		r.Scenario = "a|b"
		r.Expectations[0] = reports.Expectation{Name: "count | `x` <script>alert(1)</script> *bold* [link](http://x)", Expected: "= 0\n|", Actual: "1 & <b>", Verdict: reports.Failed}
		md := markdownOf(r)
		Expect(md).NotTo(ContainSubstring("<script>"))
		Expect(md).NotTo(ContainSubstring("<b>"))
		row := ""
		for _, l := range tableRows(md) {
			if strings.Contains(l, "script") {
				row = l
			}
		}
		Expect(cells(row)).To(Equal([]string{
			"count \\| \\`x\\` \\<script\\>alert(1)\\</script\\> \\*bold\\* \\[link\\](http://x)", "= 0 \\|", "1 \\& \\<b\\>",
		}))
		Expect(md).To(ContainSubstring("| a\\|b | 1 |"))
	})

	It("fences a code block longer than any backticks inside it", func() {
		r := failingRun()
		r.Reproduce = "faultline run 'we```ird.yaml' --seed 1"
		Expect(markdownOf(r)).To(ContainSubstring("````sh\nfaultline run 'we```ird.yaml' --seed 1\n````\n"))
	})

	It("shows an errored run's error", func() {
		md := markdownOf(erroredRun())
		Expect(md).To(ContainSubstring("### ⚠️ dlq-basics (seed 1)"))
		Expect(md).To(ContainSubstring("**Error:**\n\n```text\nrequeue: dlq store: dial tcp 127.0.0.1:6379: connect: connection refused\n```"))
	})

	It("shows an interrupted run as such, its expectations not evaluated rather than failed", func() {
		r := interruptedRun()
		md := markdownOf(passingRun(), r)
		Expect(md).To(HavePrefix("## faultline: ⚠️ 1 of 2 runs passed, 1 interrupted (expectations not evaluated)\n"))
		Expect(md).To(ContainSubstring("| dlq-basics | 1 | ⚠️ interrupted |"))
		Expect(md).To(ContainSubstring(fmt.Sprintf("**Interrupted:**\n\n```text\nrun stopped at +1m0s: context canceled\n```\n\n%d expectations not evaluated: the run did not reach its end.\n", len(r.Expectations))))
		Expect(md).NotTo(ContainSubstring("Failed expectation"))
	})

	It("says, as the command line does, how many runs failed, were interrupted and were not made", func() {
		mw := reports.NewMarkdownWriter()
		for _, r := range []*reports.Result{passingRun(), failingRun(), failingRun(), interruptedRun()} {
			Expect(mw.Add(r)).To(Succeed())
		}
		mw.NotMade(216, 220)
		var b bytes.Buffer
		Expect(mw.Finish(&b)).To(Succeed())
		Expect(b.String()).To(HavePrefix("## faultline: ❌ 2 of 4 runs failed, 1 interrupted (expectations not evaluated); 216 of 220 runs not made\n"))
	})

	It("does not call a run with only runs not made a pass", func() {
		mw := reports.NewMarkdownWriter()
		Expect(mw.Add(passingRun())).To(Succeed())
		mw.NotMade(3, 4)
		var b bytes.Buffer
		Expect(mw.Finish(&b)).To(Succeed())
		Expect(b.String()).To(HavePrefix("## faultline: ⚠️ 1 of 1 run passed; 3 of 4 runs not made\n"))
	})

	It("counts an invariant's violations and names its turned-off invariants", func() {
		r := manyViolations()
		r.Invariants[7] = reports.InvariantResult{Name: "critical-failure-paged", Verdict: reports.Skipped, Note: "turned off (invariants.pageWithin: off)"}
		md := markdownOf(r)
		Expect(md).To(ContainSubstring("**Invariant violated: no-double-charge** at +0s, job charge-0:"))
		Expect(md).To(ContainSubstring("And 249 more violations of no-double-charge (jobs charge-1, charge-2, charge-3, charge-4, charge-5, charge-6, charge-7, charge-8…).\n"))
		Expect(md).To(ContainSubstring("Invariants not checked: critical-failure-paged (turned off (invariants.pageWithin: off)).\n"))
	})

	It("lists the warnings of passing runs after the failures, and a failing run's in its details", func() {
		pass, fail := passingRun(), failingRun()
		pass.Warnings = []string{"fault late never hit"}
		fail.Warnings = []string{"fault early never hit"}
		md := markdownOf(pass, fail)
		Expect(md).To(ContainSubstring("\n⚠️ Warning: fault early never hit\n"))
		Expect(md).To(HaveSuffix("**Warnings:**\n\n- dlq-basics (seed 1): fault late never hit\n"))
	})

	It("writes the same summary one run at a time, keeping only what it shows", func() {
		rs := []*reports.Result{passingRun(), failingRun(), interruptedRun()}
		mw := reports.NewMarkdownWriter()
		for _, r := range rs {
			Expect(mw.Add(r)).To(Succeed())
		}
		var b bytes.Buffer
		Expect(mw.Finish(&b)).To(Succeed())
		Expect(b.String()).To(Equal(markdownOf(rs...)))
	})

	It("stays compact for a sweep of many failing seeds", func() {
		var rs []*reports.Result
		for seed := range 500 {
			r := failingRun()
			r.Seed = uint64(seed + 1)
			rs = append(rs, r)
		}
		md := markdownOf(rs...)
		Expect(len(md)).To(BeNumerically("<", 65_536), "GitHub's comment limit")
		Expect(md).To(ContainSubstring("… and 400 more runs (500 did not pass in all)."))
		Expect(md).To(ContainSubstring("… and 490 more runs that did not pass, not shown."))
	})
})

var _ = Describe("WriteMarkdown's DLQ column beside the jobs dead-lettered (issue 28 item 5)", func() {
	It("says what each counts when they differ: the DLQ keeps the entries of the jobs requeued from it", func() {
		fail := failingRun()
		Expect(int64(fail.DLQ.Total)).NotTo(Equal(fail.Ledger.DeadLettered), "the fixture: DLQ 37 beside 12 dead-lettered")
		md := markdownOf(passingRun(), fail)
		Expect(md).To(ContainSubstring("| payment-challenge | 1 | ❌ failed | 2872 | 0 | 37 | 1 |\n\n" +
			"DLQ counts the dead-letter queue's entries at the end, whatever their status; dead-lettered counts the jobs that ended there " +
			"(its failed, quarantined and deleted entries). The DLQ keeps the entry of a job requeued from it, marked requeued, until it is purged: " +
			"that job ran again and ended elsewhere.\n"))
		Expect(md).To(ContainSubstring("12 dead-lettered"))
	})

	It("says nothing more when they are the same", func() {
		r := passingRun()
		r.DLQ.Total = int(r.Ledger.DeadLettered)
		Expect(markdownOf(r)).NotTo(ContainSubstring("DLQ counts"))
	})
})
