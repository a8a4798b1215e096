package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/cmd/faultline/internal/cli"
)

// v1Report is a version-1 report (before a run went on past its first
// violation), kept as the reports package's fixture.
const v1Report = "../../../../reports/testdata/v1/payment-challenge.failing.json"

var _ = Describe("faultline report, on reports of any version", func() {
	var stored string // a version-2 report of the failing scenario

	BeforeEach(func() {
		dir := GinkgoT().TempDir()
		_, _, code := run("run", writeFile("revoked.yaml", failing), "--report", "json", "--report-dir", dir, "--no-shrink")
		Expect(code).To(Equal(cli.ExitFailed))
		stored = filepath.Join(dir, "revoked.seed-9.json")
	})

	It("refuses to diff two reports of different scenarios: exit 2, naming both", func() {
		_, errOut, code := run("report", "diff", v1Report, stored)
		Expect(code).To(Equal(cli.ExitInvalid))
		Expect(errOut).To(ContainSubstring(`the reports are of different scenarios: "payment-challenge" and "revoked"; report diff compares two runs of one scenario`))
	})

	It("renders and diffs a version-1 report", func() {
		for _, to := range []string{"html", "md", "junit", "json", "text"} {
			out, errOut, code := run("report", "render", v1Report, "--to", to)
			Expect(code).To(Equal(cli.ExitOK), errOut)
			Expect(out).To(ContainSubstring("payment-challenge"), to)
		}
		junit, _, _ := run("report", "render", v1Report, "--to", "junit")
		Expect(junit).To(ContainSubstring(`<testcase name="invariant: no-retry-of-permanent-or-critical"`))
		out, _, code := run("report", "diff", v1Report, v1Report)
		Expect(code).To(Equal(cli.ExitOK))
		Expect(out).To(ContainSubstring("no changes"))
	})

	It("refuses a report missing its ledger", func() {
		data, err := os.ReadFile(stored)
		Expect(err).NotTo(HaveOccurred())
		var m map[string]any
		Expect(json.Unmarshal(data, &m)).To(Succeed())
		delete(m, "ledger")
		b, err := json.Marshal(m)
		Expect(err).NotTo(HaveOccurred())
		bad := writeFile("no-ledger.json", string(b))
		for _, args := range [][]string{{"report", "render", bad, "--to", "html"}, {"report", "diff", stored, bad}} {
			_, errOut, code := run(args...)
			Expect(code).To(Equal(cli.ExitInvalid))
			Expect(errOut).To(ContainSubstring(bad + ": line 1, column 1: an incomplete faultline report: no ledger"))
		}
	})

	It("refuses a duration no run can have, at once, and renders the longest ones quickly", func() {
		data, err := os.ReadFile(stored)
		Expect(err).NotTo(HaveOccurred())
		huge := writeFile("huge.json", strings.Replace(string(data), `"durationMs": 120000,`, `"durationMs": 9223372036854775807,`, 1))
		start := time.Now()
		_, errOut, code := run("report", "render", huge, "--to", "html")
		Expect(code).To(Equal(cli.ExitInvalid))
		Expect(errOut).To(ContainSubstring("durationMs: 9223372036854775807 ms is not a run length faultline can have (0 to about 292 years, what a duration holds)"))
		long := writeFile("long.json", strings.Replace(string(data), `"durationMs": 120000,`, `"durationMs": 1000000000000,`, 1))
		for _, to := range []string{"html", "text", "md", "junit"} {
			_, errOut, code = run("report", "render", long, "--to", to)
			Expect(code).To(Equal(cli.ExitOK), errOut)
		}
		Expect(time.Since(start)).To(BeNumerically("<", 5*time.Second))
	})
})

var _ = Describe("faultline run --seeds, streamed", func() {
	It("writes every run's reports as it goes, byte for byte the same with --parallel", func() {
		f := writeFile("revoked.yaml", failing)
		outputs := map[int]string{}
		files := map[int]map[string]string{}
		for _, parallel := range []string{"1", "3"} {
			dir := GinkgoT().TempDir()
			out, _, code := run("run", f, "--seeds", "1..12", "--parallel", parallel, "--report", "json,junit,md", "--report-dir", dir, "--no-shrink")
			Expect(code).To(Equal(cli.ExitFailed))
			k := len(outputs)
			outputs[k] = strings.ReplaceAll(out, dir, "DIR")
			files[k] = map[string]string{}
			entries, err := os.ReadDir(dir)
			Expect(err).NotTo(HaveOccurred())
			for _, e := range entries {
				Expect(e.Name()).NotTo(HaveSuffix(".spool"), "the JUnit spool is gone")
				b, err := os.ReadFile(filepath.Join(dir, e.Name()))
				Expect(err).NotTo(HaveOccurred())
				files[k][e.Name()] = string(b)
			}
		}
		Expect(outputs[1]).To(Equal(outputs[0]))
		Expect(files[1]).To(Equal(files[0]))

		var rows []struct {
			Scenario, Verdict, Failure string
			Seed                       uint64
		}
		Expect(json.Unmarshal([]byte(files[0]["summary.json"]), &rows)).To(Succeed())
		Expect(rows).To(HaveLen(12))
		failed := 0
		for i, r := range rows {
			Expect(r.Seed).To(BeEquivalentTo(i + 1))
			if r.Verdict == "failed" {
				failed++
				Expect(files[0]).To(HaveKey(ContainSubstring(".seed-")))
			}
		}
		Expect(failed).To(BeNumerically(">", 0))
		var doc struct {
			Tests  int `xml:"tests,attr"`
			Suites []struct {
				Name string `xml:"name,attr"`
			} `xml:"testsuite"`
		}
		Expect(xml.Unmarshal([]byte(files[0]["junit.xml"]), &doc)).To(Succeed())
		Expect(doc.Suites).To(HaveLen(12))
		Expect(doc.Suites[11].Name).To(Equal("revoked (seed 12)"))
		Expect(files[0]["summary.md"]).To(ContainSubstring("12 runs failed"))
	})
})

var _ = Describe("faultline run stopped by Ctrl-C mid-run", func() {
	It("prints the run it stopped as interrupted, its expectations not evaluated, and exits 1", func() {
		quick := writeFile("steady.yaml", passing)
		long := writeFile("long.yaml", strings.NewReplacer("name: steady", "name: long", "duration: 1m", "duration: 6h",
			"rate: 10/s", "rate: 50/s", "atLeast: 500", "atLeast: 5").Replace(passing))
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		// Ctrl-C a moment after the quick run is printed, while the long
		// one (a million jobs, seconds of work) runs.
		var once sync.Once
		undo := cli.SetAfterRelease(func() { once.Do(func() { time.AfterFunc(300*time.Millisecond, cancel) }) })
		defer undo()
		var out, errOut bytes.Buffer
		root := cli.New(&out, &errOut)
		root.SetArgs([]string{"run", quick, long, "--parallel", "1", "--no-shrink", "--progress", "never"})
		err := root.ExecuteContext(ctx)
		Expect(cli.ExitCode(err)).To(Equal(cli.ExitFailed))
		Expect(err).To(MatchError(cli.ErrInterrupted))
		Expect(out.String()).To(ContainSubstring("PASS  steady  seed 5"))
		Expect(out.String()).To(MatchRegexp(`INTERRUPTED  long  seed 5 .*\n.*; 2 of 2 expectations not evaluated\n`))
		Expect(out.String()).To(MatchRegexp(`\n  stopped at \+\S+ of 6h0m0s\n`))
		Expect(out.String()).To(MatchRegexp(`\n  interrupted: .*context canceled\n`))
		Expect(out.String()).To(HaveSuffix("2 scenarios, 2 runs: 1 passed, 0 failed, 1 interrupted (expectations not evaluated); interrupted: 0 of 2 runs not made\n"))
	})
})
