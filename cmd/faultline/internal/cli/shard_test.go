package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/cmd/faultline/internal/cli"
	"github.com/faultline/faultline/reports"
)

// library writes a small scenario library (a passing and a failing
// scenario) and returns its directory.
func library() string {
	GinkgoHelper()
	dir := GinkgoT().TempDir()
	Expect(os.WriteFile(filepath.Join(dir, "a-steady.yaml"), []byte(passing), 0o600)).To(Succeed())
	Expect(os.WriteFile(filepath.Join(dir, "b-revoked.yaml"), []byte(failing), 0o600)).To(Succeed())
	return dir
}

// readSummary reads a sharded summary.json whole: header, rows, counts.
func readSummary(path string) (reports.SummaryHeader, []reports.SummaryRun, reports.SummaryCounts) {
	GinkgoHelper()
	f, err := os.Open(path)
	Expect(err).NotTo(HaveOccurred())
	defer f.Close()
	sr, err := reports.NewSummaryReader(f)
	Expect(err).NotTo(HaveOccurred())
	var rows []reports.SummaryRun
	for {
		row, ok, err := sr.Next()
		Expect(err).NotTo(HaveOccurred())
		if !ok {
			break
		}
		rows = append(rows, row)
	}
	return sr.Header(), rows, sr.Counts()
}

// reportFiles are the files of a report directory, by name, but for
// summary.json.
func reportFiles(dir string) map[string]string {
	GinkgoHelper()
	out := map[string]string{}
	entries, err := os.ReadDir(dir)
	Expect(err).NotTo(HaveOccurred())
	for _, e := range entries {
		if e.Name() == "summary.json" {
			continue
		}
		Expect(e.Name()).NotTo(HaveSuffix(".spool"), "the JUnit spool is gone")
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		Expect(err).NotTo(HaveOccurred())
		out[e.Name()] = string(b)
	}
	return out
}

var _ = Describe("a sweep sharded with run --shard and put together with report merge", func() {
	var lib, tmp string
	shardArgs := func(dir string, extra ...string) []string {
		return append([]string{"run", lib, "--seeds", "1..4", "--report", "json,junit,md", "--report-dir", dir, "--no-shrink", "--progress", "never"}, extra...)
	}
	BeforeEach(func() {
		lib, tmp = library(), GinkgoT().TempDir()
	})

	It("gives, merged, what the unsharded run gives: the same rows, JUnit, Markdown and failing reports", func() {
		whole := filepath.Join(tmp, "whole")
		_, _, code := run(shardArgs(whole)...)
		Expect(code).To(Equal(cli.ExitFailed))
		one := filepath.Join(tmp, "one")
		_, _, code = run(shardArgs(one, "--shard", "1/1")...)
		Expect(code).To(Equal(cli.ExitFailed))

		var dirs []string
		sizes := map[int]int{}
		for i := 1; i <= 3; i++ {
			dir := filepath.Join(tmp, "shard-"+string(rune('0'+i)))
			dirs = append(dirs, dir)
			out, _, _ := run(shardArgs(dir, "--shard", string(rune('0'+i))+"/3")...)
			Expect(out).To(ContainSubstring("shard " + string(rune('0'+i)) + "/3: "))
			h, rows, _ := readSummary(filepath.Join(dir, "summary.json"))
			Expect(*h.Shard).To(Equal(reports.Shard{Index: i, Count: 3}))
			Expect(h.TotalRuns).To(BeEquivalentTo(8))
			for _, r := range rows {
				Expect(int(r.Index%3)).To(Equal(i-1), "pair %d goes to shard %d", r.Index, r.Index%3+1)
			}
			sizes[i] = len(rows)
		}
		Expect(sizes).To(Equal(map[int]int{1: 3, 2: 3, 3: 2}), "balanced: shares differ by one at most")

		merged := filepath.Join(tmp, "merged")
		out, _, code := run(append([]string{"report", "merge"}, append(dirs, "--out", merged)...)...)
		Expect(code).To(Equal(cli.ExitFailed), "a run failed")
		Expect(out).To(ContainSubstring("merged 3 shards of 2 scenarios × seeds 1..4: 8 of 8 runs: 4 passed, 4 failed\n"))

		By("summary.json: the unsharded run's rows, field by field")
		var wholeRows []struct {
			Scenario, Failure string
			Seed              uint64
			Verdict           reports.Verdict
		}
		b, err := os.ReadFile(filepath.Join(whole, "summary.json"))
		Expect(err).NotTo(HaveOccurred())
		Expect(json.Unmarshal(b, &wholeRows)).To(Succeed())
		mh, rows, counts := readSummary(filepath.Join(merged, "summary.json"))
		Expect(rows).To(HaveLen(len(wholeRows)))
		for i, r := range rows {
			w := wholeRows[i]
			Expect(r.Index).To(BeEquivalentTo(i))
			Expect([]any{r.Scenario, r.Seed, r.Verdict, r.Failure}).To(Equal([]any{w.Scenario, w.Seed, w.Verdict, w.Failure}), "run %d", i)
		}
		Expect(counts).To(Equal(reports.SummaryCounts{Runs: 8, Passed: 4, Failed: 4}))

		By("summary.json: the unsharded run's (--shard 1/1) whole, but for the shard and mergedShards")
		oh, oneRows, oneCounts := readSummary(filepath.Join(one, "summary.json"))
		Expect(oh.Shard).To(Equal(&reports.Shard{Index: 1, Count: 1}))
		Expect(mh.Shard).To(BeNil())
		Expect(mh.MergedShards).To(Equal(3))
		oh.Shard, oh.MergedShards, mh.MergedShards = nil, 0, 0
		Expect(mh).To(Equal(oh))
		Expect(rows).To(Equal(oneRows))
		Expect(counts).To(Equal(oneCounts))

		By("junit.xml, summary.md and the failing runs' reports: the same bytes")
		Expect(reportFiles(merged)).To(Equal(reportFiles(whole)))
		Expect(reportFiles(merged)).To(HaveKey("revoked.seed-3.json"))
	})

	It("refuses shards of different runs, saying which directories differ", func() {
		a, b, c := filepath.Join(tmp, "a"), filepath.Join(tmp, "b"), filepath.Join(tmp, "c")
		run(shardArgs(a, "--shard", "1/2")...)
		run(shardArgs(b, "--shard", "2/2", "--seeds", "1..3")...) // the last --seeds wins
		_, errOut, code := run("report", "merge", a, b, "--out", c)
		Expect(code).To(Equal(cli.ExitInvalid))
		Expect(errOut).To(ContainSubstring("shards of different runs:\n  " + a + ": 2 scenarios"))
		Expect(errOut).To(ContainSubstring("seeds 1..4"))
		Expect(errOut).To(ContainSubstring("\n  " + b + ": 2 scenarios"))
		Expect(errOut).To(ContainSubstring("seeds 1..3"))
	})

	It("refuses a missing or a duplicated shard, naming it", func() {
		a, b, d := filepath.Join(tmp, "a"), filepath.Join(tmp, "b"), filepath.Join(tmp, "d")
		run(shardArgs(a, "--shard", "1/3")...)
		run(shardArgs(b, "--shard", "3/3")...)
		Expect(os.CopyFS(d, os.DirFS(a))).To(Succeed())
		_, errOut, code := run("report", "merge", a, b, "--out", filepath.Join(tmp, "m"))
		Expect(code).To(Equal(cli.ExitInvalid))
		Expect(errOut).To(ContainSubstring("shard 2 of 3 missing (given: 1 (" + a + "), 3 (" + b + "))"))
		_, errOut, code = run("report", "merge", a, b, d, "--out", filepath.Join(tmp, "m"))
		Expect(code).To(Equal(cli.ExitInvalid))
		Expect(errOut).To(ContainSubstring("shard 1/3 given twice: " + a + " and " + d))
	})

	It("refuses an unsharded run's directory and an --out that is a shard's", func() {
		plain, s := filepath.Join(tmp, "plain"), filepath.Join(tmp, "s")
		run("run", lib, "--seeds", "1..2", "--report", "json", "--report-dir", plain, "--no-shrink")
		_, errOut, code := run("report", "merge", plain)
		Expect(code).To(Equal(cli.ExitInvalid))
		Expect(errOut).To(ContainSubstring("not the summary of a sharded run"))
		run(shardArgs(s, "--shard", "1/1")...)
		_, errOut, code = run("report", "merge", s, "--out", s)
		Expect(code).To(Equal(cli.ExitInvalid))
		Expect(errOut).To(ContainSubstring("is a shard's directory"))
	})

	It("passes when every merged run passed", func() {
		steady := writeFile("steady.yaml", passing)
		var dirs []string
		for _, i := range []string{"1", "2"} {
			dir := filepath.Join(tmp, "p"+i)
			dirs = append(dirs, dir)
			_, _, code := run("run", steady, "--seeds", "1..3", "--shard", i+"/2", "--report-dir", dir, "--progress", "never")
			Expect(code).To(Equal(cli.ExitOK))
		}
		out, _, code := run("report", "merge", dirs[0], dirs[1], "--out", filepath.Join(tmp, "m"))
		Expect(code).To(Equal(cli.ExitOK))
		Expect(out).To(ContainSubstring("3 of 3 runs: 3 passed, 0 failed"))
	})

	It("says what --shard takes", func() {
		for _, bad := range []string{"0/4", "5/4", "1/0", "a/b", "3"} {
			_, errOut, code := run("run", lib, "--shard", bad)
			Expect(code).To(Equal(cli.ExitInvalid), bad)
			Expect(errOut).To(ContainSubstring("--shard: expected I/N with 1 ≤ I ≤ N, 1-based (the first of four is 1/4), got %q", bad))
		}
		_, errOut, _ := run("run", lib, "--shard", "0/4")
		Expect(errOut).To(ContainSubstring("--shard $((JOB_COMPLETION_INDEX+1))/4"))
	})

	It("caps the seeds per shard, not per sweep", func() {
		_, errOut, code := run("run", lib, "--seeds", "1..1500000", "--dry-run")
		Expect(code).To(Equal(cli.ExitInvalid))
		Expect(errOut).To(ContainSubstring("at most 1,000,000 seeds at once"))
		_, _, code = run("run", lib, "--seeds", "1..1500000", "--shard", "1/2", "--dry-run")
		Expect(code).To(Equal(cli.ExitOK))
		_, errOut, code = run("run", lib, "--seeds", "1..2000001", "--shard", "1/2", "--dry-run")
		Expect(code).To(Equal(cli.ExitInvalid))
		Expect(errOut).To(ContainSubstring("at most 1,000,000 seeds a shard (2000000 in all with 2 shards)"))
	})

	It("assigns a pair to the same shard whatever the shard count's machines", func() {
		// The scenario set's and the seed spec's hashes do not depend on
		// the path the library was given by.
		a, b := filepath.Join(tmp, "a"), filepath.Join(tmp, "b")
		copyLib := filepath.Join(tmp, "elsewhere")
		Expect(os.CopyFS(copyLib, os.DirFS(lib))).To(Succeed())
		run(shardArgs(a, "--shard", "1/2")...)
		args := shardArgs(b, "--shard", "2/2")
		args[1] = copyLib + string(filepath.Separator)
		run(args...)
		ha, _, _ := readSummary(filepath.Join(a, "summary.json"))
		hb, _, _ := readSummary(filepath.Join(b, "summary.json"))
		Expect(hb.ScenarioSetHash).To(Equal(ha.ScenarioSetHash))
		Expect(strings.HasPrefix(hb.SeedSpecHash, "sha256:")).To(BeTrue())
		Expect(hb.SeedSpecHash).To(Equal(ha.SeedSpecHash))
	})
})
