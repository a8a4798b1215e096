package cli_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/cmd/faultline/internal/cli"
)

const passing = `apiVersion: faultline/v1
kind: Scenario
metadata:
  name: steady
  description: nothing fails, everything succeeds
seed: 5
duration: 1m
workload:
  tasks: [{name: work, service: 20ms}]
  arrivals: {kind: constant, rate: 10/s}
expect:
  - {count: lost, equals: 0}
  - {count: succeeded, atLeast: 500}
`

// failing dead-letters a charge on a revoked key (one of three faults) and
// expects no dead letter.
const failing = `apiVersion: faultline/v1
kind: Scenario
metadata:
  name: revoked
  description: a revoked key dead-letters charges
seed: 9
duration: 2m
workload:
  tasks: [{name: charge, dependency: payment-gateway, idempotencyKey: true, service: 20ms}]
  arrivals: {kind: constant, rate: 5/s}
dependencies: [{name: payment-gateway, payment: true}]
faults:
  - {name: slow, target: dependency/payment-gateway, model: latency, params: {distribution: constant, mean: 100ms}, schedule: {from: 5s, until: 20s}}
  - {name: revoked-key, target: dependency/payment-gateway, model: auth-failure, schedule: {from: 30s, until: 60s}}
  - {name: blip, target: dependency/payment-gateway, model: http-status, params: {code: 503}, schedule: {from: 70s, until: 80s, probability: 0.2}}
expect:
  - {count: lost, equals: 0}
  - {count: dead-lettered, equals: 0}
`

var _ = Describe("faultline run", func() {
	It("runs a passing scenario file and exits 0", func() {
		f := writeFile("steady.yaml", passing)
		out, _, code := run("run", f)
		Expect(code).To(Equal(cli.ExitOK))
		Expect(out).To(ContainSubstring("PASS  steady  seed 5  (" + f + ")\n  600 jobs: 600 succeeded, 0 dead-lettered, 0 pending, 0 in fallback, 0 lost; 0 notifications, 0 pages; 2 expectations held\n"))
		Expect(out).To(HaveSuffix("1 scenario, 1 run: 1 passed, 0 failed\n"))
	})

	It("reports a failing scenario with expected vs actual, the reproduce command and the shrunk schedule, and exits 1", func() {
		f := writeFile("revoked.yaml", failing)
		out, _, code := run("run", f, "--seed", "5")
		Expect(code).To(Equal(cli.ExitFailed))
		Expect(out).To(ContainSubstring("FAIL  revoked  seed 5  (" + f + ")\n"))
		Expect(out).To(MatchRegexp(`  ✗ dead-lettered = 0\n      expected = 0, got \d+\n`))
		Expect(out).To(ContainSubstring("  reproduce: faultline run " + f + " --seed 5\n"))
		Expect(out).To(ContainSubstring("smallest failing fault schedule for revoked (seed 5): 1 of 3 faults kept"))
		Expect(out).To(ContainSubstring("name: revoked-key"))
		Expect(out).NotTo(ContainSubstring("name: blip"))

		// The printed schedule is a scenario file that fails the same way.
		yaml := out[strings.Index(out, "---\n")+4 : strings.LastIndex(out, "---\n")]
		shrunk := writeFile("shrunk.yaml", yaml)
		out2, _, code2 := run("run", shrunk, "--no-shrink")
		Expect(code2).To(Equal(cli.ExitFailed), out2)
		Expect(out2).To(ContainSubstring("FAIL  revoked-shrunk  seed 5"))
	})

	It("gives the same output in parallel as one at a time", func() {
		dir := GinkgoT().TempDir()
		Expect(os.WriteFile(filepath.Join(dir, "a.yaml"), []byte(passing), 0o600)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(dir, "b.yaml"), []byte(failing), 0o600)).To(Succeed())
		serial, _, c1 := run("run", dir, "--seeds", "1..12", "--parallel", "1", "--no-shrink")
		parallel, _, c2 := run("run", dir, "--seeds", "1..12", "--parallel", "4", "--no-shrink")
		Expect(c1).To(Equal(cli.ExitFailed))
		Expect(c2).To(Equal(c1))
		Expect(parallel).To(Equal(serial))
		Expect(serial).To(ContainSubstring("PASS  steady  seeds 1..12: 12 runs\n"))
		Expect(serial).To(MatchRegexp(`FAIL  revoked  seeds 1\.\.12: \d+ of 12 runs failed \(seeds `))
	})

	It("writes byte-identical JSON reports for the same scenario and seed", func() {
		f := writeFile("steady.yaml", passing)
		d1, d2 := GinkgoT().TempDir(), GinkgoT().TempDir()
		_, _, code := run("run", f, "--report", "json", "--report-dir", d1)
		Expect(code).To(Equal(cli.ExitOK))
		_, _, code = run("run", f, "--report", "json", "--report-dir", d2, "--parallel", "3")
		Expect(code).To(Equal(cli.ExitOK))
		a, err := os.ReadFile(filepath.Join(d1, "steady.seed-5.json"))
		Expect(err).NotTo(HaveOccurred())
		b, err := os.ReadFile(filepath.Join(d2, "steady.seed-5.json"))
		Expect(err).NotTo(HaveOccurred())
		Expect(string(a)).To(Equal(string(b)))
		Expect(string(a)).To(ContainSubstring(`"reproduce": "faultline run ` + f + ` --seed 5"`))
	})

	It("runs a built-in scenario by name", func() {
		out, _, code := run("run", "payment-challenge", "--seed", "2")
		Expect(code).To(Equal(cli.ExitOK), out)
		Expect(out).To(ContainSubstring("PASS  payment-challenge  seed 2\n"))
	})

	It("prints the effective scenario with --dry-run, without running it", func() {
		f := writeFile("steady.yaml", passing)
		out, _, code := run("run", f, "--dry-run")
		Expect(code).To(Equal(cli.ExitOK))
		Expect(out).To(ContainSubstring("# " + f + " (effective: includes merged, defaults filled in)\n"))
		Expect(out).To(ContainSubstring("leaseTTL: 30s"))
		Expect(out).To(ContainSubstring("maxAttempts:"))
		Expect(out).NotTo(ContainSubstring("PASS"))
	})

	DescribeTable("refuses bad input with exit code 2 and a hint",
		func(want string, args ...string) {
			_, errOut, code := run(args...)
			Expect(code).To(Equal(cli.ExitInvalid))
			Expect(errOut).To(ContainSubstring(want))
		},
		Entry("no scenario", "run needs scenario files", "run"),
		Entry("both --all and names", "give scenarios or --all, not both", "run", "--all", "x"),
		Entry("a bad seed range", "--seeds: expected a range like 1..1000", "run", "--all", "--seeds", "9..1"),
		Entry("--seed with --seeds", "give --seed or --seeds, not both", "run", "--all", "--seed", "1", "--seeds", "1..2"),
		Entry("an unknown format", "--report: expected a comma-separated list of json, junit, md, html", "run", "--all", "--report", "pdf"),
		Entry("an unknown built-in", "is neither a file nor a built-in scenario", "run", "payment-challeng"),
		Entry("a bad flag value", "Try: faultline run --help", "run", "--all", "--parallel", "x"),
		Entry("zero parallelism", "--parallel: expected at least 1", "run", "--all", "--parallel", "0"),
	)

	It("refuses an invalid scenario file with file:line:col", func() {
		f := writeFile("bad.yaml", strings.Replace(passing, "duration: 1m", "duraton: 1m", 1))
		_, errOut, code := run("run", f)
		Expect(code).To(Equal(cli.ExitInvalid))
		Expect(errOut).To(ContainSubstring(f + ":7:1: "))
		Expect(errOut).To(ContainSubstring(`did you mean "duration"?`))
	})
})

var _ = Describe("faultline validate and list", func() {
	It("validates good files and reports bad ones with positions", func() {
		good := writeFile("good.yaml", passing)
		out, _, code := run("validate", good)
		Expect(code).To(Equal(cli.ExitOK))
		Expect(out).To(Equal("ok  " + good + "  steady: nothing fails, everything succeeds\n"))
		bad := writeFile("bad.yaml", strings.Replace(passing, "rate: 10/s", "rate: 10/sec", 1))
		_, errOut, code := run("validate", good, bad)
		Expect(code).To(Equal(cli.ExitInvalid))
		Expect(errOut).To(ContainSubstring(bad + ":10:"))
		Expect(errOut).To(ContainSubstring("1 of 2 scenario files are invalid"))
	})

	It("lists the built-in scenarios, name first", func() {
		out, _, code := run("list")
		Expect(code).To(Equal(cli.ExitOK))
		lines := strings.Split(strings.TrimSpace(out), "\n")
		Expect(len(lines)).To(BeNumerically(">=", 17))
		Expect(out).To(MatchRegexp(`(?m)^payment-challenge\s+\S.*$`))
		Expect(out).To(MatchRegexp(`(?m)^worker-crash\s+\S.*$`))
	})
})

var _ = Describe("faultline reports", func() {
	It("writes every format for a run, renders a stored report and appends to GITHUB_STEP_SUMMARY", func() {
		f := writeFile("revoked.yaml", failing)
		dir := GinkgoT().TempDir()
		summary := filepath.Join(GinkgoT().TempDir(), "step-summary.md")
		GinkgoT().Setenv("GITHUB_STEP_SUMMARY", summary)
		out, _, code := run("run", f, "--report", "json,junit,md,html", "--report-dir", dir, "--no-shrink")
		Expect(code).To(Equal(cli.ExitFailed))
		Expect(out).To(ContainSubstring("reports written to " + dir))
		for _, name := range []string{"revoked.seed-9.json", "revoked.seed-9.html", "junit.xml", "summary.md"} {
			st, err := os.Stat(filepath.Join(dir, name))
			Expect(err).NotTo(HaveOccurred(), name)
			Expect(st.Size()).To(BeNumerically(">", 100), name)
		}
		md, err := os.ReadFile(summary)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(md)).To(ContainSubstring("revoked"))

		json := filepath.Join(dir, "revoked.seed-9.json")
		html, _, code := run("report", "render", json, "--to", "html")
		Expect(code).To(Equal(cli.ExitOK))
		Expect(html).To(HavePrefix("<!DOCTYPE html>"))
		junit, _, code := run("report", "render", json, "--to", "junit")
		Expect(code).To(Equal(cli.ExitOK))
		Expect(junit).To(ContainSubstring("<testsuites"))
		text, _, code := run("report", "render", json, "--to", "text")
		Expect(code).To(Equal(cli.ExitOK))
		Expect(text).To(ContainSubstring("revoked"))
		Expect(text).NotTo(ContainSubstring("\x1b["), "no colour off a terminal")
	})

	It("says what is wrong with a file that is not a report, and where", func() {
		truncated := writeFile("t.json", `{"reportVersion": 1, "scenario": "x", "seed": 1, "ledger": {"created": 3`)
		_, errOut, code := run("report", "render", truncated, "--to", "md")
		Expect(code).To(Equal(cli.ExitInvalid))
		Expect(errOut).To(ContainSubstring(truncated + ": line 1, column"))
		newer := writeFile("n.json", `{"reportVersion": 99, "scenario": "x", "seed": 1}`)
		_, errOut, code = run("report", "render", newer, "--to", "md")
		Expect(code).To(Equal(cli.ExitInvalid))
		Expect(errOut).To(ContainSubstring("99"))
		_, errOut, code = run("report", "render", newer, "--to", "pdf")
		Expect(code).To(Equal(cli.ExitInvalid))
	})

	It("diffs two runs and exits 1 on a regression", func() {
		d := GinkgoT().TempDir()
		good := writeFile("good.yaml", strings.Replace(failing, "{count: dead-lettered, equals: 0}", "{count: dead-lettered, atLeast: 0}", 1))
		_, _, code := run("run", good, "--report", "json", "--report-dir", filepath.Join(d, "old"), "--no-shrink")
		Expect(code).To(Equal(cli.ExitOK))
		bad := writeFile("bad.yaml", failing)
		_, _, code = run("run", bad, "--report", "json", "--report-dir", filepath.Join(d, "new"), "--no-shrink")
		Expect(code).To(Equal(cli.ExitFailed))
		old, cur := filepath.Join(d, "old", "revoked.seed-9.json"), filepath.Join(d, "new", "revoked.seed-9.json")
		out, _, code := run("report", "diff", old, cur)
		Expect(code).To(Equal(cli.ExitFailed))
		Expect(out).To(ContainSubstring("dead-lettered"))
		out, _, code = run("report", "diff", cur, cur)
		Expect(code).To(Equal(cli.ExitOK), out)
	})
})

var _ = Describe("faultline run interrupted", func() {
	It("stops cleanly, prints what ran and does not call it a pass", func() {
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // Ctrl-C before the first run
		var out, errOut bytes.Buffer
		root := cli.New(&out, &errOut)
		root.SetArgs([]string{"run", "--all", "--seeds", "1..3"})
		err := root.ExecuteContext(ctx)
		Expect(cli.ExitCode(err)).To(Equal(cli.ExitFailed))
		Expect(err).To(MatchError(cli.ErrInterrupted))
		Expect(out.String()).To(MatchRegexp(`interrupted: \d+ of \d+ runs not made\n$`))
	})
})
