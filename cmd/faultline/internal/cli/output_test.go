package cli_test

import (
	"errors"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/cmd/faultline/internal/cli"
)

var _ = Describe("a write lost when a file the CLI writes is closed", func() {
	lost := errors.New("input/output error (planted: lost on close)")
	var scenario, dir string
	BeforeEach(func() {
		scenario = writeFile("leaky.yaml", leakyScenario()) // fails, so it is shrunk
		dir = GinkgoT().TempDir()
	})

	// expectLost checks that a command whose file's close failed exits 2
	// naming the file and the cause.
	expectLost := func(path, out, errOut string, code int) {
		GinkgoHelper()
		Expect(code).To(Equal(cli.ExitInvalid), "exit 2, not a pass nor an internal error\n"+out+errOut)
		Expect(errOut).To(ContainSubstring("write " + path + ": input/output error (planted: lost on close)"))
	}

	DescribeTable("is exit 2 naming the file, whichever file it is",
		func(base string, args ...string) {
			for i, a := range args {
				if a == "DIR" {
					args[i] = dir
				}
			}
			DeferCleanup(cli.SetCloseFailure(base, lost))
			out, errOut, code := run(append([]string{"run", scenario}, args...)...)
			expectLost(filepath.Join(dir, base), out, errOut, code)
		},
		Entry("a run's JSON report in --report-dir", "leaky.seed-9.json", "--report", "json", "--report-dir", "DIR", "--no-shrink"),
		Entry("a run's HTML report", "leaky.seed-9.html", "--report", "html", "--report-dir", "DIR", "--no-shrink"),
		Entry("junit.xml", "junit.xml", "--report", "junit", "--report-dir", "DIR", "--no-shrink"),
		Entry("summary.md", "summary.md", "--report", "md", "--report-dir", "DIR", "--no-shrink"),
		Entry("a sweep's summary.json", "summary.json", "--seeds", "1..2", "--report", "json", "--report-dir", "DIR", "--no-shrink"),
		Entry("the --shrunk-out scenario", "leaky-shrunk.yaml", "--shrunk-out", "DIR"),
	)

	It("is exit 2 naming the file for report render -o FILE", func() {
		_, errOut, code := run("run", scenario, "--report", "json", "--report-dir", dir, "--no-shrink")
		Expect(code).To(Equal(cli.ExitFailed), errOut)
		for _, to := range []string{"html", "md", "junit", "json", "text"} {
			path := filepath.Join(dir, "rendered."+to)
			undo := cli.SetCloseFailure("rendered."+to, lost)
			out, errOut, code := run("report", "render", filepath.Join(dir, "leaky.seed-9.json"), "--to", to, "-o", path)
			undo()
			expectLost(path, out, errOut, code)
		}
	})
})
