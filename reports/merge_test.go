package reports_test

import (
	"bytes"
	"encoding/json"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reports"
)

var _ = Describe("a sharded summary", func() {
	header := reports.SummaryHeader{ToolVersion: "test", Shard: &reports.Shard{Index: 2, Count: 3},
		ScenarioSetHash: "sha256:aa", Scenarios: 2, SeedSpec: "seeds 1..3", SeedSpecHash: "sha256:bb", TotalRuns: 6}

	It("is read back as written: header, rows in order, counts", func() {
		var buf bytes.Buffer
		sw := reports.NewSummaryWriter(&buf, header, 3)
		rows := []reports.SummaryRun{
			{Index: 1, Scenario: "a", Seed: 2, Verdict: reports.Passed, Jobs: 10, Warnings: []string{"fault x never hit"}},
			{Index: 4, Scenario: "b", Seed: 2, Verdict: reports.Failed, Failure: "lost", Report: "b.seed-2.json"},
		}
		for _, r := range rows {
			Expect(sw.Add(r)).To(Succeed())
		}
		Expect(sw.Finish()).To(Succeed())
		Expect(json.Valid(buf.Bytes())).To(BeTrue(), buf.String())

		sr, err := reports.NewSummaryReader(&buf)
		Expect(err).NotTo(HaveOccurred())
		want := header
		want.SummaryVersion = reports.SummaryVersion
		Expect(sr.Header()).To(Equal(want))
		var got []reports.SummaryRun
		for {
			row, ok, err := sr.Next()
			Expect(err).NotTo(HaveOccurred())
			if !ok {
				break
			}
			got = append(got, row)
		}
		Expect(got).To(Equal(rows))
		Expect(sr.Counts()).To(Equal(reports.SummaryCounts{Runs: 2, Passed: 1, Failed: 1, NotRun: 1}))
	})

	It("writes valid JSON with no rows", func() {
		var buf bytes.Buffer
		sw := reports.NewSummaryWriter(&buf, header, 0)
		Expect(sw.Finish()).To(Succeed())
		Expect(json.Valid(buf.Bytes())).To(BeTrue(), buf.String())
		Expect(buf.String()).To(ContainSubstring(`"runs": [],`))
	})

	It("refuses an unsharded sweep's summary (an array) as not a shard's", func() {
		_, err := reports.NewSummaryReader(strings.NewReader(`[{"scenario": "a", "seed": 1, "verdict": "passed"}]`))
		Expect(err).To(MatchError(reports.ErrNotShardSummary))
		_, err = reports.NewSummaryReader(strings.NewReader(`{"reportVersion": 3, "scenario": "x"}`))
		Expect(err).To(MatchError(reports.ErrNotShardSummary))
	})

	It("refuses a summary from a newer faultline", func() {
		_, err := reports.NewSummaryReader(strings.NewReader(`{"summaryVersion": 99, "runs": []}`))
		Expect(err).To(MatchError(reports.ErrNewerVersion))
	})
})

var _ = Describe("copying JUnit suites from one document to another", func() {
	It("gives the bytes WriteJUnit gives for the same runs", func() {
		runs := []*reports.Result{passingRun(), failingRun(), erroredRun()}
		var whole bytes.Buffer
		Expect(reports.WriteJUnit(&whole, runs)).To(Succeed())

		// Two documents (the runs split as two shards would), merged back.
		var a, b bytes.Buffer
		Expect(reports.WriteJUnit(&a, []*reports.Result{runs[0], runs[2]})).To(Succeed())
		Expect(reports.WriteJUnit(&b, []*reports.Result{runs[1]})).To(Succeed())
		ra, rb := reports.NewJUnitSuiteReader(&a), reports.NewJUnitSuiteReader(&b)
		var spool bytes.Buffer
		jw := reports.NewJUnitWriter(&spool)
		for _, r := range []*reports.JUnitSuiteReader{ra, rb, ra} {
			_, _, err := r.CopyNext(jw)
			Expect(err).NotTo(HaveOccurred())
		}
		_, _, err := rb.CopyNext(jw)
		Expect(err).To(MatchError(reports.ErrNoSuite))
		var merged bytes.Buffer
		Expect(jw.Finish(&merged)).To(Succeed())
		Expect(merged.String()).To(Equal(whole.String()))
	})

	It("names the suite's scenario and seed", func() {
		var doc bytes.Buffer
		Expect(reports.WriteJUnit(&doc, []*reports.Result{failingRun()})).To(Succeed())
		scenario, seed, err := reports.NewJUnitSuiteReader(&doc).CopyNext(reports.NewJUnitWriter(&bytes.Buffer{}))
		Expect(err).NotTo(HaveOccurred())
		Expect(scenario).To(Equal(failingRun().Scenario))
		Expect(seed).To(Equal("1"))
	})
})

var _ = Describe("a passing run's summary row in the Markdown summary", func() {
	It("gives the table row and warnings its result gives", func() {
		r := passingRun()
		r.Warnings = append(r.Warnings, "fault x never hit")
		var full, fromRow bytes.Buffer
		Expect(reports.WriteMarkdown(&full, []*reports.Result{r})).To(Succeed())
		Expect(reports.WriteMarkdown(&fromRow, []*reports.Result{reports.SummaryRunOf(r, 0).Result()})).To(Succeed())
		Expect(fromRow.String()).To(Equal(full.String()))
	})
})
