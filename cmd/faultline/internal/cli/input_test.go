package cli_test

import (
	"os"
	"path/filepath"

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

	It("an unwritable report directory is exit 2 naming the path, before anything runs", func() {
		file := writeFile("plain-file", "x")
		dir := filepath.Join(file, "reports") // under a file: no one can create it, root neither
		out, errOut, code := run("run", "payment-challenge", "--report", "json", "--report-dir", dir)
		Expect(code).To(Equal(cli.ExitInvalid), out+errOut)
		Expect(errOut).To(ContainSubstring("--report-dir " + dir + ": cannot write reports there: "))
		Expect(errOut).To(ContainSubstring("not a directory"))
		Expect(out).NotTo(ContainSubstring("PASS"), "found before the runs")
	})
})
