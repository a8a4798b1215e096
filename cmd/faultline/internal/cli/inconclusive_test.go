package cli_test

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/cmd/faultline/internal/cli"
	"github.com/faultline/faultline/reports"
)

// The verdict inconclusive (a drill whose harness could not keep pace with
// its time scale) as the command line gives it: exit 5, unless a run
// failed.
var _ = Describe("an inconclusive result's exit code", func() {
	It("is 5 for an error wrapping ErrInconclusive", func() {
		Expect(cli.ExitInconclusive).To(Equal(5))
		Expect(cli.ExitCode(cli.ErrInconclusive)).To(Equal(5))
		Expect(cli.ExitCode(fmt.Errorf("drill x: %w", cli.ErrInconclusive))).To(Equal(5))
	})

	It("is 1 when a run failed too, and when one was interrupted: a failure wins", func() {
		Expect(cli.ExitCode(fmt.Errorf("%w; %w", cli.ErrInconclusive, cli.ErrChecksFailed))).To(Equal(cli.ExitFailed))
		Expect(cli.ExitCode(errors.Join(cli.ErrChecksFailed, fmt.Errorf("drill y: %w", cli.ErrInconclusive)))).To(Equal(cli.ExitFailed))
		Expect(cli.ExitCode(errors.Join(fmt.Errorf("%w: not a pass: %w", cli.ErrInterrupted, cli.ErrChecksFailed), cli.ErrInconclusive))).To(Equal(cli.ExitFailed))
	})

	It("is documented in --help: the root's, drill's, report check's and report merge's", func() {
		out, _, code := run("--help")
		Expect(code).To(Equal(cli.ExitOK))
		Expect(out).To(ContainSubstring("  5  inconclusive: a drill's harness could not keep pace with its time scale\n"))
		for _, args := range [][]string{{"drill", "--help"}, {"report", "check", "--help"}, {"report", "merge", "--help"}} {
			out, _, code := run(args...)
			Expect(code).To(Equal(cli.ExitOK))
			Expect(out).To(MatchRegexp(`5 (a drill was )?(a run was )?inconclusive`), args[0])
		}
	})
})

var _ = Describe("report merge of a run with an inconclusive drill", func() {
	// shard writes the report directory of a one-shard run of the given
	// verdicts, as run --shard 1/1 --report-dir would.
	shard := func(verdicts ...reports.Verdict) string {
		GinkgoHelper()
		dir := GinkgoT().TempDir()
		h := reports.SummaryHeader{ToolVersion: "test", Shard: &reports.Shard{Index: 1, Count: 1}, ScenarioSetHash: "sha256:aa",
			Scenarios: 1, SeedSpec: fmt.Sprintf("seeds 1..%d", len(verdicts)), SeedSpecHash: "sha256:bb", TotalRuns: uint64(len(verdicts))}
		f, err := os.Create(filepath.Join(dir, "summary.json"))
		Expect(err).NotTo(HaveOccurred())
		defer f.Close()
		sw := reports.NewSummaryWriter(f, h, h.TotalRuns)
		var rs []*reports.Result
		for i, v := range verdicts {
			r := &reports.Result{ReportVersion: reports.ReportVersion, Scenario: "slow-drill", Seed: uint64(i + 1), Verdict: v,
				DurationMs: 60_000, EndedAtMs: 60_000, Expectations: []reports.Expectation{{Name: "lost = 0", Expected: "= 0", Actual: "0", Verdict: reports.Passed}},
				Invariants: []reports.InvariantResult{}, Ledger: reports.Ledger{Created: 10, Succeeded: 10}}
			if v == reports.Failed {
				r.Expectations[0].Actual, r.Expectations[0].Verdict = "3", reports.Failed
			}
			if v == reports.Inconclusive {
				r.Error = "the harness could not keep pace with time scale 50: producer slipped 812ms at p99 past the 100ms tolerance"
				r.Live = &reports.Live{TimeScale: 50, Workers: 1, Slip: &reports.Slip{ToleranceMs: 100,
					Parts: []reports.SlipPart{{What: "producer", Samples: 100, P99Ms: 812, MaxMs: 900, Over: 7}}}}
			}
			row := reports.SummaryRunOf(r, uint64(i))
			if v != reports.Passed {
				row.Report = fmt.Sprintf("slow-drill.seed-%d.json", r.Seed)
				writeWith(filepath.Join(dir, row.Report), func(w io.Writer) error { return reports.WriteJSON(w, r) })
			}
			Expect(sw.Add(row)).To(Succeed())
			rs = append(rs, r)
		}
		Expect(sw.Finish()).To(Succeed())
		writeWith(filepath.Join(dir, "junit.xml"), func(w io.Writer) error { return reports.WriteJUnit(w, rs) })
		return dir
	}

	It("counts it and exits 5 when no run failed", func() {
		merged := filepath.Join(GinkgoT().TempDir(), "merged")
		out, errOut, code := run("report", "merge", shard(reports.Passed, reports.Inconclusive), "--out", merged)
		Expect(code).To(Equal(cli.ExitInconclusive), out+errOut)
		Expect(out).To(ContainSubstring("2 of 2 runs: 1 passed, 0 failed, 1 inconclusive (a drill's harness fell behind its time scale)\n"))
		Expect(errOut).To(ContainSubstring("faultline: inconclusive: 1 of 2 runs could not be judged"))
		sum, err := os.ReadFile(filepath.Join(merged, "summary.json"))
		Expect(err).NotTo(HaveOccurred())
		Expect(string(sum)).To(ContainSubstring(`"inconclusive": 1`))
		md, err := os.ReadFile(filepath.Join(merged, "summary.md"))
		Expect(err).NotTo(HaveOccurred())
		Expect(string(md)).To(HavePrefix("## faultline: ⚠️ 1 of 2 runs passed, 1 inconclusive (the drill's harness fell behind its time scale)\n"))
		Expect(filepath.Join(merged, "slow-drill.seed-2.json")).To(BeAnExistingFile())
	})

	It("exits 1 when a run failed too", func() {
		out, errOut, code := run("report", "merge", shard(reports.Failed, reports.Inconclusive), "--out", filepath.Join(GinkgoT().TempDir(), "m"))
		Expect(code).To(Equal(cli.ExitFailed), out+errOut)
		Expect(out).To(ContainSubstring("2 of 2 runs: 0 passed, 1 failed, 1 inconclusive"))
	})

	It("exits 0 when every run passed", func() {
		_, errOut, code := run("report", "merge", shard(reports.Passed, reports.Passed), "--out", filepath.Join(GinkgoT().TempDir(), "m"))
		Expect(code).To(Equal(cli.ExitOK), errOut)
	})
})

// writeWith writes a file with write.
func writeWith(path string, write func(io.Writer) error) {
	GinkgoHelper()
	f, err := os.Create(path)
	Expect(err).NotTo(HaveOccurred())
	Expect(write(f)).To(Succeed())
	Expect(f.Close()).To(Succeed())
}
