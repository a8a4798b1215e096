package reports_test

import (
	"bytes"
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	. "github.com/onsi/gomega/gstruct"

	"github.com/faultline/faultline/reports"
)

// An inconclusive drill (its harness could not keep pace with its time
// scale) in every format: judged and shown, neither passed nor failed,
// never a pass.
var _ = Describe("an inconclusive drill", func() {
	It("is neither the verdict failed nor a pass", func() {
		r := inconclusiveRun()
		Expect(r.Verdict).NotTo(Equal(reports.Failed))
		Expect(r.Verdict).NotTo(Equal(reports.Passed))
		Expect(r.Failed()).To(BeTrue(), "Failed says the run did not pass")
	})

	Describe("in the text report", func() {
		It("heads it INCONCLUSIVE, says what slipped and prints the slip table", func() {
			r := inconclusiveRun()
			n := len(r.Expectations)
			out := textOf(r, reports.TextOptions{})
			Expect(out).To(HavePrefix("INCONCLUSIVE  dlq-basics  seed 1\n"))
			Expect(out).To(ContainSubstring(fmt.Sprintf("; %d expectations held\n", n)), "its expectations are judged")
			Expect(out).To(ContainSubstring("\n  inconclusive: " + inconclusiveSlip + "\n"))
			Expect(out).To(ContainSubstring(fmt.Sprintf("    %d expectations judged and shown, but a drill whose harness fell behind its time scale is neither a pass nor a fail", n)))
			Expect(out).To(ContainSubstring("  drill: time scale 50, 2 worker processes (2 started)\n" +
				"    harness slip (wall; tolerance 100.00ms):\n" +
				"      ✗ producer      1200 samples  p99 812.00ms  max 1500.50ms  37 over\n" +
				"        timers        300 samples   p99 4.25ms    max 9.00ms     0 over\n" +
				"        worker start  2 samples     p99 40.00ms   max 40.00ms    0 over\n"))
			Expect(out).To(HaveSuffix("  reproduce: faultline run dlq-basics --seed 1\n"), "not a pass: how to run it again")
			Expect(out).NotTo(ContainSubstring("PASS"))
		})

		It("shows a failed expectation of an inconclusive drill as judged", func() {
			r := inconclusiveRun()
			r.Expectations[0].Verdict, r.Expectations[0].Actual = reports.Failed, "3"
			out := textOf(r, reports.TextOptions{})
			Expect(out).To(HavePrefix("INCONCLUSIVE  "))
			Expect(out).To(ContainSubstring("  ✗ " + r.Expectations[0].Name + "\n      expected " + r.Expectations[0].Expected + ", got 3\n"))
		})

		It("colours the headline as a warning, never as a pass", func() {
			Expect(textOf(inconclusiveRun(), reports.TextOptions{Color: true})).To(HavePrefix("\x1b[1m\x1b[33mINCONCLUSIVE\x1b[0m  dlq-basics"))
		})

		It("never heads a verdict it does not know PASS", func() {
			r := passingRun()
			r.Verdict = "flaky"
			Expect(textOf(r, reports.TextOptions{})).To(HavePrefix("FLAKY  dlq-basics  seed 1\n"))
		})
	})

	Describe("in the Markdown summary", func() {
		It("counts it as it counts an interrupted run, with what slipped and the slip table", func() {
			var b bytes.Buffer
			Expect(reports.WriteMarkdown(&b, []*reports.Result{passingRun(), inconclusiveRun()})).To(Succeed())
			md := b.String()
			Expect(md).To(HavePrefix("## faultline: ⚠️ 1 of 2 runs passed, 1 inconclusive (the drill's harness fell behind its time scale)\n"))
			Expect(md).To(ContainSubstring("| dlq-basics | 1 | ⚠️ inconclusive |"))
			Expect(md).To(ContainSubstring("### ⚠️ dlq-basics (seed 1)\n"))
			Expect(md).To(ContainSubstring("**Inconclusive:**\n\n```text\n" + inconclusiveSlip + "\n```\n"))
			Expect(md).To(ContainSubstring("| Harness slip (wall) | Samples | p99 | Max | Over 100.00ms |\n| --- | ---: | ---: | ---: | ---: |\n" +
				"| ❌ producer | 1200 | 812.00ms | 1500.50ms | 37 |\n| timers | 300 | 4.25ms | 9.00ms | 0 |\n"))
		})

		It("lets a failed run win the headline, and still counts the inconclusive one", func() {
			var b bytes.Buffer
			Expect(reports.WriteMarkdown(&b, []*reports.Result{passingRun(), failingRun(), inconclusiveRun()})).To(Succeed())
			Expect(b.String()).To(HavePrefix("## faultline: ❌ 1 of 3 runs failed, 1 inconclusive (the drill's harness fell behind its time scale)\n"))
		})
	})

	Describe("in the JUnit XML", func() {
		It("is an <error type=\"inconclusive\"> on its run test case, never <skipped>, its expectations as judged", func() {
			r := inconclusiveRun()
			doc := junitOf(r)
			s := doc.Suites[0]
			Expect(s.Cases[0]).To(MatchFields(IgnoreExtras, Fields{
				"Name":    Equal("run"),
				"Skipped": BeNil(),
				"Failure": BeNil(),
				"Error": PointTo(MatchFields(IgnoreExtras, Fields{
					"Type":    Equal("inconclusive"),
					"Message": Equal("inconclusive: " + inconclusiveSlip),
					"Text": And(ContainSubstring("harness slip (wall; tolerance 100.00ms):\n  producer: 1200 samples, p99 812.00ms, max 1500.50ms, 37 over\n"),
						HaveSuffix("reproduce: faultline run dlq-basics --seed 1\n")),
				})),
			}))
			Expect(s.Errors).To(Equal(1))
			Expect(doc.Errors).To(Equal(1))
			Expect(s.Failures).To(BeZero())
			Expect(s.Skipped).To(BeZero(), "judged, not skipped")
			for _, c := range s.Cases[1:] {
				Expect(c.Skipped).To(BeNil(), c.Name)
			}
			Expect(s.Properties).To(ContainElement(xProperty{"verdict", "inconclusive"}))
			Expect(s.SystemOut).To(ContainSubstring("harness slip (wall; tolerance 100.00ms):\n"))
		})
	})

	Describe("in the HTML report", func() {
		It("is badged INCONCLUSIVE, says why, and shows the slip table", func() {
			page := htmlOf(inconclusiveRun())
			Expect(page).To(ContainSubstring(`data-verdict="inconclusive"`))
			text := htmlText(page)
			Expect(text).To(ContainSubstring("⏱ INCONCLUSIVE dlq-basics"))
			Expect(text).To(ContainSubstring("neither a pass nor a fail: the drill's harness could not keep pace with its time scale; all 14 expectations held"))
			Expect(text).To(ContainSubstring("Inconclusive: " + inconclusiveSlip))
			Expect(text).To(ContainSubstring("Harness slip (wall), tolerance 100.0 ms part samples p99 max over tolerance producer 1200 812.0 ms 1500.5 ms ✘ 37 timers 300 4.2 ms 9.0 ms 0"))
			Expect(text).To(ContainSubstring("⏱ inconclusive Nothing failed (14 expectations held), but the drill's harness could not keep pace with its time scale"))
			Expect(text).NotTo(ContainSubstring("✔ nothing failed"))
			Expect(text).NotTo(ContainSubstring("PASSED"))
		})
	})

	Describe("in JSON", func() {
		It("is read back by Read with its verdict and its slip", func() {
			r := inconclusiveRun()
			var b bytes.Buffer
			Expect(reports.WriteJSON(&b, r)).To(Succeed())
			Expect(b.String()).To(ContainSubstring(`"verdict": "inconclusive",`))
			Expect(b.String()).To(ContainSubstring(`"slip": {` + "\n" + `      "toleranceMs": 100,`))
			back, err := reports.Read(&b)
			Expect(err).NotTo(HaveOccurred())
			Expect(back.Verdict).To(Equal(reports.Inconclusive))
			Expect(back.Error).To(Equal(inconclusiveSlip))
			Expect(back.Live.Slip).To(Equal(r.Live.Slip))
		})

		It("is never an expectation's verdict, nor a version-2 report's", func() {
			data, err := inconclusiveRun().JSON()
			Expect(err).NotTo(HaveOccurred())
			stored := string(data)
			bad := strings.Replace(stored, `"verdict": "passed"`, `"verdict": "inconclusive"`, 1)
			_, err = reports.Read(strings.NewReader(bad))
			Expect(err).To(MatchError(ContainSubstring(`expectations[0].verdict: "inconclusive" is not a verdict of a version-3 report`)))
			bad = strings.Replace(stored, `"reportVersion": 3,`, `"reportVersion": 2,`, 1)
			_, err = reports.Read(strings.NewReader(bad))
			Expect(err).To(MatchError(ContainSubstring(`verdict: "inconclusive" is not a verdict of a version-2 report (passed, failed, errored or interrupted)`)))
		})
	})

	Describe("in a sharded summary", func() {
		header := reports.SummaryHeader{ToolVersion: "test", Shard: &reports.Shard{Index: 1, Count: 1},
			ScenarioSetHash: "sha256:aa", Scenarios: 1, SeedSpec: "seeds 1..3", SeedSpecHash: "sha256:bb", TotalRuns: 3}

		It("is counted, written and read back", func() {
			var buf bytes.Buffer
			sw := reports.NewSummaryWriter(&buf, header, 3)
			for i, v := range []reports.Verdict{reports.Passed, reports.Inconclusive, reports.Inconclusive} {
				Expect(sw.Add(reports.SummaryRun{Index: uint64(i), Scenario: "a", Seed: uint64(i + 1), Verdict: v})).To(Succeed())
			}
			Expect(sw.Finish()).To(Succeed())
			Expect(buf.String()).To(ContainSubstring(`"inconclusive": 2`))
			sr, err := reports.NewSummaryReader(&buf)
			Expect(err).NotTo(HaveOccurred())
			for {
				_, ok, err := sr.Next()
				Expect(err).NotTo(HaveOccurred())
				if !ok {
					break
				}
			}
			Expect(sr.Counts()).To(Equal(reports.SummaryCounts{Runs: 3, Passed: 1, Inconclusive: 2}))
			Expect(sr.Counts().Verdict()).To(Equal(reports.Inconclusive))
		})

		It("leaves the counts of a summary with none as they were", func() {
			var buf bytes.Buffer
			sw := reports.NewSummaryWriter(&buf, header, 1)
			Expect(sw.Add(reports.SummaryRun{Scenario: "a", Seed: 1, Verdict: reports.Passed})).To(Succeed())
			Expect(sw.Finish()).To(Succeed())
			Expect(buf.String()).NotTo(ContainSubstring("inconclusive"))
		})

		DescribeTable("makes the merged set's verdict: a failure wins, an inconclusive run is never a pass",
			func(c reports.SummaryCounts, want reports.Verdict) {
				Expect(c.Verdict()).To(Equal(want))
			},
			Entry("all passed", reports.SummaryCounts{Runs: 2, Passed: 2}, reports.Passed),
			Entry("none", reports.SummaryCounts{}, reports.Passed),
			Entry("inconclusive and passed", reports.SummaryCounts{Runs: 2, Passed: 1, Inconclusive: 1}, reports.Inconclusive),
			Entry("inconclusive and failed", reports.SummaryCounts{Runs: 2, Failed: 1, Inconclusive: 1}, reports.Failed),
			Entry("inconclusive and errored", reports.SummaryCounts{Runs: 2, Errored: 1, Inconclusive: 1}, reports.Errored),
			Entry("inconclusive and interrupted", reports.SummaryCounts{Runs: 2, Interrupted: 1, Inconclusive: 1}, reports.Interrupted),
			Entry("inconclusive and runs not made", reports.SummaryCounts{Runs: 1, Inconclusive: 1, NotRun: 1}, reports.Interrupted),
			Entry("a verdict this faultline does not know", reports.SummaryCounts{Runs: 2, Passed: 1}, reports.Errored),
		)
	})

	Describe("in report diff", func() {
		It("shows a change to inconclusive, with what slipped, as a regression", func() {
			d := reports.Diff(passingRun(), inconclusiveRun())
			Expect(d.Regression).To(BeTrue())
			Expect(d.Changes).To(ContainElement(reports.Change{Kind: reports.ChangeVerdict, What: "verdict", Old: "passed", New: "inconclusive", Regression: true}))
			Expect(d.Changes).To(ContainElement(reports.Change{Kind: reports.ChangeVerdict, What: "inconclusive", New: inconclusiveSlip}))
			var b bytes.Buffer
			Expect(reports.WriteDiff(&b, d)).To(Succeed())
			Expect(b.String()).To(ContainSubstring("✗ verdict      verdict: passed → inconclusive\n"))
			Expect(b.String()).To(ContainSubstring("  verdict      inconclusive: new, " + inconclusiveSlip + "\n"))
		})

		It("shows a change from inconclusive, a regression only to a worse verdict", func() {
			d := reports.Diff(inconclusiveRun(), passingRun())
			Expect(d.Regression).To(BeFalse())
			Expect(d.Changes).To(ContainElement(reports.Change{Kind: reports.ChangeVerdict, What: "verdict", Old: "inconclusive", New: "passed"}))
			Expect(d.Changes).To(ContainElement(reports.Change{Kind: reports.ChangeVerdict, What: "inconclusive", Old: inconclusiveSlip}))

			failed, inconclusive := failingRun(), failingRun()
			inconclusive.Verdict, inconclusive.Error = reports.Inconclusive, inconclusiveSlip
			Expect(reports.Diff(inconclusive, failed).Regression).To(BeTrue(), "inconclusive → failed")
			Expect(reports.Diff(failed, inconclusive).Regression).To(BeFalse(), "failed → inconclusive")
			interrupted := failingRun()
			interrupted.Verdict = reports.Interrupted
			Expect(reports.Diff(inconclusive, interrupted).Regression).To(BeTrue(), "inconclusive → interrupted")
		})
	})
})
