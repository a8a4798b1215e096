package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/cmd/faultline/internal/cli"
)

var _ = Describe("input that cannot be used", func() {
	It("validate of a directory without scenario files says there was nothing to check (exit 2)", func() {
		dir := GinkgoT().TempDir()
		Expect(os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not a scenario"), 0o600)).To(Succeed())
		out, errOut, code := run("validate", dir)
		Expect(code).To(Equal(cli.ExitInvalid))
		Expect(out).To(BeEmpty())
		Expect(errOut).To(ContainSubstring(dir + ": nothing to check: no scenario files (*.yaml, *.yml) in this directory"))
	})

	It("validate of a directory skips what is not a regular file: a named pipe there would block the read forever", func() {
		dir := GinkgoT().TempDir()
		Expect(syscall.Mkfifo(filepath.Join(dir, "pipe.yaml"), 0o600)).To(Succeed())
		data, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "scenarios", "builtin", "dlq-basics.yaml"))
		Expect(err).NotTo(HaveOccurred())
		Expect(os.WriteFile(filepath.Join(dir, "dlq-basics.yaml"), data, 0o600)).To(Succeed())
		type result struct {
			out  string
			code int
		}
		done := make(chan result, 1)
		go func() {
			out, _, code := run("validate", dir)
			done <- result{out, code}
		}()
		var got result
		Eventually(done).WithTimeout(10 * time.Second).Should(Receive(&got))
		Expect(got.code).To(Equal(cli.ExitOK))
		Expect(got.out).To(ContainSubstring("dlq-basics.yaml"))
		Expect(got.out).NotTo(ContainSubstring("pipe.yaml"))
	})

	It("an unwritable report directory is exit 2 naming the path, before anything runs", func() {
		file := writeFile("plain-file", "x")
		dir := filepath.Join(file, "reports") // under a file: no one can create it, root neither
		out, errOut, code := run("run", "payment-challenge", "--report", "json", "--report-dir", dir)
		Expect(code).To(Equal(cli.ExitInvalid), out+errOut)
		Expect(errOut).To(ContainSubstring("--report-dir " + dir + ": cannot write reports there: "))
		Expect(errOut).To(ContainSubstring("not a directory"))
		Expect(out).NotTo(ContainSubstring("PASS"), "found before the runs")

		reportDir := GinkgoT().TempDir()
		_, _, code = run("run", "dlq-basics", "--report", "json", "--report-dir", reportDir)
		Expect(code).To(BeElementOf(cli.ExitOK, cli.ExitFailed))
		_, errOut, code = run("report", "render", filepath.Join(reportDir, "dlq-basics.seed-1.json"), "--to", "md", "-o", filepath.Join(dir, "r.md"))
		Expect(code).To(Equal(cli.ExitInvalid), "report render -o to an unwritable place")
		Expect(errOut).To(ContainSubstring(filepath.Join(dir, "r.md")))
	})
})

var _ = Describe("faultline rules check of a malformed file", func() {
	It("reports every problem in one pass, in plain words: no YAML library or Go type names", func() {
		bad := writeFile("bad-rules.yaml", `defaults: yes-please
rules:
  - name: a
    match: {status: [401, 403], timeout: maybe}
    class: bogus
    severity: huge
    source: auth
  - name: b
    match: [1, 2]
    class: transient
    severity: low
    source: data
  - name: [c]
    match: {is: context.Canceled}
    class: transient
    severity: low
    source: data
  - nme: d
    match: {any: true}
    class: transient
    severity: low
    source: data
`)
		out, errOut, code := run("rules", "check", bad)
		Expect(code).To(Equal(cli.ExitInvalid))
		Expect(out).To(BeEmpty())
		for _, want := range []string{
			bad + `:1:11: defaults: expected true or false, got "yes-please"`,
			bad + `:4:42: rules[0].match.timeout: expected true or false, got "maybe"`,
			bad + `:5:12: rules[0].class: unknown class "bogus"`,
			bad + `:6:15: rules[0].severity: unknown severity "huge"; did you mean "high"?`,
			bad + `:9:12: rules[1].match: expected a mapping of criteria`,
			bad + `:13:11: rules[2].name: expected a single value, got a list`,
			bad + `:14:17: rules[2].match.is: expected a list, got "context.Canceled"`,
			bad + `:18:5: rules[3].nme: unknown key "nme"; did you mean "name"?`,
		} {
			Expect(errOut).To(ContainSubstring(want))
		}
		for _, internal := range []string{"unmarshal", "interface {}", "Go struct", "[]string", "rulesFile", "sequence was used", "mapping was used"} {
			Expect(errOut).NotTo(ContainSubstring(internal))
		}
	})
})

var _ = Describe("validate of a framework preset", func() {
	It("accepts the file and warns when the preset's runtime is not installed here (a drill would be refused)", func() {
		src, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "examples", "rq", "drill-default.yaml"))
		Expect(err).NotTo(HaveOccurred())
		dir := GinkgoT().TempDir()
		file := filepath.Join(dir, "rq.yaml")
		// The worker's own command must exist for the file to be valid;
		// only the preset's runtime is missing.
		text := strings.Replace(string(src), "inject: {preset: rq,", "inject: {preset: rq, runtime: /no/such/python3,", 1)
		text = strings.Replace(text, "path: /usr/bin/rq", "path: /bin/sh", 1)
		Expect(os.WriteFile(file, []byte(text), 0o600)).To(Succeed())
		out, errOut, code := run("validate", file)
		Expect(code).To(Equal(cli.ExitOK), errOut)
		Expect(out).To(ContainSubstring("ok  " + file))
		Expect(errOut).To(ContainSubstring("warning: " + file + ": the rq preset runs its adapter with /no/such/python3, which is not installed here: a drill would be refused (install: apt-get install python3-rq"))
	})
})
