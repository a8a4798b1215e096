package cli_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/cmd/faultline/internal/cli"
	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/store/redisstore/redistest"
)

func TestCLI(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "CLI Suite")
}

// run executes the command tree in-process as main does (cli.Main: the
// error printed on stderr, masked) and returns its output and exit code.
func run(args ...string) (stdout, stderr string, code int) {
	GinkgoHelper()
	var out, errOut bytes.Buffer
	code = cli.Main(context.Background(), args, &out, &errOut)
	return out.String(), errOut.String(), code
}

// startRedis starts a redis-server for the spec, or skips it when
// redis-server is not installed (a failure when FAULTLINE_REQUIRE_REDIS=1).
// Any other error starting it fails the spec: a real-Redis check is never
// skipped because something went wrong. The caller stops it.
func startRedis() *redistest.Server {
	GinkgoHelper()
	srv, err := redistest.StartServer()
	if errors.Is(err, redistest.ErrNoServer) && !redistest.Required() {
		Skip("redis-server is not on PATH")
	}
	Expect(err).NotTo(HaveOccurred(), "starting redis-server")
	return srv
}

func writeFile(name, content string) string {
	GinkgoHelper()
	p := filepath.Join(GinkgoT().TempDir(), name)
	Expect(os.WriteFile(p, []byte(content), 0o600)).To(Succeed())
	return p
}

var _ = Describe("faultline rules", func() {
	It("lists the default rules in order with the fallback last", func() {
		out, _, code := run("rules", "list")
		Expect(code).To(Equal(cli.ExitOK))
		Expect(out).To(MatchRegexp(`(?m)^1\s+card-decline-retryable\s+\*\s+\*\s+transient/low/dependency\s+declineCode=\[processing_error,`))
		Expect(out).To(MatchRegexp(`(?m)^\d+\s+shutdown\s+\*\s+\*\s+canceled/low/system\s+is=\["context canceled"\] shuttingDown$`))
		Expect(out).To(MatchRegexp(`(?m)^\d+\s+payment-ambiguous-5xx\s+payment-gateway\s+\*\s+indeterminate/medium/dependency\s+status=\[500,502,504\]$`))
		Expect(out).To(MatchRegexp(`(?m)^-\s+fallback\s+\*\s+\*\s+transient/medium/system\s+anything else$`))
	})

	It("lists a file's rules ahead of the defaults", func() {
		f := writeFile("r.yaml", "rules:\n  - name: mine\n    task: report\n    match: {any: true}\n    class: permanent\n    severity: low\n    source: data\n")
		out, _, code := run("rules", "list", "--file", f)
		Expect(code).To(Equal(cli.ExitOK))
		Expect(out).To(MatchRegexp(`(?m)^1\s+mine\s+\*\s+report\s+permanent/low/data\s+any error$`))
	})

	It("checks good files", func() {
		f := writeFile("ok.yaml", "rules: []\n")
		out, _, code := run("rules", "check", f)
		Expect(code).To(Equal(cli.ExitOK))
		Expect(out).To(ContainSubstring(fmt.Sprintf("%s: ok, %d rules (first match wins), fallback transient/medium/system", f, len(classify.DefaultRules()))))
	})

	It("reports each bad file with positions and exits 2", func() {
		bad := writeFile("bad.yaml", "rules:\n  - name: x\n    clas: transient\n")
		good := writeFile("good.yaml", "defaults: false\n")
		out, errOut, code := run("rules", "check", bad, good, "/does/not/exist.yaml")
		Expect(code).To(Equal(cli.ExitInvalid))
		Expect(out).To(ContainSubstring(good + ": ok, 0 rules"))
		Expect(errOut).To(ContainSubstring(bad + `:3:5: rules[0].clas: unknown key "clas"; did you mean "class"?`))
		Expect(errOut).To(ContainSubstring("/does/not/exist.yaml: no such file or directory"))
		Expect(errOut).To(ContainSubstring("2 of 3 rule files are invalid"))
	})

	It("says what is allowed when the arguments are wrong", func() {
		_, errOut, code := run("rules", "check")
		Expect(code).To(Equal(cli.ExitInvalid))
		Expect(errOut).To(ContainSubstring("rules check needs at least one rule file\nTry: faultline rules check --help"))

		_, errOut, code = run("rules", "list", "--colour")
		Expect(code).To(Equal(cli.ExitInvalid))
		Expect(errOut).To(ContainSubstring("unknown flag: --colour\nTry: faultline rules list --help"))

		_, errOut, code = run("rules", "list", "extra")
		Expect(code).To(Equal(cli.ExitInvalid))
		Expect(errOut).To(ContainSubstring(`rules list takes no arguments, got "extra" (use --file)`))
	})

	It("suggests a command for a misspelt one", func() {
		_, errOut, code := run("rulez")
		Expect(code).To(Equal(cli.ExitInvalid))
		Expect(errOut).To(ContainSubstring(`unknown command "rulez"; did you mean "rules"?` + "\nTry: faultline --help"))
	})

	It("documents its exit codes in --help", func() {
		out, _, code := run("--help")
		Expect(code).To(Equal(cli.ExitOK))
		Expect(out).To(ContainSubstring("2  invalid input (a file or a flag)"))
		Expect(out).To(ContainSubstring("4  a service faultline needs could not be reached (Redis, a system under test)"))
	})
})
