package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/cmd/faultline/internal/cli"
	"github.com/faultline/faultline/reference/store/redisstore"
)

// planted is one secret of each kind; what is grepped for is the part that
// must never be printed.
var planted = []struct{ kind, text, leak string }{
	{"bearer token", "Bearer h6BearerTok3n0123456789", "h6BearerTok3n0123456789"},
	{"Slack webhook URL", "https://hooks.slack.com/services/T0H6SEC/B0H6SEC/h6SlackHookSecret99", "h6SlackHookSecret99"},
	{"password", "password=h6Hunter2pw", "h6Hunter2pw"},
	{"card number (Luhn)", "4111 1111 1111 1111", "4111 1111 1111 1111"},
	{"redis URL password", "redis://:h6RedisPw@cache.internal:6379/0", "h6RedisPw"},
	{"api key", "api_key=h6ApiKey123", "h6ApiKey123"},
}

// secrets is every planted secret in one text.
func secrets() string {
	parts := make([]string, len(planted))
	for i, p := range planted {
		parts[i] = p.text
	}
	return strings.Join(parts, "; ")
}

// leakyScenario plants every secret in every field a scenario can carry
// text in: the description, the payloads (the task's and a planned job's)
// and the fault parameters whose bodies become the jobs' errors, and so the
// DLQ entries' errors. It fails (a dead letter is not expected), so that it
// is shrunk and printed too.
func leakyScenario() string {
	s := secrets()
	return `apiVersion: faultline/v1
kind: Scenario
metadata:
  name: leaky
  description: "charges fail and carry secrets: ` + s + `"
seed: 9
duration: 2m
workload:
  tasks: [{name: charge, dependency: payment-gateway, idempotencyKey: true, service: 20ms, payload: '{"card":"4111 1111 1111 1111","password":"h6Hunter2pw","note":"` + s + `"}'}]
  arrivals: {kind: constant, rate: 5/s}
  jobs: [{at: 1s, id: planted, task: charge, payload: '` + s + `'}]
dependencies: [{name: payment-gateway, payment: true}]
faults:
  - {name: slow, target: dependency/payment-gateway, model: latency, params: {distribution: constant, mean: 100ms}, schedule: {from: 5s, until: 20s}}
  - {name: leak, target: dependency/payment-gateway, model: http-status, params: {code: 400, body: "` + s + `"}, schedule: {from: 30s, until: 60s}}
  - {name: revoked, target: dependency/payment-gateway, model: auth-failure, params: {body: "` + s + `"}, schedule: {from: 70s, until: 80s}}
expect:
  - {count: lost, equals: 0}
  - {count: dead-lettered, equals: 0}
`
}

// expectNoSecret fails naming the output and the kind of secret it leaked.
func expectNoSecret(output, text string) {
	GinkgoHelper()
	for _, p := range planted {
		Expect(text).NotTo(ContainSubstring(p.leak), "%s leaks a %s", output, p.kind)
	}
	Expect(text).NotTo(ContainSubstring("4111111111111111"), "%s leaks a card number", output)
	Expect(text).NotTo(ContainSubstring("4111_1111_1111_1111"), "%s leaks a card number in file-name characters", output)
}

// fileNames is the names of the files in dir, one a line.
func fileNames(dir string) string {
	GinkgoHelper()
	entries, err := os.ReadDir(dir)
	Expect(err).NotTo(HaveOccurred())
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	return strings.Join(names, "\n")
}

var _ = Describe("secrets never leave the process", func() {
	It("are masked in every output of run, validate, dry-run and report render, and kept only in --shrunk-out", func() {
		f := writeFile("leaky.yaml", leakyScenario())
		dir := GinkgoT().TempDir()
		summary := filepath.Join(GinkgoT().TempDir(), "step-summary.md")
		GinkgoT().Setenv("GITHUB_STEP_SUMMARY", summary)
		shrunk := filepath.Join(GinkgoT().TempDir(), "shrunk.yaml")

		out, errOut, code := run("run", f, "--report", "json,junit,md,html", "--report-dir", dir, "--shrunk-out", shrunk)
		Expect(code).To(Equal(cli.ExitFailed), out+errOut)
		Expect(out).To(ContainSubstring("smallest failing fault schedule for leaky"), "the shrunk scenario is printed")
		Expect(out).To(ContainSubstring("[REDACTED]"))
		expectNoSecret("run's stdout (text report and shrunk scenario)", out)
		expectNoSecret("run's stderr", errOut)

		json, err := os.ReadFile(filepath.Join(dir, "leaky.seed-9.json"))
		Expect(err).NotTo(HaveOccurred())
		Expect(string(json)).To(ContainSubstring(`"error": "http 400`), "the DLQ entries' errors are in the report")
		for name, format := range map[string]string{"leaky.seed-9.json": "json", "leaky.seed-9.html": "html", "junit.xml": "junit", "summary.md": "md"} {
			b, err := os.ReadFile(filepath.Join(dir, name))
			Expect(err).NotTo(HaveOccurred())
			expectNoSecret("the "+format+" report", string(b))
		}
		b, err := os.ReadFile(summary)
		Expect(err).NotTo(HaveOccurred())
		expectNoSecret("GITHUB_STEP_SUMMARY", string(b))

		for _, to := range []string{"text", "md", "html", "junit", "json"} {
			rendered, errOut, _ := run("report", "render", filepath.Join(dir, "leaky.seed-9.json"), "--to", to)
			expectNoSecret("report render --to "+to, rendered+errOut)
		}
		diffed, errOut, _ := run("report", "diff", filepath.Join(dir, "leaky.seed-9.json"), filepath.Join(dir, "leaky.seed-9.json"))
		expectNoSecret("report diff", diffed+errOut)
		validated, errOut, code := run("validate", f)
		Expect(code).To(Equal(cli.ExitOK), errOut)
		expectNoSecret("validate", validated+errOut)
		dry, errOut, _ := run("run", f, "--dry-run")
		Expect(dry).To(ContainSubstring("name: leaky"))
		expectNoSecret("run --dry-run", dry+errOut)

		By("a seed sweep's summary.json")
		sweep := GinkgoT().TempDir()
		out, errOut, code = run("run", f, "--seeds", "1..2", "--report", "json", "--report-dir", sweep, "--no-shrink")
		Expect(code).To(Equal(cli.ExitFailed), out+errOut)
		sum, err := os.ReadFile(filepath.Join(sweep, "summary.json"))
		Expect(err).NotTo(HaveOccurred())
		expectNoSecret("summary.json", string(sum))
		expectNoSecret("a sweep's stdout", out+errOut)

		By("--shrunk-out writing the scenario as it was, readable by its owner only, so that it reproduces")
		st, err := os.Stat(shrunk)
		Expect(err).NotTo(HaveOccurred())
		Expect(st.Mode().Perm()).To(Equal(os.FileMode(0o600)))
		raw, err := os.ReadFile(shrunk)
		Expect(err).NotTo(HaveOccurred())
		for _, p := range planted {
			Expect(string(raw)).To(ContainSubstring(p.leak), "the file keeps the %s", p.kind)
		}
		again, _, code := run("run", shrunk, "--no-shrink")
		Expect(code).To(Equal(cli.ExitFailed))
		Expect(again).To(ContainSubstring("FAIL  leaky-shrunk  seed 9"))
		expectNoSecret("run of the shrunk file", again)
	})

	It("are masked when planted in the scenario's name: validate, a run, its shrunk schedule, a sweep and the names of the files they write", func() {
		name := "leaky " + planted[0].text + " " + planted[3].text
		f := writeFile("named.yaml", strings.Replace(leakyScenario(), "name: leaky", "name: \""+name+"\"", 1))
		validated, errOut, code := run("validate", f)
		Expect(code).To(Equal(cli.ExitOK), errOut)
		expectNoSecret("validate", validated+errOut)
		reportDir, shrunkDir := GinkgoT().TempDir(), GinkgoT().TempDir()
		out, errOut, code := run("run", f, "--report", "json,html", "--report-dir", reportDir, "--shrunk-out", shrunkDir)
		Expect(code).To(Equal(cli.ExitFailed), out+errOut)
		Expect(out).To(ContainSubstring("smallest failing fault schedule for leaky"))
		Expect(out).To(ContainSubstring("# written, unmasked, to " + shrunkDir))
		expectNoSecret("run (and its shrunk schedule, and the paths it prints)", out+errOut)

		By("the files' names are made of the masked name")
		reports := fileNames(reportDir)
		Expect(reports).To(ContainSubstring("leaky_Bearer_REDACTED_CARD-1111.seed-9.json"))
		expectNoSecret("the names of the report files", reports)
		shrunk := fileNames(shrunkDir)
		Expect(shrunk).To(Equal("leaky_Bearer_REDACTED_CARD-1111-shrunk.yaml"))
		expectNoSecret("the name of the --shrunk-out file", shrunk)

		out, errOut, code = run("run", f, "--seeds", "1..2", "--no-shrink", "--report", "json", "--report-dir", reportDir)
		Expect(code).To(Equal(cli.ExitFailed), out+errOut)
		expectNoSecret("a sweep", out+errOut)
		expectNoSecret("the names of a sweep's report files", fileNames(reportDir))
		sum, err := os.ReadFile(filepath.Join(reportDir, "summary.json"))
		Expect(err).NotTo(HaveOccurred())
		Expect(string(sum)).To(ContainSubstring(`"scenario": "leaky Bearer [REDACTED] [CARD ****1111]"`))
		expectNoSecret("a sweep's summary.json", string(sum))
	})

	It("are masked in the errors of a bad scenario", func() {
		f := writeFile("bad.yaml", strings.Replace(leakyScenario(), "model: latency", "model: "+`"`+secrets()+`"`, 1))
		out, errOut, code := run("validate", f)
		Expect(code).To(Equal(cli.ExitInvalid))
		expectNoSecret("validate of a bad file", out+errOut)
		out, errOut, code = run("run", f)
		Expect(code).To(Equal(cli.ExitInvalid))
		expectNoSecret("run of a bad file", out+errOut)
	})

	It("are masked in the demo's header and errors: a redis:// URL's password", func() {
		const url = "redis://:h6RedisPw@127.0.0.1:1/0"
		for _, flag := range []string{"--redis-url", "--redis-addr"} {
			out, errOut, code := run("demo", "--backend", "redis", flag, url)
			Expect(code).To(Equal(cli.ExitUnavailable), errOut)
			Expect(errOut).To(ContainSubstring("Redis at 127.0.0.1:1 could not be reached"))
			expectNoSecret("demo "+flag, out+errOut)
		}
		out, errOut, code := run("demo", "--backend", "redis", "--redis-url", "redis://:h6RedisPw@127.0.0.1:notaport")
		Expect(code).To(Equal(cli.ExitInvalid))
		expectNoSecret("demo with a bad --redis-url", out+errOut)

		By("a real Redis that wants the password")
		srv := startRedis()
		DeferCleanup(srv.Stop)
		admin := redisstore.NewClient(srv.Addr)
		DeferCleanup(admin.Close)
		Expect(admin.ConfigSet(context.Background(), "requirepass", "h6RedisPw").Err()).To(Succeed())
		out, errOut, code = run("demo", "--backend", "redis", "--redis-url", "redis://:h6RedisPw@"+srv.Addr+"/0")
		Expect(code).To(Equal(cli.ExitOK), errOut)
		Expect(out).To(ContainSubstring("on redis at " + srv.Addr + ", seed 1"))
		expectNoSecret("demo on a Redis with a password", out+errOut)
	})
})
